package blobs

import (
	"fmt"
	"strings"
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
	h := NewHints(10, DefaultMaxHintBytes)
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
	h := NewHints(3, DefaultMaxHintBytes)
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

// TestHintsByteBound: the table holds at most its bytes of hints
// (hintBytes), the least recently hinted blobs forgotten past it, at the
// bound and one byte under it; a blob hinted again is counted once; the
// newest blob's hints stay even when they alone are over.
func TestHintsByteBound(t *testing.T) {
	long := ma.StringCast("/dns4/" + strings.Repeat("a", 1000) + "/tcp/1")
	hint := []peer.AddrInfo{{ID: "p", Addrs: []ma.Multiaddr{long, long}}}
	one := hintBytes(hint)
	if one < 2000 {
		t.Fatalf("hintBytes of two addresses of 1 KiB = %d", one)
	}
	for _, tc := range []struct {
		maxBytes, kept int
	}{{3 * one, 3}, {3*one - 1, 2}, {one - 1, 1}} {
		h := NewHints(100, tc.maxBytes)
		for i := range 3 {
			h.Add(blobCID(t, i), hint)
			h.Add(blobCID(t, i), hint) // counted once
		}
		if h.Len() != tc.kept || h.bytes != tc.kept*one || h.Get(blobCID(t, 2)) == nil {
			t.Errorf("bound %d: %d blobs of %d bytes, the newest kept %v; want %d of %d", tc.maxBytes, h.Len(), h.bytes,
				h.Get(blobCID(t, 2)) != nil, tc.kept, tc.kept*one)
		}
		if tc.kept < 3 && h.Get(blobCID(t, 0)) != nil {
			t.Errorf("bound %d: the least recently hinted blob kept", tc.maxBytes)
		}
	}
	// Evicted by count, its bytes leave too.
	h := NewHints(2, DefaultMaxHintBytes)
	for i := range 5 {
		h.Add(blobCID(t, i), hint)
	}
	if h.Len() != 2 || h.bytes != 2*one {
		t.Errorf("bound of 2 blobs: %d blobs of %d bytes; want 2 of %d", h.Len(), h.bytes, 2*one)
	}
}
