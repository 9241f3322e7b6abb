package assign

import "fmt"

// HumanBytes formats n as XLA's HumanReadableNumBytes does: below 1 KiB
// "NB"; otherwise divide by 1024 (integer division) while at least 1 MiB
// remains, and print one decimal for KiB and two for MiB and up, e.g.
// 768.0KiB, 214.09MiB, 22.81GiB.
func HumanBytes(n int64) string {
	neg := ""
	if n < 0 {
		neg = "-"
		n = -n
	}
	if n < 1024 {
		return fmt.Sprintf("%s%dB", neg, n)
	}
	units := "KMGTPE"
	i := 0
	for n >= 1024*1024 && i < len(units)-1 {
		n /= 1024
		i++
	}
	if i == 0 {
		return fmt.Sprintf("%s%.1fKiB", neg, float64(n)/1024)
	}
	return fmt.Sprintf("%s%.2f%ciB", neg, float64(n)/1024, units[i])
}
