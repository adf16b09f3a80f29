package node

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	corerouting "github.com/libp2p/go-libp2p/core/routing"

	"github.com/wats-network/wats/blobs"
	"github.com/wats-network/wats/config"
)

// dhtConfig is a node of network "test" on 127.0.0.1 with the DHT in
// server mode (AutoNAT never finds a loopback node public), bootstrapped
// to boot.
func dhtConfig(boot ...*testNode) *config.Config {
	cfg := testConfig(false, time.Hour)
	cfg.P2P.DHT = config.DHTServer
	for _, b := range boot {
		cfg.P2P.Bootstrap = append(cfg.P2P.Bootstrap, b.FullAddrs()[0])
	}
	return cfg
}

// waitRoutingTable waits until each node's routing table holds at least
// want peers.
func waitRoutingTables(t *testing.T, want int, nodes ...*testNode) {
	t.Helper()
	waitFor(t, 20*time.Second, "routing tables", func() bool {
		for _, n := range nodes {
			if n.routing.Load().DHT().RoutingTable().Size() < want {
				return false
			}
		}
		return true
	})
}

// forget makes n forget every address of p and drops its connections, so
// that only the DHT can tell n where p is.
func forget(n *testNode, p peer.ID) {
	_ = n.host.Network().ClosePeer(p)
	n.host.Peerstore().ClearAddrs(p)
}

// traceLookup returns a context that records the DHT's query events of
// the lookups run with it, and a function that returns them as text, one
// a line (for the message of a failing test).
func traceLookup(ctx context.Context) (context.Context, func() string) {
	ctx, events := corerouting.RegisterForQueryEvents(ctx)
	var (
		mu    sync.Mutex
		lines []string
	)
	go func() {
		for e := range events {
			var peers []string
			for _, ai := range e.Responses {
				peers = append(peers, fmt.Sprintf("%s %v", ai.ID, ai.Addrs))
			}
			mu.Lock()
			lines = append(lines, fmt.Sprintf("%s %v %s %v", queryEventNames[e.Type], e.ID, e.Extra, peers))
			mu.Unlock()
		}
	}()
	return ctx, func() string {
		mu.Lock()
		defer mu.Unlock()
		return strings.Join(lines, "\n")
	}
}

// queryEventNames names the types of corerouting.QueryEvent.
var queryEventNames = map[corerouting.QueryEventType]string{
	corerouting.SendingQuery: "sending query", corerouting.PeerResponse: "response",
	corerouting.FinalPeer: "final peer", corerouting.QueryError: "error",
	corerouting.Provider: "provider", corerouting.Value: "value",
	corerouting.AddingPeer: "adding peer", corerouting.DialingPeer: "dialing",
}

// TestConnectByPeerIDFindsTheAddressesOnTheDHT: a node that knows nothing
// of a peer but its ID connects to it (hello included) with the addresses
// the DHT gives; with p2p.dht off the same connect fails, saying why.
func TestConnectByPeerIDFindsTheAddressesOnTheDHT(t *testing.T) {
	boot := startNode(t, dhtConfig())
	a := startNode(t, dhtConfig(boot))
	b := startNode(t, dhtConfig(boot))
	waitRoutingTables(t, 1, a, b)
	waitRoutingTables(t, 2, boot) // boot knows b: a's lookup asks boot
	forget(a, b.ID())
	if addrs := a.host.Peerstore().Addrs(b.ID()); len(addrs) != 0 {
		t.Fatalf("a still knows b's addresses %v", addrs)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	lookup, trace := traceLookup(ctx)
	if _, err := a.Connect(lookup, b.ID().String()); err != nil {
		t.Fatalf("connect by peer ID: %v\nthe lookup:\n%s", err, trace())
	}
	if !a.helloed(b.ID()) {
		t.Error("connected by peer ID, but hello did not complete")
	}

	off := testConfig(false, time.Hour)
	off.P2P.DHT = config.DHTOff
	c := startNode(t, off)
	connect(t, c, boot)
	_, err := c.Connect(ctx, b.ID().String())
	if err == nil || !strings.Contains(err.Error(), "p2p.dht is off") {
		t.Errorf("connect by peer ID with the DHT off: %v, want an error naming p2p.dht", err)
	}
	if _, err := c.Connect(ctx, "12D3KooWnot-a-peer-id"); err == nil || !strings.Contains(err.Error(), "neither a peer ID") {
		t.Errorf("connect to garbage: %v, want an error saying what to pass", err)
	}
}

// TestFetchByCIDFromADHTProvider: a blob complete on one node is provided
// on the DHT; another node that was never told who holds it fetches it by
// CID and size alone, and still does when the only provider named for it
// is stopped.
func TestFetchByCIDFromADHTProvider(t *testing.T) {
	boot := startNode(t, dhtConfig())
	holder := startNode(t, dhtConfig(boot))
	getter := startNode(t, dhtConfig(boot))
	gone := startNode(t, dhtConfig(boot))
	waitRoutingTables(t, 2, boot, holder, getter)
	ref := addBlob(t, holder, randData(3<<20, 7))
	c, _ := cid.Decode(ref.CID)
	waitFor(t, 30*time.Second, "the holder's provider record", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return slices.ContainsFunc(boot.routing.Load().FindProviders(ctx, c), func(ai peer.AddrInfo) bool { return ai.ID == holder.ID() })
	})
	goneID := gone.ID()
	gone.close(t)
	forget(getter, holder.ID())

	ctx, cancel := context.WithTimeout(context.Background(), blobs.FetchTimeout)
	defer cancel()
	// Named: only the stopped node, as a gossip hint whose provider left.
	err := getter.fetch.Fetch(ctx, blobs.Request{CID: c, Size: ref.Size, Sources: blobs.Sources{Named: []peer.AddrInfo{{ID: goneID}}}})
	if err != nil {
		t.Fatalf("fetch with a stopped named provider: %v", err)
	}
	if !holds(getter, ref) {
		t.Fatal("fetch returned nil, but the blob is not complete")
	}
	if getter.host.Network().Connectedness(holder.ID()) != network.Connected {
		t.Error("the blob came, but not over a direct connection to the DHT's provider")
	}
}

// TestFetchWithTheDHTOffFindsNoProvider: with p2p.dht off, a fetch with
// no provider named gets a blob a connected peer holds, by asking it
// (docs/adr/0047), and ends with ErrNoProvider for one that only a node
// it is not connected to holds: the DHT is what found the provider above.
func TestFetchWithTheDHTOffFindsNoProvider(t *testing.T) {
	holder := startNode(t, dhtConfig())
	far := startNode(t, dhtConfig(holder))
	off := dhtConfig(holder)
	off.P2P.DHT = config.DHTOff
	getter := startNode(t, off)
	waitFor(t, 10*time.Second, "hello with the holder", func() bool {
		st := getter.run.Get(holder.ID())
		return st != nil && st.Helloed()
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	near := addBlob(t, holder, randData(1<<20, 7))
	c, _ := cid.Decode(near.CID)
	if err := getter.fetch.Fetch(ctx, blobs.Request{CID: c, Size: near.Size}); err != nil {
		t.Fatalf("fetch of a blob a connected peer holds, the DHT off: %v", err)
	}
	ref := addBlob(t, far, randData(1<<20, 8))
	c, _ = cid.Decode(ref.CID)
	if getter.host.Network().Connectedness(far.ID()) == network.Connected {
		t.Fatal("test bug: the getter is connected to the far node")
	}
	err := getter.fetch.Fetch(ctx, blobs.Request{CID: c, Size: ref.Size})
	if !errors.Is(err, blobs.ErrNoProvider) {
		t.Fatalf("fetch with the DHT off and no provider named: %v, want ErrNoProvider", err)
	}
}
