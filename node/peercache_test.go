package node

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/wats-network/wats/api"
	"github.com/wats-network/wats/peercache"
	"github.com/wats-network/wats/proto"
)

// TestRestartRedialsKnownPeers: a node restarted with no bootstrap address
// dials the peers its cache remembers (a peer that gave it events) and
// completes hello with them; they are reputed (met in an earlier run).
func TestRestartRedialsKnownPeers(t *testing.T) {
	a := startNode(t, testConfig(false, time.Hour))
	publish(t, a, 3)
	r := mustRepo(t)
	b := startRepo(t, r)
	connect(t, b, a)
	waitHead(t, 10*time.Second, 3, b) // the sync after hello: a gave b events
	waitFor(t, 10*time.Second, "a's record in b's peer cache", func() bool { return b.peers.Has(a.ID()) })
	b.close(t)

	b = startRepo(t, r) // no bootstrap in its config
	deadline := time.Now().Add(15 * time.Second)
	for {
		if ok := b.helloed(a.ID()); ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the restarted node did not redial the peer it knew")
		}
		time.Sleep(20 * time.Millisecond) // waiting on the network
	}
	if st := b.run.Get(a.ID()); st == nil || !st.Reputed(b.mono(time.Now())) || !b.peers.MetInEarlierRun(a.ID()) {
		t.Fatal("a peer met in the earlier run is not reputed")
	}
}

// TestPeerCacheCountsAndAPI: a peer that gave events gets a record; the
// requests it makes are counted in it (a cursor past the head as a miss),
// shown by GET /v1/peers/cache with its tier, and DELETE forgets the peer.
func TestPeerCacheCountsAndAPI(t *testing.T) {
	a := startNode(t, testConfig(false, time.Hour))
	b := startNode(t, testConfig(false, time.Hour))
	publish(t, b, 2)
	connect(t, b, a)
	waitHead(t, 10*time.Second, 2, a)
	waitFor(t, 10*time.Second, "b's record in a's peer cache", func() bool { return a.peers.Has(b.ID()) })
	ctx := context.Background()
	if _, err := b.call(ctx, a.ID(), &proto.SyncRequest{After: 0, Limit: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.call(ctx, a.ID(), &proto.SyncRequest{After: 1000, Limit: 1}); err != nil {
		t.Fatal(err)
	}
	var rec *api.CachedPeer
	peers := a.PeerCache()
	for i := range peers {
		if peers[i].PeerID == b.ID().String() {
			rec = &peers[i]
		}
	}
	if rec == nil {
		t.Fatalf("b is not in a's peer cache: %+v", peers)
	}
	if rec.Served < 2 || rec.Misses != 1 || rec.Reputed || rec.MetInEarlierRun || rec.FirstSeen.IsZero() || rec.Agent != "wats/test" ||
		rec.Events != 2 || rec.Value != "events" || rec.Tier != "normal" || rec.TierReason == "" {
		t.Fatalf("b's record %+v: want 2+ served, 1 miss, 2 events given, not reputed, first seen set, tier normal", *rec)
	}
	if err := a.ForgetPeer(b.ID()); err != nil {
		t.Fatal(err)
	}
	if _, ok := a.peers.Get(b.ID()); ok {
		t.Fatal("b is still in the cache after forget")
	}
	if err := a.ForgetPeer(b.ID()); !errors.Is(err, peercache.ErrNotFound) {
		t.Fatalf("forgetting twice: %v, want ErrNotFound", err)
	}
}
