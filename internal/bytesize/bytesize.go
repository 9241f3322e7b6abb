// Package bytesize reads the byte counts the command line and workload
// files take ("16GiB", "512MiB", "4096"), for the gpu and tpu device
// models alike.
package bytesize

import (
	"fmt"
	"strconv"
	"strings"
)

// Parse reads a byte count: digits with an optional B, KiB, MiB, GiB or
// TiB suffix (powers of 1024; KB, MB, GB and TB mean the same, as device
// memory is quoted). Negative counts and counts above 2^62 bytes are
// refused.
func Parse(s string) (int64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30}, {"tib", 1 << 40}, {"kb", 1 << 10}, {"mb", 1 << 20}, {"gb", 1 << 30}, {"tb", 1 << 40}, {"b", 1}} {
		if v, ok := strings.CutSuffix(t, u.suffix); ok {
			t, mult = strings.TrimSpace(v), u.mult
			break
		}
	}
	v, err := strconv.ParseInt(t, 10, 64)
	if err != nil || v < 0 || v > (1<<62)/mult {
		return 0, fmt.Errorf("bad byte size %q", s)
	}
	return v * mult, nil
}
