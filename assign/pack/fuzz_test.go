package pack

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// problemFromBytes decodes fuzz input into a small problem: 6 bytes per
// buffer (start, length, size, alignment, color, flags), then group pairs.
func problemFromBytes(data []byte) *Problem {
	p := &Problem{}
	for len(data) >= 6 && len(p.Buffers) < 24 {
		b := Buffer{
			ID:    string(rune('a' + len(p.Buffers))),
			Start: int64(data[0] % 16),
			Size:  int64(data[2] % 32),
		}
		b.End = b.Start + int64(data[1]%8)
		if data[3]&3 == 3 {
			b.Align = 1 << (data[3] >> 2 % 4)
		}
		b.Color = int(data[4] % 2)
		if data[5]&1 == 1 && b.Size > 0 {
			b.Fixed = true
			b.Offset = int64(data[5]>>1) * max(b.Align, 1)
		}
		p.Buffers = append(p.Buffers, b)
		data = data[6:]
	}
	used := make([]bool, len(p.Buffers))
	for len(data) >= 2 && len(p.Buffers) > 1 {
		a, b := int(data[0])%len(p.Buffers), int(data[1])%len(p.Buffers)
		data = data[2:]
		if a == b || used[a] || used[b] || p.Buffers[a].Color != p.Buffers[b].Color {
			continue
		}
		used[a], used[b] = true, true
		p.Groups = append(p.Groups, []int{a, b})
	}
	return p
}

// FuzzPack packs random problems with every packer: each result must pass
// Check and have heights at least the lower bounds. Problems that are
// invalid or whose fixed offsets clash must be rejected with an error, not
// a panic.
func FuzzPack(f *testing.F) {
	f.Add([]byte{0, 4, 4, 0, 0, 0, 1, 2, 2, 0, 0, 0, 3, 3, 2, 0, 0, 0, 4, 4, 4, 0, 0, 0})
	f.Add([]byte{0, 7, 9, 7, 0, 0, 2, 3, 5, 3, 1, 3, 1, 1, 1, 0, 0, 0, 0, 1})
	f.Add(bytes.Repeat([]byte{1, 5, 17, 11, 0, 0}, 12))
	f.Fuzz(func(t *testing.T, data []byte) {
		p := problemFromBytes(data)
		for _, algo := range Algorithms() {
			sol, err := Pack(context.Background(), p, Options{Algorithm: algo, Budget: 20 * time.Millisecond})
			if err != nil {
				require.Nil(t, sol, "%s: error %v with a solution", algo, err)
				continue // invalid problems, clashing fixed offsets
			}
			checkSolution(t, p, sol, algo)
		}
	})
}

// FuzzReadCSV feeds arbitrary text to the CSV reader: it must never panic;
// what it accepts must be a valid problem that writes and reads back the
// same.
func FuzzReadCSV(f *testing.F) {
	f.Add("id,lower,upper,size\na,0,4,4\nb,1,3,2\n")
	f.Add("id,lower,upper,size,alignment,offset\nx,0,10,3,,\ny,0,10,5,8,\nz,0,10,2,,20\n")
	f.Add("size,upper,id,lower\n5,9,q,2\n")
	f.Add("id,lower,upper,size\n\"a,b\",0,1,-1\na,3,2,x\n")
	f.Fuzz(func(t *testing.T, text string) {
		p, err := ReadCSV(strings.NewReader(text), "fuzz.csv")
		if err != nil {
			require.True(t, strings.HasPrefix(err.Error(), "fuzz.csv:"), "error without a position: %v", err)
			return
		}
		require.NoError(t, p.Validate(), "accepted an invalid problem")
		off := make([]int64, len(p.Buffers))
		var buf bytes.Buffer
		require.NoError(t, WriteCSV(&buf, p, Packing{off}))
		q, err := ReadCSV(&buf, "again.csv")
		// Zero offsets may break fixed alignment only if the
		// problem had no fixed buffers... they are written as
		// the offset column, so reading back fixes them at 0,
		// which is aligned; any error is a bug.
		require.NoError(t, err, "reading back:\n%s", buf.String())
		require.Len(t, q.Buffers, len(p.Buffers), "read back %d buffers, wrote %d", len(q.Buffers), len(p.Buffers))
		for i := range p.Buffers {
			a, b := p.Buffers[i], q.Buffers[i]
			require.True(t, a.ID == b.ID && a.Start == b.Start && a.End == b.End && a.Size == b.Size && max(a.Align, 1) == max(b.Align, 1),
				"buffer %d: wrote %+v, read %+v", i, a, b)
		}
	})
}
