package p2p

import (
	"context"
	"time"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/wats-network/wats/proto"
)

// RelayRedialDelay is how long KeepRelayed waits after a relayed
// connection closed before it dials the peer again: the relay's teardown
// of the circuit, and a direct connection that replaced it, come first.
// RelayRedialTimeout bounds that dial.
const (
	RelayRedialDelay   = time.Second
	RelayRedialTimeout = 30 * time.Second
)

// KeepRelayed dials a peer again when the last connection to it, a
// relayed one that this node opened, closes: a circuit lives 2 minutes
// and carries 1 MiB each way at most (a relay's limits, docs/adr/0040),
// and a peer behind a symmetric NAT, which no hole punch reaches, has no
// other way to stay connected (docs/adr/0047). It dials only peers that
// speak /wats/1 (as the peerstore remembers from identify), only while
// the node has fewer than connsLow peers, once for each closed
// connection, within RelayRedialTimeout; the dial takes the peer's
// addresses from the peerstore, its relay addresses among them. Each dial
// runs in a goroutine that spawn starts; it stops when ctx ends.
func KeepRelayed(ctx context.Context, h host.Host, connsLow int, spawn func(func())) {
	nb := &network.NotifyBundle{DisconnectedF: func(nw network.Network, c network.Conn) {
		st := c.Stat()
		if !st.Limited || st.Direction != network.DirOutbound || ctx.Err() != nil {
			return
		}
		p := c.RemotePeer()
		spawn(func() {
			select {
			case <-ctx.Done():
				return
			case <-time.After(RelayRedialDelay):
			}
			if nw.Connectedness(p) == network.Connected || len(nw.Peers()) >= connsLow {
				return
			}
			if ok, err := h.Peerstore().SupportsProtocols(p, proto.ID); err != nil || len(ok) == 0 {
				return
			}
			dctx, cancel := context.WithTimeout(network.WithAllowLimitedConn(ctx, "relayed wats peer"), RelayRedialTimeout)
			defer cancel()
			_ = h.Connect(dctx, peer.AddrInfo{ID: p})
		})
	}}
	h.Network().Notify(nb)
	spawn(func() {
		<-ctx.Done()
		h.Network().StopNotify(nb)
	})
}
