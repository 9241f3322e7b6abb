package exec

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestHostArena(t *testing.T) {
	h := NewHostArena()
	a, err := h.Allocate(16<<30, 256) // 16 GiB: backed only where written
	require.NoError(t, err)
	require.Zero(t, a%256)
	b, err := h.Allocate(100, 64)
	require.NoError(t, err)
	require.Zero(t, b%64)
	require.GreaterOrEqual(t, b, a+16<<30)

	// Unwritten bytes read as zeros; a write across a page boundary reads back.
	buf := make([]byte, 8)
	require.NoError(t, h.ReadAt(buf, a+12345))
	require.Equal(t, make([]byte, 8), buf)
	msg := []byte("across a page boundary")
	at := a + 3*PageSize - 5
	require.NoError(t, h.WriteAt(msg, at))
	got := make([]byte, len(msg))
	require.NoError(t, h.ReadAt(got, at))
	require.Equal(t, msg, got)
	require.LessOrEqual(t, h.pages.Len(), 2)

	// Outside every region, or across a region's end: refused.
	require.True(t, errors.Is(h.WriteAt([]byte{1}, b+100), ErrOutOfBounds))
	require.True(t, errors.Is(h.ReadAt(make([]byte, 2), b+99), ErrOutOfBounds))
	require.Error(t, h.ReadAt(make([]byte, 1), -1))

	// Freed regions are gone; bad alignment and double free are errors.
	require.NoError(t, h.Free(b))
	require.Error(t, h.Free(b))
	require.True(t, errors.Is(h.ReadAt(make([]byte, 1), b), ErrOutOfBounds))
	_, err = h.Allocate(8, 3)
	require.Error(t, err)
	_, err = h.Allocate(-1, 0)
	require.Error(t, err)
}

func TestOwnerMap(t *testing.T) {
	var m ownerMap
	m.set(0, 100, 1, 10)
	m.set(40, 60, 2, 20)
	require.Len(t, m.segs, 3)
	s, gap := m.foreign(0, 40, 1)
	require.Nil(t, s)
	require.False(t, gap)
	s, _ = m.foreign(30, 50, 1)
	require.NotNil(t, s)
	require.Equal(t, int32(20), s.val)
	_, gap = m.foreign(90, 120, 1)
	require.True(t, gap)
	m.set(0, 100, 3, 30)
	require.Len(t, m.segs, 1)
	require.Equal(t, segment{0, 100, 3, 30}, m.segs[0])
}
