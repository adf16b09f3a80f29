package limits

import (
	"errors"
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/wats-network/wats/core"
)

const second = int64(time.Second)

// TestTableKindsIndependent: exhausting one kind of one peer touches no
// other kind of that peer and nothing of another peer.
func TestTableKindsIndependent(t *testing.T) {
	bursts := map[core.Request]int{core.Hello: 15, core.Sync: 150, core.Replicate: 30, core.CrashReport: 2}
	for _, exhausted := range core.Requests() {
		tb := newTestTable(t, nil)
		a, b := testPeer(1), testPeer(2)
		if n := takeAll(tb, a, exhausted, 0, 1000); n != bursts[exhausted] {
			t.Fatalf("%s: %d allowed, want %d", exhausted, n, bursts[exhausted])
		}
		for _, k := range core.Requests() {
			if k == exhausted {
				continue
			}
			if n := takeAll(tb, a, k, 0, 1000); n != bursts[k] {
				t.Errorf("after exhausting %s: %s allowed %d, want the full %d", exhausted, k, n, bursts[k])
			}
		}
		if n := takeAll(tb, b, exhausted, 0, 1000); n != bursts[exhausted] {
			t.Errorf("another peer's %s: %d allowed, want %d", exhausted, n, bursts[exhausted])
		}
	}
}

// TestTableMatchesBuckets: for random traffic from a few peers on a clock
// that never steps back, the Table answers exactly like one Bucket per
// peer and kind, which never forgets, although the Table is swept at
// random moments and on schedule: dropping a full bucket changes nothing.
func TestTableMatchesBuckets(t *testing.T) {
	c := DefaultConfig()
	c.ReportPerMin = 7 // a non-integer interval
	c.ReplicatePerMin = 0
	rng := rand.New(rand.NewPCG(7, 8))
	tb := newTableOf(t, c, nil)
	models := map[peer.ID]*[core.NumRequests]Bucket{}
	peers := testPeers(20)
	now := int64(0)
	drops := 0
	for i := range 200_000 {
		if rng.IntN(100) == 0 {
			now += rng.Int64N(60 * second) // idle
		} else {
			now += rng.Int64N(50 * int64(time.Millisecond))
		}
		if rng.IntN(500) == 0 {
			drops += tb.Sweep(now)
		}
		p := peers[rng.IntN(len(peers))]
		k := core.Request(rng.IntN(core.NumRequests))
		wantOK, wantRetry := modelOf(t, models, c, p)[k].Allow(now)
		if ok, retry := tb.Allow(p, k, now); ok != wantOK || retry != wantRetry {
			t.Fatalf("request %d (%s at %v): table %v %v, bucket %v %v", i, k, time.Duration(now), ok, retry, wantOK, wantRetry)
		}
	}
	if drops < 100 {
		t.Fatalf("%d dropped: the test does not test sweeping", drops)
	}
}

// modelOf returns p's model buckets, full when new.
func modelOf(t *testing.T, models map[peer.ID]*[core.NumRequests]Bucket, c Config, p peer.ID) *[core.NumRequests]Bucket {
	m := models[p]
	if m == nil {
		m = new([core.NumRequests]Bucket)
		for _, k := range core.Requests() {
			r, err := c.Rate(k)
			if err != nil {
				t.Fatal(err)
			}
			m[k] = *NewBucket(r)
		}
		models[p] = m
	}
	return m
}

// TestTableBackwardsAfterSweep: a peer's state is dropped once its buckets
// are full, and then the clock steps back to before they were: the Table
// must not hand out the tokens the dropped state had already spent.
func TestTableBackwardsAfterSweep(t *testing.T) {
	tb := newTestTable(t, nil)
	p := testPeer(1)
	if n := takeAll(tb, p, core.Hello, 100*second, 100); n != 15 {
		t.Fatalf("%d allowed", n) // TAT 115 s
	}
	if n := tb.Sweep(116 * second); n != 1 {
		t.Fatalf("swept %d", n)
	}
	ok, retry := tb.Allow(p, core.Hello, 100*second)
	if ok || retry != time.Second {
		t.Fatalf("after the sweep, back at 100 s: %v %v; want refused for 1 s, as before the sweep", ok, retry)
	}
	// Another peer of the same shard, new, gets no more than the floor.
	q := sameShardAs(tb, p)
	if ok, _ := tb.Allow(q, core.Hello, 100*second); ok {
		t.Fatal("a newcomer in the shard got a token the dropped state had spent")
	}
	// Other kinds were never spent: full.
	if n := takeAll(tb, p, core.Sync, 100*second, 1000); n != 150 {
		t.Fatalf("sync: %d allowed", n)
	}
}

func sameShardAs(tb *Table, p peer.ID) peer.ID {
	for i := 1 << 20; ; i++ {
		if q := testPeer(i); q != p && tb.shardOf(q) == tb.shardOf(p) {
			return q
		}
	}
}

// TestTableBackwardsNeverCredits: with a clock that steps back and forth
// and sweeps at random moments, each peer and kind gets no more than a
// monotonic clock spanning the same readings would allow.
func TestTableBackwardsNeverCredits(t *testing.T) {
	c := DefaultConfig()
	c.ReportPerMin = 7
	tb := newTableOf(t, c, nil)
	rng := rand.New(rand.NewPCG(9, 10))
	peers := testPeers(8)
	type pk struct {
		p peer.ID
		k core.Request
	}
	allowed, modelled := map[pk]int64{}, map[pk]int64{}
	models := map[peer.ID]*[core.NumRequests]Bucket{}
	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	now := int64(0)
	for range 300_000 {
		switch rng.IntN(100) {
		case 0:
			now -= rng.Int64N(30 * second)
		case 1:
			now += rng.Int64N(30 * second)
		default:
			now += rng.Int64N(10 * int64(time.Millisecond))
		}
		lo, hi = min(lo, now), max(hi, now)
		if rng.IntN(200) == 0 {
			tb.Sweep(now)
		}
		p, k := peers[rng.IntN(len(peers))], core.Request(rng.IntN(core.NumRequests))
		if ok, _ := tb.Allow(p, k, now); ok {
			allowed[pk{p, k}]++
		}
		if ok, _ := modelOf(t, models, c, p)[k].Allow(now); ok {
			modelled[pk{p, k}]++
		}
	}
	for key, n := range allowed {
		r := tb.Rate(key.k)
		most := int64(r.Burst()) + (hi-lo)*int64(r.PerMin())/int64(time.Minute)
		if n > most {
			t.Errorf("%s: %d allowed with readings in [%v, %v], at most %d", key.k, n, time.Duration(lo), time.Duration(hi), most)
		}
		// The floor may withhold tokens from state re-created after a step
		// back; not many.
		if m := modelled[key]; n < m*9/10 {
			t.Errorf("%s: %d allowed, %d by a bucket that never forgets: too strict", key.k, n, m)
		}
	}
}

func newTableOf(t *testing.T, c Config, opts *TableOptions) *Table {
	t.Helper()
	tb, err := NewTable(c, opts)
	if err != nil {
		t.Fatal(err)
	}
	return tb
}

// TestTableIdleDropped: a peer's state goes when all its buckets are full
// again, not before, by Sweep or by the schedule inside Allow.
func TestTableIdleDropped(t *testing.T) {
	tb := newTestTable(t, nil)
	peers := testPeers(1000)
	for _, p := range peers {
		for _, k := range core.Requests() {
			if ok, _ := tb.Allow(p, k, 0); !ok {
				t.Fatal("refused")
			}
		}
	}
	if n := tb.Len(); n != 1000 {
		t.Fatalf("tracking %d peers, want 1000", n)
	}
	// One crash_report takes 6 s to refill, the others less.
	if n := tb.Sweep(6*second - 1); n != 0 || tb.Len() != 1000 {
		t.Fatalf("swept %d before the buckets were full", n)
	}
	if n := tb.Sweep(6 * second); n != 1000 || tb.Len() != 0 {
		t.Fatalf("swept %d, %d left; want all 1000 gone", n, tb.Len())
	}
	// Dropped state is the same as a full bucket.
	if n := takeAll(tb, peers[0], core.Hello, 6*second, 100); n != 15 {
		t.Fatalf("after the sweep: %d allowed, want 15", n)
	}

	// On schedule: the next request to a shard SweepInterval after its last
	// sweep sweeps it.
	tb = newTestTable(t, nil)
	for _, p := range peers {
		tb.Allow(p, core.Hello, 0)
	}
	probe := peers[0]
	sh := tb.shardOf(probe)
	inShard := func() int { sh.mu.Lock(); defer sh.mu.Unlock(); return len(sh.mu.peers) }
	before := inShard()
	tb.Allow(probe, core.Sync, int64(SweepInterval)-1)
	if inShard() != before {
		t.Fatal("swept before SweepInterval")
	}
	tb.Allow(probe, core.Sync, int64(SweepInterval))
	if got := inShard(); got != 1 || before < 2 {
		t.Fatalf("shard held %d, %d after its scheduled sweep; want only the probe left", before, got)
	}
}

// TestTableCapSharesNewcomerBudget: at the cap, a new peer is decided on
// the budget the shard's untracked peers share (NewcomerShare peers'
// worth), never refused for the table's sake alone; no tracked peer is
// evicted or credited; room made by full buckets is reused, the shard being
// swept at most once a second for it.
func TestTableCapSharesNewcomerBudget(t *testing.T) {
	tb := newTestTable(t, &TableOptions{MaxPeers: numShards}) // one peer per shard
	ids := sameShard(tb, 3)
	a, b, c := ids[0], ids[1], ids[2]
	if n := takeAll(tb, a, core.Hello, 0, 100); n != 15 {
		t.Fatalf("a: %d allowed", n)
	}
	// b and c are untracked: they share 4 peers' worth of sync budget,
	// a burst of 4 × 150, whoever asks.
	shared := NewcomerShare * 150
	if n := takeAll(tb, b, core.Sync, 0, 2*shared); n != shared {
		t.Fatalf("b at the cap: %d allowed, want the shared burst %d", n, shared)
	}
	ok, retry := tb.Allow(c, core.Sync, 0)
	if ok || retry != 25*time.Millisecond {
		t.Fatalf("c after b spent the shared budget: %v %v, want refused for a 2,400/min interval", ok, retry)
	}
	if ok, _ := tb.Allow(c, core.Sync, 25*int64(time.Millisecond)); !ok {
		t.Fatal("c refused once the shared budget refilled a token")
	}
	// a was not evicted: still no token before its time.
	if ok, _ := tb.Allow(a, core.Hello, second/2); ok {
		t.Fatal("a gained a token at 0.5 s")
	}
	s := tb.Snapshot()
	if want := uint64(shared + 1 + 2); s.SharedAtCap != want || s.TrackedPeers != 1 {
		t.Fatalf("snapshot %+v, want %d decided on the shared budget and 1 peer tracked", s, want)
	}
	// a took a token at 2 s and at 14 s: its bucket is full at 17 s.
	tb.Allow(a, core.Hello, 2*second)
	tb.Allow(a, core.Hello, 14*second)
	steps := []struct {
		now     int64
		tracked peer.ID
	}{
		{16*second + 9*second/10, a}, // swept: a is not full yet
		{17*second + second/2, a},    // a is full, but the last sweep was 0.6 s ago
		{17*second + 9*second/10, b}, // swept: a is gone, b is tracked
	}
	for _, st := range steps {
		tb.Allow(b, core.Sync, st.now)
		sh := tb.shardOf(b)
		sh.mu.Lock()
		_, got := sh.mu.peers[st.tracked]
		sh.mu.Unlock()
		if !got {
			t.Fatalf("at %v: %s not tracked", time.Duration(st.now), st.tracked)
		}
	}
	if n := tb.Len(); n != 1 {
		t.Fatalf("tracking %d, want 1", n)
	}
}

// TestTableCapSweepGap: a shard at its cap is swept for a newcomer at most
// once every fullSweepGap.
func TestTableCapSweepGap(t *testing.T) {
	tb := newTestTable(t, &TableOptions{MaxPeers: numShards})
	ids := sameShard(tb, 2)
	tb.Allow(ids[0], core.Sync, 0) // full again at 100 ms; swept at 0
	tb.Allow(ids[1], core.Sync, int64(fullSweepGap)-1)
	if n := tb.Snapshot().SharedAtCap; n != 1 {
		t.Fatalf("swept sooner than fullSweepGap after the last sweep: %d on the shared budget", n)
	}
	tb.Allow(ids[1], core.Sync, int64(fullSweepGap))
	if n := tb.Snapshot().SharedAtCap; n != 1 || tb.Len() != 1 {
		t.Fatalf("not swept fullSweepGap after the last sweep: %d on the shared budget, %d tracked", n, tb.Len())
	}
}

// TestTableFlood: 100,000 distinct peer ids at once. The Table tracks at
// most its cap, decides the rest on the shards' shared budgets (serving at
// most their bursts), keeps every tracked peer's state, and its memory is
// bounded; report bytes per tracked peer.
func TestTableFlood(t *testing.T) {
	peers := testPeers(100_000)
	tb := newTestTable(t, nil)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	accepted := 0
	for _, p := range peers {
		if ok, _ := tb.Allow(p, core.Sync, 0); ok {
			accepted++
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	n := tb.Len()
	perShard := DefaultMaxPeers / numShards
	if n > DefaultMaxPeers || n < DefaultMaxPeers*9/10 {
		t.Fatalf("tracking %d peers, accepted %d; cap %d", n, accepted, DefaultMaxPeers)
	}
	for i := range tb.shards {
		if l := len(tb.shards[i].mu.peers); l > perShard {
			t.Fatalf("shard %d holds %d > %d", i, l, perShard)
		}
	}
	s := tb.Snapshot()
	sharedServed := accepted - n
	if s.SharedAtCap != uint64(100_000-n) || s.Sync.Accepted != uint64(accepted) || s.Sync.Refused != uint64(100_000-accepted) ||
		sharedServed <= 0 || sharedServed > numShards*NewcomerShare*150 {
		t.Fatalf("snapshot %+v, accepted %d, %d tracked", s, accepted, n)
	}
	perPeer := float64(after.HeapAlloc-before.HeapAlloc) / float64(n)
	t.Logf("100,000 ids: %d tracked (cap %d), %d served on the shared budgets, %d refused; %.0f bytes per tracked peer (ids not counted: the caller's)",
		n, DefaultMaxPeers, sharedServed, 100_000-accepted, perPeer)
	if perPeer > 200 {
		t.Errorf("%.0f bytes per tracked peer, expected about 110", perPeer)
	}
	// Every tracked peer kept its state: one more token each, not 150.
	if got := takeAll(tb, peers[0], core.Sync, 0, 1000); got != 149 {
		t.Fatalf("first peer: %d more allowed, want 149", got)
	}
	// Idle: all dropped, and the maps give their memory back.
	if d := tb.Sweep(time.Hour.Nanoseconds()); d != n || tb.Len() != 0 {
		t.Fatalf("swept %d of %d", d, n)
	}
	runtime.GC()
	var idle runtime.MemStats
	runtime.ReadMemStats(&idle)
	if idle.HeapAlloc > before.HeapAlloc+(after.HeapAlloc-before.HeapAlloc)/4 {
		t.Errorf("heap after the sweep %d, before the flood %d, at its peak %d: not given back",
			idle.HeapAlloc, before.HeapAlloc, after.HeapAlloc)
	}
	runtime.KeepAlive(peers)
}

// TestTableFloodOverTime: 100,000 ids, one request each, one every 2 ms
// (200 s): the scheduled sweeps keep the Table near the ids of the last
// SweepInterval plus the time their buckets take to fill, far below the
// cap, and no request is refused.
func TestTableFloodOverTime(t *testing.T) {
	tb := newTestTable(t, nil)
	most := 0
	for i := range 100_000 {
		now := int64(i) * 2 * int64(time.Millisecond)
		if ok, _ := tb.Allow(testPeer(i), core.Hello, now); !ok {
			t.Fatalf("request %d refused", i)
		}
		if i%1000 == 0 {
			most = max(most, tb.Len())
		}
	}
	// Hello refills in 1 s; a shard is swept every 10 s: at most 11 s of
	// ids, 5,500, are tracked.
	bound := int((SweepInterval + time.Second) / (2 * time.Millisecond))
	if most > bound || most < bound/4 {
		t.Fatalf("at most %d tracked, want about %d at most", most, bound)
	}
	t.Logf("flood over time: at most %d peers tracked (bound %d)", most, bound)
}

// TestTableConcurrentOnePeer: goroutines hammer one peer's bucket at the
// same instants; the total allowed is exactly what the math says: the
// burst at 0, then ten per second.
func TestTableConcurrentOnePeer(t *testing.T) {
	tb := newTestTable(t, nil)
	p := testPeer(42)
	const goroutines, attempts = 8, 500
	phases := []struct {
		now  int64
		want int64
	}{{0, 150}, {second, 10}, {second, 0}, {3 * second, 20}, {3*second + 50e6, 0}, {3*second + 100e6, 1}}
	for _, ph := range phases {
		var allowed atomic.Int64
		var wg sync.WaitGroup
		for range goroutines {
			wg.Go(func() {
				for range attempts {
					if ok, _ := tb.Allow(p, core.Sync, ph.now); ok {
						allowed.Add(1)
					}
				}
			})
		}
		wg.Wait()
		if got := allowed.Load(); got != ph.want {
			t.Fatalf("at %v: %d allowed, want %d", time.Duration(ph.now), got, ph.want)
		}
	}
	s := tb.Snapshot()
	if s.Sync.Accepted != 181 || s.Sync.Accepted+s.Sync.Refused != uint64(len(phases)*goroutines*attempts) {
		t.Fatalf("counters %+v", s.Sync)
	}
}

// TestTableConcurrentManyPeers: many goroutines, many peers, all kinds,
// sweeps in between; every peer gets exactly its burst.
func TestTableConcurrentManyPeers(t *testing.T) {
	tb := newTestTable(t, nil)
	peers := testPeers(2000)
	var wg sync.WaitGroup
	var wrong atomic.Int64
	for g := range 4 {
		wg.Go(func() {
			for i := g; i < len(peers); i += 4 {
				if n := takeAll(tb, peers[i], core.Request(i%core.NumRequests), 0, 1000); n != []int{15, 150, 30, 2}[i%core.NumRequests] {
					wrong.Add(1)
				}
			}
		})
	}
	wg.Go(func() {
		for range 50 {
			tb.Sweep(0)
			tb.Snapshot()
		}
	})
	wg.Wait()
	if wrong.Load() != 0 {
		t.Fatalf("%d peers got a wrong burst", wrong.Load())
	}
	if tb.Len() != len(peers) {
		t.Fatalf("tracking %d", tb.Len())
	}
}

// TestTableUnlimitedAndInvalid: an unlimited kind keeps no state; an
// invalid kind is refused and not counted.
func TestTableUnlimitedAndInvalid(t *testing.T) {
	c := DefaultConfig()
	c.SyncPerMin = 0
	tb := newTableOf(t, c, nil)
	for i := range 10_000 {
		if ok, retry := tb.Allow(testPeer(i), core.Sync, 0); !ok || retry != 0 {
			t.Fatal("unlimited kind refused")
		}
	}
	if tb.Len() != 0 {
		t.Fatalf("unlimited kind tracked %d peers", tb.Len())
	}
	if ok, retry := tb.Allow(testPeer(1), core.Request(core.NumRequests), 0); ok || retry != 0 {
		t.Fatal("invalid kind allowed")
	}
	s := tb.Snapshot()
	if s.Sync.Accepted != 10_000 || s.Hello != (Counts{}) || tb.Rate(core.Sync).PerMin() != 0 || tb.Rate(core.Request(9)) != (Rate{}) {
		t.Fatalf("snapshot %+v", s)
	}
}

// TestNewTableErrors: bad rates are errors naming their keys; the cap
// option at and past its bounds.
func TestNewTableErrors(t *testing.T) {
	c := DefaultConfig()
	c.HelloPerMin = -1
	c.ReportPerMin = MaxPerMin + 1
	_, err := NewTable(c, nil)
	if err == nil || !errors.Is(err, ErrInvalid) ||
		!strings.Contains(err.Error(), "limits.hello_per_min") || !strings.Contains(err.Error(), "limits.report_per_min") {
		t.Fatalf("NewTable: %v", err)
	}
	for n, ok := range map[int]bool{-1: false, 0: true, 1: true, DefaultMaxPeers: true, MaxMaxPeers: true, MaxMaxPeers + 1: false} {
		opts := &TableOptions{MaxPeers: n}
		tb, err := NewTable(DefaultConfig(), opts)
		if (err == nil) != ok || (err != nil && !errors.Is(err, ErrInvalid)) {
			t.Errorf("MaxPeers %d: %v", n, err)
		}
		want := n
		if n == 0 {
			want = DefaultMaxPeers
		}
		if ok && tb.MaxPeers() != want {
			t.Errorf("MaxPeers %d: the table holds %d, want %d", n, tb.MaxPeers(), want)
		}
		if opts.MaxPeers != n {
			t.Errorf("NewTable changed its options: MaxPeers %d, was %d", opts.MaxPeers, n)
		}
	}
	if tb, err := NewTable(DefaultConfig(), nil); err != nil || tb.MaxPeers() != DefaultMaxPeers {
		t.Fatalf("nil options: %v", err)
	}
	// A cap of 1 still lets one peer per shard in.
	tb := newTestTable(t, &TableOptions{MaxPeers: 1})
	if ok, _ := tb.Allow(testPeer(1), core.Hello, 0); !ok {
		t.Fatal("refused with a cap of 1")
	}
}

// TestTableClockExtremes: a Table survives now jumping between the ends of
// int64, and a step back never credits.
func TestTableClockExtremes(t *testing.T) {
	tb := newTestTable(t, nil)
	p := testPeer(1)
	for _, now := range []int64{0, math.MaxInt64, 0, math.MinInt64, math.MaxInt64, -1} {
		tb.Allow(p, core.Hello, now)
		tb.Sweep(now)
	}
	if n := takeAll(tb, p, core.Hello, 0, 100); n != 0 {
		t.Fatalf("%d allowed after the clock came back", n)
	}
	if n := tb.Len(); n != 1 {
		t.Fatalf("state lost: %d tracked", n)
	}
}

// TestShardPadding: shards fill whole cache lines, so that two cores
// working on two shards never share one.
func TestShardPadding(t *testing.T) {
	if n := unsafe.Sizeof(shard{}); n%cacheLine != 0 || n < unsafe.Sizeof(shardFields{}) {
		t.Fatalf("shard is %d bytes", n)
	}
}
