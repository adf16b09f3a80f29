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

// Hints remembers, per blob, the providers that gossip named for it
// (docs/design.md §6): at most core.MaxHintsPerBlob (16) per blob, the
// newest (ADR 0014: "a node keeps at most 16 hints per blob"), for at most
// a fixed number of blobs, the least recently hinted forgotten first
// (golang-lru's simplelru under the table's lock). They are a fetch's
// Sources.Named, newest first. The zero value is not usable; call
// NewHints. Safe for concurrent use.
type Hints struct {
	mu sync.Mutex
	// blobs maps a CID to its hints, newest first, distinct by peer.
	// Peek reads it, so that only Add makes a blob recent.
	blobs *simplelru.LRU[cid.Cid, []peer.AddrInfo]
}

// NewHints returns a table that tracks at most maxBlobs blobs (at least 1).
func NewHints(maxBlobs int) *Hints {
	l, err := simplelru.NewLRU[cid.Cid, []peer.AddrInfo](max(1, maxBlobs), nil)
	if err != nil {
		panic(err) // only for a size below 1
	}
	return &Hints{blobs: l}
}

// Add records providers, in their order, as the newest hints for c. A
// provider hinted already moves to the front with its new addresses; the
// oldest past core.MaxHintsPerBlob are dropped, as are empty ids. The
// merge is Sources.candidates, the one de-duplication of providers.
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
	h.blobs.Add(c, merged)
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
