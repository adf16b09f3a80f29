package blobs

import (
	"slices"
	"sync"

	"github.com/hashicorp/golang-lru/v2/simplelru"
	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"
)

// DefaultMaxHintBlobs is the number of blobs a Hints table tracks before it
// forgets the least recently hinted one, so that a flood of envelopes naming
// new blobs cannot grow it without bound.
const DefaultMaxHintBlobs = 4096

// DefaultMaxHintBytes bounds what a Hints table holds, counted by hintBytes:
// past it the least recently hinted blobs are forgotten too. A blob's hints
// can hold 16 providers of 4 addresses of 1 KiB (ADR 0014, proto's caps):
// 64 KiB, so DefaultMaxHintBlobs of them would be 256 MiB. 8 MiB keeps
// at least 128 such blobs, and every blob of a table of honest hints (a
// provider or two of short addresses: a few hundred bytes a blob).
const DefaultMaxHintBytes = 8 << 20

// hintOverhead is what hintBytes counts for a provider beside its ID's
// and its addresses' bytes: the AddrInfo, the slice headers and the
// multiaddrs' own.
const hintOverhead = 64

// Hints remembers, per blob, the providers that gossip named for it
// (docs/design.md §6): at most core.MaxHintsPerBlob (16) per blob, the
// newest (ADR 0014: "a node keeps at most 16 hints per blob"), for at most
// a fixed number of blobs and bytes, the least recently hinted forgotten
// first (golang-lru's simplelru under the table's lock). They are a fetch's
// Sources.Named, newest first. The zero value is not usable; call
// NewHints. Safe for concurrent use.
type Hints struct {
	mu sync.Mutex
	// blobs maps a CID to its hints, newest first, distinct by peer.
	// Peek reads it, so that only Add makes a blob recent.
	blobs *simplelru.LRU[cid.Cid, []peer.AddrInfo]
	// bytes is hintBytes of every blob's hints; at most maxBytes but for
	// the newest blob's.
	bytes, maxBytes int
}

// NewHints returns a table that tracks at most maxBlobs blobs (at least 1)
// and, but for the newest blob's hints, maxBytes of hints (hintBytes).
func NewHints(maxBlobs, maxBytes int) *Hints {
	h := &Hints{maxBytes: maxBytes}
	l, err := simplelru.NewLRU(max(1, maxBlobs), func(_ cid.Cid, ps []peer.AddrInfo) { h.bytes -= hintBytes(ps) })
	if err != nil {
		panic(err) // only for a size below 1
	}
	h.blobs = l
	return h
}

// hintBytes is what the hints ps hold: each provider's ID and addresses
// in bytes, and hintOverhead.
func hintBytes(ps []peer.AddrInfo) int {
	n := 0
	for _, p := range ps {
		n += hintOverhead + len(p.ID)
		for _, a := range p.Addrs {
			n += len(a.Bytes())
		}
	}
	return n
}

// Add records providers, in their order, as the newest hints for c. A
// provider hinted already moves to the front with its new addresses; the
// oldest past core.MaxHintsPerBlob are dropped, as are empty ids. The
// merge is Sources.candidates, the one de-duplication of providers. Past
// the table's bounds the least recently hinted blobs are forgotten.
func (h *Hints) Add(c cid.Cid, providers []peer.AddrInfo) {
	if len(providers) == 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	old, _ := h.blobs.Peek(c)
	all := slices.Concat(providers, old)
	cands := Sources{Named: all}.candidates("")
	merged := make([]peer.AddrInfo, len(cands))
	for i, cd := range cands {
		merged[i] = all[cd.named]
	}
	h.blobs.Remove(c) // its bytes leave with it (the eviction callback)
	h.blobs.Add(c, merged)
	h.bytes += hintBytes(merged)
	for h.bytes > h.maxBytes && h.blobs.Len() > 1 {
		h.blobs.RemoveOldest()
	}
}

// Get returns the hints for c, newest first (at most
// core.MaxHintsPerBlob); nil if there are none. The slice is the
// caller's.
func (h *Hints) Get(c cid.Cid) []peer.AddrInfo {
	h.mu.Lock()
	defer h.mu.Unlock()
	ps, _ := h.blobs.Peek(c)
	return slices.Clone(ps)
}

// Len returns the number of blobs with hints.
func (h *Hints) Len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.blobs.Len()
}
