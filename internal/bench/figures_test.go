package bench

import "testing"

// TestMemtableGrowth: the memtables' share of an RSS growth is their own
// growth, no more than the anonymous memory that grew beyond the Go
// runtime's and the block cache's, and never below zero.
func TestMemtableGrowth(t *testing.T) {
	const mib = 1 << 20
	const memt = `wats_db_memory_bytes{what="memtables"}`
	mem := func(anon, heap, memtables float64) map[string]float64 {
		return map[string]float64{"rss_anon": anon * mib, "go_memstats_heap_inuse_bytes": heap * mib,
			"go_memstats_heap_idle_bytes": 2 * mib, "go_memstats_heap_released_bytes": 1 * mib,
			"go_memstats_stack_inuse_bytes": 1 * mib, memt: memtables * mib}
	}
	start := mem(12, 7, 0.25)
	for _, c := range []struct {
		name  string
		after map[string]float64
		want  uint64
	}{
		{"memtables' arenas larger than what was written to", mem(24, 10, 16), 9 * mib},
		{"memtables grew less than the memory outside Go", mem(24, 10, 4.25), 4 * mib},
		{"the Go heap grew by all of it", mem(20, 15, 8), 0},
		{"less anonymous memory than at the start", mem(10, 7, 8), 0},
		{"memtables smaller than at the start", mem(24, 7, 0), 0},
		{"no readings", nil, 0},
		{"the block cache grew too", func() map[string]float64 {
			m := mem(24, 10, 16)
			m[`wats_db_memory_bytes{what="block_cache"}`] = 2 * mib
			return m
		}(), 7 * mib},
	} {
		if got := memtableGrowth(start, c.after); got != c.want {
			t.Errorf("%s: %.2f MiB, want %.2f", c.name, float64(got)/mib, float64(c.want)/mib)
		}
	}
}
