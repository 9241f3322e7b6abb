package fit

// Host offload: the lever of moving arrays the device does not touch at its
// peak into host memory.
//
// XLA's host memory space is S(5) in a layout (Layout::kHostMemorySpace,
// xla/layout.h). JAX puts an array there for memory_kind="pinned_host"
// (jax.device_put(x, jax.memory.Space.Host), NamedSharding(...,
// memory_kind="pinned_host")) and for the checkpoint policies that offload
// (jax.checkpoint_policies.save_and_offload_only_these_names,
// offload_dot_with_no_batch_dims): the module carries the custom calls
// MoveToHost / MoveToDevice, which XLA's HostOffloader
// (xla/hlo/transforms/host_offloader.cc) turns into copies between S(0)
// and S(5) and sets the host array's layout to S(5); XLA:GPU runs them as
// copy-start/copy-done over the host link. Buffer assignment plans the S(5)
// buffers as color 5, in their own allocations (assign.Stats.HostBytes),
// which the device does not hold.
//
// Offload writes the result of that pipeline directly: the array's layout
// gets S(5) and plain copies carry it between the spaces (a copy whose
// operand and result differ only in memory space, as HostOffloader's are).
// A parameter moves whole: parameter(N) in S(5), in the entry's layout
// too (where HostOffloader::HandleInputStreaming looks for it), and before
// each of its users a copy into device memory that lives until that use
// (the copy HostOffloader puts before a MoveToDevice). An
// activation moves across the peak: a copy to S(5) after its last use
// before the peak region and a copy back to S(0) just before its first use
// after it, which then takes its place. The saving is two real plans
// apart (compile.Compile before and after), never arithmetic.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/hlomem/hlomem/assign"
	"github.com/hlomem/hlomem/compile"
	"github.com/hlomem/hlomem/gpu"
	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/liveness"
	"github.com/hlomem/hlomem/schedule"
)

// Offloaded is one array Offload moved to host memory.
type Offloaded struct {
	Name   string // instruction name of the array (parameter or value)
	Kind   string // "parameter" or "activation"
	OpName string // metadata op_name, "" when none
	Source string // source file:line when known
	Bytes  int64
	// Seconds is the transfer time at OffloadResult.Bandwidth: an
	// activation goes to the host and comes back once (2*Bytes); a
	// parameter, which the caller hands over in host memory, comes to the
	// device once per user (Bytes times the copies made).
	Seconds float64
}

// OffloadResult is what Offload did.
type OffloadResult struct {
	// Module is the rewritten module (scheduled: its order is the plan's);
	// without anything offloaded, the input as the pipeline scheduled it.
	Module *hlo.Module
	// Arrays are the arrays moved, in the order they were.
	Arrays []Offloaded
	// Before and After are the device totals (assign.Stats.DeviceBytes)
	// of the plans of the input and of Module.
	Before, After int64
	// Bandwidth is the host link's bytes per second Seconds assume
	// (gpu.Device.HostLinkBytesPerSec, or DefaultHostLink).
	Bandwidth float64
}

// DefaultHostLink is the host link's bandwidth for a device that states
// none (custom:SIZE): PCIe gen4 x16's effective rate (gpu.PCIeGen4x16).
const DefaultHostLink = gpu.PCIeGen4x16

// maxOffloadTries bounds the re-plans one Offload makes.
const maxOffloadTries = 24

// Offload moves the largest arrays not touched in the peak region to host
// memory until the device total is at most limit (or nothing more can
// move). The peak region is the steps of the plan where device memory in
// use exceeds limit (the peak's steps when none does). A candidate lives
// across the region and is read by no instruction running in it; each is
// kept only when the re-planned device total falls. m is not changed.
// Not reaching the limit is no error: After says how far it came.
func Offload(ctx context.Context, m *hlo.Module, limit int64, opts compile.Options, device string) (res *OffloadResult, err error) {
	defer func() {
		if r := recover(); r != nil {
			res, err = nil, fmt.Errorf("fit: offload panicked (a bug): %v", r)
		}
	}()
	if ctx == nil {
		ctx = context.Background()
	}
	if m == nil || m.Entry == nil {
		return nil, errors.New("fit: offload: no module")
	}
	if limit <= 0 {
		return nil, fmt.Errorf("fit: offload: the limit must be positive, got %d", limit)
	}
	dev, err := gpu.DeviceByName(device)
	if err != nil {
		return nil, fmt.Errorf("fit: offload: %w", err)
	}
	bw := dev.HostLinkBytesPerSec
	if bw <= 0 {
		bw = DefaultHostLink
	}
	cur, err := scheduledPlan(ctx, m, opts)
	if err != nil {
		return nil, err
	}
	// Every re-plan keeps the order the first plan chose: the rewrite's
	// copies sit where they were put, and the saving is the rewrite's
	// alone, not a new schedule's.
	opts.Scheduler = schedule.Keep
	res = &OffloadResult{Module: cur.Module, Bandwidth: bw}
	res.Before = cur.Assignment.Stats.DeviceBytes
	res.After = res.Before
	if res.Before <= limit {
		return res, nil
	}
	cands := offloadCandidates(cur.Assignment, limit)
	tries := 0
	for _, c := range cands {
		if res.After <= limit || tries == maxOffloadTries {
			break
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		tries++
		trial := res.Module.Clone()
		copies, err := c.apply(trial)
		if err != nil {
			return nil, fmt.Errorf("fit: offload %s: %w", c.name, err)
		}
		if err := hlo.Verify(trial); err != nil {
			return nil, fmt.Errorf("fit: offload %s: the rewrite does not verify: %w", c.name, err)
		}
		r, err := compile.Compile(ctx, trial, opts)
		if err != nil {
			return nil, fmt.Errorf("fit: offload %s: re-planning: %w", c.name, err)
		}
		if got := r.Assignment.Stats.DeviceBytes; got < res.After {
			res.Module, res.After = r.Module, got
			res.Arrays = append(res.Arrays, c.offloaded(copies, bw))
		}
	}
	return res, nil
}

// scheduledPlan plans a clone of m with opts and returns the plan of the
// clone in the order the pipeline chose, marked scheduled, so that a
// rewrite of it is planned in that same order.
func scheduledPlan(ctx context.Context, m *hlo.Module, opts compile.Options) (*compile.Result, error) {
	r, err := compile.Compile(ctx, m.Clone(), opts)
	if err != nil {
		return nil, err
	}
	if r.Assignment == nil {
		return nil, errors.New("fit: offload: the options stop the pipeline before its plan")
	}
	if inOrder(r) {
		return r, nil
	}
	sm := r.Module
	r.Analysis.Schedule.Apply(sm)
	opts.Scheduler = schedule.Keep
	if r, err = compile.Compile(ctx, sm, opts); err != nil {
		return nil, err
	}
	if !inOrder(r) {
		return nil, errors.New("fit: offload: the pipeline does not keep the scheduled order")
	}
	return r, nil
}

// inOrder reports whether r's module is scheduled and its entry's order is
// the plan's.
func inOrder(r *compile.Result) bool {
	if !r.Module.IsScheduled {
		return false
	}
	a, last := r.Analysis, -1
	for _, in := range r.Module.Entry.Instructions {
		t := a.Time(in)
		if t < 0 || t < last {
			return false
		}
		last = t
	}
	return true
}

// candidate is an entry array that could live in host memory across the
// region, with its users before and after it.
type candidate struct {
	name      string
	param     bool
	bytes     int64
	opName    string
	source    string
	pre, post []string // users' names, in schedule order
}

// offloadCandidates lists the entry arrays that live across the region
// where as's device occupancy exceeds limit and are read by nothing
// running in it, largest first (parameters first among equals, then by
// name).
func offloadCandidates(as *assign.Assignment, limit int64) []candidate {
	a := as.Analysis
	lo, hi := peakRegion(as, limit)
	if lo < 0 {
		return nil
	}
	m := a.Module
	aliased := map[int64]bool{}
	for _, al := range m.InputOutputAlias {
		aliased[al.Param] = true
	}
	for _, d := range m.BufferDonors {
		aliased[d.Param] = true
	}
	var out []candidate
	for _, in := range m.Entry.Instructions {
		c, ok := candidateOf(a, in, lo, hi, aliased)
		if ok {
			out = append(out, c)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		x, y := out[i], out[j]
		if x.bytes != y.bytes {
			return x.bytes > y.bytes
		}
		if x.param != y.param {
			return x.param
		}
		return x.name < y.name
	})
	return out
}

// candidateOf reports whether in can move to host memory across [lo, hi].
func candidateOf(a *liveness.Analysis, in *hlo.Instruction, lo, hi int, aliased map[int64]bool) (candidate, bool) {
	m := a.Module
	if in == m.Entry.Root || in.Shape.IsTuple() || in.Shape.MemorySpace() != 0 || !in.Shape.IsArray() || in.Shape.Dynamic != nil {
		return candidate{}, false
	}
	v := a.ValueAt(in, hlo.ShapeIndex{})
	if v == nil || v.Inst != in || v.Size <= 0 {
		return candidate{}, false // not a buffer of its own (a view, an alias)
	}
	param := in.Opcode == hlo.OpParameter
	switch {
	case param && aliased[in.ParameterNumber]:
		return candidate{}, false // donated: its buffer is an output's
	case !param && !offloadableOp(in):
		return candidate{}, false
	case !param && a.Time(in) >= lo:
		return candidate{}, false // not live before the region
	}
	c := candidate{name: in.Name, param: param, bytes: v.Size, source: m.Source(in)}
	if in.Metadata != nil {
		c.opName = in.Metadata.OpName
	}
	users := slices.Clone(in.Users)
	sort.SliceStable(users, func(i, j int) bool { return a.Time(users[i]) < a.Time(users[j]) })
	for _, u := range users {
		if u.Parent != m.Entry || !plainUser(u) {
			return candidate{}, false
		}
		start, end := userSpan(a, u)
		switch {
		case start < 0:
			return candidate{}, false
		case end < lo:
			c.pre = append(c.pre, u.Name)
		case start > hi:
			c.post = append(c.post, u.Name)
		default:
			return candidate{}, false // read in the region
		}
	}
	if !param && len(c.post) == 0 {
		return candidate{}, false // dead before the region: nothing to keep
	}
	return c, true
}

// offloadableOp reports whether an activation defined by in may be copied
// out: a value the computation made, not a constant of the executable or
// a view of another buffer, nor an asynchronous or collective operation
// whose buffer the runtime ties to a partner.
func offloadableOp(in *hlo.Instruction) bool {
	switch in.Opcode {
	case hlo.OpConstant, hlo.OpGetTupleElement, hlo.OpBitcast, hlo.OpTuple, hlo.OpParameter:
		return false
	}
	return !asyncOp(in.Opcode) && !in.Opcode.Has(hlo.Collective)
}

// asyncOp reports whether op is half of an asynchronous pair (or between).
func asyncOp(op hlo.Opcode) bool {
	return op.Has(hlo.AsyncStart) || op.Has(hlo.AsyncDone) || op == hlo.OpAsyncUpdate
}

// plainUser reports whether a copy may take in's place as u's operand:
// not an asynchronous operation, whose operand lives until its done.
func plainUser(u *hlo.Instruction) bool {
	return !asyncOp(u.Opcode)
}

// userSpan is the steps a user runs: its own, and those of the
// computations it calls.
func userSpan(a *liveness.Analysis, u *hlo.Instruction) (start, end int) {
	t := a.Time(u)
	start, end = t, t
	for _, c := range u.Calls() {
		if c.ID < len(a.Spans) {
			if s := a.Spans[c.ID]; s.Start >= 0 {
				start, end = min(start, s.Start), max(end, s.End-1)
			}
		}
	}
	return start, end
}

// peakRegion returns the first and last steps at which the device memory
// as occupies exceeds limit, or those at its device peak when no step
// does; -1, -1 when nothing occupies the device.
func peakRegion(as *assign.Assignment, limit int64) (lo, hi int) {
	occ := deviceOccupancy(as)
	var peak int64
	lo, hi = -1, -1
	for t, b := range occ {
		if b > limit {
			if lo < 0 {
				lo = t
			}
			hi = t
		}
		peak = max(peak, b)
	}
	if lo >= 0 || peak == 0 {
		return lo, hi
	}
	for t, b := range occ {
		if b == peak {
			if lo < 0 {
				lo = t
			}
			hi = t
		}
	}
	return lo, hi
}

// deviceOccupancy is the plan's occupancy (assign.Occupancy) less what
// host-memory allocations occupy.
func deviceOccupancy(as *assign.Assignment) []int64 {
	occ := slices.Clone(as.Occupancy().Bytes)
	if as.Stats.HostBytes == 0 {
		return occ
	}
	for t := range occ {
		for _, o := range as.OccupantsAt(t) {
			if o.Allocation.Color == assign.HostMemorySpace {
				occ[t] -= o.Bytes
			}
		}
	}
	return occ
}

// offloaded describes c once moved with copies copies to the device.
func (c candidate) offloaded(copies int, bw float64) Offloaded {
	kind, moved := "activation", 2*c.bytes
	if c.param {
		kind, moved = "parameter", int64(copies)*c.bytes
	}
	return Offloaded{Name: c.name, Kind: kind, OpName: c.opName, Source: c.source, Bytes: c.bytes, Seconds: float64(moved) / bw}
}

// apply rewrites m (scheduled) to keep c in host memory across the region
// and returns how many copies to the device it made.
func (c candidate) apply(m *hlo.Module) (int, error) {
	e := m.Entry
	byName := make(map[string]*hlo.Instruction, len(e.Instructions))
	for _, in := range e.Instructions {
		byName[in.Name] = in
	}
	x := byName[c.name]
	if x == nil {
		return 0, fmt.Errorf("no instruction %s in the entry", c.name)
	}
	users := func(names []string) ([]*hlo.Instruction, error) {
		var us []*hlo.Instruction
		for _, n := range names {
			u := byName[n]
			if u == nil {
				return nil, fmt.Errorf("no user %s in the entry", n)
			}
			us = append(us, u)
		}
		return us, nil
	}
	pre, err := users(c.pre)
	if err != nil {
		return 0, err
	}
	post, err := users(c.post)
	if err != nil {
		return 0, err
	}
	names := hlo.NewNameUniquer(m)
	device := x.Shape.Clone()
	host := hostShape(device)
	n := 0
	if c.param {
		was := entryLayout(m)
		x.Shape = host
		updateEntryLayout(m, was)
		for _, u := range append(pre, post...) {
			d := newCopy(m, names.Unique(x.Name+".device"), device, x)
			e.InsertBefore(d, u)
			replaceOperand(u, x, d)
			n++
		}
	} else {
		after := x
		if len(pre) > 0 {
			after = pre[len(pre)-1]
		}
		h := newCopy(m, names.Unique(x.Name+".host"), host, x)
		e.InsertBefore(h, next(e, after))
		d := newCopy(m, names.Unique(x.Name+".device"), device, h)
		e.InsertBefore(d, post[0])
		for _, u := range post {
			replaceOperand(u, x, d)
		}
		n = 1
	}
	m.Renumber()
	return n, nil
}

// hostShape is s with its layout in host memory (S(5)), a default layout
// made when s has none.
func hostShape(s hlo.Shape) hlo.Shape {
	h := s.Clone()
	if h.Layout == nil {
		l := &hlo.Layout{MinorToMajor: make([]int64, len(h.Dims))}
		for i := range l.MinorToMajor {
			l.MinorToMajor[i] = int64(len(h.Dims) - 1 - i)
		}
		h.Layout = l
	}
	h.Layout.MemorySpace = assign.HostMemorySpace
	return h
}

// newCopy makes copy(op) of shape s named name (not yet inserted).
func newCopy(m *hlo.Module, name string, s hlo.Shape, op *hlo.Instruction) *hlo.Instruction {
	return m.NewInstruction(&hlo.Instruction{Name: name, Opcode: hlo.OpCopy, Shape: s, Operands: []*hlo.Instruction{op}})
}

// next returns the instruction after in in c, nil when it is the last.
func next(c *hlo.Computation, in *hlo.Instruction) *hlo.Instruction {
	i := slices.Index(c.Instructions, in)
	if i < 0 || i+1 >= len(c.Instructions) {
		return nil
	}
	return c.Instructions[i+1]
}

// replaceOperand makes u take with in every operand slot of old.
func replaceOperand(u, old, with *hlo.Instruction) {
	for k, op := range u.Operands {
		if op == old {
			u.ReplaceOperand(k, with)
		}
	}
}

// entryLayoutAttr is the header attribute XLA prints the entry's parameter
// and result layouts in.
const entryLayoutAttr = "entry_computation_layout"

// entryLayout prints m's entry layout as XLA's header does:
// {(P0, P1, ...)->RESULT}.
func entryLayout(m *hlo.Module) string {
	var b strings.Builder
	b.WriteString("{(")
	for i, p := range m.Entry.Params {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(p.Shape.String())
	}
	b.WriteString(")->")
	b.WriteString(m.Entry.Root.Shape.String())
	b.WriteString("}")
	return b.String()
}

// updateEntryLayout reprints m's entry_computation_layout after a
// parameter moved to host memory, when the header's text is what
// entryLayout printed before the move (was); a header hlomem cannot
// reprint exactly stays as it was.
func updateEntryLayout(m *hlo.Module, was string) {
	for i, a := range m.Attrs {
		if a.Name == entryLayoutAttr && a.Value == was {
			m.Attrs[i].Value = entryLayout(m)
		}
	}
}
