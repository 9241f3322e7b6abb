package liveness

import (
	"os"
	"strings"
	"testing"

	"github.com/hlomem/hlomem/hlo"
	"github.com/stretchr/testify/require"
)

// TestAnalyzeRefusesWhatItCannotPlan: Analyze takes modules that were never
// verified and refuses, with the position of the instruction at fault,
// invalid ones and those it cannot know the buffers of. Before it verified
// its input, these panicked, failed later with a message without position,
// or were planned with 0-byte values.
func TestAnalyzeRefusesWhatItCannotPlan(t *testing.T) {
	tests := []struct{ name, src, want string }{
		{"unknown opcode",
			"HloModule m\nENTRY e {\n  p = f32[4] parameter(0)\n  ROOT a = f32[4] frobnicate(p)\n}",
			"in.hlo:4:8: a: unknown opcode frobnicate: its buffer semantics are unknown, so it cannot be planned"},
		{"unknown opcode in a fusion body",
			"HloModule m\nf {\n  x = f32[4] parameter(0)\n  ROOT y = f32[4] frobnicate(x)\n}\nENTRY e {\n  p = f32[4] parameter(0)\n  ROOT a = f32[4] fusion(p), kind=kLoop, calls=f\n}",
			"in.hlo:4:8: y: unknown opcode frobnicate: its buffer semantics are unknown, so it cannot be planned"},
		{"instruction is its own operand",
			"HloModule m\nENTRY e {\n  p = f32[4] parameter(0)\n  ROOT a = f32[4] add(p, a)\n}",
			"in.hlo:4:8: a is its own operand (operand 1)"},
		{"while without condition and body",
			"HloModule m\nENTRY e {\n  p = (s32[], f32[]) parameter(0)\n  ROOT w = (s32[], f32[]) while(p)\n}",
			"in.hlo:4:8: while w needs condition= and body="},
		{"conditional without branches",
			"HloModule m\nENTRY e {\n  i = s32[] parameter(0)\n  ROOT c = f32[] conditional(i)\n}",
			"in.hlo:4:8: conditional c has no branch computations"},
		{"size beyond int64",
			"HloModule m\nENTRY e {\n  p = f32[4] parameter(0)\n  ROOT b = f32[4611686018427387904,4] broadcast(p), dimensions={1}\n}",
			"in.hlo:4:8: b: size of shape f32[4611686018427387904,4] overflows int64"},
		{"unbounded dimension",
			"HloModule m\nENTRY e {\n  p = f32[?] parameter(0)\n  ROOT n = f32[?] negate(p)\n}",
			"in.hlo:3:3: p: unbounded dynamic shape f32[?]: its size is unknown"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := hlo.ParseModule("in.hlo", tc.src)
			require.NoError(t, err)
			_, err = Analyze(m, Options{})
			require.Error(t, err, "no error; want %q", tc.want)
			require.IsType(t, hlo.ErrorList{}, err, "got a %T, want an hlo.ErrorList of positioned errors", err)
			require.Equal(t, tc.want, strings.Split(err.Error(), "\n")[0])
		})
	}
}

// TestDemoWhileWithoutComputations is the report of issue 9: the demo
// module with ", condition=%cond, body=%body" removed.
func TestDemoWhileWithoutComputations(t *testing.T) {
	b, err := os.ReadFile("../testdata/demo.hlo")
	require.NoError(t, err)
	src := strings.Replace(string(b), ", condition=%cond, body=%body", "", 1)
	m, err := hlo.ParseModule("demo.hlo", src)
	require.NoError(t, err)
	_, err = Analyze(m, Options{})
	require.Error(t, err, "want the while's position and what it lacks")
	require.True(t, strings.HasPrefix(err.Error(), "demo.hlo:52:3: while loop needs condition= and body="), "got %v, want the while's position and what it lacks", err)
}

// TestScheduleOnUnverifiedModule: schedule code given a module that was
// never verified (an operand left undefined by code, an instruction that
// is its own operand) reports it and does not panic.
func TestScheduleOnUnverifiedModule(t *testing.T) {
	m, err := hlo.ParseModule("in.hlo", "HloModule m\nENTRY e {\n  p = f32[4] parameter(0)\n  a = f32[4] negate(p)\n  ROOT b = f32[4] add(a, b)\n}")
	require.NoError(t, err)
	require.ErrorContains(t, ModuleOrder(m).Validate(m, nil), "runs b before its operand b", "self operand")
	a := m.Entry.Instruction("a")
	a.Operands[0] = nil
	for _, s := range []*Schedule{ModuleOrder(m), PostOrder(m)} {
		require.ErrorContains(t, s.Validate(m, nil), "a has an undefined operand", "%s: undefined operand", s.Name)
	}
	s := NewSchedule("broken")
	s.Set(m.Entry, []*hlo.Instruction{nil, a, m.Entry.Root})
	require.ErrorContains(t, s.Validate(m, nil), "nil instruction", "nil instruction")
	seq := s.Sequence(nil)
	require.Nil(t, seq, "Sequence(nil) = %v, want nil", seq)
	_, err = Analyze(m, Options{})
	require.ErrorContains(t, err, "in.hlo:4:3: a: operand 0 is undefined", "Analyze")
}

// TestAnalyzeBoundsValues: a tuple nested d deep returned whole from a
// parameter is copied level by level, which gives Θ(d²) subshape
// positions. Past MaxValues Analyze refuses it (it used to run for minutes
// and take 24 GB at d = 10,000); below, it analyses as before.
func TestAnalyzeBoundsValues(t *testing.T) {
	nest := func(d int) string {
		return "HloModule deep\nENTRY e {\n  ROOT p = " + strings.Repeat("(", d) + "f32[4]" + strings.Repeat(")", d) + " parameter(0)\n}\n"
	}
	parse := func(src string) *hlo.Module {
		mods, err := hlo.Parse("deep.hlo", []byte(src))
		require.NoError(t, err)
		return mods[0]
	}

	_, err := prepare(parse(nest(6000)))
	require.ErrorContains(t, err, "subshape positions", "depth 6000: want the MaxValues refusal")

	m := parse(nest(50))
	a, err := prepare(m)
	require.NoError(t, err)
	// 50 get-tuple-elements and 50 tuples rebuild the root around one copy.
	require.Equal(t, 1+50+1+50, m.NumInstructions(), "instructions after copy insertion")
	// Renumber counts shared tuple arrays once: positions still add up.
	sum := 0
	m.Instructions(func(in *hlo.Instruction) {
		require.Equal(t, sum, in.FirstValue, "%s: FirstValue", in.Name)
		sum += in.Shape.NumSubshapes()
	})
	require.Equal(t, sum, m.NumValues(), "NumValues")
	require.NotEmpty(t, a.Values, "no values")
}
