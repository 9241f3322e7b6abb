package hlo

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// parseAndVerify parses src and verifies every module, returning the first
// failure.
func parseAndVerify(src string) error {
	mods, err := ParseString("bad.hlo", src)
	if err != nil {
		return err
	}
	for _, m := range mods {
		if err := Verify(m); err != nil {
			return err
		}
	}
	return nil
}

// TestBadInput holds every kind of bad input to the exact FILE:LINE:COL
// message it must produce.
func TestBadInput(t *testing.T) {
	tests := []struct {
		name, src, want string
	}{
		{"unknown operand", "HloModule m\nENTRY e {\n  p = f32[2] parameter(0)\n  ROOT n = f32[2] negate(q)\n}",
			"bad.hlo:4:26: unknown operand %q"},
		{"duplicate instruction name", "HloModule m\nENTRY e {\n  p = f32[2] parameter(0)\n  p = f32[2] negate(p)\n}",
			"bad.hlo:4:3: duplicate instruction name p (first defined at 3:3)"},
		{"duplicate computation name", "HloModule m\nc {\n  ROOT p = f32[] parameter(0)\n}\nc {\n  ROOT p = f32[] parameter(0)\n}\nENTRY e {\n  ROOT p = f32[] parameter(0)\n}",
			"bad.hlo:5:1: duplicate computation name c (first defined at 2:1)"},
		{"unterminated brace", "HloModule m\nENTRY e {\n  p = f32[2] parameter(0)\n",
			"bad.hlo:2:9: computation e has no closing '}'"},
		{"bad shape", "HloModule m\nENTRY e {\n  p = f32[2,x] parameter(0)\n}",
			`bad.hlo:3:13: expected dimension size, found "x"`},
		{"negative dimension", "HloModule m\nENTRY e {\n  p = f32[-2] parameter(0)\n}",
			"bad.hlo:3:11: dimension size -2 is negative"},
		{"bad layout (repeated dimension)", "HloModule m\nENTRY e {\n  p = f32[2,3]{1,1} parameter(0)\n}",
			"bad.hlo:3:7: bad layout {1,1}: dimension 1 repeated"},
		{"bad layout (rank)", "HloModule m\nENTRY e {\n  p = f32[2,3]{0} parameter(0)\n}",
			"bad.hlo:3:7: bad layout {0}: 1 minor-to-major entries for 2 dimensions"},
		{"bad layout (tile)", "HloModule m\nENTRY e {\n  p = f32[2,3]{1,0:T(8,x)} parameter(0)\n}",
			`bad.hlo:3:7: bad layout {1,0:T(8,x)}: bad tile dimension "x"`},
		{"unknown element type", "HloModule m\nENTRY e {\n  p = f31[2] parameter(0)\n}",
			`bad.hlo:3:7: unknown element type "f31"`},
		{"missing entry (no computations)", "HloModule m\n",
			"bad.hlo:1:1: module m has no computations"},
		{"no module at all", "// RUN: nothing here\n",
			"bad.hlo:1:1: no HLO module in file"},
		{"two entries", "HloModule m\nENTRY a {\n  ROOT p = f32[] parameter(0)\n}\nENTRY b {\n  ROOT p = f32[] parameter(0)\n}",
			"bad.hlo:5:7: module has more than one ENTRY computation (a and b)"},
		{"unknown called computation", "HloModule m\nENTRY e {\n  p = f32[2] parameter(0)\n  ROOT f = f32[2] fusion(p), kind=kLoop, calls=nowhere\n}",
			"bad.hlo:4:48: unknown computation %nowhere in calls="},
		{"dependency cycle", "HloModule m\nENTRY e {\n  p = f32[2] parameter(0)\n  a = f32[2] add(p, c)\n  b = f32[2] negate(a)\n  c = f32[2] negate(b)\n  ROOT r = f32[2] add(c, p)\n}",
			"bad.hlo:4:3: dependency cycle in computation e: %a -> %b -> %c -> %a"},
		{"call cycle", "HloModule m\na {\n  x = f32[] parameter(0)\n  ROOT c = f32[] call(x), to_apply=b\n}\nb {\n  y = f32[] parameter(0)\n  ROOT c = f32[] call(y), to_apply=a\n}\nENTRY e {\n  p = f32[] parameter(0)\n  ROOT r = f32[] call(p), to_apply=a\n}",
			"bad.hlo:8:8: computation call cycle: %a -> %b -> %a"},
		{"parameter gap", "HloModule m\nENTRY e {\n  p0 = f32[2] parameter(0)\n  p2 = f32[2] parameter(2)\n  ROOT r = f32[2] add(p0, p2)\n}",
			"bad.hlo:4:3: computation e has 2 parameters but no parameter(1)"},
		{"parameter repeated", "HloModule m\nENTRY e {\n  p0 = f32[2] parameter(0)\n  p1 = f32[2] parameter(0)\n  ROOT r = f32[2] add(p0, p1)\n}",
			"bad.hlo:4:3: parameter number 0 is used twice in computation e (p0 and p1)"},
		{"wrong arity", "HloModule m\nENTRY e {\n  p = f32[2] parameter(0)\n  ROOT r = f32[2] add(p)\n}",
			"bad.hlo:4:8: add r takes 2 operands, got 1"},
		{"size overflow", "HloModule m\nENTRY e {\n  ROOT p = f32[4611686018427387904,4] parameter(0)\n}",
			"bad.hlo:3:8: p: size of shape f32[4611686018427387904,4] overflows int64"},
		{"dimension overflow", "HloModule m\nENTRY e {\n  ROOT p = f32[99999999999999999999] parameter(0)\n}",
			"bad.hlo:3:16: dimension size 99999999999999999999 does not fit in int64"},
		{"unterminated string", "HloModule m\nENTRY e {\n  ROOT p = f32[2] parameter(0), metadata={op_name=\"abc\n}",
			"bad.hlo:3:51: unterminated string"},
		{"two roots", "HloModule m\nENTRY e {\n  ROOT p = f32[2] parameter(0)\n  ROOT n = f32[2] negate(p)\n}",
			"bad.hlo:4:8: computation e has more than one ROOT (p and n)"},
		{"tuple index out of range", "HloModule m\nENTRY e {\n  p = (f32[2], s32[]) parameter(0)\n  ROOT g = f32[2] get-tuple-element(p), index=2\n}",
			"bad.hlo:4:8: get-tuple-element g: index 2 out of range for a tuple of 2 elements"},
		{"tuple access on an array", "HloModule m\nENTRY e {\n  p = f32[] parameter(0)\n  ROOT g = f32[] get-tuple-element(p), index=0\n}",
			"bad.hlo:4:8: get-tuple-element g: operand p is not a tuple (shape f32[])"},
		{"element-wise dimensions", "HloModule m\nENTRY e {\n  p = f32[2] parameter(0)\n  q = f32[3] parameter(1)\n  ROOT r = f32[2] add(p, q)\n}",
			"bad.hlo:5:8: element-wise add r: operand 1 (q) has dimensions [3], want [2]"},
		{"constant value count", "HloModule m\nENTRY e {\n  ROOT c = f32[3] constant({1, 2})\n}",
			"bad.hlo:3:27: constant of shape f32[3] needs 3 values, literal has 2"},
		{"missing '='", "HloModule m\nENTRY e {\n  p f32[2] parameter(0)\n}",
			`bad.hlo:3:5: expected '=' after instruction name p, found "f32"`},
		{"bad string escape", "HloModule m\nENTRY e {\n  ROOT p = f32[] parameter(0), metadata={op_name=\"a\\qb\"}\n}",
			`bad.hlo:3:50: bad string "a\qb": unknown escape \q`},
		{"fusion argument count", "HloModule m\nf {\n  ROOT x = f32[] parameter(0)\n}\nENTRY e {\n  p = f32[] parameter(0)\n  ROOT r = f32[] fusion(p, p), kind=kLoop, calls=f\n}",
			"bad.hlo:7:8: fusion r passes 2 operands to f, which takes 1 parameters"},
		{"input_output_alias parameter", "HloModule m, input_output_alias={ {}: (3, {}, may-alias) }\nENTRY e {\n  ROOT p = f32[2] parameter(0)\n}",
			"bad.hlo:1:1: input_output_alias names parameter 3, but the entry has 1 parameters"},
		{"bad alias kind", "HloModule m, input_output_alias={ {}: (0, {}, maybe) }\nENTRY e {\n  ROOT p = f32[2] parameter(0)\n}",
			`bad.hlo:1:47: alias kind must be may-alias or must-alias, found "maybe"`},
		{"unbalanced attribute", "HloModule m\nENTRY e {\n  ROOT p = f32[2] parameter(0), sharding={replicated]\n}",
			"bad.hlo:3:53: unbalanced ']' in attribute value"},
		{"stray character", "HloModule m\nENTRY e {\n  ROOT p = f32[2] parameter(0) @\n}",
			"bad.hlo:3:32: expected instruction name, found '@'"},
		{"shape cannot be inferred", "HloModule m\nENTRY e {\n  p = f32[2] parameter(0)\n  ROOT r = dot(p, p)\n}",
			"bad.hlo:4:8: cannot infer the shape of dot r; write its shape"},
	}
	seen := map[string]bool{}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.False(t, seen[tc.want], "two cases expect the same message %q", tc.want)
			seen[tc.want] = true
			err := parseAndVerify(tc.src)
			require.Error(t, err, "want %q", tc.want)
			require.Equal(t, tc.want, strings.Split(err.Error(), "\n")[0])
		})
	}
	require.GreaterOrEqual(t, len(tests), 15, "kinds of bad input covered")
}

// TestErrorsSorted checks that several reference errors come back together,
// ordered by position.
func TestErrorsSorted(t *testing.T) {
	src := "HloModule m\nENTRY e {\n  p = f32[2] parameter(0)\n  a = f32[2] negate(zz)\n  ROOT b = f32[2] add(yy, p)\n}"
	_, err := ParseString("x.hlo", src)
	var list ErrorList
	require.ErrorAs(t, err, &list)
	require.Len(t, list, 2)
	require.EqualError(t, err, "x.hlo:4:21: unknown operand %zz\nx.hlo:5:23: unknown operand %yy")
}
