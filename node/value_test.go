package node

import (
	"context"
	"testing"
	"time"

	"github.com/ipfs/go-cid"

	"github.com/wats-network/wats/blobs"
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
	if err := b.fetch.Fetch(ctx, blobs.Request{CID: c, Size: other.Size, Sources: blobs.Sources{First: a.ID()}}); err != nil {
		t.Fatal(err)
	}
	if got := st.Count(peers.Bytes); got != other.Size {
		t.Fatalf("a blob fetched on b's own account credited %d bytes, want %d", got, other.Size)
	}
	if rec, ok := b.peers.Get(a.ID()); !ok || rec.Value != peercache.ValueBlobs {
		t.Fatalf("after serving a blob: %+v %v, want a record by blobs", rec, ok)
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
	a.dropPeerState(b.ID(), false)
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
