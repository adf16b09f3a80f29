package blobs

import (
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
)

// Provider backoff (ADR 0014 "Backoff"; docs/design.md §9).
const (
	// BackoffBase is how long a provider is skipped after its first failed
	// or timed-out fetch. ADR 0014: 30 s.
	BackoffBase = 30 * time.Second

	// BackoffMax caps the skip: it doubles with each further failure,
	// 30 s, 1 min, 2 min, 4 min, 8 min, 16 min, 32 min, then 1 h. ADR 0014:
	// "up to 1 h".
	BackoffMax = time.Hour

	// BackoffForget is how long a provider's failure count is kept after
	// its skip ends, so that a provider that fails again soon doubles
	// rather than starting again at 30 s; after BackoffForget with no new
	// failure the provider is forgotten. It bounds memory in time: an
	// entry lives at most BackoffMax + BackoffForget (2 h) after its last
	// counted failure.
	BackoffForget = time.Hour

	// MaxTracked bounds the providers a Backoff remembers at once, since
	// peer ids in hints come from peers (a gossip envelope names up to 8
	// providers per blob, any of them made up). At the cap, after the
	// forgettable entries are dropped, the entry whose skip ends soonest
	// is evicted to make room: that provider may then be tried sooner than
	// its backoff says, which costs at most one attempt within the fetch
	// bounds (MaxAttempts, AttemptTimeout, FetchTimeout) that hold anyway.
	MaxTracked = 1 << 16

	// maxFailures is where the failure count saturates: the skip reaches
	// BackoffMax at the 8th failure (30 s << 7 = 64 min > 1 h), so counting
	// further adds nothing and cannot overflow.
	maxFailures = 8
)

// BackoffDelay returns how long a provider is skipped after failures
// consecutive counted failures: 0 for failures <= 0, BackoffBase for 1,
// doubling each time, BackoffMax from the 8th on. It never overflows.
func BackoffDelay(failures int) time.Duration {
	if failures <= 0 {
		return 0
	}
	d := BackoffBase
	for i := 1; i < failures && d < BackoffMax; i++ {
		d *= 2
	}
	return min(d, BackoffMax)
}

// Backoff is the per-provider backoff of ADR 0014: a provider whose fetch
// fails or times out is skipped for BackoffBase, doubling with each
// further failure up to BackoffMax; a success clears it. Time is passed
// in as a value; nothing reads the clock.
//
// A failure reported while the provider is still skipped is part of the
// same episode (an attempt begun before the skip, e.g. by a concurrent
// fetch of another blob) and changes nothing; the next failure after the
// skip ends doubles. There is deliberately no way to record a size
// mismatch here: it belongs to the CID, not the provider (ADR 0029).
//
// Memory: an entry is dropped BackoffForget after its skip ends (checked
// on each Failed and on Prune), and at most MaxTracked entries are kept
// (see MaxTracked for what happens at the cap).
//
// The zero value is an empty Backoff ready to use. A Backoff is safe for
// concurrent use; one is shared by all the fetches of a node.
type Backoff struct {
	mu sync.Mutex
	// entries holds the providers remembered, each at the end of its skip
	// (until) with its count of failures (1..maxFailures).
	entries deadlines[peer.ID, int]
	// limit is the cap on entries; 0 means MaxTracked (tests set less).
	limit   int
	evicted uint64
}

// NewBackoff returns an empty Backoff (the same as a zero Backoff).
func NewBackoff() *Backoff { return &Backoff{} }

// Failed records that a fetch from p failed or timed out at now: p is
// skipped until now+BackoffDelay(n), where n counts p's failures since it
// was last cleared or forgotten. A failure while p is still skipped
// changes nothing. An empty p is ignored.
func (b *Backoff) Failed(p peer.ID, now time.Time) {
	if p == "" {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.pruneLocked(now)
	e := b.entries.get(p)
	if e == nil {
		limit := b.limit
		if limit <= 0 {
			limit = MaxTracked
		}
		for b.entries.len() >= limit {
			b.entries.popFirst()
			b.evicted++
		}
		b.entries.set(p, now.Add(BackoffBase), 1)
		return
	}
	if now.Before(e.at) {
		return // same episode
	}
	failures := min(e.val+1, maxFailures)
	b.entries.set(p, now.Add(BackoffDelay(failures)), failures)
}

// Succeeded clears p: a success ends its backoff and forgets its failures
// (ADR 0014), also while it is skipped.
func (b *Backoff) Succeeded(p peer.ID) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.entries.remove(p)
}

// Skipped reports whether p is skipped at now, and until when (exclusive:
// p may be tried again at until). It returns false and the zero time when
// p is not skipped.
func (b *Backoff) Skipped(p peer.ID, now time.Time) (bool, time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if e := b.entries.get(p); e != nil && now.Before(e.at) {
		return true, e.at
	}
	return false, time.Time{}
}

// Prune drops the entries forgotten at now (BackoffForget after their skip
// ended) and returns how many it dropped. Failed prunes as well; a node
// may call Prune from a periodic tick to give memory back when idle.
func (b *Backoff) Prune(now time.Time) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.pruneLocked(now)
}

// Len returns how many providers are remembered (skipped, or within
// BackoffForget after their skip), at most MaxTracked.
func (b *Backoff) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.entries.len()
}

// Evicted returns how many entries were evicted at the MaxTracked cap
// since b was made (for a counter; evictions are expected only under
// attack).
func (b *Backoff) Evicted() uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.evicted
}

// pruneLocked drops the entries whose skip ended BackoffForget or more
// before now. REQUIRES: b.mu held.
func (b *Backoff) pruneLocked(now time.Time) int {
	n := 0
	for e := b.entries.first(); e != nil && !now.Before(e.at.Add(BackoffForget)); e = b.entries.first() {
		b.entries.popFirst()
		n++
	}
	return n
}
