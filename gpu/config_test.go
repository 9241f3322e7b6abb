package gpu

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func env(kv map[string]string) func(string) string {
	return func(k string) string { return kv[k] }
}

func TestConfigFromEnv(t *testing.T) {
	def := DefaultConfig()
	require.Equal(t, ClientConfig{Preallocate: true, MemFraction: 0.75, Allocator: BFCKind}, def)
	for _, tc := range []struct {
		name string
		env  map[string]string
		want ClientConfig
		err  string
	}{
		{name: "unset", want: def},
		{name: "prealloc false", env: map[string]string{EnvPreallocate: "false"}, want: ClientConfig{MemFraction: 0.75, Allocator: BFCKind}},
		{name: "prealloc False", env: map[string]string{EnvPreallocate: "False"}, want: ClientConfig{MemFraction: 0.75, Allocator: BFCKind}},
		{name: "prealloc 0", env: map[string]string{EnvPreallocate: "0"}, want: ClientConfig{MemFraction: 0.75, Allocator: BFCKind}},
		{name: "prealloc true", env: map[string]string{EnvPreallocate: "true"}, want: def},
		{name: "prealloc 1", env: map[string]string{EnvPreallocate: "1"}, want: def},
		{name: "new fraction", env: map[string]string{EnvMemFraction: ".5"}, want: ClientConfig{Preallocate: true, MemFraction: 0.5, Allocator: BFCKind}},
		{name: "old fraction", env: map[string]string{EnvOldMemFraction: "0.9"}, want: ClientConfig{Preallocate: true, MemFraction: 0.9, Allocator: BFCKind}},
		{name: "fraction 1", env: map[string]string{EnvMemFraction: "1"}, want: ClientConfig{Preallocate: true, MemFraction: 1, Allocator: BFCKind}},
		{name: "both fractions", env: map[string]string{EnvMemFraction: ".5", EnvOldMemFraction: ".6"},
			err: `gpu: both XLA_CLIENT_MEM_FRACTION=".5" and XLA_PYTHON_CLIENT_MEM_FRACTION=".6" are set; set only XLA_CLIENT_MEM_FRACTION`},
		{name: "fraction 0", env: map[string]string{EnvMemFraction: "0"}, err: `gpu: XLA_CLIENT_MEM_FRACTION="0" must be above 0`},
		{name: "fraction negative", env: map[string]string{EnvOldMemFraction: "-0.1"}, err: `gpu: XLA_PYTHON_CLIENT_MEM_FRACTION="-0.1" must be above 0`},
		{name: "fraction over 1", env: map[string]string{EnvMemFraction: "1.5"}, err: `gpu: XLA_CLIENT_MEM_FRACTION="1.5" is above 1; that needs unified memory (TF_FORCE_UNIFIED_MEMORY=1)`},
		{name: "fraction over 1 unified", env: map[string]string{EnvMemFraction: "1.5", EnvUnifiedMemory: "1"},
			want: ClientConfig{Preallocate: true, MemFraction: 1.5, Allocator: BFCKind, UnifiedMemory: true}},
		{name: "fraction nan", env: map[string]string{EnvMemFraction: "NaN"}, err: `gpu: XLA_CLIENT_MEM_FRACTION="NaN" is not a number`},
		{name: "fraction text", env: map[string]string{EnvOldMemFraction: "half"}, err: `gpu: XLA_PYTHON_CLIENT_MEM_FRACTION="half" is not a number`},
		{name: "allocator default", env: map[string]string{EnvAllocator: "default"}, want: def},
		{name: "allocator bfc", env: map[string]string{EnvAllocator: "bfc"}, want: def},
		{name: "allocator platform", env: map[string]string{EnvAllocator: "platform"}, want: ClientConfig{Preallocate: true, MemFraction: 0.75, Allocator: Platform}},
		{name: "allocator cuda_async", env: map[string]string{EnvAllocator: "cuda_async"}, want: ClientConfig{Preallocate: true, MemFraction: 0.75, Allocator: CudaAsync}},
		{name: "allocator unknown", env: map[string]string{EnvAllocator: "tlsf"},
			err: `gpu: XLA_PYTHON_CLIENT_ALLOCATOR="tlsf" is not an allocator (want default, platform, bfc or cuda_async)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ConfigFromEnv(env(tc.env))
			if tc.err != "" {
				require.EqualError(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestDevices(t *testing.T) {
	for name, want := range map[string]int64{
		"a100-40gb": 40960 << 20, "a100-80gb": 81920 << 20, "a100": 81920 << 20,
		"h100": 81559 << 20, "H100-80GB": 81559 << 20, "h200": 143771 << 20,
		"custom:16GiB": 16 << 30, "custom:1024": 1024, "custom:2 mb": 2 << 20,
	} {
		d, err := DeviceByName(name)
		require.NoError(t, err, name)
		require.Equal(t, want, d.Memory, name)
	}
	for _, bad := range []string{"v100", "custom:", "custom:0", "custom:-5GiB", "custom:9999999999TiB"} {
		_, err := DeviceByName(bad)
		require.Error(t, err, bad)
	}
	// JAX's default limit on an A100 80 GB: 75% of total memory.
	require.Equal(t, int64(0.75*float64(81920<<20)), DefaultConfig().Limit(A100_80GB))
}
