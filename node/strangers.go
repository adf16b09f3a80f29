package node

import (
	"cmp"
	"slices"

	"github.com/wats-network/wats/config"
	"github.com/wats-network/wats/limits"
)

// Stranger connection slots (ADR 0030, after Bitcoin Core's inbound
// eviction): the peers that connect to this node without having shown
// value (no peer-cache record) share strangerSlots connections (a quarter
// of p2p.max_conns). When a new
// stranger arrives and they are all taken, one stranger is evicted to make
// room, never the newcomer and never a peer with a record (evictionOrder):
// a suspect first; then, sparing the strangers that were served the most
// requests on this connection and the most recently connected, the one
// whose last served request (or connection) is oldest. So no number of ids
// can hold more than a quarter of the connections, the resource-manager
// scopes of known peers keep the room they need, and a newcomer, active
// from its first moment, gets in past ids that connect and idle, hoard
// streams, or misbehave, while the strangers that keep using the node stay.

// strangerSlots is how many inbound connections of peers without a record
// the node holds at once: a quarter of p2p.max_conns.
func strangerSlots(cfg *config.Config) int { return max(1, cfg.P2P.MaxConns/4) }

// takeStrangerSlot gives st a stranger slot; when they are all taken, the
// worst other stranger is evicted first (its slot freed at once, its
// connections closed in the background).
func (n *Node) takeStrangerSlot(st *peerState) {
	victim := n.strangerSlot(st, strangerSlots(n.cfg))
	if victim == nil {
		return
	}
	n.m.strangerEvicted(victim.Tier())
	n.plog.Debug(victim.id, "evicted", "stranger evicted to make room for a newcomer", "peer", victim.id, "tier", victim.Tier())
	n.go_(func() { _ = n.host.Network().ClosePeer(victim.id) })
}

// strangerSlot adds st to the stranger slots, freeing the slot of the
// stranger it returns when all slots were taken (evictionOrder). Never st
// itself.
func (n *Node) strangerSlot(st *peerState, slots int) (victim *peerState) {
	n.run.strangers.Lock()
	defer n.run.strangers.Unlock()
	if !st.stranger.CompareAndSwap(false, true) {
		return nil
	}
	if len(n.run.strangers.set) >= slots {
		others := make([]*peerState, 0, len(n.run.strangers.set))
		for o := range n.run.strangers.set {
			others = append(others, o)
		}
		victim = evictionOrder(others, slots)[0]
		victim.stranger.Store(false)
		delete(n.run.strangers.set, victim)
	}
	n.run.strangers.set[st] = struct{}{}
	return victim
}

// Shares of the stranger slots spared from eviction (ADR 0030): the
// strangers served the most requests on this connection (those that keep
// using the node), and the most recently connected (newcomers in their
// first requests).
const (
	sparedMostServed = 4 // a quarter of the slots
	sparedYoungest   = 8 // an eighth of the slots
)

// evictionOrder sorts strangers, of slots in all, from the first to evict
// to the last and returns them: suspects first, least recently active
// first; then the others not spared (the slots/sparedMostServed served the
// most, the slots/sparedYoungest connected last), least recently active
// first; then the spared ones, least recently active first.
func evictionOrder(strangers []*peerState, slots int) []*peerState {
	spared := make(map[*peerState]bool)
	byServed := slices.Clone(strangers)
	slices.SortFunc(byServed, func(a, b *peerState) int {
		return cmp.Compare(b.servedHere.Load(), a.servedHere.Load())
	})
	for _, st := range byServed[:min(len(byServed), slots/sparedMostServed)] {
		if st.servedHere.Load() > 0 {
			spared[st] = true
		}
	}
	byAge := slices.Clone(strangers)
	slices.SortFunc(byAge, func(a, b *peerState) int { return cmp.Compare(b.connectedAt, a.connectedAt) })
	for _, st := range byAge[:min(len(byAge), slots/sparedYoungest)] {
		spared[st] = true
	}
	rank := func(st *peerState) int {
		switch {
		case st.Tier() == limits.TierSuspect:
			return 0
		case !spared[st]:
			return 1
		}
		return 2
	}
	slices.SortFunc(strangers, func(a, b *peerState) int {
		return cmp.Or(cmp.Compare(rank(a), rank(b)), cmp.Compare(a.lastActive.Load(), b.lastActive.Load()))
	})
	return strangers
}

// dropStranger frees st's stranger slot, if it holds one.
func (n *Node) dropStranger(st *peerState) {
	n.run.strangers.Lock()
	defer n.run.strangers.Unlock()
	if st.stranger.CompareAndSwap(true, false) {
		delete(n.run.strangers.set, st)
	}
}
