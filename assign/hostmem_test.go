package assign

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/hlomem/hlomem/hlo"
	"github.com/stretchr/testify/require"
)

// A parameter in host memory (S(5)) and a temp copied to host memory are
// planned in allocations of color 5, apart from the device's: XLA's
// BufferAssigner::DefaultColorer (xla/service/buffer_assignment.h) colors
// a value by its layout's memory_space, and BufferAllocation::AddAssignment
// (xla/service/buffer_assignment.cc) CHECKs that a buffer's color is its
// allocation's. TotalBytes keeps every color ("Total bytes used" counts
// all allocations); HostBytes is the color-5 part and DeviceBytes the rest.
func TestHostMemorySpaceStats(t *testing.T) {
	m, err := hlo.ParseModule("host.hlo", `HloModule host, is_scheduled=true

ENTRY main {
  p0 = f32[64,64]{1,0:S(5)} parameter(0)
  p1 = f32[16]{0} parameter(1)
  d = f32[64,64]{1,0} copy(p0)
  n = f32[16]{0} negate(p1)
  h = f32[16]{0:S(5)} copy(n)
  back = f32[16]{0} copy(h)
  e = f32[64,64]{1,0} exponential(d)
  ROOT t = (f32[64,64]{1,0}, f32[16]{0}) tuple(e, back)
}
`)
	require.NoError(t, err)
	as, err := Assign(context.Background(), analyze(t, m), Options{})
	require.NoError(t, err)
	require.NoError(t, Check(as))
	var host, device int64
	for _, al := range as.Allocations {
		for _, s := range al.Slots {
			require.Equal(t, s.Value.Shape.MemorySpace(), al.Color, "value %s in allocation %d", s.Value.Name(), al.Index)
		}
		if al.Color == HostMemorySpace {
			host += al.Size
		} else {
			device += al.Size
		}
	}
	st := as.Stats
	require.Equal(t, int64(64*64*4+16*4), host, "p0 and h in host memory")
	require.Equal(t, host, st.HostBytes)
	require.Equal(t, device, st.DeviceBytes)
	require.Equal(t, st.TotalBytes, st.HostBytes+st.DeviceBytes)

	var buf bytes.Buffer
	require.NoError(t, as.WriteJSON(&buf))
	var j struct {
		Stats map[string]int64 `json:"stats"`
	}
	require.NoError(t, json.Unmarshal(buf.Bytes(), &j))
	require.Equal(t, st.HostBytes, j.Stats["host_bytes"])
	require.Equal(t, st.DeviceBytes, j.Stats["device_bytes"])
}

// A plan with nothing in host memory prints no host figures: its JSON
// stays what it was before host memory was counted apart.
func TestDeviceOnlyStatsJSON(t *testing.T) {
	m, err := hlo.ParseModule("dev.hlo", `HloModule dev

ENTRY main {
  p = f32[16]{0} parameter(0)
  ROOT n = f32[16]{0} negate(p)
}
`)
	require.NoError(t, err)
	as, err := Assign(context.Background(), analyze(t, m), Options{})
	require.NoError(t, err)
	require.Equal(t, int64(0), as.Stats.HostBytes)
	require.Equal(t, as.Stats.TotalBytes, as.Stats.DeviceBytes)
	var buf bytes.Buffer
	require.NoError(t, as.WriteJSON(&buf))
	require.NotContains(t, buf.String(), "host_bytes")
	require.NotContains(t, buf.String(), "device_bytes")
}
