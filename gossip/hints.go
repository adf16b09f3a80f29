package gossip

import (
	"container/list"
	"sync"

	"github.com/wats-network/wats/core"
	"github.com/wats-network/wats/proto"
)

// DefaultMaxHintBlobs is the number of blobs a Hints table tracks before it
// forgets the least recently hinted one, so that a flood of envelopes naming
// new blobs cannot grow it without bound.
const DefaultMaxHintBlobs = 4096

// Hints remembers, per blob CID, the providers that gossip named for it: at
// most core.MaxHintsPerBlob per blob, newest first, for at most a fixed number of
// blobs. The zero value is not usable; call NewHints. Safe for concurrent
// use.
type Hints struct {
	mu struct {
		sync.Mutex
		// byCID maps a CID to its element in lru, whose value is *hintEntry.
		byCID map[string]*list.Element
		// lru orders blobs by last hint, most recent at the front.
		lru *list.List
	}
	maxBlobs int
}

type hintEntry struct {
	cid       string
	providers []proto.Provider // newest first, unique by ID
}

// NewHints returns a table that tracks at most maxBlobs blobs (at least 1).
func NewHints(maxBlobs int) *Hints {
	h := &Hints{maxBlobs: max(1, maxBlobs)}
	h.mu.byCID = make(map[string]*list.Element)
	h.mu.lru = list.New()
	return h
}

// Add records providers as the newest hints for cid. A provider already
// hinted moves to the front with its new addresses; the oldest hints past
// core.MaxHintsPerBlob are dropped.
func (h *Hints) Add(cid string, providers []proto.Provider) {
	if len(providers) == 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	var e *hintEntry
	if el, ok := h.mu.byCID[cid]; ok {
		h.mu.lru.MoveToFront(el)
		e = el.Value.(*hintEntry)
	} else {
		e = &hintEntry{cid: cid}
		h.mu.byCID[cid] = h.mu.lru.PushFront(e)
		for h.mu.lru.Len() > h.maxBlobs {
			old := h.mu.lru.Back()
			h.mu.lru.Remove(old)
			delete(h.mu.byCID, old.Value.(*hintEntry).cid)
		}
	}
	merged := make([]proto.Provider, 0, core.MaxHintsPerBlob)
	seen := make(map[string]struct{}, core.MaxHintsPerBlob)
	// Newest first: the new providers (last one in the envelope is not
	// "newer" than the first; keep envelope order), then the old ones.
	for _, list := range [][]proto.Provider{providers, e.providers} {
		for _, p := range list {
			if _, dup := seen[p.ID]; dup || len(merged) == core.MaxHintsPerBlob {
				continue
			}
			seen[p.ID] = struct{}{}
			merged = append(merged, p)
		}
	}
	e.providers = merged
}

// Get returns the hints for cid, newest first; nil if there are none.
func (h *Hints) Get(cid string) []proto.Provider {
	h.mu.Lock()
	defer h.mu.Unlock()
	el, ok := h.mu.byCID[cid]
	if !ok {
		return nil
	}
	return append([]proto.Provider(nil), el.Value.(*hintEntry).providers...)
}

// Len returns the number of blobs with hints.
func (h *Hints) Len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.mu.lru.Len()
}
