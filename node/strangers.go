package node

import (
	"github.com/wats-network/wats/config"
	"github.com/wats-network/wats/limits"
)

// Stranger connection slots (ADR 0030, after Bitcoin Core's inbound
// eviction): the peers that connect to this node without having shown
// value (no peer-cache record) share strangerSlots connections (an eighth
// of p2p.max_conns). When a new
// stranger arrives and they are all taken, one stranger is evicted to make
// room, never the newcomer and never a peer with a record: a suspect first,
// else the one whose last served request (or connection) is oldest. So no
// number of ids can hold more than an eighth of the connections, the
// resource-manager scopes of known peers keep the room they need, and a
// newcomer, active from its first moment, gets in past ids that connect and
// idle, hoard streams, or misbehave.

// strangerSlots is how many inbound connections of peers without a record
// the node holds at once: an eighth of p2p.max_conns, so that the strangers'
// memory (strangerMemory each) stays within half the resource manager's.
func strangerSlots(cfg *config.Config) int { return max(1, cfg.P2P.MaxConns/8) }

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
// stranger it returns when all slots were taken: the lowest tier (a
// suspect) first, then the least recently active. Never st itself.
func (n *Node) strangerSlot(st *peerState, slots int) (victim *peerState) {
	n.run.strangers.Lock()
	defer n.run.strangers.Unlock()
	if !st.stranger.CompareAndSwap(false, true) {
		return nil
	}
	if len(n.run.strangers.set) >= slots {
		for o := range n.run.strangers.set {
			if victim == nil || worseStranger(o, victim) {
				victim = o
			}
		}
		victim.stranger.Store(false)
		delete(n.run.strangers.set, victim)
	}
	n.run.strangers.set[st] = struct{}{}
	return victim
}

// dropStranger frees st's stranger slot, if it holds one.
func (n *Node) dropStranger(st *peerState) {
	n.run.strangers.Lock()
	defer n.run.strangers.Unlock()
	if st.stranger.CompareAndSwap(true, false) {
		delete(n.run.strangers.set, st)
	}
}

// worseStranger reports whether a should be evicted before b.
func worseStranger(a, b *peerState) bool {
	as, bs := a.Tier() == limits.TierSuspect, b.Tier() == limits.TierSuspect
	if as != bs {
		return as
	}
	return a.lastActive.Load() < b.lastActive.Load()
}
