package node

import (
	"context"
	"testing"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/wats-network/wats/blobs"
	"github.com/wats-network/wats/limits"
	"github.com/wats-network/wats/peercache"
	"github.com/wats-network/wats/peers"
	"github.com/wats-network/wats/proto"
)

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
	st := b.run.Get(a.ID())
	if got := st.Count(peers.Bytes); got != 0 || b.peers.Has(a.ID()) {
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
	if got := st.Count(peers.Bytes); got != other.Size {
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
	n.showedValue(n.peerOf(b.ID()), peercache.ValueEvents) // a record
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
	st := a.run.Get(b.ID())
	a.disconnected(a.Host().Network(), conns[0])
	if got := a.run.Get(b.ID()); got != st || !a.helloed(b.ID()) {
		t.Fatalf("a disconnection notice while b is connected dropped its state (state kept: %v, hello: %v)", got == st, a.helloed(b.ID()))
	}

	// A hello read while the state was dropped under it.
	a.dropPeerState(b.ID())
	if a.helloed(b.ID()) {
		t.Fatal("b still helloed once its state was dropped")
	}
	h := &proto.Hello{Version: 1, Network: "test", Agent: "wats/test"}
	got := 0
	stateOf := func() *peerState { // the dropped state first, as a handler that read it before the drop
		if got++; got == 1 {
			return st
		}
		return a.peerOf(b.ID())
	}
	live, _, _ := a.run.SetHello(b.ID(), h, stateOf, a.linked, a.now(), time.Second)
	if live == st || a.run.Get(b.ID()) != live {
		t.Fatal("the hello was not recorded in b's live state")
	}
	if !a.helloed(b.ID()) {
		t.Fatal("b's hello, recorded in its dropped state, is lost: b would be served as a peer without hello")
	}
}
