package node

import (
	"fmt"
	"iter"

	"github.com/ipfs/go-cid"
	pebbleds "github.com/ipfs/go-ds-pebble"
	pb "github.com/libp2p/go-libp2p-kad-dht/pb"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/wats-network/wats/config"
	"github.com/wats-network/wats/routing"
)

// startRouting builds and starts the network's DHT (package routing,
// docs/adr/0040) unless p2p.dht is off: on the node's database, with the
// node's peers to bootstrap from, its complete blobs to provide, and its
// tiers for the budget of requests peers send it.
func (n *Node) startRouting() error {
	if n.cfg.P2P.DHT == config.DHTOff {
		return nil
	}
	pds, err := pebbleds.NewDatastore("", pebbleds.WithPebbleDB(n.db.DB))
	if err != nil {
		return fmt.Errorf("node: DHT datastore: %w", err)
	}
	r, err := routing.New(n.ctx, routing.Options{
		Host: n.host, Network: n.cfg.Network, Mode: n.cfg.P2P.DHT,
		// The datastore shares the node's database; its Close would
		// close it, so it is never called.
		Datastore: pds,
		Limits:    n.cfg.Limits,
		Room:      n.room,
		Bootstrap: func() []peer.AddrInfo {
			return routing.BootstrapPeers(n.host.ID(), n.cfg.P2P.Bootstrap, n.peers.Known())
		},
		Blobs: n.blobs.CIDs,
		Tier:  n.run.TierOf,
		Mono:  func() int64 { return int64(n.mono(n.now())) },
		Refused: func(p peer.ID, typ pb.Message_MessageType, why string) {
			n.m.DhtRefused()
			n.plog.Info(p, "dht", "DHT request refused: "+why, "peer", p, "type", typ.String())
		},
		Log: n.log,
	})
	if err != nil {
		return fmt.Errorf("node: %w", err)
	}
	n.routing.Store(r)
	n.go_(func() {
		r.Discover(n.ctx, n.cfg.P2P.ConnsLow, func(found iter.Seq[peer.AddrInfo]) {
			n.dialer.DialEach(n.ctx, found, "discovered peer unreachable")
		})
	})
	return nil
}

// blobPinned provides a blob that became complete here
// (blobs.StoreOptions.Pinned).
func (n *Node) blobPinned(c cid.Cid) {
	if r := n.routing.Load(); r != nil {
		r.Provide(c)
	}
}

// dialHost is the host a fetch dials providers with (blobs.ExchangeOptions.
// Dialer): the routed host, which finds a provider's addresses on the DHT
// when the peerstore has none, or the node's host with the DHT off.
func (n *Node) dialHost() host.Host {
	if r := n.routing.Load(); r != nil {
		return r.Host()
	}
	return n.host
}
