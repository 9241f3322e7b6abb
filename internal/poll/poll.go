// Package poll paces the looks a long loop takes at the world outside it
// (its context, its output's health): one every Every steps, so the look
// costs nothing measurable and a stop is still prompt.
package poll

// Every is how many steps of a long loop run between two looks.
const Every = 8192

// Due reports whether step i (counting from 0) is one at which the loop
// looks.
func Due(i int) bool { return i%Every == Every-1 }

// OutputFailed calls flush at every Every-th step of a writing loop (i
// counts them) and returns its error: the output has failed (an
// interrupted command's output refuses every write), so the loop stops
// rather than format the rest for nothing.
func OutputFailed(i int, flush func() error) error {
	if !Due(i) {
		return nil
	}
	return flush()
}
