//go:build race

package pack

// raceEnabled is true when the tests run under the race detector, which
// slows everything down several times: timing assertions are then skipped.
const raceEnabled = true
