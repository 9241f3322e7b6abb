package schedule

import (
	"time"

	"github.com/hlomem/hlomem/internal/cputime"
)

// cutoff is the searches' safety net: it passes once the process has
// spent a given amount of CPU time (user and system, as the operating
// system counts them) since it was set. CPU time, unlike wall-clock time,
// does not run out faster on a busy machine, so a search cut short on a
// loaded machine is cut where it would be on an idle one, and the results
// that users pin in golden files do not depend on what else runs. Where
// the system does not report the process's CPU time, it counts wall-clock
// time. The zero cutoff never passes.
type cutoff struct {
	set  bool
	cpu  bool
	at   time.Duration // process CPU time at which it passes (cpu)
	wall time.Time     // else the wall-clock time
}

// newCutoff returns the cutoff d of CPU time from now; d <= 0 never
// passes.
func newCutoff(d time.Duration) cutoff {
	if d <= 0 {
		return cutoff{}
	}
	if now, ok := cputime.Process(); ok {
		return cutoff{set: true, cpu: true, at: now + d}
	}
	return cutoff{set: true, wall: time.Now().Add(d)}
}

// passed reports whether the cutoff has passed.
func (c cutoff) passed() bool {
	switch {
	case !c.set:
		return false
	case c.cpu:
		now, ok := cputime.Process()
		return ok && now >= c.at
	default:
		return time.Now().After(c.wall)
	}
}
