package node

import (
	"context"
	"errors"
	"fmt"
	"iter"

	"github.com/ipfs/go-cid"
	pebbleds "github.com/ipfs/go-ds-pebble"
	pb "github.com/libp2p/go-libp2p-kad-dht/pb"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/wats-network/wats/blobs"
	"github.com/wats-network/wats/config"
	"github.com/wats-network/wats/p2p"
	"github.com/wats-network/wats/peers"
	"github.com/wats-network/wats/proto"
	"github.com/wats-network/wats/routing"
)

// startBlobs starts the blob service (blobs.Service: bitswap, serving and
// fetching, and the auto-fetch workers) and, with blobs.auto_fetch, the
// scan for the blobs of stored events that are missing here.
func (n *Node) startBlobs() {
	o := blobs.ServiceOptions{Host: n.host, Dialer: n.dialHost(), Node: (*blobsNode)(n), Store: n.blobs, Hints: n.hints,
		Now: n.now, AutoFetch: n.cfg.Blobs.AutoFetch, RetryDelay: retryDelay, Slots: n.fetchFor, Guesses: n.run.Helloed,
		Counted: n.m.BlobFetch, Log: n.log, PeerLog: n.plog}
	if r := n.routing.Load(); r != nil {
		o.FindProviders = r.FindProviders
	}
	n.fetch = blobs.NewService(o)
	n.fetch.Start(n.ctx, n.go_)
	if n.cfg.Blobs.AutoFetch {
		n.go_(func() { n.fetch.ScanMissing(n.ctx, n.events, n.dialed) })
	}
}

// retryDelay is the wait before the tries-th retry of an auto-fetch
// (blobs.ServiceOptions.RetryDelay); a variable so that tests can shorten
// it.
var retryDelay = blobs.BackoffDelay

// blobsNode is what the blob exchange asks of the node (blobs.Node): the
// one call up from package blobs.
type blobsNode Node

// Serves says whether p is served blocks over bitswap (blobs.serve): any
// peer with "all", else only peers that completed hello; past
// bandwidth.monthly_up_bytes, only peers with standing (docs/adr/0048).
func (b *blobsNode) Serves(p peer.ID) bool {
	return (b.cfg.Blobs.Serve == config.ServeAll || (*Node)(b).helloed(p)) && b.bw.Serves(p)
}

// AdmitStream holds p to its cap of inbound bitswap streams.
func (b *blobsNode) AdmitStream(p peer.ID) (func(), bool) {
	n := (*Node)(b)
	st := n.peerOf(p)
	if !n.hold(st, peers.BitswapStream, p2p.BitswapStreamCap, "bitswap") {
		return nil, false
	}
	return func() { st.Release(peers.BitswapStream) }, true
}

func (b *blobsNode) Priority(p peer.ID) uint8 {
	return p2p.BitswapPriority[(*Node)(b).peerOf(p).Tier()]
}

// Prepare completes hello with a provider before the first want: wats
// nodes serve blocks only to peers that did (blobs.serve = "peers"), and a
// want sent while hello is still in flight would get DONT_HAVE and back an
// honest provider off. The provider must hold this node's hello
// (peers.Peer.HeardUs), not only this node its: when the provider said
// hello first, this node's answer may not have reached it yet. A provider
// that does not speak /wats/1 (another IPFS implementation) is asked
// anyway: its failed hello is not an error.
func (b *blobsNode) Prepare(ctx context.Context, p peer.ID) error {
	n := (*Node)(b)
	if st := n.run.Get(p); st != nil && st.HeardUs() {
		return nil
	}
	if err := n.greet(ctx, p); err != nil {
		n.log.Debug("hello before a blob fetch failed; asking anyway", "peer", p, "err", err)
	}
	return ctx.Err()
}

// Observe counts what a peer did: a stream held (a timeout), a block
// wanted that no complete blob holds, a blob served (value it gave),
// blocks moved (peers.Peer.BlocksMoved). A wanted root that an event here
// names is an expected miss (a blob removed here, or not fetched yet); any
// other is a miss, counted in the peer's history (ADR 0030).
func (b *blobsNode) Observe(e blobs.Event) {
	n := (*Node)(b)
	switch e.Kind {
	case blobs.Held:
		n.m.StreamTimeout("bitswap")
		n.abuse(e.Peer, peers.Timeouts)
	case blobs.Unheld:
		if ok, err := n.events.NamesBlob(e.CID.String()); err == nil && ok {
			return
		}
		n.m.BitswapMiss()
		n.abuse(e.Peer, peers.Misses)
	case blobs.Served:
		n.gave(e.Peer, 0, e.Size)
	case blobs.Sent, blobs.Received:
		n.m.BlobBytes(e.Kind == blobs.Sent, n.bw.Standing(e.Peer), e.Size)
		n.peerOf(e.Peer).BlocksMoved(n.mono(n.now()))
	}
}

// fetchFor takes what a fetch that p asked for holds while it runs
// (peers.Table.Fetch).
func (n *Node) fetchFor(p peer.ID, size uint64) (release func(), ok bool) {
	now, mono := n.clock()
	return n.run.Fetch(p, size, now, mono)
}

// Fetching returns the blob service: fetches by the rules of ADR 0014;
// nil before Start.
func (n *Node) Fetching() *blobs.Service { return n.fetch }

// Replicate asks peer to keep copies of refs, naming this node as their
// provider (it is tried first), and returns the peer's answer.
func (n *Node) Replicate(ctx context.Context, to peer.ID, refs []proto.BlobRef) (*proto.ReplicateResponse, error) {
	if len(refs) == 0 || len(refs) > proto.MaxReplicateBlobs {
		return nil, fmt.Errorf("node: replicate: %d blobs; allowed 1..%d", len(refs), proto.MaxReplicateBlobs)
	}
	req := &proto.ReplicateRequest{Blobs: refs, Providers: []proto.Provider{n.selfProvider()}}
	resp, err := n.call(ctx, to, req)
	if err != nil {
		return nil, fmt.Errorf("node: replicate to %s: %w", to, err)
	}
	if resp.Replicate == nil {
		return nil, errors.New("node: replicate answered with another type")
	}
	return resp.Replicate, nil
}

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
		Tier:  n.run.TierOf, Greeted: n.run.TakeGreeted,
		Mono: func() int64 { return int64(n.mono(n.now())) },
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
