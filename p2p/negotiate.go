package p2p

import (
	"errors"
	"time"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
)

// NegotiationTimeout bounds how long a peer's new stream may take to name
// its protocol (libp2p's own default is 10 s): an honest peer names it in
// the stream's first bytes. A stream held past it is reset and counted in
// the peer's history (ADR 0030).
const NegotiationTimeout = 2 * time.Second

// ErrProtocolScope is Negotiate's error for a stream whose protocol's
// resource scope has no room for it.
var ErrProtocolScope = errors.New("p2p: the protocol's resource scope refused the stream")

// Negotiate negotiates the protocol of inbound stream s on h's mux within
// NegotiationTimeout, as libp2p's basic host does but for the shorter
// deadline, and returns the call that hands s to the protocol's handler.
// On an error s is reset: a negotiation that failed (a stream held past
// the deadline is a timeout, proto.IsTimeout), or ErrProtocolScope.
func Negotiate(h host.Host, s network.Stream) (handle func(), err error) {
	_ = s.SetDeadline(time.Now().Add(NegotiationTimeout))
	protoID, handler, err := h.Mux().Negotiate(s)
	if err != nil {
		_ = s.ResetWithError(network.StreamProtocolNegotiationFailed)
		return nil, err
	}
	if err := s.SetDeadline(time.Time{}); err != nil {
		s.Reset()
		return nil, err
	}
	if err := s.SetProtocol(protoID); err != nil {
		_ = s.ResetWithError(network.StreamResourceLimitExceeded)
		return nil, errors.Join(ErrProtocolScope, err)
	}
	return func() { handler(protoID, s) }, nil
}

// Direction is the direction of the oldest connection to p on h (inbound
// when there is none: a stream came, so p connected).
func Direction(h host.Host, p peer.ID) network.Direction {
	conns := h.Network().ConnsToPeer(p)
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
