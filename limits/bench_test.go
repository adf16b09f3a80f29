package limits

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wats-network/wats/core"
)

// BenchmarkTableAllow is the admission check for one peer (ADR 0024's
// target: at most 50 ns/op, 0 allocs/op). "allowed": the clock advances one sync
// interval per request, so each is allowed; "refused": the clock stands
// still, so after the burst each is refused.
func BenchmarkTableAllow(b *testing.B) {
	p := testPeer(1)
	b.Run("allowed", func(b *testing.B) {
		tb := newTestTable(b, nil)
		b.ReportAllocs()
		now := int64(0)
		for b.Loop() {
			now += int64(100 * time.Millisecond)
			if ok, _ := tb.Allow(p, core.Sync, now); !ok {
				b.Fatal("refused")
			}
		}
	})
	b.Run("refused", func(b *testing.B) {
		tb := newTestTable(b, nil)
		b.ReportAllocs()
		for b.Loop() {
			tb.Allow(p, core.Sync, 0)
		}
	})
}

// BenchmarkTableAllowParallel: all cores, 1,000 peers, every kind; each
// goroutine's clock advances 1 µs per request.
func BenchmarkTableAllowParallel(b *testing.B) {
	tb := newTestTable(b, nil)
	peers := testPeers(1000)
	var start atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := int(start.Add(7919)) // goroutines start at different peers
		for pb.Next() {
			i++
			tb.Allow(peers[i%len(peers)], core.Request(i%core.NumRequests), int64(i)*1000)
		}
	})
}

// BenchmarkAdmitParallel: all cores, 1,000 connected peers, every kind,
// decided on the Table's shards ("table") or on each peer's held state
// ("held", as peers.Table decides a connected peer's requests); each
// goroutine's clock advances 1 µs per request.
func BenchmarkAdmitParallel(b *testing.B) {
	ps := testPeers(1000)
	r := func(i int) Request { return Request{Type: core.Request(i % core.NumRequests), InFlight: 1} }
	// parallel runs admit(i, now) on all cores, each goroutine from a peer
	// of its own.
	parallel := func(b *testing.B, admit func(i int, now int64)) {
		var start atomic.Int64
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			i := int(start.Add(7919))
			for pb.Next() {
				i++
				admit(i, int64(i)*1000)
			}
		})
	}
	b.Run("table", func(b *testing.B) {
		tb := newTestTable(b, nil)
		parallel(b, func(i int, now int64) { tb.Admit(ps[i%len(ps)], Facts{}, r(i), now) })
	})
	b.Run("held", func(b *testing.B) {
		tb := newTestTable(b, nil)
		held := make([]*Held, len(ps))
		for i, p := range ps {
			held[i] = tb.Hold(p, 0)
		}
		parallel(b, func(i int, now int64) { held[i%len(held)].Admit(Facts{}, r(i), now) })
	})
}

// BenchmarkBucketAllow is the bare GCRA step.
func BenchmarkBucketAllow(b *testing.B) {
	r, _ := NewRate(600)
	bk := NewBucket(r)
	now := int64(0)
	b.ReportAllocs()
	for b.Loop() {
		now += int64(100 * time.Millisecond)
		bk.Allow(now)
	}
}

// BenchmarkTableMemory reports the heap a Table holds per tracked peer
// (after a GC; the peer ids themselves belong to the caller and are not
// counted: an Ed25519 id is 38 bytes, 48 on the heap) at its default cap.
func BenchmarkTableMemory(b *testing.B) {
	peers := testPeers(DefaultMaxPeers)
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		tb := newTestTable(b, nil)
		for _, p := range peers {
			tb.Allow(p, core.Sync, 0)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		n := tb.Len()
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(n), "bytes/peer")
		b.ReportMetric(float64(n), "peers")
		runtime.KeepAlive(tb)
	}
}

// BenchmarkLogCapFlood: ShouldLog for a flood of distinct peers (the
// refusal path under a Sybil flood).
func BenchmarkLogCapFlood(b *testing.B) {
	l := NewLogCap()
	peers := testPeers(100_000)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		l.ShouldLog(peers[i%len(peers)], ThrottledTopic(core.Sync), int64(i)*1000)
	}
}

// BenchmarkSweep: one sweep of a Table at its cap, every peer still
// active (nothing dropped: the whole cost of the scan). Divide by 64 for
// the pause one shard's sweep puts on the requests of that shard.
func BenchmarkSweep(b *testing.B) {
	tb := newTestTable(b, nil)
	for _, p := range testPeers(DefaultMaxPeers * 2) {
		tb.Allow(p, core.Hello, 0)
	}
	for b.Loop() {
		if tb.Sweep(0) != 0 {
			b.Fatal("dropped")
		}
	}
}
