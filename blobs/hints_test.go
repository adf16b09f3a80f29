package blobs

import (
	"fmt"
	"testing"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/wats-network/wats/core"
)

// blobCID is a made-up CID for the hint tables, one per i.
func blobCID(t *testing.T, i int) cid.Cid {
	t.Helper()
	c, err := CIDBuilder.Sum([]byte(fmt.Sprint("blob ", i)))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestHintsKeepNewest16 (ADR 0014: at most 16 hints per blob, the newest):
// twenty providers hinted one by one leave the last sixteen, newest first;
// one hinted again moves to the front with its new addresses, without a
// duplicate.
func TestHintsKeepNewest16(t *testing.T) {
	h := NewHints(10)
	c := blobCID(t, 0)
	ps := infos(ids(20, "p"))
	for _, p := range ps {
		h.Add(c, []peer.AddrInfo{p})
	}
	got := h.Get(c)
	if len(got) != core.MaxHintsPerBlob {
		t.Fatalf("%d hints, want %d", len(got), core.MaxHintsPerBlob)
	}
	for i, p := range got { // newest first: p19, p18, ...
		if want := ps[len(ps)-1-i].ID; p.ID != want {
			t.Fatalf("hint %d is %s, want %s", i, p.ID, want)
		}
	}
	addr := ma.StringCast("/ip4/127.0.0.1/tcp/4001")
	h.Add(c, []peer.AddrInfo{{ID: ps[10].ID, Addrs: []ma.Multiaddr{addr}}})
	got = h.Get(c)
	if got[0].ID != ps[10].ID || len(got[0].Addrs) != 1 || len(got) != core.MaxHintsPerBlob {
		t.Fatalf("re-hinted provider not first, without its address, or duplicated: %d hints, first %v", len(got), got[0])
	}
	seen := map[peer.ID]bool{}
	for _, p := range got {
		if seen[p.ID] {
			t.Fatalf("duplicate hint %s", p.ID)
		}
		seen[p.ID] = true
	}
	// One envelope's providers keep their order, the first the newest.
	h.Add(c, infos([]peer.ID{"x", "y", "x"}))
	if got := h.Get(c); got[0].ID != "x" || got[1].ID != "y" || got[2].ID != ps[10].ID {
		t.Fatalf("after an envelope naming x, y, x: %v", got[:3])
	}
	// Get's slice is the caller's.
	h.Get(c)[0].ID = "changed"
	if h.Get(c)[0].ID != "x" {
		t.Fatal("Get returned the table's own slice")
	}
}

// TestHintsForgetLeastRecentBlob: past its bound (here 3) the table
// forgets the blob least recently hinted; reading hints does not make a
// blob recent.
func TestHintsForgetLeastRecentBlob(t *testing.T) {
	h := NewHints(3)
	p := infos(ids(1, "p"))
	for i := range 3 {
		h.Add(blobCID(t, i), p)
	}
	h.Get(blobCID(t, 0)) // a read, not a hint
	h.Add(blobCID(t, 3), p)
	if h.Len() != 3 {
		t.Fatalf("tracking %d blobs, want 3", h.Len())
	}
	if h.Get(blobCID(t, 0)) != nil {
		t.Fatal("the least recently hinted blob was kept")
	}
	if h.Get(blobCID(t, 3)) == nil || h.Get(blobCID(t, 1)) == nil {
		t.Fatal("a recent blob was forgotten")
	}
	h.Add(blobCID(t, 9), nil)
	if h.Len() != 3 || h.Get(blobCID(t, 9)) != nil {
		t.Fatal("an empty hint was recorded")
	}
}
