package node

import (
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/wats-network/wats/limits"
	"github.com/wats-network/wats/peers"
)

// The stranger connection slots (peers.Slots, ADR 0030) decide whom the
// node keeps of the peers that connect to it and are not reputed; the
// node carries out their verdicts: it refuses a stranger at the gater
// when they are full (admitStranger), and bans and closes the stranger
// they evict (takeStrangerSlot).

// Bans of evicted strangers: an evicted stranger that dialled again at once
// would come back before its old connection closed, outside the slots; the
// gater refuses it for a while instead (a suspect for longer).
const (
	evictedBan        = 10 * time.Second
	evictedSuspectBan = time.Minute
)

// admitStranger is the gater's check of a secured inbound connection from
// p (InterceptSecured): false, to refuse it before any stream, when p is a
// stranger (not connected, not reputed: reputedAway) and the slots refuse
// one (peers.Slots.Admit).
func (n *Node) admitStranger(p peer.ID) bool {
	if n.run.get(p) != nil || n.reputedAway(p) {
		return true
	}
	if !n.run.slots.Admit() {
		n.m.strangerRefused()
		return false
	}
	return true
}

// takeStrangerSlot gives st a stranger slot; when they are all taken, the
// stranger the slots evict is banned for evictedBan and its connections
// closed in the background.
func (n *Node) takeStrangerSlot(st *peerState) {
	victim, evicted := n.run.slots.Take(st, n.mono(n.now()))
	if !evicted {
		return
	}
	t := victim.Tier()
	n.m.strangerEvicted(t)
	n.plog.Debug(victim.id, "evicted", "stranger evicted to make room for a newcomer", "peer", victim.id, "tier", t)
	ban := evictedBan
	if t == limits.TierSuspect {
		ban = evictedSuspectBan
	}
	n.gater.Ban(victim.id, ban)
	n.go_(func() { _ = n.host.Network().ClosePeer(victim.id) })
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
	return rp.until > mono && peers.Reputed(false, rp.firstHello, mono)
}
