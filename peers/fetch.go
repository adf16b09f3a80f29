package peers

import (
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/wats-network/wats/limits"
)

// fetches are what the fetches peers ask for hold while they run: each
// peer's fetch slots and the declared bytes of them all, shared by tier.
type fetches struct {
	slots   *limits.Slots
	bytes   *limits.Pool
	maxBlob uint64
}

// FetchPoolBytes is the capacity of the fetches' bytes: quota (the
// store's blobs.quota_bytes), or four of the largest blobs (maxBlob) if
// that is more, so that strangers together may always have one blob of
// the largest size in flight.
func FetchPoolBytes(quota, maxBlob int64) int64 { return max(quota, 4*maxBlob) }

// Fetch takes what a fetch that p asked for (a replicate request's, a
// crash report's dump) holds while it runs: one of p's fetch slots
// (limits.blob_fetches_per_peer, ADR 0014), and the blob's declared size
// from the share of p's tier of the fetches' bytes (FetchPoolBytes; ADR
// 0030: strangers together a quarter, suspects a sixteenth), so that
// fetches strangers start and never complete cannot reserve the whole
// quota. p's tier is its history's at now (mono), connected or not. A
// size over Options.MaxBlobBytes takes no share: its fetch fails at once.
// ok is false, and nothing is held, when either is spent; release gives
// back what was taken.
func (t *Table[L]) Fetch(p peer.ID, size uint64, now time.Time, mono time.Duration) (release func(), ok bool) {
	slot, ok := t.f.slots.TryAcquire(p)
	if !ok {
		return nil, false
	}
	if size == 0 || size > t.f.maxBlob {
		return slot, true
	}
	tier := limits.TierNew
	if h, ok := t.History(p, now, mono); ok {
		tier = limits.TierOf(h)
	}
	if !t.f.bytes.Reserve(tier, int64(size)) {
		slot()
		return nil, false
	}
	return func() {
		t.f.bytes.Release(tier, int64(size))
		slot()
	}, true
}

// FetchesHeld returns the peers holding fetch slots and the bytes held by
// tier t.
func (t *Table[L]) FetchesHeld(tier limits.Tier) (peers int, bytes int64) {
	return t.f.slots.Len(), t.f.bytes.Held(tier)
}
