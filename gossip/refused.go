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
}

// Bounds of refused: an id is remembered at least refusedFor (gossipsub
// announces a message for 3 heartbeats, 3 s; the margin covers an IHAVE
// on its way), and at most refusedPerGen ids are kept per generation, two
// generations in all: past that under a flood, the oldest go sooner.
const (
	refusedFor    = 5 * time.Second
	refusedPerGen = 1 << 16
)

func newRefused(now func() time.Time) *refused {
	return &refused{cur: make(map[string]struct{}), prev: make(map[string]struct{}), since: now(), now: now}
}

// add remembers the message id of m.
func (r *refused) add(m *pb.Message) {
	id := messageID(m)
	r.mu.Lock()
	defer r.mu.Unlock()
	if now := r.now(); len(r.cur) >= refusedPerGen || now.Sub(r.since) >= refusedFor || now.Before(r.since) {
		r.prev, r.cur, r.since = r.cur, make(map[string]struct{}, len(r.cur)), now
	}
	r.cur[id] = struct{}{}
}

// strip takes the ids it remembers out of the IHAVEs of ctl, and drops
// the IHAVEs left empty.
func (r *refused) strip(ctl *pb.ControlMessage) {
	if ctl == nil || len(ctl.Ihave) == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
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
