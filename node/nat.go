package node

import (
	"github.com/libp2p/go-libp2p/core/event"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/wats-network/wats/api"
	"github.com/wats-network/wats/routing"
)

// linked reports whether p has a connection, direct or relayed (network.
// Limited): a peer reached through a relay is a peer like another for
// hello, sync and its run state.
func (n *Node) linked(p peer.ID) bool {
	c := n.host.Network().Connectedness(p)
	return c == network.Connected || c == network.Limited
}

// connKind says how p is connected (api.Peer.Conn): relayed when every connection goes
// through a relay, hole-punched when the direct one came from a hole
// punch, direct otherwise; "" when not connected.
func (n *Node) connKind(p peer.ID) string {
	conns := n.host.Network().ConnsToPeer(p)
	if len(conns) == 0 {
		return ""
	}
	for _, c := range conns {
		if !c.Stat().Limited && !routing.IsRelayed(c.RemoteMultiaddr()) {
			if n.punches.HolePunched(p) {
				return api.ConnHolePunched
			}
			return api.ConnDirect
		}
	}
	return api.ConnRelayed
}

// watchReachability keeps the reachability AutoNAT last reported
// (n.reachability) until the node closes.
func (n *Node) watchReachability() {
	sub, err := n.host.EventBus().Subscribe(new(event.EvtLocalReachabilityChanged))
	if err != nil {
		n.log.Warn("cannot follow the node's reachability", "err", err)
		return
	}
	defer sub.Close()
	for {
		select {
		case <-n.ctx.Done():
			return
		case e, ok := <-sub.Out():
			if !ok {
				return
			}
			r := e.(event.EvtLocalReachabilityChanged).Reachability
			n.reachability.Store(int32(r))
			n.log.Info("reachability changed", "reachability", reachabilityName(r))
		}
	}
}

// reachabilityName names r as status shows it: public, private or
// unknown.
func reachabilityName(r network.Reachability) string {
	switch r {
	case network.ReachabilityPublic:
		return "public"
	case network.ReachabilityPrivate:
		return "private"
	default:
		return "unknown"
	}
}
