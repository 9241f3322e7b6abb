package hlo

import "runtime"

// runtimeMemStats measures bytes allocated between start and allocatedSince.
type runtimeMemStats struct{ before uint64 }

func (m *runtimeMemStats) start() {
	var s runtime.MemStats
	runtime.ReadMemStats(&s)
	m.before = s.TotalAlloc
}

func (m *runtimeMemStats) allocatedSince() uint64 {
	var s runtime.MemStats
	runtime.ReadMemStats(&s)
	return s.TotalAlloc - m.before
}
