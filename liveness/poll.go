package liveness

// pollEvery is how many steps of a long loop run between two looks at
// the context.
const pollEvery = 8192

// outputFailed calls flush every pollEvery steps of a writing loop (i
// counts them) and returns its error: the output has failed (an
// interrupted command's output refuses every write), so the loop stops
// rather than format the rest for nothing.
func outputFailed(i int, flush func() error) error {
	if i%pollEvery != pollEvery-1 {
		return nil
	}
	return flush()
}
