package blobs

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"
)

// newHost starts a libp2p host on 127.0.0.1 (TCP), closed with the test.
func newHost(t testing.TB) host.Host {
	t.Helper()
	h, err := libp2p.New(libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// peerNode is a host with a store, an exchange and a fetcher.
type peerNode struct {
	h  host.Host
	st *Store
	x  *Exchange
	f  *Fetcher
}

func newPeerNode(t testing.TB, opts StoreOptions, xo ExchangeOptions) *peerNode {
	t.Helper()
	st, _, _ := newStore(t, opts)
	h := newHost(t)
	x := NewExchange(h, st, &xo)
	t.Cleanup(x.Close)
	return &peerNode{h: h, st: st, x: x, f: NewFetcher(x, st, nil)}
}

// testNode is a Node whose answers a test sets: each nil func is
// BaseNode's.
type testNode struct {
	BaseNode
	held     func(p peer.ID)
	priority func(p peer.ID) uint8
	served   func(p peer.ID, size uint64)
	unheld   func(p peer.ID)
}

func (n *testNode) Priority(p peer.ID) uint8 {
	if n.priority != nil {
		return n.priority(p)
	}
	return n.BaseNode.Priority(p)
}

func (n *testNode) Observe(e Event) {
	switch {
	case e.Kind == Held && n.held != nil:
		n.held(e.Peer)
	case e.Kind == Served && n.served != nil:
		n.served(e.Peer, e.Size)
	case e.Kind == Unheld && n.unheld != nil:
		n.unheld(e.Peer)
	}
}

func (n *peerNode) info() peer.AddrInfo { return peer.AddrInfo{ID: n.h.ID(), Addrs: n.h.Addrs()} }

// TestFetchBetweenTwoHosts: b fetches blobs of several sizes from a and
// holds them; d streams them (Fetcher.Stream) and writes exactly their
// bytes, one leaf a write at most, and holds them too.
// Both ways a fetch asks: wats's block transfer (docs/adr/0053), and
// bitswap, which a wats node uses with any other provider.
func TestFetchBetweenTwoHosts(t *testing.T) {
	for _, bitswapOnly := range []bool{false, true} {
		name := "blocks"
		if bitswapOnly {
			name = "bitswap"
		}
		t.Run(name, func(t *testing.T) { testFetchBetweenTwoHosts(t, ExchangeOptions{BitswapOnly: bitswapOnly}) })
	}
}

func testFetchBetweenTwoHosts(t *testing.T, xo ExchangeOptions) {
	a := newPeerNode(t, StoreOptions{}, ExchangeOptions{})
	b := newPeerNode(t, StoreOptions{}, xo)
	d := newPeerNode(t, StoreOptions{}, xo)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i, n := range []int{0, 1, ChunkSize, ChunkSize + 1, 5*ChunkSize + 7} {
		data := randBytes(n, uint64(100+i))
		c, size, err := a.st.Import(ctx, bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		var last uint64
		err = b.f.Fetch(ctx, Request{CID: c, Size: size, Sources: Sources{Named: []peer.AddrInfo{a.info()}},
			Progress: func(done, total uint64) { last = done }})
		if err != nil {
			t.Fatalf("size %d: fetch: %v", n, err)
		}
		if last != size && size != 0 {
			t.Fatalf("size %d: progress ended at %d", n, last)
		}
		var out bytes.Buffer
		if err := b.st.Export(ctx, c, size, &out); err != nil {
			t.Fatalf("size %d: export: %v", n, err)
		}
		if !bytes.Equal(out.Bytes(), data) {
			t.Fatalf("size %d: bytes differ", n)
		}

		var w recorder
		got, err := d.f.Stream(ctx, Request{CID: c, Size: size, Sources: Sources{Named: []peer.AddrInfo{a.info()}}}, &w)
		if err != nil || got != size || !bytes.Equal(w.bytes(), data) {
			t.Fatalf("size %d: stream: %d bytes (%d counted), %v", n, len(w.bytes()), got, err)
		}
		if ok, _ := d.st.Has(c); !ok {
			t.Fatalf("size %d: streamed but not stored", n)
		}
		for _, k := range w.writes {
			if k > ChunkSize {
				t.Fatalf("size %d: a write of %d bytes: more than a leaf", n, k)
			}
		}
	}
}

// bench256MiB returns a fetching node and the request of a 256 MiB blob
// that another host on loopback holds.
func bench256MiB(b *testing.B) (*peerNode, Request) {
	const size = 256 << 20
	a := newPeerNode(b, StoreOptions{MaxBlobBytes: size}, ExchangeOptions{})
	f := newPeerNode(b, StoreOptions{MaxBlobBytes: size}, ExchangeOptions{})
	c, n, err := a.st.Import(context.Background(), bytes.NewReader(randBytes(size, 1)))
	if err != nil {
		b.Fatal(err)
	}
	return f, Request{CID: c, Size: n, Sources: Sources{Named: []peer.AddrInfo{a.info()}}}
}

// BenchmarkFetch256MiB fetches a 256 MiB blob between two hosts on
// loopback (TCP), each with its own pebble store; b.SetBytes makes the
// MB/s column the fetch rate. Each iteration removes the blob from the
// fetching side first.
func BenchmarkFetch256MiB(b *testing.B) {
	f, req := bench256MiB(b)
	ctx, c := context.Background(), req.CID
	b.SetBytes(int64(req.Size))
	b.ResetTimer()
	for b.Loop() {
		if err := f.f.Fetch(ctx, req); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if err := f.st.Remove(ctx, c); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}

// BenchmarkGet256MiB is what `blob get -o FILE` asks of the node: a 256
// MiB blob fetched between two hosts on loopback (TCP) and written to a
// file in a temporary directory, synced. "fetch-then-export" fetches,
// then exports from the store (blob get before ADR 0035); "stream"
// writes the file while it fetches (Fetcher.Stream). Each iteration
// removes the blob from the fetching side first.
func BenchmarkGet256MiB(b *testing.B) {
	f, req := bench256MiB(b)
	ctx, c, n := context.Background(), req.CID, req.Size
	for _, bc := range []struct {
		name string
		get  func(w io.Writer) error
	}{
		{"fetch-then-export", func(w io.Writer) error {
			if err := f.f.Fetch(ctx, req); err != nil {
				return err
			}
			return f.st.Export(ctx, c, n, w)
		}},
		{"stream", func(w io.Writer) error { _, err := f.f.Stream(ctx, req, w); return err }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			dir := b.TempDir()
			b.SetBytes(int64(n))
			for b.Loop() {
				out, err := os.Create(filepath.Join(dir, "got.bin"))
				if err != nil {
					b.Fatal(err)
				}
				if err := bc.get(out); err != nil {
					b.Fatal(err)
				}
				if err := out.Sync(); err != nil {
					b.Fatal(err)
				}
				out.Close()
				b.StopTimer()
				if err := f.st.Remove(ctx, c); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
		})
	}
}
