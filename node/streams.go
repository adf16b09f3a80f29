package node

import (
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/wats-network/wats/limits"
	"github.com/wats-network/wats/proto"
)

// Streams a peer may hold at once, by kind and tier (ADR 0030). An honest
// peer opens a handful of streams at a time and names its protocol and
// sends its request at once; a peer that holds streams instead costs the
// node a goroutine and a yamux receive window (256 KiB of the resource
// manager's memory) each. The resource manager's scopes are the outer,
// static bounds; these caps follow the peer's tier and are checked on the
// peer's own counters, with no lock.
var (
	// unnegotiatedCap bounds a peer's inbound streams that have not named
	// their protocol yet (libp2p keeps them in its transient scope). A
	// bitswap provider opens a stream per message, from 8 workers, each
	// negotiated the moment it is read: a newcomer may have as many in
	// negotiation as it may have bitswap streams.
	unnegotiatedCap = [limits.NumTiers]int32{limits.TierSuspect: 2, limits.TierNew: 16, limits.TierNormal: 16, limits.TierValued: 16}
	// watsStreamCap bounds a peer's inbound /wats/1 streams being handled
	// (at least 2: a requester reads its answer a moment before the
	// handler of its last request has ended).
	watsStreamCap = [limits.NumTiers]int32{limits.TierSuspect: 2, limits.TierNew: 4, limits.TierNormal: 8, limits.TierValued: 16}
	// bitswapStreamCap bounds a peer's inbound bitswap streams: a bitswap
	// server sends each message on a stream of its own, from 8 workers,
	// and a stream ends a moment after its message is read: a provider
	// that served a blob is a newcomer until the blob is complete, so it
	// gets twice the workers.
	bitswapStreamCap = [limits.NumTiers]int32{limits.TierSuspect: 2, limits.TierNew: 16, limits.TierNormal: 16, limits.TierValued: 16}
	// memoryPriority is the resource-manager priority of the memory a
	// peer's request frames reserve: the peers that showed value first. A
	// reservation at a priority fails once the scope is that full (low
	// 40%, medium 60%, high 80%, always 100%), so strangers never take
	// the last 40% of the /wats scope from the peers that showed value.
	memoryPriority = [limits.NumTiers]uint8{
		limits.TierSuspect: network.ReservationPriorityLow,
		limits.TierNew:     network.ReservationPriorityMedium,
		limits.TierNormal:  network.ReservationPriorityHigh,
		limits.TierValued:  network.ReservationPriorityAlways,
	}
	// bitswapPriority is the same for bitswap messages, one step higher:
	// a provider that serves a blob fills its own scope with blocks in
	// flight, and blocks are what the node asked for.
	bitswapPriority = [limits.NumTiers]uint8{
		limits.TierSuspect: network.ReservationPriorityMedium,
		limits.TierNew:     network.ReservationPriorityHigh,
		limits.TierNormal:  network.ReservationPriorityAlways,
		limits.TierValued:  network.ReservationPriorityAlways,
	}
)

// maxWatsStreamsPerPeer is the largest of watsStreamCap: the resource
// manager's per-peer limit of the /wats service.
const maxWatsStreamsPerPeer = 16

// maxBitswapStreamsPerPeer is the largest of bitswapStreamCap.
const maxBitswapStreamsPerPeer = 16

// Stream floods (ADR 0030): a peer that keeps opening streams past its caps
// (each reset at once, so each costs the node little, but it can open tens
// of thousands a second) is disconnected and refused by the gater for
// streamFloodBan, and counted as abusive. An honest peer stays within its
// caps.
const (
	// maxCapRefusals is how many of a peer's streams may be reset over
	// its caps within one second.
	maxCapRefusals = 64
	// streamFloodBan is how long such a peer is refused.
	streamFloodBan = time.Minute
)

// overCap resets a stream of st's over one of its caps (kind names it, for
// the metric) and, past maxCapRefusals in a second, disconnects and bans
// the peer.
func (n *Node) overCap(st *peerState, kind string) {
	n.m.streamRefused(kind)
	sec := int64(n.mono(n.now()) / time.Second)
	if w := st.capWindow.Load(); w != sec && st.capWindow.CompareAndSwap(w, sec) {
		st.capRefusals.Store(0)
	}
	if st.capRefusals.Add(1) != maxCapRefusals+1 {
		return
	}
	n.m.peerBanned("stream flood")
	n.count(st, &st.hist.invalid, limits.SuspectMinBad)
	n.plog.Info(st.id, "stream flood", "peer disconnected: it kept opening streams past its caps", "peer", st.id,
		"ban", streamFloodBan)
	n.gater.ban(st.id, streamFloodBan)
	n.go_(func() { _ = n.host.Network().ClosePeer(st.id) })
}

// negotiationTimeout bounds how long a peer's new stream may take to name
// its protocol (libp2p's own default is 10 s): an honest peer names it in
// the stream's first bytes. A stream held past it is reset and counted in
// the peer's history (ADR 0030).
const negotiationTimeout = 2 * time.Second

// acceptStream is the host's handler of every inbound stream, in place of
// libp2p's basic host's (which it does the same as, but for the cap and
// the shorter deadline): hold the peer to its cap of streams not yet
// negotiated, negotiate the protocol within negotiationTimeout, then hand
// the stream to the protocol's handler.
func (n *Node) acceptStream(s network.Stream) {
	st := n.peerOf(s.Conn().RemotePeer())
	if st.unnegotiated.Add(1) > unnegotiatedCap[st.Tier()] {
		st.unnegotiated.Add(-1)
		_ = s.ResetWithError(network.StreamResourceLimitExceeded)
		n.overCap(st, "unnegotiated")
		return
	}
	_ = s.SetDeadline(time.Now().Add(negotiationTimeout))
	protoID, handle, err := n.host.Mux().Negotiate(s)
	st.unnegotiated.Add(-1)
	if err != nil {
		if proto.IsTimeout(err) {
			n.m.streamTimeout("negotiation")
			n.count(st, &st.hist.timeouts, 1)
		}
		_ = s.ResetWithError(network.StreamProtocolNegotiationFailed)
		return
	}
	if err := s.SetDeadline(time.Time{}); err != nil {
		s.Reset()
		return
	}
	if err := s.SetProtocol(protoID); err != nil {
		n.m.streamRefused("protocol")
		_ = s.ResetWithError(network.StreamResourceLimitExceeded)
		return
	}
	handle(protoID, s)
}

// bitswapStream holds p to its cap of inbound bitswap streams (the
// exchange's Node.AdmitStream).
func (n *Node) bitswapStream(p peer.ID) (release func(), ok bool) {
	st := n.peerOf(p)
	if st.bitswapStreams.Add(1) > bitswapStreamCap[st.Tier()] {
		st.bitswapStreams.Add(-1)
		n.overCap(st, "bitswap")
		return nil, false
	}
	return func() { st.bitswapStreams.Add(-1) }, true
}

// networkDirection is the direction of the oldest connection to p
// (inbound when there is none: a stream came, so p connected).
func networkDirection(n *Node, p peer.ID) network.Direction {
	conns := n.host.Network().ConnsToPeer(p)
	if len(conns) == 0 {
		return network.DirInbound
	}
	oldest := conns[0]
	for _, c := range conns[1:] {
		if c.Stat().Opened.Before(oldest.Stat().Opened) {
			oldest = c
		}
	}
	return oldest.Stat().Direction
}
