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
	"github.com/libp2p/go-libp2p-kbucket/peerdiversity"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/discovery"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	corerouting "github.com/libp2p/go-libp2p/core/routing"
	ma "github.com/multiformats/go-multiaddr"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/wats-network/wats/blobs"
	"github.com/wats-network/wats/config"
	"github.com/wats-network/wats/internal/attack"
	"github.com/wats-network/wats/limits"
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
			if n.routing.Load().dht.RoutingTable().Size() < want {
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

// TestNodesFindEachOtherUnderTheRendezvousKey: nodes that know only one
// bootstrap node each find every other node of the network under its
// rendezvous key, and nodes of another network do not share their DHT.
func TestNodesFindEachOtherUnderTheRendezvousKey(t *testing.T) {
	shortenDiscovery(t) // before the nodes start: restored after they close
	boot := startNode(t, dhtConfig())
	var nodes []*testNode
	for range 4 {
		nodes = append(nodes, startNode(t, dhtConfig(boot)))
	}
	other := dhtConfig(boot)
	other.Network = "other"
	stranger := startNode(t, other)
	all := append([]*testNode{boot}, nodes...)
	ns := rendezvous("test")
	waitFor(t, 60*time.Second, "every node found under the rendezvous key", func() bool {
		for _, n := range all {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			found, err := n.routing.Load().disc.FindPeers(ctx, ns, discovery.Limit(discoverLimit))
			if err != nil {
				cancel()
				return false
			}
			var ids []peer.ID
			for ai := range found {
				ids = append(ids, ai.ID)
			}
			cancel()
			for _, m := range all {
				if m != n && !slices.Contains(ids, m.ID()) {
					return false
				}
			}
			if slices.Contains(ids, stranger.ID()) {
				t.Fatalf("a node of another network is found under %s", ns)
			}
		}
		return true
	})
	if got := stranger.routing.Load().dht.RoutingTable().Size(); got != 0 {
		t.Errorf("the node of another network has %d peers of network test in its routing table", got)
	}
	for _, n := range all {
		if slices.Contains(n.routing.Load().dht.RoutingTable().ListPeers(), stranger.ID()) {
			t.Errorf("%s has the node of another network in its routing table", n.ID())
		}
	}
}

// shortenDiscovery makes the discovery loop look every 2 s from 1 s after
// start, until the test's cleanups: called before the test starts nodes,
// it is restored after they closed (cleanups run last first).
func shortenDiscovery(t *testing.T) {
	first, every := discoverFirst, discoverEvery
	discoverFirst, discoverEvery = time.Second, 2*time.Second
	t.Cleanup(func() { discoverFirst, discoverEvery = first, every })
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
		return slices.ContainsFunc(boot.findProviders(ctx, c), func(ai peer.AddrInfo) bool { return ai.ID == holder.ID() })
	})
	goneID := gone.ID()
	gone.close(t)
	forget(getter, holder.ID())

	ctx, cancel := context.WithTimeout(context.Background(), blobs.FetchTimeout)
	defer cancel()
	// Named: only the stopped node, as a gossip hint whose provider left.
	err := getter.FetchBlob(ctx, blobs.Request{CID: c, Size: ref.Size, Sources: blobs.Sources{Named: []peer.AddrInfo{{ID: goneID}}}})
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

// TestFetchWithTheDHTOffFindsNoProvider: the same fetch with p2p.dht off
// ends with ErrNoProvider: the DHT is what found the provider above.
func TestFetchWithTheDHTOffFindsNoProvider(t *testing.T) {
	holder := startNode(t, dhtConfig())
	off := dhtConfig(holder)
	off.P2P.DHT = config.DHTOff
	getter := startNode(t, off)
	ref := addBlob(t, holder, randData(1<<20, 8))
	c, _ := cid.Decode(ref.CID)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := getter.FetchBlob(ctx, blobs.Request{CID: c, Size: ref.Size})
	if !errors.Is(err, blobs.ErrNoProvider) {
		t.Fatalf("fetch with the DHT off and no provider named: %v, want ErrNoProvider", err)
	}
}

// TestDHTBudgetBounds: a peer's DHT requests are let through up to the
// burst of its budget (a quarter of dhtRequestsPerMin) and refused past
// it; fresh ids together get the strangers' burst (a quarter of
// dhtStrangerRequestsPerMin) and no more.
func TestDHTBudgetBounds(t *testing.T) {
	b, err := newDHTBudget(testConfig(false, time.Hour).Limits)
	if err != nil {
		t.Fatal(err)
	}
	const now = int64(time.Hour)
	burst := dhtRequestsPerMin / 4
	for i := range burst {
		if !b.Allow("p", limits.TierNormal, now) {
			t.Fatalf("request %d of the burst %d refused", i+1, burst)
		}
	}
	if b.Allow("p", limits.TierNormal, now) {
		t.Fatalf("request %d, past the burst, let through", burst+1)
	}
	shared := dhtStrangerRequestsPerMin / 4
	allowed := 0
	for i := range shared + 100 {
		if b.Allow(fmt.Sprint("s", i), limits.TierNew, now) {
			allowed++
		}
	}
	if allowed != shared {
		t.Errorf("fresh ids got %d requests through, want the strangers' burst %d", allowed, shared)
	}
}

// TestDHTBootstrapPeersBound: the DHT bootstraps from at most
// maxDHTBootstrapPeers peers (at the bound and just past it), each once,
// p2p.bootstrap first.
func TestDHTBootstrapPeersBound(t *testing.T) {
	for _, k := range []int{maxDHTBootstrapPeers, maxDHTBootstrapPeers + 1} {
		cfg := testConfig(false, time.Hour)
		for i := range k {
			sk, _, err := crypto.GenerateEd25519Key(nil)
			if err != nil {
				t.Fatal(err)
			}
			id, _ := peer.IDFromPrivateKey(sk)
			cfg.P2P.Bootstrap = append(cfg.P2P.Bootstrap, fmt.Sprintf("/ip4/127.0.0.1/tcp/%d/p2p/%s", 1000+i, id))
		}
		cfg.P2P.Bootstrap = append(cfg.P2P.Bootstrap, cfg.P2P.Bootstrap[0]) // once only
		n := startNode(t, cfg)
		got := n.dhtBootstrapPeers()
		if len(got) != maxDHTBootstrapPeers {
			t.Errorf("%d bootstrap peers: %d handed to the DHT, want %d", k, len(got), maxDHTBootstrapPeers)
		}
		if first, _ := peer.AddrInfoFromString(cfg.P2P.Bootstrap[0]); got[0].ID != first.ID {
			t.Errorf("the first peer is %s, want p2p.bootstrap's first", got[0].ID)
		}
	}
}

// TestDiversityFilterBounds: peers of one public IP group take at most
// dhtMaxPerCpl places of a bucket and dhtMaxPerTable of the table (at the
// bounds and just past them); a peer with no public address is let in
// whatever its group holds.
func TestDiversityFilterBounds(t *testing.T) {
	n := startNode(t, testConfig(false, time.Hour))
	f := newDiversityFilter(n.host)
	mk := func(addr string) peer.ID {
		sk, _, _ := crypto.GenerateEd25519Key(nil)
		id, _ := peer.IDFromPrivateKey(sk)
		n.host.Peerstore().AddAddr(id, ma.StringCast(addr), time.Hour) // never dialled: the filter reads the peerstore
		return id
	}
	group := peerdiversity.PeerIPGroupKey("1.2.0.0")
	add := func(cpl int) peerdiversity.PeerGroupInfo {
		g := peerdiversity.PeerGroupInfo{Id: mk("/ip4/1.2.3.4/tcp/9287"), Cpl: cpl, IPGroupKey: group}
		if !f.Allow(g) {
			t.Fatalf("peer of bucket %d refused before its bound", cpl)
		}
		f.Increment(g)
		return g
	}
	add(1)
	add(1) // dhtMaxPerCpl
	if f.Allow(peerdiversity.PeerGroupInfo{Id: mk("/ip4/1.2.3.5/tcp/9287"), Cpl: 1, IPGroupKey: group}) {
		t.Errorf("peer %d of one group let into one bucket", dhtMaxPerCpl+1)
	}
	add(2) // dhtMaxPerTable
	if f.Allow(peerdiversity.PeerGroupInfo{Id: mk("/ip4/1.2.3.6/tcp/9287"), Cpl: 3, IPGroupKey: group}) {
		t.Errorf("peer %d of one group let into the table", dhtMaxPerTable+1)
	}
	for _, private := range []string{"/ip4/127.0.0.1/tcp/1", "/ip4/192.168.1.2/tcp/1", "/ip6/fd00::1/tcp/1", "/ip6/::1/tcp/1"} {
		g := peerdiversity.PeerGroupInfo{Id: mk(private), Cpl: 1, IPGroupKey: group}
		if !f.Allow(g) {
			t.Errorf("a peer at %s, no public address, refused", private)
		}
	}
}

// TestStrangersShareOfProviderRecords: with the provider records at the
// strangers' share of their bound, a stranger's ADD_PROVIDER is refused
// (renewals too), and below it let through; the refusal is counted.
func TestStrangersShareOfProviderRecords(t *testing.T) {
	n := startNode(t, dhtConfig())
	r := n.routing.Load()
	r.records.max = 8 // the share is 6
	ctx := context.Background()
	for i := range 5 {
		if err := r.records.Put(ctx, recordKey(i), []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	tg, err := attack.ParseTarget(n.FullAddrs()[0], "test")
	if err != nil {
		t.Fatal(err)
	}
	refused := func() float64 { return testutil.ToFloat64(n.m.dhtRefusals) }
	put := func() {
		t.Helper()
		if err := attack.PutProviderRecord(ctx, tg); err != nil {
			t.Fatal(err)
		}
	}
	put() // 5 of a share of 6: let through
	if refused() != 0 {
		t.Fatalf("a stranger's record refused below the share (%v refusals)", refused())
	}
	if err := r.records.Put(ctx, recordKey(5), []byte("v")); err != nil { // 6: the share reached
		t.Fatal(err)
	}
	put()
	waitFor(t, 5*time.Second, "the record refused", func() bool { return refused() == 1 })
}
