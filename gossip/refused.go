package gossip

import (
	"sync"
	"time"

	pb "github.com/libp2p/go-libp2p-pubsub/pb"
)

// refused remembers the message ids of the envelopes the RPC inspector
// dropped over a budget, for a while (ADR 0041). gossipsub never sees
// such a message, so when a peer announces it (IHAVE) it asks for it
// (IWANT) as for one it lacks, and counts the copy that then comes and is
// dropped again as a promise broken by that peer, which may be honest and
// only relaying: its score falls for the node's own budget. The inspector
// takes the ids it remembers out of every IHAVE instead.
type refused struct {
	mu    sync.Mutex
	cur   map[string]struct{}
	prev  map[string]struct{}
	since time.Time // when cur was started
	now   func() time.Time
	// expiry, while ids are remembered, forgets them once they are stale
	// though no call comes: a flood's last ids, and the maps the size of
	// its generations, go when it ends (ADR 0042).
	expiry *time.Timer
	closed bool
}

// Bounds of refused: an id is remembered at least refusedFor (gossipsub
// announces a message for 3 heartbeats, 3 s; the margin covers an IHAVE
// on its way), and at most refusedPerGen ids are kept per generation, two
// generations in all: past that under a flood, the oldest go sooner.
// Without calls, both generations go 2×refusedFor after the last was
// started, looked at every refusedFor.
const (
	refusedFor    = 5 * time.Second
	refusedPerGen = 1 << 16
)

func newRefused(now func() time.Time) *refused {
	return &refused{cur: map[string]struct{}{}, since: now(), now: now}
}

// add remembers the message id of m.
func (r *refused) add(m *pb.Message) {
	id := messageID(m)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rotate(r.now(), len(r.cur) >= refusedPerGen)
	r.cur[id] = struct{}{}
	if r.expiry == nil && !r.closed {
		r.expiry = time.AfterFunc(refusedFor, r.expire)
	}
}

// rotate starts a new generation when cur is full, refusedFor old, or the
// clock stepped back to before it began; when both generations are stale
// (cur began 2×refusedFor ago: every id in it was added refusedFor ago
// or more), it forgets them both. A new generation's map starts small:
// a flood's size does not outlive it. REQUIRES: r.mu held.
func (r *refused) rotate(now time.Time, full bool) {
	age := now.Sub(r.since)
	switch {
	case age >= 2*refusedFor:
		r.prev, r.cur, r.since = nil, map[string]struct{}{}, now
	case full || age >= refusedFor || now.Before(r.since):
		r.prev, r.cur, r.since = r.cur, map[string]struct{}{}, now
	}
}

// expire is expiry's call: it rotates, and looks again in refusedFor
// while any id is remembered.
func (r *refused) expire() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rotate(r.now(), false)
	if len(r.cur)+len(r.prev) == 0 || r.closed {
		r.expiry = nil
		return
	}
	r.expiry.Reset(refusedFor)
}

// close stops expiry.
func (r *refused) close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	if r.expiry != nil {
		r.expiry.Stop()
		r.expiry = nil
	}
}

// len is how many ids it remembers.
func (r *refused) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.cur) + len(r.prev)
}

// strip takes the ids it remembers out of the IHAVEs of ctl, and drops
// the IHAVEs left empty.
func (r *refused) strip(ctl *pb.ControlMessage) {
	if ctl == nil || len(ctl.Ihave) == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rotate(r.now(), false)
	if len(r.cur)+len(r.prev) == 0 {
		return
	}
	kept := ctl.Ihave[:0]
	for _, ih := range ctl.Ihave {
		ids := ih.MessageIDs[:0]
		for _, id := range ih.MessageIDs {
			_, a := r.cur[id]
			_, b := r.prev[id]
			if !a && !b {
				ids = append(ids, id)
			}
		}
		clear(ih.MessageIDs[len(ids):])
		ih.MessageIDs = ids
		if len(ids) > 0 {
			kept = append(kept, ih)
		}
	}
	clear(ctl.Ihave[len(kept):])
	ctl.Ihave = kept
}
