package node

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/p2p/protocol/circuitv2/client"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/wats-network/wats/api"
	"github.com/wats-network/wats/blobs"
)

// TestRelayedConnectionCarriesHelloNotBlobs: a node reached only through a
// relay (p2p.relay_service on a third node, a reservation on it) completes
// hello over the relayed connection, is shown as relayed, is synced from
// over it, and does not serve a blob over it: the fetch waits blobs.DirectWait for a direct
// connection, then fails with blobs.ErrRelayedOnly.
func TestRelayedConnectionCarriesHelloNotBlobs(t *testing.T) {
	old := blobs.DirectWait
	blobs.DirectWait = 500 * time.Millisecond
	t.Cleanup(func() { blobs.DirectWait = old })
	rcfg := testConfig(false, time.Hour)
	rcfg.P2P.RelayService = true
	relay := startNode(t, rcfg)
	holder := startNode(t, testConfig(false, time.Hour))
	getter := startNode(t, testConfig(false, time.Hour))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := client.Reserve(ctx, holder.Host(), peer.AddrInfo{ID: relay.ID(), Addrs: relay.Host().Addrs()}); err != nil {
		t.Fatalf("reserve a slot on the relay: %v", err)
	}
	ref := addBlob(t, holder, randData(1<<20, 9))
	publish(t, holder, 5)
	// Only the relayed address: the getter never learns the holder's own.
	circuit := relay.FullAddrs()[0] + "/p2p-circuit/p2p/" + holder.ID().String()
	if _, err := ma.NewMultiaddr(circuit); err != nil {
		t.Fatal(err)
	}
	if _, err := getter.Connect(ctx, circuit); err != nil {
		t.Fatalf("connect through the relay: %v", err)
	}
	if !getter.helloed(holder.ID()) {
		t.Fatal("hello did not complete over the relayed connection")
	}
	if kind := getter.punches.Kind(getter.host, holder.ID()); kind != api.ConnRelayed {
		t.Fatalf("the connection is %q, want %q", kind, api.ConnRelayed)
	}
	// The sync hello starts goes over the relayed connection (gossip is
	// off, and it is the only connection).
	waitHead(t, 10*time.Second, 5, getter)
	c, _ := cid.Decode(ref.CID)
	err := getter.fetch.Fetch(ctx, blobs.Request{CID: c, Size: ref.Size, Sources: blobs.Sources{First: holder.ID(), FirstExempt: true}})
	if !errors.Is(err, blobs.ErrRelayedOnly) {
		t.Fatalf("fetch over the relay: %v, want ErrRelayedOnly", err)
	}
	if holds(getter, ref) {
		t.Fatal("the blob came over the relay")
	}
}
