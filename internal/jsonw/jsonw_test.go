package jsonw

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestMatchesEncodingJSON writes the same document with Writer and with
// encoding/json's Encoder (SetIndent("", "  ")) and compares the bytes.
func TestMatchesEncodingJSON(t *testing.T) {
	strs := []string{"", "plain", "a<b>&c", "quote\"back\\slash", "tab\tnew\nline\x01", "ünï", "\u2028", "bad\xffutf8", "%custom-call.1{0}"}
	type obj struct {
		Name  string   `json:"name"`
		N     int64    `json:"n"`
		Neg   int64    `json:"neg"`
		Ok    bool     `json:"ok"`
		Empty []int64  `json:"empty"`
		Ints  []int64  `json:"ints"`
		Strs  []string `json:"strs"`
		Inner struct{} `json:"inner"`
		Nil   *int64   `json:"nil"`
	}
	var want bytes.Buffer
	enc := json.NewEncoder(&want)
	enc.SetIndent("", "  ")
	var objs []obj
	for i, s := range strs {
		objs = append(objs, obj{Name: s, N: int64(i) << 40, Neg: -int64(i), Ok: i%2 == 0, Empty: []int64{}, Ints: []int64{1, 2, 3}, Strs: strs[:i]})
	}
	require.NoError(t, enc.Encode(map[string]any{"objs": objs, "none": []obj{}}))

	var got bytes.Buffer
	j := New(&got)
	j.BeginObject()
	j.Key("none")
	j.BeginArray()
	j.EndArray()
	j.Key("objs")
	j.BeginArray()
	for _, o := range objs {
		j.BeginObject()
		j.Key("name")
		j.String(o.Name)
		j.Key("n")
		j.Int(o.N)
		j.Key("neg")
		j.Int(o.Neg)
		j.Key("ok")
		j.Bool(o.Ok)
		j.Key("empty")
		j.Ints(o.Empty)
		j.Key("ints")
		j.Ints(o.Ints)
		j.Key("strs")
		j.BeginArray()
		for _, s := range o.Strs {
			j.String(s)
		}
		j.EndArray()
		j.Key("inner")
		j.BeginObject()
		j.EndObject()
		j.Key("nil")
		j.Null()
		j.EndObject()
	}
	j.EndArray()
	j.EndObject()
	require.NoError(t, j.Close())
	require.Equal(t, want.String(), got.String())
}

// TestFloat: finite numbers read back as the same float64; NaN and the
// infinities, which JSON cannot hold, become null.
func TestFloat(t *testing.T) {
	vals := []float64{0, 1, -2.5, 12.8, 1.0 / 3, 1e-300, 6.02214076e23, 68.26666666666667}
	var b bytes.Buffer
	j := New(&b)
	j.BeginArray()
	for _, f := range vals {
		j.Float(f)
	}
	j.Float(math.NaN())
	j.Float(math.Inf(-1))
	j.EndArray()
	require.NoError(t, j.Close())
	var got []*float64
	require.NoError(t, json.Unmarshal(b.Bytes(), &got))
	require.Len(t, got, len(vals)+2)
	for i, f := range vals {
		require.NotNil(t, got[i])
		require.Equal(t, f, *got[i])
	}
	require.Nil(t, got[len(vals)])
	require.Nil(t, got[len(vals)+1])
}
