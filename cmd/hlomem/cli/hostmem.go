package cli

import (
	"fmt"

	"github.com/hlomem/hlomem/assign"
	"github.com/hlomem/hlomem/exec"
	"github.com/hlomem/hlomem/internal/bytesize"
	"github.com/hlomem/hlomem/internal/sysmem"
)

// hostFraction: by default a run may take 1/hostFraction of the memory
// this process may use (the machine's, or its cgroup's limit), leaving
// the rest to the module, its plan and the machine's other work.
const hostFraction = 2

// hostFallback is the default limit where the memory there is cannot be
// read (systems other than Linux).
const hostFallback = 4 << 30

// hostMemoryFlag is --host-memory of run: the host memory an evaluation or
// a shadow run may take. The run's estimate (exec.HostBytes) is
// checked against it before anything is allocated.
type hostMemoryFlag struct {
	text string
}

func (f *hostMemoryFlag) register(fs *flagSet) {
	fs.StringVar(&f.text, "host-memory", "", "SIZE", "host memory the run may take (e.g. 8GiB, 512MiB, bytes); a run estimated to need more is refused, exit 1 (default: half of this machine's memory, or of its cgroup's limit when lower)")
}

// hostLimit is the limit a run is checked against.
type hostLimit struct {
	bytes  int64
	source string // where the limit comes from; "" for the flag
}

// limit resolves the flag, or the default.
func (f *hostMemoryFlag) limit() (hostLimit, error) {
	if f.text != "" {
		n, err := bytesize.Parse(f.text)
		if err != nil || n <= 0 {
			return hostLimit{}, fmt.Errorf("hlomem run: --host-memory=%q: want a positive byte count (e.g. 8GiB)", f.text)
		}
		return hostLimit{bytes: n}, nil
	}
	m := sysmem.Total()
	if m.Bytes <= 0 {
		return hostLimit{bytes: hostFallback, source: "the default where the machine's memory is unknown"}, nil
	}
	return hostLimit{bytes: m.Bytes / hostFraction, source: fmt.Sprintf("half of %s, %s", m.Source, assign.HumanBytes(m.Bytes))}, nil
}

// check refuses the run of as that opts describe when its estimate is
// more than the limit: an error that names the estimate, its parts, the
// limit and the flag (exit 1).
func (l hostLimit) check(as *assign.Assignment, opts exec.HostOptions) error {
	est, err := exec.HostBytes(as, opts)
	if err != nil {
		return err
	}
	if est.Total <= l.bytes {
		return nil
	}
	return fmt.Errorf("%w; raise the limit with --host-memory=SIZE", &exec.HostMemoryError{Estimate: est, Limit: l.bytes, LimitSource: l.source})
}
