package blobs

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	blocks "github.com/ipfs/go-block-format"
	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	mh "github.com/multiformats/go-multihash"
)

// countingNode counts, per peer, the bytes of blocks the exchange sent
// (Sent) and accepted (Received), and calls sent after each Sent.
type countingNode struct {
	BaseNode
	mu       sync.Mutex
	sent     map[peer.ID]uint64
	received map[peer.ID]uint64
	onSent   func(total uint64)
	serves   func(peer.ID) bool
}

func newCountingNode() *countingNode {
	return &countingNode{sent: map[peer.ID]uint64{}, received: map[peer.ID]uint64{}}
}

func (n *countingNode) Serves(p peer.ID) bool {
	if n.serves != nil {
		return n.serves(p)
	}
	return true
}

func (n *countingNode) Observe(e Event) {
	n.mu.Lock()
	var total uint64
	switch e.Kind {
	case Sent:
		n.sent[e.Peer] += e.Size
		for _, v := range n.sent {
			total += v
		}
	case Received:
		n.received[e.Peer] += e.Size
	}
	onSent := n.onSent
	n.mu.Unlock()
	if e.Kind == Sent && onSent != nil {
		onSent(total)
	}
}

func (n *countingNode) counts(p peer.ID) (sent, received uint64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.sent[p], n.received[p]
}

// TestSecondProviderAskedOnlyForTheRest: a fetch from two providers, the
// first of which leaves (its host closes) once it has sent half the blob,
// keeps every block the first delivered, and asks the second only for
// the others: each block of the blob is received once, from one of them,
// and the second sends exactly what the fetcher received from it. Both
// ways a fetch asks (the block transfer, bitswap).
func TestSecondProviderAskedOnlyForTheRest(t *testing.T) {
	for _, bitswapOnly := range []bool{false, true} {
		name := "blocks"
		if bitswapOnly {
			name = "bitswap"
		}
		t.Run(name, func(t *testing.T) {
			ctx := testCtx(t)
			const size = 24*ChunkSize + 100
			data := randBytes(size, 7)

			first, second := newCountingNode(), newCountingNode()
			a := newPeerNode(t, StoreOptions{}, ExchangeOptions{Node: first})
			c := newPeerNode(t, StoreOptions{}, ExchangeOptions{Node: second})
			fetcher := newCountingNode()
			b := newPeerNode(t, StoreOptions{}, ExchangeOptions{Node: fetcher, BitswapOnly: bitswapOnly})
			root, _, err := a.st.Import(ctx, bytes.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := c.st.Import(ctx, bytes.NewReader(data)); err != nil {
				t.Fatal(err)
			}
			var total uint64
			for _, blk := range blocksOf(t, a.st, root) {
				total += uint64(len(blk.RawData()))
			}
			var leaving sync.Once
			left := make(chan struct{})
			first.onSent = func(sent uint64) {
				if sent >= size/2 {
					leaving.Do(func() { go func() { a.h.Close(); close(left) }() })
				}
			}

			err = b.f.Fetch(ctx, Request{CID: root, Size: size, Sources: Sources{Named: []peer.AddrInfo{a.info(), c.info()}}})
			if err != nil {
				t.Fatalf("fetch: %v", err)
			}
			<-left
			var out bytes.Buffer
			if err := b.st.Export(ctx, root, size, &out); err != nil || !bytes.Equal(out.Bytes(), data) {
				t.Fatalf("export: %v (bytes equal: %v)", err, bytes.Equal(out.Bytes(), data))
			}
			_, fromA := fetcher.counts(a.h.ID())
			_, fromC := fetcher.counts(c.h.ID())
			sentByC, _ := second.counts(b.h.ID())
			t.Logf("blob blocks %d bytes: %d from the first provider, %d from the second (which sent %d)", total, fromA, fromC, sentByC)
			if fromA == 0 || fromC == 0 {
				t.Fatalf("received %d from the first and %d from the second: the first did not leave halfway", fromA, fromC)
			}
			if fromA+fromC != total {
				t.Fatalf("received %d + %d bytes, the blob's blocks are %d: a block was received twice or never", fromA, fromC, total)
			}
			if sentByC != fromC {
				t.Fatalf("the second provider sent %d bytes, the fetcher received %d from it: it was asked for blocks held already", sentByC, fromC)
			}
		})
	}
}

// blocksStream opens a stream of the block transfer from h to n.
func blocksStream(t *testing.T, h host.Host, n *peerNode) network.Stream {
	t.Helper()
	h.Peerstore().AddAddrs(n.h.ID(), n.h.Addrs(), time.Minute)
	s, err := h.NewStream(testCtx(t), n.h.ID(), BlocksProtocol)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Reset() })
	return s
}

// identityCID is a CIDv1 (raw) of an identity multihash of k digest bytes.
func identityCID(t *testing.T, k int) cid.Cid {
	t.Helper()
	h, err := mh.Sum(bytes.Repeat([]byte{1}, k), mh.IDENTITY, -1)
	if err != nil {
		t.Fatal(err)
	}
	return cid.NewCidV1(cid.Raw, h)
}

// answers reads k responses of the block transfer from r: each block's
// length (0: not served).
func answers(r *bufio.Reader, k int) ([]uint64, error) {
	var out []uint64
	for range k {
		n, err := binary.ReadUvarint(r)
		if err != nil {
			return out, err
		}
		if _, err := io.CopyN(io.Discard, r, int64(n)); err != nil {
			return out, err
		}
		out = append(out, n)
	}
	return out, nil
}

// TestBlocksRequestBounds: the provider answers a request of
// MaxRequestCIDs CIDs, each MaxCIDBytes long, and resets the stream of a
// request of one CID more, or of a CID one byte longer, before answering
// any of it.
func TestBlocksRequestBounds(t *testing.T) {
	n := newPeerNode(t, StoreOptions{}, ExchangeOptions{})
	long := identityCID(t, MaxCIDBytes-4) // version, codec, hash code and length: 4 bytes
	if k := len(long.Bytes()); k != MaxCIDBytes {
		t.Fatalf("the test's CID is %d bytes, not %d", k, MaxCIDBytes)
	}
	tooLong := identityCID(t, MaxCIDBytes-3)
	cs := func(k int, c cid.Cid) []cid.Cid {
		out := make([]cid.Cid, k)
		for i := range out {
			out[i] = c
		}
		return out
	}
	for _, tc := range []struct {
		name string
		req  []cid.Cid
		ok   bool
	}{
		{"MaxRequestCIDs", cs(MaxRequestCIDs, long), true},
		{"one CID more", cs(MaxRequestCIDs+1, long), false},
		{"a CID one byte longer", cs(1, tooLong), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := blocksStream(t, newHost(t), n)
			if _, err := s.Write(appendRequest(nil, tc.req)); err != nil {
				if !tc.ok {
					return // reset while the request was still going out
				}
				t.Fatal(err)
			}
			got, err := answers(bufio.NewReader(s), len(tc.req))
			if tc.ok {
				if err != nil || len(got) != len(tc.req) {
					t.Fatalf("%d answers, %v; want %d", len(got), err, len(tc.req))
				}
				for _, k := range got {
					if k != 0 {
						t.Fatalf("an unheld block answered with %d bytes", k)
					}
				}
				return
			}
			if err == nil || len(got) != 0 {
				t.Fatalf("%d answers, %v; want the stream reset before any", len(got), err)
			}
		})
	}
	// A frame that is not one: no CIDs, or bytes that are not a CID.
	for name, frame := range map[string][]byte{
		"no CIDs":   {0},
		"not a CID": {1, 3, 0xff, 0xff, 0xff},
	} {
		t.Run(name, func(t *testing.T) {
			s := blocksStream(t, newHost(t), n)
			if _, err := s.Write(frame); err != nil {
				return // reset while the frame was still going out
			}
			if _, err := answers(bufio.NewReader(s), 1); err == nil {
				t.Fatal("answered; want the stream reset")
			}
		})
	}
}

// TestBlocksServedOnlyWhenComplete: the block transfer serves the blocks
// of complete blobs only, to admitted peers only, as bitswap does (ADR
// 0029): the blocks of a fetch in progress, and every block to a peer
// Node.Serves refuses, are answered with a length of 0.
func TestBlocksServedOnlyWhenComplete(t *testing.T) {
	ctx := testCtx(t)
	node := newCountingNode()
	var refuse atomic.Bool
	node.serves = func(peer.ID) bool { return !refuse.Load() }
	n := newPeerNode(t, StoreOptions{}, ExchangeOptions{Node: node})
	complete, _, err := n.st.Import(ctx, bytes.NewReader(randBytes(1000, 1)))
	if err != nil {
		t.Fatal(err)
	}
	// A block of a fetch in progress: in the store, held by no pinned blob.
	partial := randBytes(2000, 2)
	pc, err := complete.Prefix().Sum(partial)
	if err != nil {
		t.Fatal(err)
	}
	res, err := n.st.Reserve(pc, uint64(len(partial)))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Release()
	blk, err := blocks.NewBlockWithCid(partial, pc)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.st.PutBlock(ctx, pc, blk); err != nil {
		t.Fatal(err)
	}

	s := blocksStream(t, newHost(t), n)
	r := bufio.NewReader(s)
	ask := func(cs ...cid.Cid) []uint64 {
		t.Helper()
		if _, err := s.Write(appendRequest(nil, cs)); err != nil {
			t.Fatal(err)
		}
		got, err := answers(r, len(cs))
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got := ask(complete, pc); got[0] != 1000 || got[1] != 0 {
		t.Fatalf("answers %v; want [1000 0]: the complete blob's block only", got)
	}
	refuse.Store(true)
	if got := ask(complete); got[0] != 0 {
		t.Fatalf("a peer Serves refuses got %d bytes", got[0])
	}
}

// fakeBlocks is a provider that speaks the block transfer as a test says:
// answer writes the response to each CID asked.
type fakeBlocks struct {
	h      host.Host
	answer func(w io.Writer, c cid.Cid)
}

func newFakeBlocks(t *testing.T, answer func(w io.Writer, c cid.Cid)) *fakeBlocks {
	fb := &fakeBlocks{h: newHost(t), answer: answer}
	fb.h.SetStreamHandler(BlocksProtocol, func(s network.Stream) {
		defer s.Close()
		r := bufio.NewReader(s)
		for {
			cs, err := readRequest(r)
			if err != nil {
				return
			}
			for _, c := range cs {
				fb.answer(s, c)
			}
		}
	})
	return fb
}

func (fb *fakeBlocks) info() peer.AddrInfo { return peer.AddrInfo{ID: fb.h.ID(), Addrs: fb.h.Addrs()} }

// TestBlocksResponseBounds: the fetcher takes a block of exactly one
// chunk, and fails the attempt on a response of one byte more before
// reading it, and on bytes that are not the block asked for; both are the
// provider's fault (backed off, not a fault of the CID), and nothing of
// them is stored or served.
func TestBlocksResponseBounds(t *testing.T) {
	chunk := randBytes(ChunkSize, 3)
	root, err := cid.Prefix{Version: 1, Codec: cid.Raw, MhType: mh.BLAKE3, MhLength: -1}.Sum(chunk)
	if err != nil {
		t.Fatal(err)
	}
	honest := func(w io.Writer, c cid.Cid) {
		_, _ = w.Write(binary.AppendUvarint(nil, uint64(len(chunk))))
		_, _ = w.Write(chunk)
	}
	tooLong := func(w io.Writer, c cid.Cid) {
		_, _ = w.Write(binary.AppendUvarint(nil, ChunkSize+1))
		_, _ = w.Write(make([]byte, ChunkSize+1))
	}
	wrong := func(w io.Writer, c cid.Cid) {
		bad := bytes.Clone(chunk)
		bad[0] ^= 1
		_, _ = w.Write(binary.AppendUvarint(nil, uint64(len(bad))))
		_, _ = w.Write(bad)
	}
	dontHave := func(w io.Writer, c cid.Cid) { _, _ = w.Write([]byte{0}) }
	for _, tc := range []struct {
		name   string
		answer func(io.Writer, cid.Cid)
		want   error
	}{
		{"one chunk", honest, nil},
		{"one byte more", tooLong, ErrBadBlocks},
		{"other bytes", wrong, ErrBadBlocks},
		{"don't have", dontHave, ErrDontHave},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testCtx(t)
			b := newPeerNode(t, StoreOptions{}, ExchangeOptions{})
			fb := newFakeBlocks(t, tc.answer)
			err := b.f.Fetch(ctx, Request{CID: root, Size: ChunkSize, Sources: Sources{Named: []peer.AddrInfo{fb.info()}}})
			if tc.want == nil {
				if err != nil {
					t.Fatalf("fetch: %v", err)
				}
				return
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("fetch: %v, want %v", err, tc.want)
			}
			if ContentFault(err) {
				t.Fatalf("%v is taken for a fault of the CID; it is the provider's", err)
			}
			if skipped, _ := b.f.Backoff().Skipped(fb.h.ID(), time.Now()); !skipped {
				t.Fatal("the provider is not backed off")
			}
			assertUnused(t, b, root, ChunkSize)
		})
	}
}

// TestFetchFallsBackToBitswap: a provider that does not speak the block
// transfer (kubo, an older wats) is asked over bitswap.
func TestFetchFallsBackToBitswap(t *testing.T) {
	ctx := testCtx(t)
	a := newPeerNode(t, StoreOptions{}, ExchangeOptions{})
	a.h.RemoveStreamHandler(BlocksProtocol)
	b := newPeerNode(t, StoreOptions{}, ExchangeOptions{})
	data := randBytes(3*ChunkSize+5, 4)
	root, size, err := a.st.Import(ctx, bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.f.Fetch(ctx, Request{CID: root, Size: size, Sources: Sources{Named: []peer.AddrInfo{a.info()}}}); err != nil {
		t.Fatalf("fetch: %v", err)
	}
	var out bytes.Buffer
	if err := b.st.Export(ctx, root, size, &out); err != nil || !bytes.Equal(out.Bytes(), data) {
		t.Fatalf("export: %v", err)
	}
}
