package gpu

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/hlomem/hlomem/internal/bytesize"
)

// Device is a GPU model: a name and its total memory in bytes.
type Device struct {
	Name   string
	Memory int64
	// HostLinkBytesPerSec is the effective bandwidth of the link between
	// host memory and the device, one direction, pinned host memory: what
	// offloading an array to host memory (XLA's S(5)) pays per byte moved.
	// 0 when unknown (custom devices). The presets take PCIe's per-direction
	// raw rate (gen4 x16 32 GB/s for the A100, gen5 x16 64 GB/s for the
	// H100 and H200) at the ~78% that host-to-device copies of pinned
	// memory reach in practice: 25 GB/s and 50 GB/s.
	HostLinkBytesPerSec float64
}

const mib = 1 << 20

// Host-link bandwidths of the presets (Device.HostLinkBytesPerSec).
const (
	PCIeGen4x16 = 25e9
	PCIeGen5x16 = 50e9
)

// Presets of common devices, with the total memory the driver reports
// (nvidia-smi's MiB figures).
var (
	A100_40GB = Device{Name: "a100-40gb", Memory: 40960 * mib, HostLinkBytesPerSec: PCIeGen4x16}
	A100_80GB = Device{Name: "a100-80gb", Memory: 81920 * mib, HostLinkBytesPerSec: PCIeGen4x16}
	H100_80GB = Device{Name: "h100-80gb", Memory: 81559 * mib, HostLinkBytesPerSec: PCIeGen5x16}
	H200      = Device{Name: "h200", Memory: 143771 * mib, HostLinkBytesPerSec: PCIeGen5x16}
)

// Devices lists the presets.
var Devices = []Device{A100_40GB, A100_80GB, H100_80GB, H200}

// DeviceByName returns the preset named name ("a100" is the 80 GB one,
// "h100" the 80 GB one), or a custom device for "custom:SIZE" where SIZE
// is a byte count with an optional KiB, MiB, GiB or TiB suffix
// ("custom:16GiB").
func DeviceByName(name string) (Device, error) {
	n := strings.ToLower(strings.TrimSpace(name))
	switch n {
	case "a100":
		return A100_80GB, nil
	case "h100":
		return H100_80GB, nil
	}
	for _, d := range Devices {
		if d.Name == n {
			return d, nil
		}
	}
	if size, ok := strings.CutPrefix(n, "custom:"); ok {
		b, err := ParseBytes(size)
		if err != nil {
			return Device{}, fmt.Errorf("gpu: device %q: %v", name, err)
		}
		if b <= 0 {
			return Device{}, fmt.Errorf("gpu: device %q: the memory size must be positive", name)
		}
		return Device{Name: "custom", Memory: b}, nil
	}
	names := make([]string, len(Devices))
	for i, d := range Devices {
		names[i] = d.Name
	}
	return Device{}, fmt.Errorf("gpu: unknown device %q (want %s, a100, h100 or custom:SIZE)", name, strings.Join(names, ", "))
}

// ParseBytes reads a byte count: digits with an optional B, KiB, MiB, GiB
// or TiB suffix (powers of 1024; KB, MB, GB and TB mean the same, as
// device memory is quoted).
func ParseBytes(s string) (int64, error) { return bytesize.Parse(s) }

// AllocatorKind names the client allocator (XLA_PYTHON_CLIENT_ALLOCATOR).
type AllocatorKind string

// The allocators JAX offers; Default is BFC.
const (
	Default   AllocatorKind = "default"
	Platform  AllocatorKind = "platform"
	BFCKind   AllocatorKind = "bfc"
	CudaAsync AllocatorKind = "cuda_async"
)

// ClientConfig is the GPU client's memory setting.
type ClientConfig struct {
	// Preallocate reserves the whole limit when the client starts.
	Preallocate bool
	// MemFraction is the share of the device's total memory the client
	// may use, in (0, 1], or above 1 with UnifiedMemory.
	MemFraction float64
	Allocator   AllocatorKind
	// UnifiedMemory lets the limit exceed the device (host memory backs
	// the rest), as TF_FORCE_UNIFIED_MEMORY does.
	UnifiedMemory bool
}

// DefaultConfig is JAX's: preallocate 75% of total memory with BFC.
func DefaultConfig() ClientConfig {
	return ClientConfig{Preallocate: true, MemFraction: 0.75, Allocator: BFCKind}
}

// Limit is the number of bytes the client may use on d: MemFraction of
// its total memory.
func (c ClientConfig) Limit(d Device) int64 {
	return int64(c.MemFraction * float64(d.Memory))
}

// Environment variables JAX and XLA read.
const (
	EnvPreallocate    = "XLA_PYTHON_CLIENT_PREALLOCATE"
	EnvMemFraction    = "XLA_CLIENT_MEM_FRACTION"
	EnvOldMemFraction = "XLA_PYTHON_CLIENT_MEM_FRACTION"
	EnvAllocator      = "XLA_PYTHON_CLIENT_ALLOCATOR"
	EnvUnifiedMemory  = "TF_FORCE_UNIFIED_MEMORY"
)

// EnvVars lists the variables ConfigFromEnv reads.
var EnvVars = []string{EnvPreallocate, EnvMemFraction, EnvOldMemFraction, EnvAllocator, EnvUnifiedMemory}

// ConfigFromEnv returns DefaultConfig changed by the environment, read
// through getenv (os.Getenv; "" is unset):
//   - XLA_PYTHON_CLIENT_PREALLOCATE: false, False or 0 (any case) turn
//     preallocation off; any other value leaves it on, as JAX does;
//   - XLA_CLIENT_MEM_FRACTION, or its older name
//     XLA_PYTHON_CLIENT_MEM_FRACTION (both set is an error): a number in
//     (0, 1], or above 1 when TF_FORCE_UNIFIED_MEMORY is true or 1;
//   - XLA_PYTHON_CLIENT_ALLOCATOR: default, platform, bfc or cuda_async.
//
// Each error names the variable and its value.
func ConfigFromEnv(getenv func(string) string) (ClientConfig, error) {
	c := DefaultConfig()
	if v := getenv(EnvPreallocate); v != "" {
		switch strings.ToLower(strings.TrimSpace(v)) {
		case "false", "0":
			c.Preallocate = false
		}
	}
	if v := strings.ToLower(strings.TrimSpace(getenv(EnvUnifiedMemory))); v == "1" || v == "true" {
		c.UnifiedMemory = true
	}
	newer, older := getenv(EnvMemFraction), getenv(EnvOldMemFraction)
	if newer != "" && older != "" {
		return ClientConfig{}, fmt.Errorf("gpu: both %s=%q and %s=%q are set; set only %s", EnvMemFraction, newer, EnvOldMemFraction, older, EnvMemFraction)
	}
	name, v := EnvMemFraction, newer
	if v == "" {
		name, v = EnvOldMemFraction, older
	}
	if v != "" {
		f, err := ParseMemFraction(name, v, c.UnifiedMemory)
		if err != nil {
			return ClientConfig{}, fmt.Errorf("gpu: %w", err)
		}
		c.MemFraction = f
	}
	if v := getenv(EnvAllocator); v != "" {
		k, err := ParseAllocator(EnvAllocator, v)
		if err != nil {
			return ClientConfig{}, fmt.Errorf("gpu: %w", err)
		}
		c.Allocator = k
	}
	return c, nil
}

// ParseMemFraction reads a memory fraction given as setting=value (an
// environment variable or a flag, which errors name): a number in (0, 1],
// or above 1 with unified memory.
func ParseMemFraction(setting, v string, unified bool) (float64, error) {
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	switch {
	case err != nil || f != f:
		return 0, fmt.Errorf("%s=%q is not a number", setting, v)
	case f <= 0:
		return 0, fmt.Errorf("%s=%q must be above 0", setting, v)
	case f > 1 && !unified:
		return 0, fmt.Errorf("%s=%q is above 1; that needs unified memory (%s=1)", setting, v, EnvUnifiedMemory)
	case f > 1e6:
		return 0, fmt.Errorf("%s=%q is too large", setting, v)
	}
	return f, nil
}

// ParseAllocator reads an allocator name given as setting=value: default
// (BFC), bfc, platform or cuda_async.
func ParseAllocator(setting, v string) (AllocatorKind, error) {
	switch k := AllocatorKind(strings.TrimSpace(v)); k {
	case Default, BFCKind:
		return BFCKind, nil
	case Platform, CudaAsync:
		return k, nil
	}
	return "", fmt.Errorf("%s=%q is not an allocator (want default, platform, bfc or cuda_async)", setting, v)
}
