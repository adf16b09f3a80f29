package limits

import (
	"sync"

	"github.com/libp2p/go-libp2p/core/peer"
)

// Held is one peer's admission state taken out of its Table while the peer
// is connected (Hold), so that its requests are decided under a lock of
// that peer's alone, not its shard's: nothing on the request path of one
// peer waits for another's. Return puts the state back when the peer
// leaves, so that reconnecting refills no bucket. The methods are safe for
// concurrent use.
type Held struct {
	t  *Table
	p  peer.ID
	sh *shard
	mu struct {
		sync.Mutex
		st State
		// returned: the state is back in the Table (Return); a request
		// decided after it began before the peer left, on a connection
		// now closed, and is refused: its answer cannot reach the peer,
		// and deciding it on the Table could spend (or, once the peer
		// reconnected and holds its state again, find refilled) buckets
		// that are not this Held's.
		returned bool
		// shared: the shard was at its cap when the peer connected: its
		// requests are decided on the state the shard's untracked peers
		// share (Admit's rule), under the shard's lock.
		shared bool
	}
}

// Hold takes p's state out of the Table at now (or starts it: full
// buckets, or the shard's floor after a clock step back) for p's requests
// to be decided on by Held.Admit while p is connected. When p's shard is
// at its cap, and p has no state there, the Held decides on the state the
// shard's untracked peers share, as Admit does: a flood of ids past the
// cap gets no more for being connected. The caller calls Return once,
// when p leaves.
func (t *Table) Hold(p peer.ID, now int64) *Held {
	h := &Held{t: t, p: p, sh: t.shardOf(p)}
	tk := tick(now)
	sh := h.sh
	sh.mu.Lock()
	defer sh.mu.Unlock()
	sh.sweepIfDue(tk)
	if st := sh.mu.peers[p]; st != nil {
		h.mu.st = *st
		delete(sh.mu.peers, p)
	} else if len(sh.mu.peers)+int(sh.held.Load()) >= t.perShard && !sh.makeRoom(tk, t.perShard) {
		h.mu.shared = true
		return h
	} else {
		for j := range h.mu.st.ns {
			if f := &sh.mu.floor; !full(f.ns[j], f.rem[j], tk) {
				h.mu.st.ns[j], h.mu.st.rem[j] = f.ns[j], f.rem[j]
			}
		}
	}
	sh.held.Add(1)
	return h
}

// Admit decides request r of the held peer at now, as Table.Admit does, on
// its own state and under its own lock (the shard's only when the Held
// shares the untracked peers' state). After Return it refuses, with no
// wait and nothing counted: the peer is gone.
func (h *Held) Admit(f Facts, r Request, now int64) Decision {
	k := r.Type
	if !k.Valid() {
		return Decision{Verdict: Refuse, Reason: ReasonInvalid}
	}
	h.mu.Lock()
	if h.mu.returned {
		h.mu.Unlock()
		return Decision{Verdict: Refuse, Reason: ReasonRate}
	}
	if h.mu.shared {
		h.mu.Unlock()
		return h.t.Admit(h.p, f, r, now)
	}
	var d Decision
	if r.Solved || h.t.policy.unlimited(f.Tier, r) {
		d = h.t.policy.Decide(&State{}, f, r, now)
	} else {
		d = h.t.policy.Decide(&h.mu.st, f, r, now)
	}
	h.mu.Unlock()
	h.sh.count(k, d)
	return d
}

// Return puts the held state back into the Table at now, as if it had
// stayed there: kept while one of its buckets is not full (swept
// otherwise). Calls after the first do nothing.
func (h *Held) Return(now int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.mu.returned {
		return
	}
	h.mu.returned = true
	if h.mu.shared {
		return
	}
	sh := h.sh
	tk := tick(now)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	sh.sweepIfDue(tk)
	sh.held.Add(-1)
	if h.mu.st.full(tk) {
		sh.mu.floor.raise(&h.mu.st) // a full state is no state: dropped, as a sweep does
		return
	}
	st := h.mu.st
	sh.mu.peers[h.p] = &st
	sh.mu.peak = max(sh.mu.peak, len(sh.mu.peers))
}
