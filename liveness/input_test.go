package liveness

import (
	"os"
	"strings"
	"testing"

	"github.com/hlomem/hlomem/hlo"
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
			"in.hlo:3:3: p: shape f32[?] has an unbounded dimension and no static size"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := hlo.ParseModule("in.hlo", tc.src)
			if err != nil {
				t.Fatal(err)
			}
			_, err = Analyze(m, Options{})
			if err == nil {
				t.Fatalf("no error; want %q", tc.want)
			}
			if _, ok := err.(hlo.ErrorList); !ok {
				t.Errorf("got a %T, want an hlo.ErrorList of positioned errors", err)
			}
			if got := strings.Split(err.Error(), "\n")[0]; got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

// TestDemoWhileWithoutComputations is the report of issue 9: the demo
// module with ", condition=%cond, body=%body" removed.
func TestDemoWhileWithoutComputations(t *testing.T) {
	b, err := os.ReadFile("../testdata/demo.hlo")
	if err != nil {
		t.Fatal(err)
	}
	src := strings.Replace(string(b), ", condition=%cond, body=%body", "", 1)
	m, err := hlo.ParseModule("demo.hlo", src)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Analyze(m, Options{})
	if err == nil || !strings.HasPrefix(err.Error(), "demo.hlo:52:3: while loop needs condition= and body=") {
		t.Fatalf("got %v, want the while's position and what it lacks", err)
	}
}

// TestScheduleOnUnverifiedModule: schedule code given a module that was
// never verified (an operand left undefined by code, an instruction that
// is its own operand) reports it and does not panic.
func TestScheduleOnUnverifiedModule(t *testing.T) {
	m, err := hlo.ParseModule("in.hlo", "HloModule m\nENTRY e {\n  p = f32[4] parameter(0)\n  a = f32[4] negate(p)\n  ROOT b = f32[4] add(a, b)\n}")
	if err != nil {
		t.Fatal(err)
	}
	if err := ModuleOrder(m).Validate(m, nil); err == nil || !strings.Contains(err.Error(), "runs b before its operand b") {
		t.Errorf("self operand: got %v", err)
	}
	a := m.Entry.Instruction("a")
	a.Operands[0] = nil
	for _, s := range []*Schedule{ModuleOrder(m), PostOrder(m)} {
		if err := s.Validate(m, nil); err == nil || !strings.Contains(err.Error(), "a has an undefined operand") {
			t.Errorf("%s: undefined operand: got %v", s.Name, err)
		}
	}
	s := NewSchedule("broken")
	s.Set(m.Entry, []*hlo.Instruction{nil, a, m.Entry.Root})
	if err := s.Validate(m, nil); err == nil || !strings.Contains(err.Error(), "nil instruction") {
		t.Errorf("nil instruction: got %v", err)
	}
	if seq := s.Sequence(nil); seq != nil {
		t.Errorf("Sequence(nil) = %v, want nil", seq)
	}
	if _, err := Analyze(m, Options{}); err == nil || !strings.Contains(err.Error(), "in.hlo:4:3: a: operand 0 is undefined") {
		t.Errorf("Analyze: got %v", err)
	}
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
		if err != nil {
			t.Fatal(err)
		}
		return mods[0]
	}

	_, err := Prepare(parse(nest(6000)), "")
	if err == nil || !strings.Contains(err.Error(), "subshape positions") {
		t.Fatalf("depth 6000: got %v, want the MaxValues refusal", err)
	}

	m := parse(nest(50))
	a, err := Prepare(m, "")
	if err != nil {
		t.Fatal(err)
	}
	// 50 get-tuple-elements and 50 tuples rebuild the root around one copy.
	if got, want := m.NumInstructions(), 1+50+1+50; got != want {
		t.Fatalf("%d instructions after copy insertion, want %d", got, want)
	}
	// Renumber counts shared tuple arrays once: positions still add up.
	sum := 0
	m.Instructions(func(in *hlo.Instruction) {
		if in.FirstValue != sum {
			t.Fatalf("%s: FirstValue %d, want %d", in.Name, in.FirstValue, sum)
		}
		sum += in.Shape.NumSubshapes()
	})
	if sum != m.NumValues() {
		t.Fatalf("NumValues %d, want %d", m.NumValues(), sum)
	}
	if len(a.Values) == 0 {
		t.Fatal("no values")
	}
}
