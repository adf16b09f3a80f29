package limits

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/libp2p/go-libp2p/core/peer"
)

// Slots is a per-peer semaphore for blob fetches (ADR 0014: at most
// limits.blob_fetches_per_peer blobs that one peer makes this node fetch at
// once; further blobs of a request are skipped). TryAcquire never blocks.
// A peer's entry exists only while it holds a slot, so memory is bounded by
// the fetches in flight. Safe for concurrent use; build one with NewSlots.
type Slots struct {
	perPeer int
	mu      struct {
		sync.Mutex
		// held maps a peer to its slots in use.
		// INVARIANT: 1 <= held[p] <= perPeer; a peer with none has no entry.
		held map[peer.ID]int
	}
}

// NewSlots returns Slots of perPeer slots for each peer:
// MinBlobFetchesPerPeer..MaxBlobFetchesPerPeer (Config.BlobFetchesPerPeer),
// or an error wrapping ErrInvalid.
func NewSlots(perPeer int) (*Slots, error) {
	if perPeer < MinBlobFetchesPerPeer || perPeer > MaxBlobFetchesPerPeer {
		return nil, fmt.Errorf("%w: blob fetch slots per peer %d; allowed: %d..%d",
			ErrInvalid, perPeer, MinBlobFetchesPerPeer, MaxBlobFetchesPerPeer)
	}
	s := &Slots{perPeer: perPeer}
	s.mu.held = make(map[peer.ID]int)
	return s, nil
}

// PerPeer returns the number of slots each peer has.
func (s *Slots) PerPeer() int { return s.perPeer }

// TryAcquire takes one of p's slots if one is free and returns ok = true
// and release, which gives the slot back; calling release more than once
// has no further effect. With all of p's slots in use it returns nil,
// false at once: the caller skips the blob (ADR 0014).
func (s *Slots) TryAcquire(p peer.ID) (release func(), ok bool) {
	s.mu.Lock()
	n := s.mu.held[p]
	if n >= s.perPeer {
		s.mu.Unlock()
		return nil, false
	}
	s.mu.held[p] = n + 1
	s.mu.Unlock()
	var once atomic.Bool
	return func() {
		if once.Swap(true) {
			return
		}
		s.mu.Lock()
		if n := s.mu.held[p]; n <= 1 {
			delete(s.mu.held, p)
		} else {
			s.mu.held[p] = n - 1
		}
		s.mu.Unlock()
	}, true
}

// InUse returns the number of p's slots in use.
func (s *Slots) InUse(p peer.ID) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.held[p]
}

// Len returns the number of peers holding at least one slot.
func (s *Slots) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.mu.held)
}
