package fusion

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hlomem/hlomem/assign"
	"github.com/hlomem/hlomem/eval"
	"github.com/hlomem/hlomem/exec"
	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/internal/corpus"
	"github.com/hlomem/hlomem/internal/preptest"
	"github.com/stretchr/testify/require"
)

// parse parses one module from inline text and verifies it.
func parse(t testing.TB, src string) *hlo.Module {
	t.Helper()
	mods, err := hlo.Parse("test.hlo", []byte(src))
	require.NoError(t, err)
	require.Len(t, mods, 1)
	require.NoError(t, hlo.Verify(mods[0]))
	return mods[0]
}

// pass is one of the three passes, by name.
type pass struct {
	name string
	run  func(*hlo.Module) (bool, error)
}

var passes = []pass{{"simplify", Simplify}, {"cse", CSE}, {"dce", DCE}}

// runPass runs p on m and checks what every pass promises: the module
// verifies, a schedule stays topological, the text round-trips, and a
// pass that reports no change left the text as it was.
func runPass(t testing.TB, p pass, m *hlo.Module) bool {
	t.Helper()
	before := m.String()
	changed, err := p.run(m)
	require.NoError(t, err, p.name)
	after := m.String()
	if !changed {
		require.Equal(t, before, after, "%s reported no change but changed the module", p.name)
		return false
	}
	require.NoError(t, hlo.Verify(m), "%s left an invalid module:\n%s", p.name, after)
	if m.IsScheduled {
		requireTopological(t, m)
	}
	mods, err := hlo.Parse("after.hlo", []byte(after))
	require.NoError(t, err, "%s: output does not parse", p.name)
	require.Equal(t, after, mods[0].String(), "%s: output does not round-trip", p.name)
	return true
}

// requireTopological checks that every instruction comes after its
// operands and control predecessors.
func requireTopological(t testing.TB, m *hlo.Module) {
	t.Helper()
	for _, c := range m.Computations {
		at := map[*hlo.Instruction]int{}
		for i, in := range c.Instructions {
			at[in] = i
		}
		for i, in := range c.Instructions {
			for _, op := range append(append([]*hlo.Instruction(nil), in.Operands...), in.ControlPredecessors()...) {
				require.Less(t, at[op], i, "%s: %s comes before its input %s", c.Name, in.Name, op.Name)
			}
		}
	}
}

// run evaluates m (which it consumes: preparing it edits it) on
// seeded random arguments with the plan-free reference evaluator.
func run(t testing.TB, m *hlo.Module) ([]uint64, *assign.Assignment, error) {
	t.Helper()
	as, err := plan(m, assign.Options{Budget: 20 * time.Millisecond})
	if err != nil {
		return nil, nil, err
	}
	args := eval.RandomArgs(as.Module, rand.New(rand.NewPCG(1, 0)))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	res, err := exec.Execute(ctx, as, args, nil, exec.Options{Reference: true, MaxSteps: 1 << 20})
	if err != nil {
		return nil, as, err
	}
	sums := make([]uint64, len(res.Outputs))
	for i, o := range res.Outputs {
		sums[i] = o.Checksum()
	}
	return sums, as, nil
}

// plan prepares and assigns m as hlomem assign does.
func plan(m *hlo.Module, opts assign.Options) (*assign.Assignment, error) {
	a, err := preptest.Prepare(m, "")
	if err != nil {
		return nil, fmt.Errorf("prepare: %w", err)
	}
	return assign.Assign(context.Background(), a, opts)
}

func reparse(t testing.TB, text string) *hlo.Module {
	t.Helper()
	mods, err := hlo.Parse("copy.hlo", []byte(text))
	require.NoError(t, err)
	return mods[0]
}

// simplifyAll runs Simplify, CSE and DCE in order and returns how many
// instructions each removed.
func simplifyAll(t testing.TB, m *hlo.Module) (removed [3]int) {
	t.Helper()
	for i, p := range passes {
		n := m.NumInstructions()
		runPass(t, p, m)
		removed[i] = n - m.NumInstructions()
	}
	return removed
}

func countOpcode(m *hlo.Module, op hlo.Opcode) int {
	n := 0
	m.Instructions(func(in *hlo.Instruction) {
		if in.Opcode == op {
			n++
		}
	})
	return n
}

func paramBytes(m *hlo.Module) int64 {
	var total int64
	for _, p := range m.Entry.Params {
		p.Shape.ForEachSubshape(func(s hlo.Shape, _ hlo.ShapeIndex) {
			if s.IsArray() {
				b, err := hlo.ByteSize(s)
				if err != nil {
					b = 1 << 40
				}
				total += b
			}
		})
	}
	return total
}

var opInError = regexp.MustCompile(`cannot evaluate opcode ([a-z0-9-]+)`)

// TestPassesCorpus runs Simplify, CSE and DCE on every corpus module that
// parses and verifies: each pass leaves a valid module that round-trips,
// a second round changes nothing, and where the evaluator can run the
// module, its outputs are bit for bit what they were.
func TestPassesCorpus(t *testing.T) {
	files := append(corpus.Glob(t, "hlo/*/*.hlo"), corpus.Glob(t, "paired/*/*before_optimizations.txt")...)
	var (
		mu                 sync.Mutex
		checked, evaluated int
		removed            [3]int
		bitcasts           int
		skipped            = map[string]int{}
	)
	skip := func(reason string) {
		mu.Lock()
		skipped[reason]++
		mu.Unlock()
	}
	start := time.Now()
	t.Run("files", func(t *testing.T) {
		for _, f := range files {
			t.Run(filepath.Base(f), func(t *testing.T) {
				t.Parallel()
				src, err := os.ReadFile(f)
				require.NoError(t, err)
				mods, err := hlo.Parse(filepath.Base(f), src)
				if err != nil {
					skip("does not parse")
					return
				}
				for _, m := range mods {
					if hlo.Verify(m) != nil {
						skip("does not verify")
						continue
					}
					text0 := m.String()
					b0 := countOpcode(m, hlo.OpBitcast)
					r := simplifyAll(t, m)
					mu.Lock()
					for i := range r {
						removed[i] += r[i]
					}
					bitcasts += countOpcode(m, hlo.OpBitcast) - b0
					checked++
					mu.Unlock()
					// The passes reach their fixed point in one round.
					for _, p := range passes {
						changed, err := p.run(m)
						require.NoError(t, err)
						require.False(t, changed, "%s: a second %s still changes the module", m.Name, p.name)
					}
					switch {
					case paramBytes(m) > 64<<20:
						skip("parameters over 64 MiB")
						continue
					case work(m) > maxWork:
						skip("over 8M elements computed")
						continue
					case m.NumInstructions() > 20000:
						skip("over 20k instructions")
						continue
					}
					want, _, err := run(t, reparse(t, text0))
					if err != nil {
						switch sub := opInError.FindStringSubmatch(err.Error()); {
						case sub != nil:
							skip("cannot evaluate " + sub[1])
						case errors.Is(err, context.DeadlineExceeded):
							skip("over 5 s")
						case errors.Is(err, eval.ErrStepBudget):
							skip("over 1M steps")
						default:
							skip("other: " + firstLine(err.Error()))
						}
						continue
					}
					got, _, err := run(t, reparse(t, m.String()))
					require.NoError(t, err, "%s: the simplified module fails where the original ran", m.Name)
					require.Equal(t, want, got, "%s: outputs differ after simplification", m.Name)
					mu.Lock()
					evaluated++
					mu.Unlock()
				}
			})
		}
	})
	var reasons []string
	for k, n := range skipped {
		reasons = append(reasons, fmt.Sprintf("%s: %d", k, n))
	}
	sort.Strings(reasons)
	t.Logf("%d modules simplified in %v, %d evaluated bit-identical before and after", checked, time.Since(start).Round(time.Millisecond), evaluated)
	t.Logf("instructions removed: simplify %d, cse %d, dce %d; bitcasts created: %d", removed[0], removed[1], removed[2], bitcasts)
	t.Logf("not evaluated: %s", strings.Join(reasons, "; "))
	require.Positive(t, evaluated)
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 80 {
		s = s[:80]
	}
	return s
}

// maxWork bounds the elements a module's instructions compute (counted
// once, loops aside) for it to be evaluated here, keeping the corpus test
// within its time: evaluation costs seconds per ten million elements.
const maxWork = 8 << 20

// work counts the array elements m's instructions produce.
func work(m *hlo.Module) int64 {
	var w int64
	m.Instructions(func(in *hlo.Instruction) {
		in.Shape.ForEachSubshape(func(s hlo.Shape, _ hlo.ShapeIndex) {
			if s.IsArray() {
				if n, ok := s.Elements(); ok {
					w += n
				}
			}
		})
	})
	return w
}

// opcodes returns the opcode of every named instruction of the entry.
func opcodes(m *hlo.Module) map[string]string {
	out := map[string]string{}
	for _, in := range m.Entry.Instructions {
		out[in.Name] = in.OpName()
	}
	return out
}

// simplifyCase is one rule's module: after Simplify and DCE, the entry's
// instructions have the given opcodes ("" for gone) and the root is the
// named one.
type simplifyCase struct {
	name    string
	src     string
	changed bool
	want    map[string]string
	root    string
	// noEval skips the evaluation: the evaluator knows no tiled layouts
	// and reads pad's padding from padding_config=, not XLA's padding=.
	noEval bool
}

func TestSimplifyRules(t *testing.T) {
	cases := []simplifyCase{{
		name: "reshape that is a bitcast",
		src: `HloModule m
ENTRY e {
  p = f32[2,3,4]{2,1,0} parameter(0)
  r = f32[6,1,4]{2,1,0} reshape(p), metadata={op_name="keep"}
  ROOT n = f32[6,1,4]{2,1,0} negate(r)
}`,
		changed: true, want: map[string]string{"r": "bitcast"}, root: "n",
	}, {
		name: "reshape with a transposed layout is a bitcast",
		src: `HloModule m
ENTRY e {
  p = f32[2,3]{0,1} parameter(0)
  r = f32[1,2,3]{1,2,0} reshape(p)
  ROOT n = f32[1,2,3]{1,2,0} negate(r)
}`,
		changed: true, want: map[string]string{"r": "bitcast"}, root: "n",
	}, {
		name: "reshape that moves elements stays",
		src: `HloModule m
ENTRY e {
  p = f32[2,3]{0,1} parameter(0)
  r = f32[6]{0} reshape(p)
  ROOT n = f32[6]{0} negate(r)
}`,
		want: map[string]string{"r": "reshape"}, root: "n",
	}, {
		name: "reshape into a column-major result stays",
		src: `HloModule m
ENTRY e {
  p = f32[6]{0} parameter(0)
  r = f32[2,3]{0,1} reshape(p)
  ROOT n = f32[2,3]{0,1} negate(r)
}`,
		want: map[string]string{"r": "reshape"}, root: "n",
	}, {
		name: "tiled reshape stays",
		src: `HloModule m
ENTRY e {
  p = f32[8,128]{1,0:T(8,128)} parameter(0)
  r = f32[1024]{0:T(1024)} reshape(p)
  ROOT n = f32[1024]{0:T(1024)} negate(r)
}`,
		want: map[string]string{"r": "reshape"}, root: "n", noEval: true,
	}, {
		name: "transpose that is a bitcast",
		src: `HloModule m
ENTRY e {
  p = f32[2,3]{1,0} parameter(0)
  tr = f32[3,2]{0,1} transpose(p), dimensions={1,0}
  ROOT n = f32[3,2]{0,1} negate(tr)
}`,
		changed: true, want: map[string]string{"tr": "bitcast"}, root: "n",
	}, {
		name: "transpose that moves elements stays",
		src: `HloModule m
ENTRY e {
  p = f32[2,3]{1,0} parameter(0)
  tr = f32[3,2]{1,0} transpose(p), dimensions={1,0}
  ROOT n = f32[3,2]{1,0} negate(tr)
}`,
		want: map[string]string{"tr": "transpose"}, root: "n",
	}, {
		name: "identity transpose goes",
		src: `HloModule m
ENTRY e {
  p = f32[2,3]{1,0} parameter(0)
  tr = f32[2,3]{1,0} transpose(p), dimensions={0,1}
  ROOT n = f32[2,3]{1,0} negate(tr)
}`,
		changed: true, want: map[string]string{"tr": ""}, root: "n",
	}, {
		name: "copy to the same layout goes",
		src: `HloModule m
ENTRY e {
  p = f32[2,3]{1,0} parameter(0)
  c = f32[2,3]{1,0} copy(p)
  ROOT n = f32[2,3]{1,0} negate(c)
}`,
		changed: true, want: map[string]string{"c": ""}, root: "n",
	}, {
		name: "copy that changes the layout stays",
		src: `HloModule m
ENTRY e {
  p = f32[2,3]{1,0} parameter(0)
  c = f32[2,3]{0,1} copy(p)
  ROOT n = f32[2,3]{0,1} negate(c)
}`,
		want: map[string]string{"c": "copy"}, root: "n",
	}, {
		name: "entry root copy of a parameter stays",
		src: `HloModule m
ENTRY e {
  p = f32[2,3]{1,0} parameter(0)
  ROOT c = f32[2,3]{1,0} copy(p)
}`,
		want: map[string]string{"c": "copy"}, root: "c",
	}, {
		name: "copy in the root tuple stays",
		src: `HloModule m
ENTRY e {
  p = f32[2,3]{1,0} parameter(0)
  n = f32[2,3]{1,0} negate(p)
  c = f32[2,3]{1,0} copy(n)
  ROOT t = (f32[2,3]{1,0}, f32[2,3]{1,0}) tuple(n, c)
}`,
		want: map[string]string{"c": "copy"}, root: "t",
	}, {
		name: "convert to the same type goes",
		src: `HloModule m
ENTRY e {
  p = f32[4]{0} parameter(0)
  c = f32[4]{0} convert(p)
  ROOT n = f32[4]{0} negate(c)
}`,
		changed: true, want: map[string]string{"c": ""}, root: "n",
	}, {
		name: "convert to another type stays",
		src: `HloModule m
ENTRY e {
  p = f32[4]{0} parameter(0)
  c = f16[4]{0} convert(p)
  ROOT n = f16[4]{0} negate(c)
}`,
		want: map[string]string{"c": "convert"}, root: "n",
	}, {
		name: "identity broadcast, slice, reverse, pad and reshape go",
		src: `HloModule m
ENTRY e {
  p = f32[4,2]{1,0} parameter(0)
  z = f32[] constant(0)
  b = f32[4,2]{1,0} broadcast(p), dimensions={0,1}
  s = f32[4,2]{1,0} slice(b), slice={[0:4], [0:2]}
  v = f32[4,2]{1,0} reverse(s), dimensions={}
  d = f32[4,2]{1,0} pad(v, z), padding=0_0x0_0
  r = f32[4,2]{1,0} reshape(d)
  ROOT n = f32[4,2]{1,0} negate(r)
}`,
		changed: true, want: map[string]string{"b": "", "s": "", "v": "", "d": "", "r": "", "z": ""}, root: "n", noEval: true,
	}, {
		name: "broadcast, slice, reverse and pad that do something stay",
		src: `HloModule m
ENTRY e {
  p = f32[4,2]{1,0} parameter(0)
  z = f32[] constant(0)
  b = f32[2,4]{1,0} broadcast(p), dimensions={1,0}
  s = f32[2,2]{1,0} slice(b), slice={[0:2], [0:4:2]}
  v = f32[2,2]{1,0} reverse(s), dimensions={0}
  d = f32[2,3]{1,0} pad(v, z), padding=0_0x1_0
  ROOT n = f32[2,3]{1,0} negate(d)
}`,
		want: map[string]string{"b": "broadcast", "s": "slice", "v": "reverse", "d": "pad"}, root: "n", noEval: true,
	}, {
		name: "bitcast chain folds back to its operand",
		src: `HloModule m
ENTRY e {
  p = f32[2,3]{1,0} parameter(0)
  b1 = f32[6]{0} bitcast(p)
  b2 = f32[3,2]{1,0} bitcast(b1)
  b3 = f32[2,3]{1,0} bitcast(b2)
  ROOT n = f32[2,3]{1,0} negate(b3)
}`,
		changed: true, want: map[string]string{"b1": "", "b2": "", "b3": ""}, root: "n",
	}, {
		name: "reshape of a reshape reads the first operand",
		src: `HloModule m
ENTRY e {
  p = f32[2,3]{0,1} parameter(0)
  r1 = f32[6]{0} reshape(p)
  r2 = f32[3,2]{0,1} reshape(r1)
  ROOT n = f32[3,2]{0,1} negate(r2)
}`,
		changed: true, want: map[string]string{"r1": "", "r2": "reshape"}, root: "n",
	}, {
		name: "concatenate drops empty operands",
		src: `HloModule m
ENTRY e {
  p = f32[2,3]{1,0} parameter(0)
  q = f32[2,0]{1,0} parameter(1)
  r = f32[2,4]{1,0} parameter(2)
  c = f32[2,7]{1,0} concatenate(p, q, r), dimensions={1}
  c1 = f32[2,3]{1,0} concatenate(q, p), dimensions={1}
  ROOT t = (f32[2,7]{1,0}, f32[2,3]{1,0}) tuple(c, c1)
}`,
		changed: true, want: map[string]string{"c": "concatenate", "c1": ""}, root: "t",
	}, {
		name: "slice of a slice is one slice",
		src: `HloModule m
ENTRY e {
  p = f32[20]{0} parameter(0)
  s1 = f32[9]{0} slice(p), slice={[2:19:2]}
  s2 = f32[3]{0} slice(s1), slice={[1:8:3]}
  ROOT n = f32[3]{0} negate(s2)
}`,
		changed: true, want: map[string]string{"s1": "", "s2": "slice"}, root: "n",
	}, {
		name: "entry root reshape of a parameter stays",
		src: `HloModule m
ENTRY e {
  p = f32[2,3]{1,0} parameter(0)
  ROOT r = f32[2,3]{1,0} reshape(p)
}`,
		want: map[string]string{"r": "reshape"}, root: "r",
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := parse(t, tc.src)
			text0 := m.String()
			changed := runPass(t, pass{"simplify", Simplify}, m)
			require.Equal(t, tc.changed, changed)
			runPass(t, pass{"dce", DCE}, m)
			got := opcodes(m)
			for name, op := range tc.want {
				require.Equal(t, op, got[name], "opcode of %s in\n%s", name, m)
			}
			require.Equal(t, tc.root, m.Entry.Root.Name)
			if !tc.noEval {
				requireSameOutputs(t, text0, m)
			}
		})
	}
}

// requireSameOutputs evaluates the module text0 and m and requires
// bit-identical outputs.
func requireSameOutputs(t *testing.T, text0 string, m *hlo.Module) {
	t.Helper()
	want, _, err := run(t, reparse(t, text0))
	require.NoError(t, err)
	got, _, err := run(t, reparse(t, m.String()))
	require.NoError(t, err)
	require.Equal(t, want, got, "outputs differ")
}

// TestSimplifyKeepsMetadataAndSchedule: a reshape turned bitcast keeps its
// name and metadata, and a scheduled module keeps a topological order.
func TestSimplifyKeepsMetadataAndSchedule(t *testing.T) {
	m := parse(t, `HloModule m, is_scheduled=true
ENTRY e {
  p = f32[2,3]{1,0} parameter(0)
  r = f32[6]{0} reshape(p), metadata={op_name="flat"}
  c = f32[6]{0} copy(r)
  s1 = f32[4]{0} slice(c), slice={[1:5]}
  s2 = f32[2]{0} slice(s1), slice={[0:2]}
  ROOT n = f32[2]{0} negate(s2)
}`)
	text0 := m.String()
	require.True(t, runPass(t, pass{"simplify", Simplify}, m))
	r := m.Entry.Instruction("r")
	require.Equal(t, hlo.OpBitcast, r.Opcode)
	require.Equal(t, "flat", r.Metadata.OpName)
	require.Contains(t, m.String(), `%s2 = f32[2]{0} slice(%r), slice={[1:3]}`)
	requireTopological(t, m)
	requireSameOutputs(t, text0, m)
}

// TestSimplifyLoopStateCopy: a copy that a while body's root reads stays.
func TestSimplifyLoopStateCopy(t *testing.T) {
	m := parse(t, `HloModule m
body {
  s = (s32[], f32[4]{0}) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  x = f32[4]{0} get-tuple-element(s), index=1
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  c = f32[4]{0} copy(x)
  ROOT t = (s32[], f32[4]{0}) tuple(i1, c)
}
cond {
  s = (s32[], f32[4]{0}) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(i, n), direction=LT
}
ENTRY e {
  p = f32[4]{0} parameter(0)
  z = s32[] constant(0)
  init = (s32[], f32[4]{0}) tuple(z, p)
  w = (s32[], f32[4]{0}) while(init), condition=cond, body=body
  ROOT x = f32[4]{0} get-tuple-element(w), index=1
}`)
	changed, err := Simplify(m)
	require.NoError(t, err)
	require.False(t, changed)
	require.Equal(t, hlo.OpCopy, m.Computation("body").Instruction("c").Opcode)
}

// TestBitcastPredicates holds the block comparison to the definition: a
// reshape (or transpose) is a bitcast when every element's physical
// position is the same in operand and result, checked element by element
// on small shapes with every layout.
func TestBitcastPredicates(t *testing.T) {
	shapes := [][]int64{{6}, {2, 3}, {3, 2}, {1, 6}, {6, 1}, {2, 1, 3}, {1, 2, 3}, {3, 1, 2}, {2, 3, 1}, {1, 1, 6}}
	reshapes, transposes := 0, 0
	for _, a := range shapes {
		for _, la := range perms(len(a)) {
			for _, b := range shapes {
				for _, lb := range perms(len(b)) {
					sa, sb := withLayout(a, la), withLayout(b, lb)
					want := bruteReshapeIsBitcast(sa, sb)
					require.Equal(t, want, reshapeIsBitcast(sa, sb), "reshape %s -> %s", sa, sb)
					if want {
						reshapes++
					}
				}
			}
			for _, perm := range perms(len(a)) {
				dims := make([]int64, len(a))
				for i, p := range perm {
					dims[i] = a[p]
				}
				for _, lb := range perms(len(a)) {
					sa, sb := withLayout(a, la), withLayout(dims, lb)
					want := bruteTransposeIsBitcast(sa, sb, perm)
					require.Equal(t, want, transposeIsBitcast(sa, sb, perm), "transpose %s -> %s by %v", sa, sb, perm)
					if want {
						transposes++
					}
				}
			}
		}
	}
	require.Positive(t, reshapes)
	require.Positive(t, transposes)
}

func withLayout(dims, m2m []int64) hlo.Shape {
	return hlo.Shape{Elem: hlo.F32, Dims: dims, Layout: &hlo.Layout{MinorToMajor: m2m}}
}

func perms(n int) [][]int64 {
	if n == 0 {
		return [][]int64{{}}
	}
	var out [][]int64
	for _, p := range perms(n - 1) {
		for i := 0; i <= len(p); i++ {
			q := append(append(append([]int64{}, p[:i]...), int64(n-1)), p[i:]...)
			out = append(out, q)
		}
	}
	return out
}

// physicalIndex returns the physical position of the element at logical
// index idx of s.
func physicalIndex(s hlo.Shape, idx []int64) int64 {
	pos, scale := int64(0), int64(1)
	for _, d := range s.Layout.MinorToMajor {
		pos += idx[d] * scale
		scale *= s.Dims[d]
	}
	return pos
}

// logicalIndex returns the multi-index of row-major position l in dims.
func logicalIndex(dims []int64, l int64) []int64 {
	idx := make([]int64, len(dims))
	for i := len(dims) - 1; i >= 0; i-- {
		idx[i] = l % dims[i]
		l /= dims[i]
	}
	return idx
}

func bruteReshapeIsBitcast(a, b hlo.Shape) bool {
	n, _ := a.Elements()
	if m, _ := b.Elements(); m != n {
		return false
	}
	for l := int64(0); l < n; l++ {
		if physicalIndex(a, logicalIndex(a.Dims, l)) != physicalIndex(b, logicalIndex(b.Dims, l)) {
			return false
		}
	}
	return true
}

func bruteTransposeIsBitcast(a, b hlo.Shape, perm []int64) bool {
	n, _ := b.Elements()
	for l := int64(0); l < n; l++ {
		out := logicalIndex(b.Dims, l)
		in := make([]int64, len(perm))
		for i, p := range perm {
			in[p] = out[i]
		}
		if physicalIndex(a, in) != physicalIndex(b, out) {
			return false
		}
	}
	return true
}
