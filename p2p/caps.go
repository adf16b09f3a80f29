package p2p

import (
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/wats-network/wats/config"
	"github.com/wats-network/wats/limits"
)

// Streams a peer may hold at once, by kind and tier (ADR 0030). An honest
// peer opens a handful of streams at a time and names its protocol and
// sends its request at once; a peer that holds streams instead costs the
// node a goroutine and a yamux receive window (256 KiB of the resource
// manager's memory) each. The resource manager's scopes are the outer,
// static bounds; these caps follow the peer's tier and are checked on the
// peer's own counters, with no lock (the node's stream handler).
var (
	// UnnegotiatedCap bounds a peer's inbound streams that have not named
	// their protocol yet (libp2p keeps them in its transient scope). A
	// bitswap provider opens a stream per message, from 8 workers, each
	// negotiated the moment it is read: a newcomer may have as many in
	// negotiation as it may have bitswap streams.
	UnnegotiatedCap = [limits.NumTiers]int32{limits.TierSuspect: 2, limits.TierNew: 16, limits.TierNormal: 16, limits.TierValued: 16}
	// WatsStreamCap bounds a peer's inbound /wats/1 streams being handled
	// (at least 2: a requester reads its answer a moment before the
	// handler of its last request has ended).
	WatsStreamCap = [limits.NumTiers]int32{limits.TierSuspect: 2, limits.TierNew: 4, limits.TierNormal: 8, limits.TierValued: 16}
	// BitswapStreamCap bounds a peer's inbound bitswap streams: a bitswap
	// server sends each message on a stream of its own, from 8 workers,
	// and a stream ends a moment after its message is read: a provider
	// that served a blob is a newcomer until the blob is complete, so it
	// gets twice the workers.
	BitswapStreamCap = [limits.NumTiers]int32{limits.TierSuspect: 2, limits.TierNew: 16, limits.TierNormal: 16, limits.TierValued: 16}
	// MemoryPriority is the resource-manager priority of the memory a
	// peer's request frames reserve: the peers that showed value first. A
	// reservation at a priority fails once the scope is that full (low
	// 40%, medium 60%, high 80%, always 100%), so strangers never take
	// the last 40% of the /wats scope from the peers that showed value.
	MemoryPriority = [limits.NumTiers]uint8{
		limits.TierSuspect: network.ReservationPriorityLow,
		limits.TierNew:     network.ReservationPriorityMedium,
		limits.TierNormal:  network.ReservationPriorityHigh,
		limits.TierValued:  network.ReservationPriorityAlways,
	}
	// BitswapPriority is the same for bitswap messages, one step higher:
	// a provider that serves a blob fills its own scope with blocks in
	// flight, and blocks are what the node asked for.
	BitswapPriority = [limits.NumTiers]uint8{
		limits.TierSuspect: network.ReservationPriorityMedium,
		limits.TierNew:     network.ReservationPriorityHigh,
		limits.TierNormal:  network.ReservationPriorityAlways,
		limits.TierValued:  network.ReservationPriorityAlways,
	}
)

// MaxWatsStreamsPerPeer is the largest of WatsStreamCap: the resource
// manager's per-peer limit of the /wats service.
const MaxWatsStreamsPerPeer = 16

// MaxBitswapStreamsPerPeer is the largest of BitswapStreamCap.
const MaxBitswapStreamsPerPeer = 16

// StrangerSlots is how many inbound connections of peers not reputed the
// node holds at once (peers.Slots, ADR 0030): a quarter of p2p.max_conns.
func StrangerSlots(cfg *config.Config) int { return max(1, cfg.P2P.MaxConns/4) }

// ConnTag is the connection manager's tag of the node's peers, by tier:
// the manager trims the connections of the lowest sums first, so suspects
// go before strangers, and strangers before the peers that showed value.
const ConnTag = "wats-tier"

var tierTagValue = [limits.NumTiers]int{
	limits.TierSuspect: -100,
	limits.TierNew:     0,
	limits.TierNormal:  20,
	limits.TierValued:  50,
}

// TagTier sets ConnTag of p on h's connection manager to the value of
// tier t.
func TagTier(h host.Host, p peer.ID, t limits.Tier) {
	if cm := h.ConnManager(); cm != nil && t.Valid() {
		cm.TagPeer(p, ConnTag, tierTagValue[t])
	}
}
