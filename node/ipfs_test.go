package node

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/host"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/wats-network/wats/blobs"
	"github.com/wats-network/wats/store"
)

// bitswapOnly is a libp2p host that speaks bitswap and not /wats/1, as an
// IPFS node does, serving one blob to any peer.
type bitswapOnly struct {
	h    host.Host
	x    *blobs.Exchange
	cid  string
	size uint64
}

func newBitswapOnly(t *testing.T, data []byte) *bitswapOnly {
	t.Helper()
	opts := &pebble.Options{}
	blobs.TunePebble(opts)
	dir := t.TempDir()
	db, err := pebble.Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	st, err := blobs.OpenStore(db, &blobs.StoreOptions{DataDir: store.DataDir(dir)})
	if err != nil {
		t.Fatal(err)
	}
	c, size, err := st.Import(context.Background(), bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	h := rawHost(t)
	x := blobs.NewExchange(h, st, nil)
	t.Cleanup(x.Close)
	// An IPFS node speaks bitswap and not wats's block transfer, so the
	// fetch asks it over bitswap (docs/adr/0053).
	h.RemoveStreamHandler(blobs.BlocksProtocol)
	return &bitswapOnly{h: h, x: x, cid: c.String(), size: size}
}

func (b *bitswapOnly) addr() string {
	return b.h.Addrs()[0].String() + "/p2p/" + b.h.ID().String()
}

// TestConnectBitswapOnlyPeer: a peer that answers bitswap but not /wats/1
// is connected by an explicit connect (no "protocols not supported"),
// listed as not wats, and a blob is fetched from it when named.
func TestConnectBitswapOnlyPeer(t *testing.T) {
	data := bytes.Repeat([]byte("ipfs "), 300_000) // 1.5 MB: two chunks
	ipfs := newBitswapOnly(t, data)
	n := startNode(t, testConfig(false, time.Hour))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := n.Connect(ctx, ipfs.addr())
	if err != nil || p != ipfs.h.ID() {
		t.Fatalf("connect to a bitswap-only peer: %v, %v", p, err)
	}
	var found bool
	for _, ap := range n.Peers() {
		if ap.PeerID == p.String() {
			found = true
			if !ap.NotWats || ap.Hello {
				t.Errorf("peer listed with not_wats %v, hello %v; want not wats, no hello", ap.NotWats, ap.Hello)
			}
		}
	}
	if !found {
		t.Fatal("the bitswap-only peer is not listed")
	}
	c := mustCID(t, ipfs.cid)
	if err := n.fetch.Fetch(ctx, blobs.Request{CID: c, Size: ipfs.size, Sources: blobs.Sources{First: p, FirstExempt: true}}); err != nil {
		t.Fatalf("fetch from the bitswap-only peer: %v", err)
	}
	var got bytes.Buffer
	if err := n.blobs.Export(ctx, c, ipfs.size, &got); err != nil || !bytes.Equal(got.Bytes(), data) {
		t.Fatalf("the fetched blob: %d bytes, %v", got.Len(), err)
	}
}

// TestConnectWrongAddressOfConnectedPeer: connecting to a connected peer
// at an address it does not listen on is an error that names the
// address, not "connected", and the address is not kept in the peerstore.
func TestConnectWrongAddressOfConnectedPeer(t *testing.T) {
	a := startNode(t, testConfig(false, time.Hour))
	b := startNode(t, testConfig(false, time.Hour))
	connect(t, a, b)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	wrong := "/ip4/127.0.0.1/tcp/1/p2p/" + b.Host().ID().String()
	_, err := a.Connect(ctx, wrong)
	if err == nil || !strings.Contains(err.Error(), "/ip4/127.0.0.1/tcp/1") {
		t.Fatalf("connect at a wrong address of a connected peer: %v; want an error naming it", err)
	}
	bad := ma.StringCast("/ip4/127.0.0.1/tcp/1")
	for _, x := range a.Host().Peerstore().Addrs(b.Host().ID()) {
		if x.Equal(bad) {
			t.Errorf("the failed address %s is still in the peerstore", x)
		}
	}
	// The right address still says connected.
	if _, err := a.Connect(ctx, b.Host().Addrs()[0].String()+"/p2p/"+b.Host().ID().String()); err != nil {
		t.Errorf("connect at the right address: %v", err)
	}
}

// TestConnectElsewhereClosesTheOldConnection: connecting to a connected
// peer at an address where it answers, none of this node's connections
// being there, closes those connections (one from before the peer moved
// or restarted would take the node's streams and answer nothing), and
// hello and requests go over a new one.
func TestConnectElsewhereClosesTheOldConnection(t *testing.T) {
	a := startNode(t, testConfig(false, time.Hour))
	cfg := testConfig(false, time.Hour)
	cfg.P2P.Listen = []string{"/ip4/127.0.0.1/tcp/0", "/ip4/127.0.0.1/tcp/0"}
	b := startNode(t, cfg)
	addrs := b.FullAddrs()
	if len(addrs) != 2 {
		t.Fatalf("b listens at %v; want two addresses", addrs)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := a.Connect(ctx, addrs[0]); err != nil {
		t.Fatal(err)
	}
	old := a.Host().Network().ConnsToPeer(b.ID())
	if len(old) != 1 {
		t.Fatalf("%d connections after the first connect; want 1", len(old))
	}
	if _, err := a.Connect(ctx, addrs[1]); err != nil {
		t.Fatalf("connect at b's other address: %v", err)
	}
	if !old[0].IsClosed() {
		t.Error("the connection elsewhere is still open")
	}
	// libp2p dials every address it knows for b, so the new connection
	// may be at either; b may have dialled a meanwhile too.
	conns := a.Host().Network().ConnsToPeer(b.ID())
	if len(conns) == 0 || slices.Contains(conns, old[0]) {
		t.Fatalf("connections after connecting at b's other address: %v; want new ones only", conns)
	}
	if _, err := a.call(ctx, b.ID(), a.ownHello()); err != nil {
		t.Errorf("a request over the new connection: %v", err)
	}
	// Connecting where it is connected now closes nothing.
	now := conns[0].RemoteMultiaddr().String() + "/p2p/" + b.ID().String()
	if _, err := a.Connect(ctx, now); err != nil || conns[0].IsClosed() {
		t.Errorf("connect again at the same address: %v, connection closed %v", err, conns[0].IsClosed())
	}
}

func mustCID(t *testing.T, s string) cid.Cid {
	t.Helper()
	c, err := cid.Decode(s)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
