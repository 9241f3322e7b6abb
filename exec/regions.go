package exec

import "slices"

// Region is a live allocation of a Memory: where it starts and how many
// bytes it has. The memory models (gpu.Memory, tpu.HBM) keep theirs in a
// slice sorted by address and look them up with FindRegion and
// InRegion.
type Region interface {
	Bounds() (addr, size int64)
}

// FindRegion returns the index of the region of rs (sorted by address)
// based at addr, or where one based there would go.
func FindRegion[R Region](rs []R, addr int64) (int, bool) {
	return slices.BinarySearchFunc(rs, addr, func(r R, addr int64) int {
		a, _ := r.Bounds()
		switch {
		case a < addr:
			return -1
		case a > addr:
			return 1
		}
		return 0
	})
}

// InRegion reports whether the n bytes at addr lie within one region of
// rs (sorted by address); no bytes always do.
func InRegion[R Region](rs []R, addr int64, n int) bool {
	if n == 0 {
		return true
	}
	i, ok := FindRegion(rs, addr)
	if !ok {
		i-- // the last region based below addr
	}
	if i < 0 {
		return false
	}
	a, size := rs[i].Bounds()
	return addr >= a && int64(n) <= a+size-addr
}
