// Package sysmem reads how much memory this process may use: the
// machine's memory, or the memory limit of the control group (container)
// the process runs in when that is lower. It reads Linux's /proc and
// /sys/fs/cgroup files, and knows nothing on other systems.
package sysmem

import (
	"bufio"
	"bytes"
	"io/fs"
	"math"
	"os"
	"path"
	"runtime"
	"strconv"
	"strings"
)

// Memory is how much memory the process may use and where that figure
// comes from.
type Memory struct {
	// Bytes is the memory, 0 when unknown.
	Bytes int64
	// Source says where Bytes comes from: "this machine's memory" (Linux's
	// MemTotal) or "the cgroup's memory limit"; "" when unknown.
	Source string
}

// Sources of a Memory.
const (
	SourceMachine = "this machine's memory"
	SourceCgroup  = "the cgroup's memory limit"
)

// Total returns the memory this process may use: the machine's total
// memory or, when lower, the limit of its memory cgroup (v1 or v2, and of
// every cgroup above it). Bytes is 0 when neither can be read (on systems
// other than Linux, or without /proc).
func Total() Memory {
	if runtime.GOOS != "linux" {
		return Memory{}
	}
	return total(os.DirFS("/"))
}

// total is Total on the file system fsys, rooted where / is.
func total(fsys fs.FS) Memory {
	var m Memory
	if b, ok := memTotal(fsys); ok {
		m = Memory{Bytes: b, Source: SourceMachine}
	}
	if b, ok := cgroupLimit(fsys); ok && (m.Bytes == 0 || b < m.Bytes) {
		m = Memory{Bytes: b, Source: SourceCgroup}
	}
	return m
}

// memTotal reads MemTotal of /proc/meminfo.
func memTotal(fsys fs.FS) (int64, bool) {
	b, err := fs.ReadFile(fsys, "proc/meminfo")
	if err != nil {
		return 0, false
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		v, ok := strings.CutPrefix(sc.Text(), "MemTotal:")
		if !ok {
			continue
		}
		f := strings.Fields(v)
		if len(f) != 2 || f[1] != "kB" {
			return 0, false
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil || n <= 0 || n > math.MaxInt64>>10 {
			return 0, false
		}
		return n << 10, true
	}
	return 0, false
}

// cgroupLimit returns the lowest memory limit of the process's cgroup and
// of the cgroups above it, v2 (memory.max) or v1
// (memory.limit_in_bytes); ok is false when there is none.
func cgroupLimit(fsys fs.FS) (int64, bool) {
	b, err := fs.ReadFile(fsys, "proc/self/cgroup")
	if err != nil {
		return 0, false
	}
	limit, found := int64(math.MaxInt64), false
	take := func(n int64, ok bool) {
		if ok && n < limit {
			limit, found = n, true
		}
	}
	for _, line := range strings.Split(string(b), "\n") {
		// hierarchy-ID:controller-list:path
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 || !strings.HasPrefix(f[2], "/") {
			continue
		}
		switch {
		case f[0] == "0" && f[1] == "":
			// v2, mounted at /sys/fs/cgroup or, beside v1, at
			// /sys/fs/cgroup/unified.
			for _, mnt := range []string{"sys/fs/cgroup", "sys/fs/cgroup/unified"} {
				take(walkUp(fsys, mnt, f[2], "memory.max"))
			}
		case hasController(f[1], "memory"):
			take(walkUp(fsys, "sys/fs/cgroup/memory", f[2], "memory.limit_in_bytes"))
		}
	}
	return limit, found
}

func hasController(list, name string) bool {
	for _, c := range strings.Split(list, ",") {
		if c == name {
			return true
		}
	}
	return false
}

// walkUp returns the lowest limit in file of cgroup dir (a path under the
// mount mnt) and of its ancestors. Inside a container the path seen in
// /proc/self/cgroup may not exist under the mount (the container's own
// cgroup is the mount's root), so the mount's root is read too.
func walkUp(fsys fs.FS, mnt, dir, file string) (int64, bool) {
	limit, found := int64(math.MaxInt64), false
	for d := path.Clean(dir); ; d = path.Dir(d) {
		if n, ok := readLimit(fsys, path.Join(mnt, d, file)); ok && n < limit {
			limit, found = n, true
		}
		if d == "/" || d == "." {
			break
		}
	}
	return limit, found
}

// readLimit reads a limit file: a byte count, or "max" (no limit). Counts
// of 2^62 bytes or more mean no limit too (v1 writes its "unlimited" as
// the largest page-aligned int64).
func readLimit(fsys fs.FS, name string) (int64, bool) {
	b, err := fs.ReadFile(fsys, name)
	if err != nil {
		return 0, false
	}
	s := strings.TrimSpace(string(b))
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 || n >= 1<<62 {
		return 0, false
	}
	return n, true
}
