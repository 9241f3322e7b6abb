package sysmem

import (
	"runtime"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"
)

const meminfo = "MemTotal:       24731708 kB\nMemFree:        22158120 kB\n"

func file(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }

func TestTotal(t *testing.T) {
	machine := int64(24731708) << 10
	for _, tc := range []struct {
		name  string
		files fstest.MapFS
		want  Memory
	}{
		{"machine only", fstest.MapFS{"proc/meminfo": file(meminfo)}, Memory{machine, SourceMachine}},
		{"nothing", fstest.MapFS{}, Memory{}},
		{"bad meminfo", fstest.MapFS{"proc/meminfo": file("MemTotal: lots\n")}, Memory{}},
		{"v2 limit", fstest.MapFS{
			"proc/meminfo":     file(meminfo),
			"proc/self/cgroup": file("0::/user.slice/job\n"),
			"sys/fs/cgroup/user.slice/job/memory.max": file("8589934592\n"),
		}, Memory{8 << 30, SourceCgroup}},
		{"v2 max is no limit", fstest.MapFS{
			"proc/meminfo":                 file(meminfo),
			"proc/self/cgroup":             file("0::/job\n"),
			"sys/fs/cgroup/job/memory.max": file("max\n"),
		}, Memory{machine, SourceMachine}},
		{"v2 parent's limit is lower", fstest.MapFS{
			"proc/meminfo":                 file(meminfo),
			"proc/self/cgroup":             file("0::/a/b\n"),
			"sys/fs/cgroup/a/b/memory.max": file("max\n"),
			"sys/fs/cgroup/a/memory.max":   file("1073741824\n"),
		}, Memory{1 << 30, SourceCgroup}},
		{"v2 in a container: the mount's root", fstest.MapFS{
			"proc/meminfo":             file(meminfo),
			"proc/self/cgroup":         file("0::/outside/path\n"),
			"sys/fs/cgroup/memory.max": file("2147483648\n"),
		}, Memory{2 << 30, SourceCgroup}},
		{"v1 limit", fstest.MapFS{
			"proc/meminfo":     file(meminfo),
			"proc/self/cgroup": file("5:cpu,cpuacct:/\n4:memory:/process_api/x\n0::/\n"),
			"sys/fs/cgroup/memory/process_api/x/memory.limit_in_bytes": file("4294967296\n"),
			"sys/fs/cgroup/memory/memory.limit_in_bytes":               file("9223372036854771712\n"),
		}, Memory{4 << 30, SourceCgroup}},
		{"v1 unlimited", fstest.MapFS{
			"proc/meminfo":     file(meminfo),
			"proc/self/cgroup": file("4:memory:/process_api/x\n"),
			"sys/fs/cgroup/memory/process_api/x/memory.limit_in_bytes": file("9223372036854771712\n"),
		}, Memory{machine, SourceMachine}},
		{"limit above the machine", fstest.MapFS{
			"proc/meminfo":                 file(meminfo),
			"proc/self/cgroup":             file("0::/job\n"),
			"sys/fs/cgroup/job/memory.max": file("68719476736\n"),
		}, Memory{machine, SourceMachine}},
		{"cgroup without meminfo", fstest.MapFS{
			"proc/self/cgroup":             file("0::/job\n"),
			"sys/fs/cgroup/job/memory.max": file("68719476736\n"),
		}, Memory{64 << 30, SourceCgroup}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, total(tc.files))
		})
	}
}

// TestTotalHere: on Linux this machine's figure is positive.
func TestTotalHere(t *testing.T) {
	if runtime.GOOS != "linux" {
		require.Equal(t, Memory{}, Total())
		return
	}
	m := Total()
	require.Positive(t, m.Bytes)
	require.NotEmpty(t, m.Source)
}
