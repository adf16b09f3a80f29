package node

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/wats-network/wats/blobs"
	"github.com/wats-network/wats/limits"
	"github.com/wats-network/wats/peercache"
	"github.com/wats-network/wats/proto"
)

// TestRecordBudget: peers that show value at once get records up to the
// budget's burst; the next is put off, stays a stranger meanwhile, and is
// given its record (with the value it showed first) when the budget has
// refilled, by foldAll. A flood of ids with cheap value writes records no
// faster than newRecordsPerMin.
func TestRecordBudget(t *testing.T) {
	var mono atomic.Int64
	n := startNodeWith(t, mustRepo(t), Options{Mono: func() time.Duration { return time.Duration(mono.Load()) }})
	burst := n.records.Rate().Burst()
	var states []*peerState
	for i := range burst + 5 {
		st := &peerState{id: peer.ID(fmt.Sprintf("sybil-%03d", i))}
		n.run.live.Store(st.id, st) // as if connected: foldAll sees it
		states = append(states, st)
		n.showedValue(st, peercache.ValueEvents)
	}
	if got := n.peers.Len(); got != burst {
		t.Fatalf("%d records for %d peers that showed value at once, want the burst of %d", got, len(states), burst)
	}
	late := states[burst]
	if late.persisted.Load() || n.peers.Has(late.id) {
		t.Fatal("the peer past the burst got a record")
	}
	late.hist.events.Store(1) // it gave an event: still a stranger without its record
	if late.retier(); late.Tier() != limits.TierNew || !states[0].Tier().Valid() || states[0].Tier() != limits.TierNormal {
		t.Fatalf("tiers: %v without a record, %v with one; want new and normal", late.Tier(), states[0].Tier())
	}
	if got := testutil.ToFloat64(n.m.deferred); got != 5 {
		t.Fatalf("wats_peer_records_deferred_total = %v, want 5", got)
	}
	n.showedValue(late, peercache.ValueSolved) // shown again: counted once, the first value kept
	if got := testutil.ToFloat64(n.m.deferred); got != 5 {
		t.Fatalf("a deferred peer showing value again counted twice: %v", got)
	}
	n.foldAll() // no time passed: still no record
	if n.peers.Has(late.id) {
		t.Fatal("a record before the budget refilled")
	}
	mono.Add(int64(time.Minute / newRecordsPerMin)) // one record's worth
	n.foldAll()
	if got := n.peers.Len(); got != burst+1 {
		t.Fatalf("%d records one interval later, want %d", got, burst+1)
	}
	mono.Add(int64(time.Minute))
	n.foldAll()
	for _, st := range states {
		rec, ok := n.peers.Get(st.id)
		if !ok || rec.Value != peercache.ValueEvents {
			t.Fatalf("%s after the budget refilled: %+v %v, want a record by events", st.id, rec, ok)
		}
	}
}

// TestValuedTakesADay: a peer that gave ValuedEvents events is normal while
// its record is younger than limits.ValuedAge, valued from then on; a wall
// clock that steps back does not take it away in this run.
func TestValuedTakesADay(t *testing.T) {
	clock := &fakeClock{}
	n := startNodeWith(t, mustRepo(t), Options{Now: clock.Now})
	b := startNode(t, testConfig(false, time.Hour))
	publish(t, b, limits.ValuedEvents)
	connect(t, b, n)
	// The record is written, then the tier worked out again: wait for both.
	waitFor(t, 20*time.Second, "b's events, a record and tier normal", func() bool {
		st := n.run.get(b.ID())
		return st != nil && st.hist.events.Load() >= limits.ValuedEvents && st.persisted.Load() && st.Tier() == limits.TierNormal
	})
	st := n.run.get(b.ID())
	clock.Advance(limits.ValuedAge - time.Minute)
	n.foldAll()
	if st.Tier() != limits.TierNormal {
		t.Fatalf("valued with a record a minute short of a day old")
	}
	clock.Advance(time.Minute)
	n.foldAll()
	if st.Tier() != limits.TierValued {
		t.Fatalf("tier %v with a record a day old, want valued", st.Tier())
	}
	var why string
	for _, p := range n.PeerCache() {
		if p.PeerID == b.ID().String() {
			why = p.Tier + " " + p.TierReason
		}
	}
	if why == "" || why[:6] != "valued" {
		t.Fatalf("the peer cache shows %q for b", why)
	}
	clock.Advance(-2 * limits.ValuedAge)
	n.foldAll()
	if st.Tier() != limits.TierValued {
		t.Fatalf("a step back of the wall clock took the tier: %v", st.Tier())
	}
}

// TestRecordAged: at and just short of limits.ValuedAge; a first_seen in
// the future (a clock stepped back) or unset is not aged.
func TestRecordAged(t *testing.T) {
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		first time.Time
		want  bool
	}{
		{now.Add(-limits.ValuedAge), true},
		{now.Add(-limits.ValuedAge + time.Nanosecond), false},
		{now.Add(time.Hour), false},
		{time.Time{}, false},
	} {
		if got := recordAged(tc.first, now); got != tc.want {
			t.Errorf("recordAged(%v, %v) = %v, want %v", tc.first, now, got, tc.want)
		}
	}
}

// TestReplicateRequesterIsNotCredited: the blobs a peer asks this node to
// fetch from it (replicate) are no value it gave: it earns no bytes and no
// record. A blob this node fetches from the same peer on its own account
// is.
func TestReplicateRequesterIsNotCredited(t *testing.T) {
	a := startNode(t, testConfig(false, time.Hour))
	b := startNode(t, testConfig(false, time.Hour))
	connect(t, a, b)
	ref := addBlob(t, a, randData(300<<10, 1))
	ctx := context.Background()
	resp, err := a.Replicate(ctx, b.ID(), []proto.BlobRef{{CID: ref.CID, Size: int64(ref.Size)}})
	if err != nil || len(resp.Stored) != 1 {
		t.Fatalf("replicate: %+v %v", resp, err)
	}
	st := b.run.get(a.ID())
	if got := st.hist.bytes.Load(); got != 0 || b.peers.Has(a.ID()) {
		t.Fatalf("the replicate's requester was credited %d bytes (record: %v)", got, b.peers.Has(a.ID()))
	}
	other := addBlob(t, a, randData(300<<10, 2))
	c, err := cid.Decode(other.CID)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.FetchBlob(ctx, blobs.Request{CID: c, Size: other.Size, Sources: blobs.Sources{First: a.ID()}}); err != nil {
		t.Fatal(err)
	}
	if got := st.hist.bytes.Load(); got != other.Size {
		t.Fatalf("a blob fetched on b's own account credited %d bytes, want %d", got, other.Size)
	}
	if rec, ok := b.peers.Get(a.ID()); !ok || rec.Value != peercache.ValueBlobs {
		t.Fatalf("after serving a blob: %+v %v, want a record by blobs", rec, ok)
	}
}

// TestStrangersFetchAQuarterOfTheQuota: the fetches strangers ask for hold
// at most a quarter of blobs.quota_bytes between them (declared sizes, while
// they run); past it a stranger's blob is skipped, and a peer with a record
// still gets its fetch.
func TestStrangersFetchAQuarterOfTheQuota(t *testing.T) {
	cfg := testConfig(false, time.Hour)
	cfg.Blobs.QuotaBytes, cfg.Blobs.MaxBlobBytes = 64<<20, 4<<20
	cfg.Limits.BlobFetchesPerPeer = 8
	n := startNode(t, cfg)
	if got := n.fetchBytes.Capacity(); got != cfg.Blobs.QuotaBytes {
		t.Fatalf("the fetch pool holds %d bytes, want the quota's %d", got, cfg.Blobs.QuotaBytes)
	}
	a, b := rawHost(t), rawHost(t)
	dialRaw(t, a, n)
	dialRaw(t, b, n)
	var releases []func()
	take := func(p peer.ID, size uint64) bool {
		r, ok := n.fetchFor(p, size)
		if ok {
			releases = append(releases, r)
		}
		return ok
	}
	for i := range 4 { // a quarter of the quota in blobs of the largest size, the last one byte short
		size := uint64(cfg.Blobs.MaxBlobBytes) - uint64(i/3)
		if !take(a.ID(), size) {
			t.Fatalf("a stranger's fetch %d within the strangers' quarter was refused", i)
		}
	}
	if !take(b.ID(), 1) {
		t.Fatal("a second stranger's fetch at the quarter was refused")
	}
	if take(b.ID(), 1) {
		t.Fatal("a stranger's fetch past the strangers' quarter was let through")
	}
	if !take(b.ID(), uint64(cfg.Blobs.MaxBlobBytes)+1) {
		t.Fatal("a blob over max_blob_bytes (it fails at once) was held to the share")
	}
	known := n.peerOf(b.ID())
	known.persisted.Store(true) // as if it had shown value
	known.retier()
	if !take(b.ID(), uint64(cfg.Blobs.MaxBlobBytes)) {
		t.Fatal("a peer with a record was refused while strangers hold their quarter")
	}
	for _, r := range releases {
		r()
	}
	for _, tier := range []limits.Tier{limits.TierNew, limits.TierNormal} {
		if held := n.fetchBytes.Held(tier); held != 0 {
			t.Fatalf("%d bytes of %v still held after the fetches", held, tier)
		}
	}
	if n.slots.Len() != 0 {
		t.Fatalf("%d peers still hold fetch slots", n.slots.Len())
	}
	// A quota smaller than four of the largest blobs: strangers may
	// still have one of them in flight.
	small := testConfig(false, time.Hour)
	small.Blobs.QuotaBytes, small.Blobs.MaxBlobBytes = 3<<20, 2<<20
	if got := fetchPoolBytes(small); got != 8<<20 {
		t.Fatalf("fetchPoolBytes with a small quota: %d, want four blobs of the largest size", got)
	}
}

// TestReconnectingKeepsTheHistory: connections and disconnections of one
// peer racing each other (the node's path for each, many goroutines at
// once) never lose what a disconnection remembered: the history the node
// keeps of the peer never goes back.
func TestReconnectingKeepsTheHistory(t *testing.T) {
	n := startNode(t, testConfig(false, time.Hour))
	p := peer.ID("racer")
	var wg sync.WaitGroup
	var back atomic.Int64
	for range 8 {
		wg.Go(func() {
			last := uint64(0)
			for range 2000 {
				st := n.peerState(p, network.DirOutbound) // not connected: dropped again at once
				st.hist.misses.Add(1)
				n.dropPeerState(p)
				if rp, ok := n.run.recent.Peek(p); ok {
					if rp.hist.Misses < last {
						back.Add(1)
					}
					last = rp.hist.Misses
				}
			}
		})
	}
	wg.Wait()
	if back.Load() > 0 {
		t.Fatalf("the remembered history went back %d times", back.Load())
	}
	if rp, ok := n.run.recent.Peek(p); !ok || rp.hist.Misses == 0 {
		t.Fatalf("nothing remembered: %+v %v", rp, ok)
	}
}

// TestLateDisconnectionNoticeKeepsTheHello: the notice of a closed
// connection that comes after the peer connected again (its old
// connection's close was noticed late, as on a loaded machine when a peer
// restarts at once) keeps the peer's state and hello; a hello recorded in
// the state got before such a notice dropped it goes to the live state.
// Either loss had the node answer the peer's wants with DONT_HAVE, as a
// peer that never said hello.
func TestLateDisconnectionNoticeKeepsTheHello(t *testing.T) {
	a := startNode(t, testConfig(false, time.Hour))
	b := startNode(t, testConfig(false, time.Hour))
	connect(t, b, a)
	waitFor(t, 10*time.Second, "b's hello at a", func() bool { return a.helloed(b.ID()) })
	conns := a.Host().Network().ConnsToPeer(b.ID())
	if len(conns) == 0 {
		t.Fatal("a has no connection to b")
	}

	// The notice of a connection while another is up: the state stays.
	st := a.run.get(b.ID())
	a.disconnected(a.Host().Network(), conns[0])
	if got := a.run.get(b.ID()); got != st || !a.helloed(b.ID()) {
		t.Fatalf("a disconnection notice while b is connected dropped its state (state kept: %v, hello: %v)", got == st, a.helloed(b.ID()))
	}

	// A hello read while the state was dropped under it.
	a.dropPeerState(b.ID())
	if a.helloed(b.ID()) {
		t.Fatal("b still helloed once its state was dropped")
	}
	h := &proto.Hello{Version: 1, Network: "test", Agent: "wats/test"}
	live, _ := a.setLiveHello(st, h, time.Second)
	if live == st || a.run.get(b.ID()) != live {
		t.Fatal("the hello was not recorded in b's live state")
	}
	if !a.helloed(b.ID()) {
		t.Fatal("b's hello, recorded in its dropped state, is lost: b would be served as a peer without hello")
	}
}
