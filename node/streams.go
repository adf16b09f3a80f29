package node

import (
	"errors"

	"github.com/libp2p/go-libp2p/core/network"

	"github.com/wats-network/wats/limits"
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

// hold takes a stream of kind k for st within its tier's cap of caps
// (peers.Peer.Hold); over it, the stream is counted (overCap, kind names
// it) and false returned: the caller resets it.
func (n *Node) hold(st *peerState, k peers.StreamKind, caps [limits.NumTiers]int32, kind string) bool {
	if st.Hold(k, caps[st.Tier()]) {
		return true
	}
	n.overCap(st, kind)
	return false
}

// acceptStream is the host's handler of every inbound stream, in place of
// libp2p's basic host's (which it does the same as, but for the cap and
// the shorter deadline): hold the peer to its cap of streams not yet
// negotiated, negotiate the protocol (p2p.Negotiate), then hand the stream
// to the protocol's handler.
func (n *Node) acceptStream(s network.Stream) {
	st := n.peerOf(s.Conn().RemotePeer())
	if !n.hold(st, peers.Unnegotiated, p2p.UnnegotiatedCap, "unnegotiated") {
		_ = s.ResetWithError(network.StreamResourceLimitExceeded)
		return
	}
	handle, err := p2p.Negotiate(n.host, s)
	st.Release(peers.Unnegotiated)
	switch {
	case proto.IsTimeout(err):
		n.m.StreamTimeout("negotiation")
		n.count(st, peers.Timeouts, 1)
	case errors.Is(err, p2p.ErrProtocolScope):
		n.m.StreamRefused("protocol")
	case err == nil:
		handle()
	}
}
