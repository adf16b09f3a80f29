package node

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/wats-network/wats/node/api"
	"github.com/wats-network/wats/proto"
	"github.com/wats-network/wats/repo"
)

// TestRestartRedialsKnownPeers: a node restarted with no bootstrap address
// dials the peers its cache remembers and completes hello with them; they
// are reputed (met in an earlier run).
func TestRestartRedialsKnownPeers(t *testing.T) {
	a := startNode(t, testConfig(false, time.Hour))
	r, err := repo.Init(t.TempDir(), repo.InitOptions{Config: testConfig(false, time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	b := startRepo(t, r)
	connect(t, b, a)
	b.close(t)

	b = startRepo(t, r) // no bootstrap in its config
	deadline := time.Now().Add(15 * time.Second)
	for {
		if _, ok := b.helloPeers()[a.ID()]; ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the restarted node did not redial the peer it knew")
		}
		time.Sleep(20 * time.Millisecond) // waiting on the network
	}
	if !b.peers.Reputed(a.ID(), time.Now()) {
		t.Fatal("a peer met in the earlier run is not reputed")
	}
}

// TestPeerCacheCountsAndAPI: requests a peer makes are counted in its
// record (a cursor past the head as a miss), shown by GET /v1/peers/cache,
// and DELETE forgets the peer.
func TestPeerCacheCountsAndAPI(t *testing.T) {
	a := startNode(t, testConfig(false, time.Hour))
	b := startNode(t, testConfig(false, time.Hour))
	connect(t, b, a)
	ctx := context.Background()
	if _, err := b.call(ctx, a.ID(), &proto.SyncRequest{After: 0, Limit: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.call(ctx, a.ID(), &proto.SyncRequest{After: 1000, Limit: 1}); err != nil {
		t.Fatal(err)
	}
	c := apiClient(t, a)
	var rec *api.CachedPeer
	peers, err := c.PeerCache(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i := range peers {
		if peers[i].PeerID == b.ID().String() {
			rec = &peers[i]
		}
	}
	if rec == nil {
		t.Fatalf("b is not in a's peer cache: %+v", peers)
	}
	if rec.Served < 2 || rec.Misses != 1 || rec.Reputed || rec.MetInEarlierRun || rec.FirstSeen.IsZero() || rec.Agent != "wats/test" {
		t.Fatalf("b's record %+v: want 2+ served, 1 miss, not reputed, first seen set", *rec)
	}
	if err := c.ForgetPeer(ctx, b.ID().String()); err != nil {
		t.Fatal(err)
	}
	if _, ok := a.peers.Get(b.ID()); ok {
		t.Fatal("b is still in the cache after forget")
	}
	if err := c.ForgetPeer(ctx, b.ID().String()); !errors.Is(err, api.ErrNotFound) {
		t.Fatalf("forgetting twice: %v, want ErrNotFound", err)
	}
}
