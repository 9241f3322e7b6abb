package gpu

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/hlomem/hlomem/assign"
	"github.com/hlomem/hlomem/exec"
	"github.com/hlomem/hlomem/hlo"
)

// ClientOptions are the model's own settings, beside JAX's.
type ClientOptions struct {
	// Verify checks every run: the plan's shadow execution
	// (exec.Shadow, once per program) and that no two device
	// allocations the run uses overlap.
	Verify bool
	// AllocCost and FreeCost are the modelled cost of a driver allocation
	// and release (0: the allocators' defaults).
	AllocCost, FreeCost time.Duration
	// Ordinal is the device number in allocator names (GPU_0_bfc).
	Ordinal int
}

// Client is a JAX GPU client on one device: the client allocator JAX's
// settings choose, the arrays the user put on the device, and the programs
// it runs.
type Client struct {
	Device Device
	Config ClientConfig
	Alloc  Allocator
	opts   ClientOptions

	arrays map[string]*Array
}

// Array is a named array on the device.
type Array struct {
	Name string
	// Bytes is the array's size, Shape its shape when known.
	Bytes int64
	Shape string
	// Offset is where the array starts in its device buffer.
	Offset int64
	buf    *deviceBuffer
}

// Addr is the array's device address.
func (a *Array) Addr() int64 { return a.buf.addr + a.Offset }

// deviceBuffer is one allocation of the client allocator, shared by the
// arrays in it (a program's output may hold several, or be an input passed
// through).
type deviceBuffer struct {
	addr, size int64
	refs       int
	// host marks pinned host memory (an array in XLA's host memory
	// space, S(5)): not the client allocator's, never freed to it.
	host bool
}

// RoundLimit rounds a client's byte limit up to 2 MiB, as XLA does before
// creating the allocator.
func RoundLimit(n int64) int64 { return (n + 2*mib - 1) &^ (2*mib - 1) }

// NewClient starts a client on dev with cfg: BFC over MemFraction of the
// device (the limit rounded up to 2 MiB), the whole limit reserved at once
// when cfg.Preallocate; the platform allocator over the whole device (JAX
// applies the fraction to its pools only); or the cuda_async pool over
// MemFraction of the device.
func NewClient(dev Device, cfg ClientConfig, opts ClientOptions) (*Client, error) {
	if dev.Memory <= 0 {
		return nil, fmt.Errorf("gpu: device %q has no memory", dev.Name)
	}
	if !(cfg.MemFraction > 0) || (cfg.MemFraction > 1 && !cfg.UnifiedMemory) || cfg.MemFraction > 1e6 {
		return nil, fmt.Errorf("gpu: memory fraction %v is outside (0, 1] (above 1 needs unified memory)", cfg.MemFraction)
	}
	limit := RoundLimit(cfg.Limit(dev))
	if limit <= 0 {
		return nil, fmt.Errorf("gpu: memory fraction %v of %d bytes leaves no memory", cfg.MemFraction, dev.Memory)
	}
	c := &Client{Device: dev, Config: cfg, opts: opts, arrays: map[string]*Array{}}
	regionCost := opts.AllocCost
	if regionCost == 0 {
		regionCost = DefaultAllocCost
	}
	var err error
	switch cfg.Allocator {
	case BFCKind, Default, "":
		devMem := dev.Memory
		if cfg.UnifiedMemory {
			devMem = max(devMem, limit)
		}
		c.Alloc, err = NewBFC(BFCOptions{
			Name:         fmt.Sprintf("GPU_%d_bfc", opts.Ordinal),
			Limit:        limit,
			AllowGrowth:  !cfg.Preallocate,
			DeviceMemory: devMem,
			DriverCost:   regionCost,
		})
	case Platform:
		c.Alloc, err = NewPlatform(PlatformOptions{
			Name:      fmt.Sprintf("GPU_%d_platform", opts.Ordinal),
			Limit:     dev.Memory,
			AllocCost: opts.AllocCost,
			FreeCost:  opts.FreeCost,
		})
	case CudaAsync:
		c.Alloc, err = NewCudaAsync(CudaAsyncOptions{
			Name:        fmt.Sprintf("GPU_%d_cuda_async", opts.Ordinal),
			Limit:       limit,
			Preallocate: cfg.Preallocate,
			DriverCost:  opts.AllocCost,
		})
	default:
		return nil, fmt.Errorf("gpu: unknown allocator %q (want default, platform, bfc or cuda_async)", cfg.Allocator)
	}
	if err != nil {
		return nil, err
	}
	return c, nil
}

// Stats are the client allocator's counters (JAX's memory_stats()).
func (c *Client) Stats() Stats { return c.Alloc.Stats() }

// Array returns the array named name.
func (c *Client) Array(name string) (*Array, bool) {
	a, ok := c.arrays[name]
	return a, ok
}

// Arrays lists the arrays on the device by address, then name.
func (c *Client) Arrays() []*Array {
	out := make([]*Array, 0, len(c.arrays))
	for _, a := range c.arrays {
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Addr() != out[j].Addr() {
			return out[i].Addr() < out[j].Addr()
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// Put allocates an array of bytes bytes named name on the device, as
// jax.device_put does. An existing array of that name is an error.
func (c *Client) Put(name string, bytes int64, shape string) (*Array, error) {
	if name == "" {
		return nil, errors.New("gpu: put: an array needs a name")
	}
	if _, ok := c.arrays[name]; ok {
		return nil, fmt.Errorf("gpu: put %s: an array of that name is on the device; delete it first", name)
	}
	if bytes < 0 {
		return nil, fmt.Errorf("gpu: put %s: %d bytes", name, bytes)
	}
	addr, err := c.Alloc.Allocate(bytes)
	if err != nil {
		return nil, c.annotate(err, "put "+name, nil)
	}
	size, _ := c.Alloc.Size(addr)
	a := &Array{Name: name, Bytes: bytes, Shape: shape, buf: &deviceBuffer{addr: addr, size: size, refs: 1}}
	c.arrays[name] = a
	return a, nil
}

// putHost makes the array named name in pinned host memory: an argument
// of a parameter in XLA's host memory space (S(5)), which the device's
// allocator does not hold.
func (c *Client) putHost(name string, bytes int64, shape string) (*Array, error) {
	if _, ok := c.arrays[name]; ok {
		return nil, fmt.Errorf("gpu: put %s: an array of that name exists; delete it first", name)
	}
	a := &Array{Name: name, Bytes: bytes, Shape: shape, buf: &deviceBuffer{size: bytes, refs: 1, host: true}}
	c.arrays[name] = a
	return a, nil
}

// Delete removes the array named name, freeing its device buffer when no
// other array holds it.
func (c *Client) Delete(name string) error {
	a, ok := c.arrays[name]
	if !ok {
		return fmt.Errorf("gpu: delete %s: no such array", name)
	}
	delete(c.arrays, name)
	return c.release(a.buf)
}

func (c *Client) release(b *deviceBuffer) error {
	b.refs--
	if b.refs > 0 || b.host {
		return nil
	}
	return c.Alloc.Free(b.addr)
}

// annotate gives an OOM the operation that asked and the program's peak.
func (c *Client) annotate(err error, op string, p *Program) error {
	var oom *OOMError
	if errors.As(err, &oom) {
		oom.Op = op
		if p != nil {
			oom.Program = p.Name
			oom.Peak = p.Peak
			oom.PeakStep, oom.Steps, oom.PeakBytes = p.PeakStep, p.Steps, p.PeakBytes
		}
	}
	return err
}

// Program is a compiled program as a GPU client loads it: the buffer
// assignment and what each allocation is at run time.
type Program struct {
	Name       string
	Assignment *assign.Assignment
	// Params are the entry parameters' array leaves, in the order Run
	// takes its arguments (eval.EntryLeaves).
	Params []Leaf
	// Outputs are the entry result's array leaves, in shape-index
	// pre-order.
	Outputs []Leaf
	// TempBytes is what the run asks the client allocator for besides
	// its outputs (the preallocated-temp allocations and any other
	// allocation the run owns), ConstantBytes what the executable's
	// constants take (module globals, loaded with the executable, outside
	// the client allocator, as XLA:GPU keeps them).
	TempBytes, ConstantBytes int64
	// HostTempBytes is what the run's temps in host memory take (the
	// allocations of color assign.HostMemorySpace, XLA's S(5), that are
	// neither parameters nor outputs): pinned host memory, not asked of
	// the device's allocator. Parameters (Leaf.Host) and outputs in host
	// memory are pinned host arrays as well.
	HostTempBytes int64
	// Peak lists the largest of what occupies memory at the program's
	// peak (assign.Assignment.Peak): step PeakStep of Steps, PeakBytes in
	// all.
	Peak            []PeakBuffer
	PeakStep, Steps int
	PeakBytes       int64

	shadowed bool
}

// Leaf is one array leaf of a program's parameters or result.
type Leaf struct {
	Name  string // parameter name ("p", "p{1}") or output index ("{0}")
	Index hlo.ShapeIndex
	Shape hlo.Shape
	Bytes int64
	// Param is the entry parameter number, Donated set when the program
	// may write the argument's buffer in place (input_output_alias).
	Param   int64
	Donated bool
	// Host is set for a leaf in XLA's host memory space (S(5)): its
	// array is pinned host memory, not the device's.
	Host bool
	// Alloc is the allocation holding the leaf and Offset where in it
	// (nil when the leaf has no bytes).
	Alloc  *assign.Allocation
	Offset int64
}

// PeakBuffers is how many of a program's largest buffers at its peak an
// OOM report lists.
const PeakBuffers = 10

// NewProgram loads an assignment as the program named name.
func NewProgram(name string, as *assign.Assignment) (*Program, error) {
	if as == nil || as.Analysis == nil || as.Module == nil || as.Module.Entry == nil {
		return nil, errors.New("gpu: no assignment")
	}
	m, a := as.Module, as.Analysis
	p := &Program{Name: name, Assignment: as, Steps: len(a.Sequence)}
	byParam := map[string]*assign.Allocation{}
	for _, al := range as.Allocations {
		switch {
		case al.IsParameter():
			byParam[fmt.Sprint(al.Parameter, al.ParameterIndex)] = al
		case al.Constant:
			p.ConstantBytes += al.Size
		case hostTemp(al):
			p.HostTempBytes += al.Size
		case !al.MaybeLiveOut:
			p.TempBytes += al.Size
		}
	}
	for i, param := range m.Entry.Params {
		param.Shape.ForEachSubshape(func(sub hlo.Shape, ix hlo.ShapeIndex) {
			if sub.IsTuple() {
				return
			}
			n, _ := hlo.BufferSize(sub) // the runtime's buffer: GetByteSizeRequirement
			name := param.Name
			if len(ix) > 0 {
				name += ix.String()
			}
			l := Leaf{Name: name, Index: append(hlo.ShapeIndex(nil), ix...), Shape: sub, Bytes: n, Param: int64(i), Host: sub.MemorySpace() == assign.HostMemorySpace}
			if al := byParam[fmt.Sprint(int64(i), ix)]; al != nil {
				l.Alloc, l.Donated = al, al.ParameterAliased
			}
			p.Params = append(p.Params, l)
		})
	}
	root := m.Entry.Root
	var err error
	root.Shape.ForEachSubshape(func(sub hlo.Shape, ix hlo.ShapeIndex) {
		if sub.IsTuple() || err != nil {
			return
		}
		n, _ := hlo.BufferSize(sub)
		l := Leaf{Name: ix.String(), Index: append(hlo.ShapeIndex(nil), ix...), Shape: sub, Bytes: n, Param: -1}
		if v := a.ValueAt(root, ix); v != nil {
			if al, s, ok := as.AllocationOf(v); ok {
				l.Alloc, l.Offset = al, s.Offset
			} else if al != nil {
				l.Alloc = al
			}
		}
		if l.Alloc == nil && n > 0 {
			err = fmt.Errorf("gpu: program %s: output %s has no allocation", name, l.Name)
		}
		if l.Alloc != nil && l.Alloc.Constant {
			err = fmt.Errorf("gpu: program %s: output %s is a constant of the executable, which this model does not hand out as an array", name, l.Name)
		}
		p.Outputs = append(p.Outputs, l)
	})
	if err != nil {
		return nil, err
	}
	step, bytes, at := as.Peak()
	p.PeakStep, p.PeakBytes = step, bytes
	for _, o := range at {
		if len(p.Peak) == PeakBuffers {
			break
		}
		v := assign.LargestValue(o.Buffers[0])
		b := PeakBuffer{Name: v.Name(), Shape: v.Shape.String(), Kind: o.Kind(), Bytes: o.Bytes, Source: m.Source(v.Inst)}
		if n := len(o.Buffers); n > 1 {
			b.Name += fmt.Sprintf(" (+%d)", n-1)
		}
		if v.Inst.Metadata != nil {
			b.OpName = v.Inst.Metadata.OpName
		}
		p.Peak = append(p.Peak, b)
	}
	return p, nil
}

// hostTemp reports whether al is a temp in host memory (Program.HostTempBytes).
func hostTemp(al *assign.Allocation) bool {
	return al.Color == assign.HostMemorySpace && !al.IsParameter() && !al.MaybeLiveOut && !al.Constant
}

// RunResult is what one run did.
type RunResult struct {
	// Outputs are the arrays the run made, in the order of
	// Program.Outputs.
	Outputs []*Array
	// Allocated is what the run asked the client allocator for: its
	// temps and its outputs not written over a donated input.
	Allocated int64
	// Donated counts the arguments whose buffers the outputs took over.
	Donated int
}

// Run executes p as XLA:GPU does: the arguments are arrays on the device,
// one per entry parameter leaf (Program.Params) named in args; each
// allocation the program owns (its preallocated temps, its outputs not
// aliased to a donated input, the index tables of tuples) is asked of the
// client allocator in allocation order; the temps are freed when the run
// ends; the outputs become arrays named outs[i] (an array of that name is
// replaced; missing names default to NAME.out{INDEX}); a donated argument
// is consumed, its buffer now the output's. On an OOM everything the run
// took is given back and the error, an *OOMError, names the allocation and
// lists the program's largest buffers at its peak.
func (c *Client) Run(ctx context.Context, p *Program, args, outs []string) (*RunResult, error) {
	if p == nil || p.Assignment == nil {
		return nil, errors.New("gpu: run: no program")
	}
	if len(args) != len(p.Params) {
		return nil, fmt.Errorf("gpu: run %s: %d arguments for %d parameter leaves", p.Name, len(args), len(p.Params))
	}
	if len(outs) > len(p.Outputs) {
		return nil, fmt.Errorf("gpu: run %s: %d output names for %d outputs", p.Name, len(outs), len(p.Outputs))
	}
	argArrays := make([]*Array, len(args))
	for i, name := range args {
		a, ok := c.arrays[name]
		if !ok {
			return nil, fmt.Errorf("gpu: run %s: argument %d (%s): no array named %q on the device", p.Name, i, p.Params[i].Name, name)
		}
		if a.Bytes < p.Params[i].Bytes {
			return nil, fmt.Errorf("gpu: run %s: argument %d (%s) is %d bytes, the parameter needs %d", p.Name, i, p.Params[i].Name, a.Bytes, p.Params[i].Bytes)
		}
		if p.Params[i].Donated {
			for j := range i {
				if args[j] == name {
					return nil, fmt.Errorf("gpu: run %s: array %q is donated to parameter %s and also passed as %s", p.Name, name, p.Params[i].Name, p.Params[j].Name)
				}
			}
		}
		argArrays[i] = a
	}
	if c.opts.Verify && !p.shadowed {
		rep, err := exec.Shadow(ctx, p.Assignment)
		if err != nil {
			return nil, err
		}
		if rep.Violation != nil {
			return nil, fmt.Errorf("gpu: run %s: the plan fails its shadow check: %w", p.Name, rep.Violation)
		}
		p.shadowed = true
	}

	// Where each allocation lives for this run.
	as := p.Assignment
	bufs := make([]*deviceBuffer, len(as.Allocations))
	owned := make([]bool, len(as.Allocations))
	argOf := map[*assign.Allocation]*Array{}
	for i, l := range p.Params {
		if l.Alloc != nil {
			argOf[l.Alloc] = argArrays[i]
		}
	}
	res := &RunResult{}
	undo := func() {
		for i, b := range bufs {
			if owned[i] && b != nil {
				c.Alloc.Free(b.addr)
			}
		}
	}
	for i, al := range as.Allocations {
		switch {
		case al.Constant:
			continue
		case al.IsParameter() && argOf[al] != nil:
			bufs[i] = argOf[al].buf
			continue
		case hostTemp(al):
			continue // pinned host memory, outside the device's pool
		case al.Color == assign.HostMemorySpace:
			// An output in host memory: pinned host memory too.
			bufs[i] = &deviceBuffer{size: al.Size, host: true}
			continue
		}
		kind := "temp"
		if al.MaybeLiveOut {
			kind = "output"
		}
		addr, err := c.Alloc.Allocate(al.Size)
		if err != nil {
			undo()
			return nil, c.annotate(err, fmt.Sprintf("%s: allocation %d (%s, %d bytes)", p.Name, al.Index, kind, al.Size), p)
		}
		size, _ := c.Alloc.Size(addr)
		bufs[i], owned[i] = &deviceBuffer{addr: addr, size: size}, true
		res.Allocated += al.Size
	}
	if c.opts.Verify {
		if err := c.checkDisjoint(p, bufs, owned); err != nil {
			undo()
			return nil, err
		}
	}
	if err := ctx.Err(); err != nil {
		undo()
		return nil, err
	}

	// The run is done: outputs become arrays, temps go back.
	for i, l := range p.Outputs {
		name := fmt.Sprintf("%s.out%s", p.Name, l.Name)
		if i < len(outs) && outs[i] != "" {
			name = outs[i]
		}
		var b *deviceBuffer
		if l.Alloc != nil {
			b = bufs[l.Alloc.Index]
		} else {
			// A leaf of no bytes still gets an address.
			addr, err := c.Alloc.Allocate(0)
			if err != nil {
				undo()
				return nil, c.annotate(err, p.Name+": output "+l.Name, p)
			}
			size, _ := c.Alloc.Size(addr)
			b = &deviceBuffer{addr: addr, size: size}
		}
		b.refs++
		res.Outputs = append(res.Outputs, &Array{Name: name, Bytes: l.Bytes, Shape: l.Shape.String(), Offset: l.Offset, buf: b})
	}
	for i, l := range p.Params {
		if l.Donated {
			a := argArrays[i]
			if c.arrays[a.Name] == a {
				delete(c.arrays, a.Name)
				if err := c.release(a.buf); err != nil {
					return nil, err
				}
				res.Donated++
			}
		}
	}
	for i, b := range bufs {
		if owned[i] && b.refs == 0 {
			if err := c.Alloc.Free(b.addr); err != nil {
				return nil, err
			}
		}
	}
	for _, o := range res.Outputs {
		if old, ok := c.arrays[o.Name]; ok {
			delete(c.arrays, o.Name)
			if err := c.release(old.buf); err != nil {
				return nil, err
			}
		}
		c.arrays[o.Name] = o
	}
	return res, nil
}

// checkDisjoint checks that the allocations the run took overlap neither
// each other nor any buffer on the device.
func (c *Client) checkDisjoint(p *Program, bufs []*deviceBuffer, owned []bool) error {
	type span struct {
		lo, hi int64
		what   string
	}
	var spans []span
	seen := map[*deviceBuffer]bool{}
	for _, a := range c.arrays {
		if !seen[a.buf] && !a.buf.host {
			seen[a.buf] = true
			spans = append(spans, span{a.buf.addr, a.buf.addr + a.buf.size, "array " + a.Name})
		}
	}
	for i, b := range bufs {
		if owned[i] {
			spans = append(spans, span{b.addr, b.addr + b.size, fmt.Sprintf("allocation %d", i)})
		}
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].lo < spans[j].lo })
	for i := 1; i < len(spans); i++ {
		if spans[i].lo < spans[i-1].hi {
			return fmt.Errorf("gpu: run %s: the allocator handed out overlapping memory: %s [%#x, %#x) and %s [%#x, %#x)",
				p.Name, spans[i-1].what, spans[i-1].lo, spans[i-1].hi, spans[i].what, spans[i].lo, spans[i].hi)
		}
	}
	for i, al := range p.Assignment.Allocations {
		if b := bufs[i]; b != nil && b.size < al.Size {
			return fmt.Errorf("gpu: run %s: allocation %d needs %d bytes and got %d", p.Name, i, al.Size, b.size)
		}
	}
	return nil
}

// DefragReport is what Defragment did.
type DefragReport struct {
	Arrays     int
	BytesMoved int64
	// LargestFree and Fragmentation before and after.
	LargestFreeBefore, LargestFreeAfter     int64
	FragmentationBefore, FragmentationAfter float64
}

// Defragment moves every array off the device (to host), releases their
// buffers and puts them back, largest first, so they pack together, as
// JAX's GPU defragmentation does. Arrays sharing a buffer move together.
func (c *Client) Defragment() (DefragReport, error) {
	before := c.Alloc.Stats()
	rep := DefragReport{LargestFreeBefore: before.LargestFreeBlockBytes, FragmentationBefore: before.Fragmentation()}
	holders := map[*deviceBuffer][]*Array{}
	var bufs []*deviceBuffer
	for _, a := range c.Arrays() {
		if holders[a.buf] == nil {
			bufs = append(bufs, a.buf)
		}
		holders[a.buf] = append(holders[a.buf], a)
	}
	for _, b := range bufs {
		if err := c.Alloc.Free(b.addr); err != nil {
			return rep, err
		}
		rep.BytesMoved += b.size
	}
	sort.SliceStable(bufs, func(i, j int) bool { return bufs[i].size > bufs[j].size })
	for _, b := range bufs {
		addr, err := c.Alloc.Allocate(b.size)
		if err != nil {
			// The arrays that found no room stay on the host: drop them
			// from the device and say so.
			for _, a := range holders[b] {
				delete(c.arrays, a.Name)
			}
			return rep, fmt.Errorf("gpu: defragment: could not put back %d bytes: %w", b.size, err)
		}
		b.addr = addr
		b.size, _ = c.Alloc.Size(addr)
		rep.Arrays += len(holders[b])
	}
	after := c.Alloc.Stats()
	rep.LargestFreeAfter, rep.FragmentationAfter = after.LargestFreeBlockBytes, after.Fragmentation()
	return rep, nil
}
