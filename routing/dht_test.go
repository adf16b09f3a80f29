package routing

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ipfs/go-cid"
	ds "github.com/ipfs/go-datastore"
	dssync "github.com/ipfs/go-datastore/sync"
	"github.com/libp2p/go-libp2p"
	pb "github.com/libp2p/go-libp2p-kad-dht/pb"
	kb "github.com/libp2p/go-libp2p-kbucket"
	"github.com/libp2p/go-libp2p-kbucket/peerdiversity"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"
	"github.com/multiformats/go-multihash"

	"github.com/wats-network/wats/config"
	"github.com/wats-network/wats/internal/attack"
	"github.com/wats-network/wats/limits"
)

// testHost is a libp2p host on 127.0.0.1, closed at the test's end.
func testHost(t *testing.T) host.Host {
	t.Helper()
	h, err := libp2p.New(libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// testRouting is a DHT server of network (or of o.Mode) on a host of its own, its
// datastore in memory, bootstrapped from boot; every peer has tier
// (limits.TierNormal if zero), and each refusal is sent on refused if set.
type testRouting struct {
	*Routing
	h       host.Host
	refused chan string
}

func newTestRouting(t *testing.T, network string, o Options, boot ...*testRouting) *testRouting {
	t.Helper()
	h := testHost(t)
	tr := &testRouting{h: h, refused: make(chan string, 100)}
	var bootstrap []peer.AddrInfo
	for _, b := range boot {
		bootstrap = append(bootstrap, peer.AddrInfo{ID: b.h.ID(), Addrs: b.h.Addrs()})
	}
	start := time.Now()
	o.Host, o.Network = h, network
	if o.Mode == "" {
		o.Mode = config.DHTServer
	}
	o.Datastore = dssync.MutexWrap(ds.NewMapDatastore())
	o.Limits = limits.DefaultConfig()
	o.Bootstrap = func() []peer.AddrInfo { return bootstrap }
	if o.Blobs == nil {
		o.Blobs = func() []cid.Cid { return nil }
	}
	if o.Tier == nil {
		o.Tier = func(peer.ID) limits.Tier { return limits.TierNormal }
	}
	o.Mono = func() int64 { return int64(time.Since(start)) }
	o.Refused = func(_ peer.ID, typ pb.Message_MessageType, why string) { tr.refused <- typ.String() + ": " + why }
	o.Log = slog.New(slog.DiscardHandler)
	r, err := New(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	tr.Routing = r
	for _, b := range boot {
		if err := h.Connect(context.Background(), peer.AddrInfo{ID: b.h.ID(), Addrs: b.h.Addrs()}); err != nil {
			t.Fatal(err)
		}
	}
	return tr
}

// waitFor polls cond every 10 ms until it holds, failing the test after
// timeout.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(timeout); !cond(); time.Sleep(10 * time.Millisecond) { // waiting on the network
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
	}
}

// TestNodesFindEachOtherUnderTheRendezvousKey: nodes that know only one
// bootstrap node each find every other node of the network under its
// rendezvous key, and nodes of another network do not share their DHT.
func TestNodesFindEachOtherUnderTheRendezvousKey(t *testing.T) {
	first, every := discoverFirst, discoverEvery
	discoverFirst, discoverEvery = time.Second, 2*time.Second
	t.Cleanup(func() { discoverFirst, discoverEvery = first, every }) // after the nodes closed
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	discover := func(r *testRouting) {
		go r.Discover(ctx, 8, func(found iter.Seq[peer.AddrInfo]) {
			for ai := range found {
				_ = r.h.Connect(ctx, ai)
			}
		})
	}
	boot := newTestRouting(t, "test", Options{})
	all := []*testRouting{boot}
	for range 4 {
		all = append(all, newTestRouting(t, "test", Options{}, boot))
	}
	stranger := newTestRouting(t, "other", Options{}, boot)
	for _, r := range append(all, stranger) {
		discover(r)
	}
	waitFor(t, 60*time.Second, "every node found under the rendezvous key", func() bool {
		for _, r := range all {
			ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			found, err := r.Nodes(ctx)
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
				if m != r && !slices.Contains(ids, m.h.ID()) {
					return false
				}
			}
			if slices.Contains(ids, stranger.h.ID()) {
				t.Fatalf("a node of another network is found under %s", rendezvous("test"))
			}
		}
		return true
	})
	if got := stranger.DHT().RoutingTable().Size(); got != 0 {
		t.Errorf("the node of another network has %d peers of network test in its routing table", got)
	}
	for _, r := range all {
		if slices.Contains(r.DHT().RoutingTable().ListPeers(), stranger.h.ID()) {
			t.Errorf("%s has the node of another network in its routing table", r.h.ID())
		}
	}
}

// TestLANDHTInAutoMode: nodes on loopback in p2p.dht's default mode,
// auto, which AutoNAT never finds public there, are clients of the
// network's DHT and servers of the LAN DHT: in a chain A–B–C, C finds the
// provider of a blob A provides by its CID alone, and A's addresses by
// its peer ID alone (docs/adr/0047).
func TestLANDHTInAutoMode(t *testing.T) {
	auto := Options{Mode: config.DHTAuto}
	b := newTestRouting(t, "test", auto)
	a := newTestRouting(t, "test", auto, b)
	c := newTestRouting(t, "test", auto, b)
	waitFor(t, 10*time.Second, "A and C in B's LAN routing table, B in theirs", func() bool {
		return b.LAN().RoutingTable().Size() == 2 && a.LAN().RoutingTable().Size() > 0 && c.LAN().RoutingTable().Size() > 0
	})
	for _, r := range []*testRouting{a, b, c} {
		if n := r.DHT().RoutingTable().Size(); n != 0 {
			t.Errorf("a client of the network's DHT has %d peers in its table: there is no server", n)
		}
	}
	ai, err := c.FindPeer(t.Context(), a.h.ID())
	if err != nil || len(ai.Addrs) == 0 {
		t.Fatalf("C finding A: %v, %v", ai, err)
	}
	if err := c.h.Connect(t.Context(), ai); err != nil {
		t.Fatalf("C dialling A at the addresses found: %v", err)
	}
	blob := cid.NewCidV1(cid.Raw, testMultihash(t, "a blob"))
	if err := (dualRouter{a.dual}).Provide(t.Context(), blob, true); err != nil {
		t.Fatal(err)
	}
	got := c.FindProviders(t.Context(), blob)
	if len(got) != 1 || got[0].ID != a.h.ID() {
		t.Fatalf("C found providers %v, want A (%s)", got, a.h.ID())
	}
}

// testMultihash is the SHA-256 multihash of s.
func testMultihash(t *testing.T, s string) multihash.Multihash {
	t.Helper()
	mh, err := multihash.Sum([]byte(s), multihash.SHA2_256, -1)
	if err != nil {
		t.Fatal(err)
	}
	return mh
}

// TestDHTBudgetBounds: a peer's DHT requests are let through up to the
// burst of its budget (a quarter of dhtRequestsPerMin) and refused past
// it; fresh ids together get the strangers' burst (a quarter of
// limits.stranger_dht_per_min) and no more.
func TestDHTBudgetBounds(t *testing.T) {
	b, err := newBudget(limits.DefaultConfig())
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
	shared := limits.DefaultConfig().StrangerDHTPerMin / 4
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

// TestBootstrapPeersBound: the DHT bootstraps from at most
// maxDHTBootstrapPeers peers (at the bound and just past it), each once,
// p2p.bootstrap first, never the node itself.
func TestBootstrapPeersBound(t *testing.T) {
	newID := func() peer.ID {
		sk, _, err := crypto.GenerateEd25519Key(nil)
		if err != nil {
			t.Fatal(err)
		}
		id, _ := peer.IDFromPrivateKey(sk)
		return id
	}
	self := newID()
	for _, k := range []int{maxDHTBootstrapPeers, maxDHTBootstrapPeers + 1} {
		configured := []string{fmt.Sprintf("/ip4/127.0.0.1/tcp/999/p2p/%s", self)}
		var known []peer.AddrInfo
		for i := range k {
			id := newID()
			configured = append(configured, fmt.Sprintf("/ip4/127.0.0.1/tcp/%d/p2p/%s", 1000+i, id))
			known = append(known, peer.AddrInfo{ID: id, Addrs: []ma.Multiaddr{ma.StringCast("/ip4/127.0.0.1/tcp/1")}})
		}
		configured = append(configured, configured[1]) // once only
		got := BootstrapPeers(self, configured, known)
		if len(got) != maxDHTBootstrapPeers {
			t.Errorf("%d bootstrap peers: %d handed to the DHT, want %d", k, len(got), maxDHTBootstrapPeers)
		}
		if first, _ := peer.AddrInfoFromString(configured[1]); got[0].ID != first.ID {
			t.Errorf("the first peer is %s, want p2p.bootstrap's first but self", got[0].ID)
		}
		for _, ai := range got {
			if ai.ID == self {
				t.Errorf("the node itself is among its bootstrap peers")
			}
		}
	}
	if got := BootstrapPeers(self, nil, []peer.AddrInfo{{ID: newID()}}); len(got) != 1 {
		t.Errorf("no configured peer and one known: %d handed to the DHT, want 1", len(got))
	}
}

// TestDiversityFilterBounds: peers of one public IP group take at most
// dhtMaxPerCpl places of a bucket and dhtMaxPerTable of the table (at the
// bounds and just past them); a peer with no public address is let in
// whatever its group holds.
func TestDiversityFilterBounds(t *testing.T) {
	h := testHost(t)
	f := newDiversityFilter(h)
	mk := func(addr string) peer.ID {
		sk, _, _ := crypto.GenerateEd25519Key(nil)
		id, _ := peer.IDFromPrivateKey(sk)
		h.Peerstore().AddAddr(id, ma.StringCast(addr), time.Hour) // never dialled: the filter reads the peerstore
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
// (renewals too), and below it let through; the refusal is said. Each
// DHT has its store and its bound: the LAN DHT's a quarter of the
// network DHT's (docs/adr/0047).
func TestStrangersShareOfProviderRecords(t *testing.T) {
	for _, lan := range []bool{false, true} {
		t.Run(map[bool]string{false: "network", true: "LAN"}[lan], func(t *testing.T) {
			maxRecords := 8 // the share is 6
			if lan {
				maxRecords = 32 // the LAN's bound 8, its share 6
			}
			r := newTestRouting(t, "test", Options{
				MaxRecords: maxRecords,
				Tier:       func(peer.ID) limits.Tier { return limits.TierNew },
			})
			store, other := r.wan.records, r.lan.records
			if lan {
				store, other = other, store
			}
			if store.max != 8 {
				t.Fatalf("the store's bound is %d, want 8", store.max)
			}
			ctx := context.Background()
			for i := range 5 {
				if err := store.Put(ctx, recordKey(i), []byte("v")); err != nil {
					t.Fatal(err)
				}
			}
			tg, err := attack.ParseTarget(fmt.Sprintf("%s/p2p/%s", r.h.Addrs()[0], r.h.ID()), "test")
			if err != nil {
				t.Fatal(err)
			}
			tg.LAN = lan
			put := func() {
				t.Helper()
				if err := attack.PutProviderRecord(ctx, tg); err != nil {
					t.Fatal(err)
				}
			}
			put() // 5 of a share of 6: let through
			select {
			case why := <-r.refused:
				t.Fatalf("a stranger's record refused below the share: %s", why)
			default:
			}
			if err := store.Put(ctx, recordKey(5), []byte("v")); err != nil { // 6: the share reached
				t.Fatal(err)
			}
			put()
			select {
			case why := <-r.refused:
				if why != "ADD_PROVIDER: the strangers' share of the provider records is full" {
					t.Errorf("refused: %s", why)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("a stranger's record at the share was not refused")
			}
			if other.Len() != 0 {
				t.Errorf("the other DHT's store holds %d records, want 0", other.Len())
			}
		})
	}
}

// TestNewNeedsItsOptions: a Routing without the options it reads is an
// error at New, not a panic at its first request.
func TestNewNeedsItsOptions(t *testing.T) {
	if _, err := New(context.Background(), Options{Host: testHost(t)}); err == nil {
		t.Fatal("New with a host alone: no error")
	}
}

// TestLANAddrFilter: the LAN DHT tells and keeps no loopback address,
// unless the node's own addresses are all loopback (a network on one
// machine).
func TestLANAddrFilter(t *testing.T) {
	m := func(ss ...string) []ma.Multiaddr {
		var out []ma.Multiaddr
		for _, s := range ss {
			out = append(out, ma.StringCast(s))
		}
		return out
	}
	peerAddrs := m("/ip4/127.0.0.1/tcp/1", "/ip4/192.168.1.2/tcp/1", "/ip6/::1/tcp/1", "/ip4/10.0.0.2/udp/1/quic-v1")
	for _, c := range []struct {
		name string
		own  []ma.Multiaddr
		want []ma.Multiaddr
	}{
		{"on one machine", m("/ip4/127.0.0.1/tcp/4001", "/ip6/::1/tcp/4001"), peerAddrs},
		{"on a LAN", m("/ip4/127.0.0.1/tcp/4001", "/ip4/192.168.1.9/tcp/4001"), m("/ip4/192.168.1.2/tcp/1", "/ip4/10.0.0.2/udp/1/quic-v1")},
		{"no address yet", nil, peerAddrs},
	} {
		got := lanAddrFilter(func() []ma.Multiaddr { return c.own })(slices.Clone(peerAddrs))
		if !slices.EqualFunc(got, c.want, ma.Multiaddr.Equal) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// TestFindPeerWithNoPeerToAsk: a node whose routing tables are empty
// cannot find a peer by its ID, and says why and what to do, not
// kad-dht's words alone.
func TestFindPeerWithNoPeerToAsk(t *testing.T) {
	lone := newTestRouting(t, "test", Options{Mode: config.DHTAuto})
	other := newTestRouting(t, "test", Options{Mode: config.DHTAuto})
	_, err := lone.FindPeer(t.Context(), other.h.ID())
	if !errors.Is(err, kb.ErrLookupFailure) || !strings.Contains(err.Error(), "knows no peer to ask yet") ||
		!strings.Contains(err.Error(), "connect to a peer by its full multiaddr first") {
		t.Fatalf("FindPeer with empty tables = %v", err)
	}
}
