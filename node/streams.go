package node

import (
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/wats-network/wats/p2p"
	"github.com/wats-network/wats/peers"
	"github.com/wats-network/wats/proto"
)

// overCap resets a stream of st's over one of its caps (kind names it, for
// the metric) and, past peers.MaxCapRefusals in a second, disconnects and
// bans the peer.
func (n *Node) overCap(st *peerState, kind string) {
	n.m.StreamRefused(kind)
	flood, t, changed := st.OverCap(n.mono(n.now()))
	if changed {
		n.tierChanged(st, t)
	}
	if !flood {
		return
	}
	n.m.PeerBanned("stream flood")
	n.plog.Info(st.ID(), "stream flood", "peer disconnected: it kept opening streams past its caps", "peer", st.ID(),
		"ban", peers.StreamFloodBan)
	n.gater.Ban(st.ID(), peers.StreamFloodBan)
	n.go_(func() { _ = n.host.Network().ClosePeer(st.ID()) })
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
	if st.Link.unnegotiated.Add(1) > p2p.UnnegotiatedCap[st.Tier()] {
		st.Link.unnegotiated.Add(-1)
		_ = s.ResetWithError(network.StreamResourceLimitExceeded)
		n.overCap(st, "unnegotiated")
		return
	}
	_ = s.SetDeadline(time.Now().Add(negotiationTimeout))
	protoID, handle, err := n.host.Mux().Negotiate(s)
	st.Link.unnegotiated.Add(-1)
	if err != nil {
		if proto.IsTimeout(err) {
			n.m.StreamTimeout("negotiation")
			n.count(st, peers.Timeouts, 1)
		}
		_ = s.ResetWithError(network.StreamProtocolNegotiationFailed)
		return
	}
	if err := s.SetDeadline(time.Time{}); err != nil {
		s.Reset()
		return
	}
	if err := s.SetProtocol(protoID); err != nil {
		n.m.StreamRefused("protocol")
		_ = s.ResetWithError(network.StreamResourceLimitExceeded)
		return
	}
	handle(protoID, s)
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
