package node

import (
	"cmp"
	"slices"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/wats-network/wats/config"
	"github.com/wats-network/wats/core"
	"github.com/wats-network/wats/limits"
)

// Stranger connection slots (ADR 0030, after Bitcoin Core's inbound
// eviction): the peers that connect to this node and are not reputed (ADR
// 0014's rule: met in an earlier run, or first hello here at least 10
// minutes ago; ADR 0031: a record made in this run is earned in seconds,
// and does not exempt) share strangerSlots connections (a quarter of
// p2p.max_conns). A stranger that becomes reputed while connected leaves
// the slots. When a new stranger arrives and they are all taken, one
// stranger is evicted to make room, never the newcomer and never a
// reputed peer (evictionOrder): a suspect first; then, sparing the strangers that were served the most
// requests on this connection and the most recently connected, the one
// whose last served request (or connection) is oldest. So no number of ids
// can hold more than a quarter of the connections, the resource-manager
// scopes of known peers keep the room they need, and a newcomer, active
// from its first moment, gets in past ids that connect and idle, hoard
// streams, or misbehave, while the strangers that keep using the node stay.

// strangerSlots is how many inbound connections of peers not reputed the
// node holds at once: a quarter of p2p.max_conns.
func strangerSlots(cfg *config.Config) int { return max(1, cfg.P2P.MaxConns/4) }

// Bans of evicted strangers: an evicted stranger that dialled again at once
// would come back before its old connection closed, outside the slots; the
// gater refuses it for a while instead (a suspect for longer).
const (
	evictedBan        = 10 * time.Second
	evictedSuspectBan = time.Minute
)

// closingSlack is how many evicted strangers may still be closing, beyond
// the slots, before the gater refuses new strangers outright: a burst of
// hundreds of ids connecting at once would otherwise hold hundreds of
// connections (and their streams' windows) while the evictions catch up.
func closingSlack(slots int) int { return max(1, slots/2) }

// admitStranger is the gater's check of a secured inbound connection from
// p (InterceptSecured): false, to refuse it before any stream, when p is a
// stranger (not connected, not reputed: reputedAway) and the strangers in
// the slots and those evicted but still closing already fill the slots and
// their slack.
func (n *Node) admitStranger(p peer.ID) bool {
	if n.run.get(p) != nil || n.reputedAway(p) {
		return true
	}
	slots := strangerSlots(n.cfg)
	n.run.strangers.Lock()
	busy := len(n.run.strangers.set)+n.run.strangers.closing >= slots+closingSlack(slots)
	n.run.strangers.Unlock()
	if busy {
		n.m.strangerRefused()
	}
	return !busy
}

// takeStrangerSlot gives st a stranger slot; when they are all taken, the
// worst other stranger is evicted first (its slot freed at once, its
// connections closed in the background, its id refused for evictedBan).
func (n *Node) takeStrangerSlot(st *peerState) {
	victim := n.strangerSlot(st, strangerSlots(n.cfg), n.mono(n.now()))
	if victim == nil {
		return
	}
	t := victim.Tier()
	n.m.strangerEvicted(t)
	n.plog.Debug(victim.id, "evicted", "stranger evicted to make room for a newcomer", "peer", victim.id, "tier", t)
	ban := evictedBan
	if t == limits.TierSuspect {
		ban = evictedSuspectBan
	}
	n.gater.ban(victim.id, ban)
	n.go_(func() { _ = n.host.Network().ClosePeer(victim.id) })
}

// strangerSlot adds st to the stranger slots, freeing the slot of the
// stranger it returns when all slots were taken (evictionOrder). Never st
// itself. Strangers reputed by mono (the monotonic reading now) leave the
// slots first, evicting no one.
func (n *Node) strangerSlot(st *peerState, slots int, mono time.Duration) (victim *peerState) {
	n.run.strangers.Lock()
	defer n.run.strangers.Unlock()
	if !st.stranger.CompareAndSwap(false, true) {
		return nil
	}
	if len(n.run.strangers.set) >= slots {
		for o := range n.run.strangers.set {
			if o.reputed(mono) {
				o.stranger.Store(false)
				delete(n.run.strangers.set, o)
			}
		}
	}
	if len(n.run.strangers.set) >= slots {
		others := make([]*peerState, 0, len(n.run.strangers.set))
		for o := range n.run.strangers.set {
			others = append(others, o)
		}
		victim = evictionOrder(others, slots)[0]
		victim.stranger.Store(false)
		victim.evicted.Store(true)
		n.run.strangers.closing++
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

// dropStranger frees st's stranger slot, if it holds one; at st's
// disconnection (gone), an evicted st is done closing.
func (n *Node) dropStranger(st *peerState, gone bool) {
	n.run.strangers.Lock()
	defer n.run.strangers.Unlock()
	if st.stranger.CompareAndSwap(true, false) {
		delete(n.run.strangers.set, st)
	}
	if gone && st.evicted.CompareAndSwap(true, false) {
		n.run.strangers.closing--
	}
}

// reputedAway reports whether p, not connected, is reputed (ADR 0014: met
// in an earlier run, or first hello here at least core.ReputationAge ago, as
// remembered of its last stay), and so no stranger at the gater.
func (n *Node) reputedAway(p peer.ID) bool {
	if n.peers.MetInEarlierRun(p) {
		return true
	}
	rp, ok := n.run.recent.Peek(p)
	if !ok {
		return false
	}
	mono := n.mono(n.now())
	return rp.until > mono && rp.firstHello != 0 && mono-time.Duration(rp.firstHello-1) >= core.ReputationAge
}
