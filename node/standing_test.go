package node

import (
	"context"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/p2p/net/swarm"
)

// direction is the direction of a's connection to p ("" for none).
func direction(a *testNode, p peer.ID) network.Direction {
	for _, c := range a.host.Network().ConnsToPeer(p) {
		return c.Stat().Direction
	}
	return network.DirUnknown
}

// TestStandingOnlyFromChosenDials: a peer has standing at a node when the
// node chose to dial it (a bootstrap peer, an operator's connect, even of
// a peer connected already), not when a DHT query of the node dialled it,
// nor any other dial of its host not through its Dialer (ADR 0041's
// addendum): whom a lookup dials, the answers of other peers choose.
func TestStandingOnlyFromChosenDials(t *testing.T) {
	boot := startNode(t, dhtConfig())
	cfg := dhtConfig(boot)
	cfg.P2P.ConnsLow = 1 // no dial of the rendezvous discovery: one peer is enough
	a := startNode(t, cfg)
	farCfg := dhtConfig(boot)
	farCfg.P2P.ConnsLow = 1
	far := startNode(t, farCfg)
	waitRoutingTables(t, 1, a, far)
	waitRoutingTables(t, 2, boot)
	waitFor(t, 10*time.Second, "boot's hello at a", func() bool { return a.helloed(boot.ID()) })
	if !a.standing(boot.ID()) {
		t.Error("a bootstrap peer has no standing")
	}

	// A DHT query of a's dials far, which is in its routing table: an
	// outbound connection, and no standing. (far's DHT may dial a first,
	// an inbound connection: then again.)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for try := 0; direction(a, far.ID()) != network.DirOutbound; try++ {
		if try == 5 {
			t.Fatalf("the lookups left a %v connection to far; want one a's DHT dialled", direction(a, far.ID()))
		}
		_ = a.host.Network().ClosePeer(far.ID())
		waitFor(t, 10*time.Second, "far's state gone at a, or far back", func() bool {
			return a.run.Get(far.ID()) == nil || direction(a, far.ID()) != network.DirUnknown
		})
		// A dial of far's that failed (far's own dial of a in flight, or
		// its connection closing) puts far under the swarm's dial
		// backoff, in which the next lookups cannot dial it: cleared.
		sw, ok := a.host.Network().(*swarm.Swarm)
		if !ok {
			t.Fatalf("a's network is a %T, not a swarm", a.host.Network())
		}
		sw.Backoff().Clear(far.ID())
		lookup, trace := traceLookup(ctx)
		if _, err := a.routing.Load().DHT().GetClosestPeers(lookup, string(far.ID())); err != nil {
			t.Fatalf("lookup: %v\n%s", err, trace())
		}
	}
	waitFor(t, 10*time.Second, "far's hello at a", func() bool { return a.helloed(far.ID()) })
	if a.standing(far.ID()) {
		t.Error("a peer a DHT query dialled has standing")
	}

	// A raw dial of a's host: no standing; the operator's connect of the
	// same peer, connected already, gives it.
	raw := startNode(t, testConfig(false, time.Hour))
	if err := a.host.Connect(ctx, peer.AddrInfo{ID: raw.ID(), Addrs: raw.host.Addrs()}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "raw's hello at a", func() bool { return a.helloed(raw.ID()) })
	if a.standing(raw.ID()) {
		t.Error("a peer dialled by the host, not the Dialer, has standing")
	}
	connect(t, a, raw)
	if !a.standing(raw.ID()) {
		t.Error("the operator's connect of a peer connected already gave it no standing")
	}

	// A peer that dialled a has none until a chooses to dial it.
	in := startNode(t, testConfig(false, time.Hour))
	connect(t, in, a)
	waitFor(t, 10*time.Second, "in's hello at a", func() bool { return a.helloed(in.ID()) })
	if direction(a, in.ID()) != network.DirInbound || a.standing(in.ID()) {
		t.Errorf("a peer that dialled a: %v, standing %v; want inbound, none", direction(a, in.ID()), a.standing(in.ID()))
	}
	connect(t, a, in)
	if !a.standing(in.ID()) {
		t.Error("the operator's connect of a peer connected inbound gave it no standing")
	}
}
