package blobs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	bsmsg "github.com/ipfs/boxo/bitswap/message"
	pb "github.com/ipfs/boxo/bitswap/message/pb"
	bsnetwork "github.com/ipfs/boxo/bitswap/network"
	"github.com/ipfs/boxo/bitswap/network/bsnet"
	"github.com/ipfs/boxo/ipld/merkledag"
	ft "github.com/ipfs/boxo/ipld/unixfs"
	blocks "github.com/ipfs/go-block-format"
	"github.com/ipfs/go-cid"
	ipld "github.com/ipfs/go-ipld-format"
	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	rcmgr "github.com/libp2p/go-libp2p/p2p/host/resource-manager"
)

// These tests pit a fetcher against providers that lie (ADR 0029): each
// fake provider is a real libp2p host on 127.0.0.1 speaking bitswap, whose
// answers a test chooses.

// fakeProvider answers bitswap wants from a set of blocks, by a policy.
type fakeProvider struct {
	t   testing.TB
	h   host.Host
	net bsnetwork.BitSwapNetwork

	mu     sync.Mutex
	blocks map[string][]byte // by multihash
	wants  []cid.Cid         // every want-block received, in order
	sent   int               // blocks sent
	// answer decides the reply to the i-th want (from 0), for c; nil
	// serves what it holds. A block it does not hold gets DONT_HAVE.
	answer func(i int, c cid.Cid) reply
	// extra blocks are pushed along with every reply.
	extra []blocks.Block
}

// reply is a fake provider's answer to one want.
type reply int

const (
	serveIt  reply = iota // the block, or DONT_HAVE if it lacks it
	dontHave              // DONT_HAVE
	silent                // nothing at all
)

func newFakeProvider(t testing.TB) *fakeProvider {
	fp := &fakeProvider{t: t, h: newHost(t), blocks: map[string][]byte{}}
	fp.net = bsnet.NewFromIpfsHost(fp.h)
	fp.net.Start(fp)
	t.Cleanup(fp.net.Stop)
	return fp
}

func (fp *fakeProvider) info() peer.AddrInfo {
	return peer.AddrInfo{ID: fp.h.ID(), Addrs: fp.h.Addrs()}
}

// add imports data as a blob into a scratch store and takes all its blocks.
func (fp *fakeProvider) add(data []byte) (cid.Cid, uint64) {
	fp.t.Helper()
	st, _, _ := newStore(fp.t, StoreOptions{MaxBlobBytes: 1 << 30, QuotaBytes: 1 << 30})
	c, n, err := st.Import(context.Background(), bytes.NewReader(data))
	if err != nil {
		fp.t.Fatal(err)
	}
	ch, err := st.bstore.AllKeysChan(context.Background())
	if err != nil {
		fp.t.Fatal(err)
	}
	for k := range ch {
		b, err := st.bstore.Get(context.Background(), k)
		if err != nil {
			fp.t.Fatal(err)
		}
		fp.put(b)
	}
	return c, n
}

func (fp *fakeProvider) put(b blocks.Block) {
	fp.mu.Lock()
	fp.blocks[string(b.Cid().Hash())] = b.RawData()
	fp.mu.Unlock()
}

func (fp *fakeProvider) stats() (wants []cid.Cid, sent int) {
	fp.mu.Lock()
	defer fp.mu.Unlock()
	return append([]cid.Cid(nil), fp.wants...), fp.sent
}

func (fp *fakeProvider) ReceiveMessage(ctx context.Context, from peer.ID, msg bsmsg.BitSwapMessage) {
	// One message per block, as a bitswap server sends 1 MiB blocks (a
	// receiver takes at most MaxMessageBytes a message).
	var outs []bsmsg.BitSwapMessage
	out := bsmsg.New(false)
	fp.mu.Lock()
	for _, e := range msg.Wantlist() {
		if e.Cancel || e.WantType != pb.Message_Wantlist_Block {
			continue
		}
		i := len(fp.wants)
		fp.wants = append(fp.wants, e.Cid)
		data, have := fp.blocks[string(e.Cid.Hash())]
		r := serveIt
		if fp.answer != nil {
			r = fp.answer(i, e.Cid)
		}
		switch {
		case r == serveIt && have:
			b, _ := blocks.NewBlockWithCid(data, e.Cid)
			m := bsmsg.New(false)
			m.AddBlock(b)
			outs = append(outs, m)
			fp.sent++
		case r != silent:
			out.AddDontHave(e.Cid)
		}
		for _, b := range fp.extra {
			out.AddBlock(b)
		}
	}
	fp.mu.Unlock()
	if !out.Empty() {
		if len(outs) > 0 {
			// DONT_HAVEs ride with the last block, so that they arrive
			// after every block of this answer.
			last := outs[len(outs)-1]
			for _, c := range out.DontHaves() {
				last.AddDontHave(c)
			}
			for _, b := range out.Blocks() {
				outs = append(outs, bsmsg.New(false))
				outs[len(outs)-1].AddBlock(b)
			}
		} else {
			outs = append(outs, out)
		}
	}
	if len(outs) == 0 {
		return
	}
	// One stream for the whole answer, so that its messages arrive in order.
	st, err := fp.h.NewStream(ctx, from, "/ipfs/bitswap/1.2.0")
	if err != nil {
		return
	}
	defer st.Close()
	for _, m := range outs {
		if m.ToNetV1(st) != nil {
			st.Reset()
			return
		}
	}
}

func (fp *fakeProvider) ReceiveError(error)       {}
func (fp *fakeProvider) PeerConnected(peer.ID)    {}
func (fp *fakeProvider) PeerDisconnected(peer.ID) {}
func (fp *fakeProvider) push(to peer.ID, b blocks.Block) error {
	m := bsmsg.New(false)
	m.AddBlock(b)
	return fp.net.SendMessage(context.Background(), to, m)
}

// testClock is a settable clock for the fetcher's plans and backoff.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// assertUnused checks that c is not used: not complete, not listed, not
// exported, and that no block of it is left or served.
func assertUnused(t *testing.T, n *peerNode, c cid.Cid, size uint64) {
	t.Helper()
	if ok, _ := n.st.Has(c); ok {
		t.Fatalf("%s is complete", c)
	}
	for _, bi := range n.st.List() {
		if bi.CID.Equals(c) {
			t.Fatalf("%s is listed", c)
		}
	}
	if err := n.st.Export(context.Background(), c, size, new(bytes.Buffer)); !errors.Is(err, ErrIncomplete) {
		t.Fatalf("export of %s: %v, want ErrIncomplete", c, err)
	}
	if n.st.Referenced(c) {
		t.Fatalf("%s is referenced, so it would be served", c)
	}
}

func TestProviderThatDoesNotServeIsBackedOff(t *testing.T) {
	clock := &testClock{now: time.Unix(1_800_000_000, 0)}
	st, _, _ := newStore(t, StoreOptions{})
	x := NewExchange(newHost(t), st, nil)
	t.Cleanup(x.Close)
	f := NewFetcher(x, st, &FetcherOptions{Now: clock.Now})

	liar := newFakeProvider(t) // named for the blob, holds nothing
	honest := newFakeProvider(t)
	data := randBytes(3*ChunkSize+10, 7)
	c, size := honest.add(data)
	ctx := testCtx(t)
	req := Request{CID: c, Size: size, Sources: Sources{Named: []peer.AddrInfo{liar.info()}}}

	wantDelays := []time.Duration{30 * time.Second, 60 * time.Second, 120 * time.Second, 240 * time.Second}
	for i, d := range wantDelays {
		err := f.Fetch(ctx, req)
		if !errors.Is(err, ErrNoProvider) || !errors.Is(err, ErrDontHave) {
			t.Fatalf("failure %d: %v, want no provider left after a DONT_HAVE", i+1, err)
		}
		skipped, until := f.Backoff().Skipped(liar.h.ID(), clock.Now())
		if !skipped || until.Sub(clock.Now()) != d {
			t.Fatalf("failure %d: skipped %v for %v, want %v", i+1, skipped, until.Sub(clock.Now()), d)
		}
		// Meanwhile it is skipped: no request reaches it.
		before, _ := liar.stats()
		clock.Advance(d - time.Second)
		if err := f.Fetch(ctx, req); !errors.Is(err, ErrNoProvider) || errors.Is(err, ErrDontHave) {
			t.Fatalf("under backoff: %v, want no provider left, none tried", err)
		}
		if after, _ := liar.stats(); len(after) != len(before) {
			t.Fatalf("a provider under backoff got %d wants", len(after)-len(before))
		}
		clock.Advance(time.Second)
	}
	assertUnused(t, &peerNode{st: st}, c, size)

	// It starts serving: a success clears its backoff.
	liar.add(data)
	if err := f.Fetch(ctx, req); err != nil {
		t.Fatalf("once it serves: %v", err)
	}
	if skipped, _ := f.Backoff().Skipped(liar.h.ID(), clock.Now()); skipped || f.Backoff().Len() != 0 {
		t.Fatal("a success did not clear the backoff")
	}
}

func TestSilentProviderTimesOutAndNextCompletes(t *testing.T) {
	clock := &testClock{now: time.Unix(1_800_000_000, 0)}
	n := newPeerNode(t, StoreOptions{}, ExchangeOptions{})
	n.f = NewFetcher(n.x, n.st, &FetcherOptions{Now: clock.Now})
	mute := newFakeProvider(t)
	mute.answer = func(int, cid.Cid) reply { return silent } // never answers
	c, size := mute.add(randBytes(ChunkSize+1, 8))
	// The caller's deadline ends the silent attempt; the timeout backs it
	// off like a failure (only a cancellation does not).
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	err := n.f.Fetch(ctx, Request{CID: c, Size: size, Sources: Sources{Named: []peer.AddrInfo{mute.info()}}})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("fetch from a silent provider: %v, want a timeout", err)
	}
	if skipped, _ := n.f.Backoff().Skipped(mute.h.ID(), clock.Now()); !skipped {
		t.Fatal("a provider that timed out is not backed off")
	}
	assertUnused(t, n, c, size)
}

func TestBlobLargerThanDeclared(t *testing.T) {
	n := newPeerNode(t, StoreOptions{}, ExchangeOptions{})
	for _, tc := range []struct {
		name     string
		actual   int
		declared uint64
	}{
		{"dag 5 MiB declared 2 MiB", 5 * ChunkSize, 2 * ChunkSize},
		{"one chunk declared smaller", ChunkSize, 1000},
		{"two chunks declared one", ChunkSize + 1, ChunkSize},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fp := newFakeProvider(t)
			c, _ := fp.add(randBytes(tc.actual, uint64(tc.actual)))
			before := n.x.Stats().ReceivedBytes
			err := n.f.Fetch(testCtx(t), Request{CID: c, Size: tc.declared, Sources: Sources{Named: []peer.AddrInfo{fp.info()}}})
			if !errors.Is(err, ErrSizeMismatch) {
				t.Fatalf("fetch: %v, want a size mismatch", err)
			}
			got := n.x.Stats().ReceivedBytes - before
			if got > tc.declared+ChunkSize {
				t.Fatalf("received %d bytes for %d declared: more than one chunk past it", got, tc.declared)
			}
			if wants, _ := fp.stats(); len(wants) != 1 {
				t.Fatalf("%d blocks requested; want the root alone", len(wants))
			}
			if skipped, _ := n.f.Backoff().Skipped(fp.h.ID(), time.Now()); skipped {
				t.Fatal("a size mismatch backed the provider off")
			}
			assertUnused(t, n, c, tc.declared)
			if k := countBlocks(t, n.st); k != 0 {
				t.Fatalf("%d blocks left in the store", k)
			}
		})
	}
}

func TestBlobSmallerThanDeclared(t *testing.T) {
	n := newPeerNode(t, StoreOptions{}, ExchangeOptions{})
	fp := newFakeProvider(t)
	c, size := fp.add(randBytes(3*ChunkSize, 9))
	err := n.f.Fetch(testCtx(t), Request{CID: c, Size: size + 1, Sources: Sources{Named: []peer.AddrInfo{fp.info()}}})
	if !errors.Is(err, ErrSizeMismatch) {
		t.Fatalf("fetch: %v, want a size mismatch", err)
	}
	assertUnused(t, n, c, size+1)
	// The same CID at its true size is fine: the mismatch was the event's.
	if err := n.f.Fetch(testCtx(t), Request{CID: c, Size: size, Sources: Sources{Named: []peer.AddrInfo{fp.info()}}}); err != nil {
		t.Fatalf("fetch at the true size: %v", err)
	}
}

// TestLyingInnerNode: a root whose file size matches the declared size but
// whose children are bigger than it claims. The first leaf gives it away;
// at most the declared size plus one chunk is received.
func TestLyingInnerNode(t *testing.T) {
	n := newPeerNode(t, StoreOptions{}, ExchangeOptions{})
	fp := newFakeProvider(t)
	raw1, raw2 := rawBlock(t, randBytes(ChunkSize, 10)), rawBlock(t, randBytes(ChunkSize, 11))
	fp.put(raw1)
	fp.put(raw2)
	const declared = 1000
	fsn := ft.NewFSNode(ft.TFile)
	fsn.AddBlockSize(500)
	fsn.AddBlockSize(500)
	data, err := fsn.GetBytes()
	if err != nil {
		t.Fatal(err)
	}
	root := merkledag.NodeWithData(data)
	root.SetCidBuilder(CIDBuilder)
	if err := root.AddRawLink("", &ipld.Link{Cid: raw1.Cid()}); err != nil {
		t.Fatal(err)
	}
	if err := root.AddRawLink("", &ipld.Link{Cid: raw2.Cid()}); err != nil {
		t.Fatal(err)
	}
	fp.put(root)
	err = n.f.Fetch(testCtx(t), Request{CID: root.Cid(), Size: declared, Sources: Sources{Named: []peer.AddrInfo{fp.info()}}})
	if !errors.Is(err, ErrBadBlob) {
		t.Fatalf("fetch: %v, want a bad blob", err)
	}
	if got := n.x.Stats().ReceivedBytes; got > declared+ChunkSize {
		t.Fatalf("received %d bytes for %d declared", got, declared)
	}
	assertUnused(t, n, root.Cid(), declared)
}

// rawBlock makes a raw BLAKE3 block of data, as a blob's leaves are.
func rawBlock(t testing.TB, data []byte) blocks.Block {
	t.Helper()
	c, err := cid.V1Builder{Codec: cid.Raw, MhType: 0x1e}.Sum(data)
	if err != nil {
		t.Fatal(err)
	}
	b, err := blocks.NewBlockWithCid(data, c)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestTransferCutOffHalfWay(t *testing.T) {
	dir := t.TempDir()
	db := openDB(t, dir)
	st, err := OpenStore(db, inDir(dir, nil))
	if err != nil {
		t.Fatal(err)
	}
	h := newHost(t)
	x := NewExchange(h, st, nil)
	f := NewFetcher(x, st, nil)

	cutter := newFakeProvider(t)
	data := randBytes(6*ChunkSize, 12)
	c, size := cutter.add(data)
	// It serves the root and two leaves, then goes silent: the transfer
	// is cut off half way.
	cutter.answer = func(i int, c cid.Cid) reply {
		if i < 3 {
			return serveIt
		}
		return silent
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	err = f.Fetch(ctx, Request{CID: c, Size: size, Sources: Sources{Named: []peer.AddrInfo{cutter.info()}}})
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a cut-off transfer: %v, want a timeout", err)
	}
	if _, sent := cutter.stats(); sent != 3 {
		t.Fatalf("the cutter sent %d blocks, want 3", sent)
	}
	n := &peerNode{h: h, st: st, x: x, f: f}
	assertUnused(t, n, c, size)

	// Not served: a peer asking this node for the blob gets nothing.
	asker := newPeerNode(t, StoreOptions{}, ExchangeOptions{})
	if err := asker.f.Fetch(testCtx(t), Request{CID: c, Size: size, Sources: Sources{Named: []peer.AddrInfo{{ID: h.ID(), Addrs: h.Addrs()}}}}); !errors.Is(err, ErrDontHave) {
		t.Fatalf("fetch from the node with the cut-off blob: %v, want DONT_HAVE", err)
	}

	// After a restart (no Close: as after a crash): still not used, and
	// kept as a partial blob (ADR 0054), its two leaves checked again.
	x.Close()
	if st, err = OpenStore(db, inDir(dir, nil)); err != nil {
		t.Fatal(err)
	}
	if k := countBlocks(t, st); k != 3 {
		t.Fatalf("%d blocks of the cut-off fetch kept after a restart, want its 3", k)
	}
	if ps := st.Partials(); len(ps) != 1 || !ps[0].CID.Equals(c) || ps[0].Held != 2*ChunkSize || ps[0].Size != size {
		t.Fatalf("partials after a restart: %+v, want %s holding 2 leaves", ps, c)
	}
	x = NewExchange(h, st, nil)
	t.Cleanup(x.Close)
	f = NewFetcher(x, st, nil)
	n = &peerNode{h: h, st: st, x: x, f: f}
	assertUnused(t, n, c, size)

	// Cut off again, this time with DONT_HAVE after one more leaf: a
	// second provider completes the fetch with the blocks neither the
	// first fetch nor this one's first provider stored.
	wantsSoFar, _ := cutter.stats()
	cutter.answer = func(i int, c cid.Cid) reply {
		if i < len(wantsSoFar)+1 {
			return serveIt
		}
		return dontHave
	}
	honest := newFakeProvider(t)
	honest.add(data)
	var resumed uint64
	err = f.Fetch(testCtx(t), Request{CID: c, Size: size, Sources: Sources{Named: []peer.AddrInfo{cutter.info(), honest.info()}},
		Resumed: func(held, _ uint64) { resumed = held }})
	if err != nil {
		t.Fatalf("fetch with a second provider: %v", err)
	}
	if resumed != 2*ChunkSize {
		t.Fatalf("the fetch said it resumed from %d bytes, want the 2 leaves kept", resumed)
	}
	var out bytes.Buffer
	if err := st.Export(context.Background(), c, size, &out); err != nil || !bytes.Equal(out.Bytes(), data) {
		t.Fatalf("export after completion: %v", err)
	}
	if _, sent := cutter.stats(); sent != 4 {
		t.Fatalf("the cutter sent %d blocks in all, want 3 then 1", sent)
	}
	if _, sent := honest.stats(); sent != 3 {
		// The three blocks kept across the restart and the one the
		// cutter sent after it: the second provider sent only the rest.
		t.Fatalf("the second provider sent %d of 7 blocks, want 3", sent)
	}
	if ps := st.Partials(); len(ps) != 0 {
		t.Fatalf("partials after completion: %+v", ps)
	}
}

func TestDirectoryRootOnlyRootFetched(t *testing.T) {
	n := newPeerNode(t, StoreOptions{}, ExchangeOptions{})
	fp := newFakeProvider(t)
	a, _ := fp.add(randBytes(2*ChunkSize, 13))
	b, _ := fp.add(randBytes(100, 14))
	dir := merkledag.NodeWithData(ft.FolderPBData())
	dir.SetCidBuilder(CIDBuilder)
	for name, c := range map[string]cid.Cid{"a": a, "b": b} {
		if err := dir.AddRawLink(name, &ipld.Link{Cid: c}); err != nil {
			t.Fatal(err)
		}
	}
	fp.put(dir)
	err := n.f.Fetch(testCtx(t), Request{CID: dir.Cid(), Size: 2*ChunkSize + 100, Sources: Sources{Named: []peer.AddrInfo{fp.info()}}})
	if !errors.Is(err, ErrCollection) {
		t.Fatalf("fetch of a directory: %v, want ErrCollection", err)
	}
	if wants, sent := fp.stats(); len(wants) != 1 || !wants[0].Equals(dir.Cid()) || sent != 1 {
		t.Fatalf("wants %v, %d sent: want the root alone", wants, sent)
	}
	assertUnused(t, n, dir.Cid(), 2*ChunkSize+100)
}

func TestUnsolicitedBlocksAreNeverStored(t *testing.T) {
	n := newPeerNode(t, StoreOptions{}, ExchangeOptions{})
	fp := newFakeProvider(t)
	c, size := fp.add(randBytes(2*ChunkSize+5, 15))
	stray := blocks.NewBlock([]byte("nobody asked for this")) // CIDv0
	strayRaw := rawBlock(t, []byte("nor for this"))
	// Pushed before any request, and along with every answer.
	ctx := testCtx(t)
	if err := fp.h.Connect(ctx, peer.AddrInfo{ID: n.h.ID(), Addrs: n.h.Addrs()}); err != nil {
		t.Fatal(err)
	}
	if err := fp.push(n.h.ID(), strayRaw); err != nil {
		t.Fatal(err)
	}
	fp.extra = []blocks.Block{strayRaw, stray}
	if err := n.f.Fetch(ctx, Request{CID: c, Size: size, Sources: Sources{Named: []peer.AddrInfo{fp.info()}}}); err != nil {
		t.Fatal(err)
	}
	for _, b := range []blocks.Block{stray, strayRaw} {
		if ok, _ := n.st.HasBlock(ctx, b.Cid()); ok {
			t.Fatalf("unsolicited block %s was stored", b.Cid())
		}
	}
	// The push may still be in flight when the fetch ends: wait for the
	// counter to see the pushed block and the ones sent with the answers.
	deadline := time.Now().Add(5 * time.Second)
	for n.x.Stats().Unsolicited < 4 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if u := n.x.Stats().Unsolicited; u < 4 {
		t.Fatalf("%d unsolicited blocks counted, want at least 4", u)
	}
}

func TestOverQuotaRefusedBeforeAnyRequest(t *testing.T) {
	n := newPeerNode(t, StoreOptions{MaxBlobBytes: 2 * ChunkSize, QuotaBytes: 3 * ChunkSize}, ExchangeOptions{})
	fp := newFakeProvider(t)
	small, ssize := fp.add(randBytes(2*ChunkSize, 16))
	big, bsize := fp.add(randBytes(2*ChunkSize+1, 17))
	other, osize := fp.add(randBytes(2*ChunkSize, 18))
	ctx := testCtx(t)
	if err := n.f.Fetch(ctx, Request{CID: big, Size: bsize, Sources: Sources{Named: []peer.AddrInfo{fp.info()}}}); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("past max_blob_bytes: %v", err)
	}
	if wants, _ := fp.stats(); len(wants) != 0 {
		t.Fatalf("%d requests made for a blob past max_blob_bytes", len(wants))
	}
	if err := n.f.Fetch(ctx, Request{CID: small, Size: ssize, Sources: Sources{Named: []peer.AddrInfo{fp.info()}}}); err != nil {
		t.Fatal(err)
	}
	before, _ := fp.stats()
	if err := n.f.Fetch(ctx, Request{CID: other, Size: osize, Sources: Sources{Named: []peer.AddrInfo{fp.info()}}}); !errors.Is(err, ErrQuota) {
		t.Fatalf("past the quota: %v", err)
	}
	after, _ := fp.stats()
	if len(after) != len(before) {
		t.Fatalf("%d requests made for a blob over the quota", len(after)-len(before))
	}
	if n.st.Reserved() != 0 {
		t.Fatalf("%d bytes still reserved", n.st.Reserved())
	}
}

// TestTinyChunksFailFastWithoutBackoff: a well-formed DAG whose inner
// nodes need more than the budget (two 1-byte leaves under a 98-byte
// root) is a fault of the CID: the fetch fails at once, without waiting
// for the attempt's deadline, and the provider is not backed off.
func TestTinyChunksFailFastWithoutBackoff(t *testing.T) {
	n := newPeerNode(t, StoreOptions{}, ExchangeOptions{})
	fp := newFakeProvider(t)
	a, b := rawBlock(t, []byte{'a'}), rawBlock(t, []byte{'b'})
	fp.put(a)
	fp.put(b)
	fsn := ft.NewFSNode(ft.TFile)
	fsn.AddBlockSize(1)
	fsn.AddBlockSize(1)
	data, err := fsn.GetBytes()
	if err != nil {
		t.Fatal(err)
	}
	root := merkledag.NodeWithData(data)
	root.SetCidBuilder(CIDBuilder)
	for _, l := range []blocks.Block{a, b} {
		if err := root.AddRawLink("", &ipld.Link{Cid: l.Cid()}); err != nil {
			t.Fatal(err)
		}
	}
	fp.put(root)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = n.f.Fetch(ctx, Request{CID: root.Cid(), Size: 2, Sources: Sources{Named: []peer.AddrInfo{fp.info()}}})
	if !errors.Is(err, ErrBadBlob) || ctx.Err() != nil {
		t.Fatalf("fetch: %v (context: %v), want ErrBadBlob at once", err, ctx.Err())
	}
	if skipped, _ := n.f.Backoff().Skipped(fp.h.ID(), time.Now()); skipped {
		t.Fatal("the provider was backed off for the CID's fault")
	}
	assertUnused(t, n, root.Cid(), 2)
}

// TestDAGBombIsBounded: four blocks that name each other a million times
// (a root of 8 links to L1, L1 of 1024 links to L2, L2 of 1024 links to a
// 1-byte leaf: 8 MiB declared, every size adding up) fail fast as a bad
// blob instead of being walked a million times.
func TestDAGBombIsBounded(t *testing.T) {
	n := newPeerNode(t, StoreOptions{}, ExchangeOptions{})
	fp := newFakeProvider(t)
	leaf := rawBlock(t, []byte{'x'})
	fp.put(leaf)
	fan := func(child cid.Cid, span uint64, k int) (cid.Cid, []byte) {
		links, sizes := make([]cid.Cid, k), make([]uint64, k)
		for i := range links {
			links[i], sizes[i] = child, span
		}
		return pbNode{typ: ft.TFile, sizes: sizes, links: links}.build(t)
	}
	l2, l2data := fan(leaf.Cid(), 1, 1024)
	l1, l1data := fan(l2, 1024, 1024)
	root, rootData := fan(l1, 1<<20, 8)
	for _, b := range []struct {
		c cid.Cid
		d []byte
	}{{l2, l2data}, {l1, l1data}, {root, rootData}} {
		blk, err := blocks.NewBlockWithCid(b.d, b.c)
		if err != nil {
			t.Fatal(err)
		}
		fp.put(blk)
	}
	err := n.f.Fetch(testCtx(t), Request{CID: root, Size: 8 << 20, Sources: Sources{Named: []peer.AddrInfo{fp.info()}}})
	if !errors.Is(err, ErrBadBlob) {
		t.Fatalf("fetch of a DAG bomb: %v, want ErrBadBlob", err)
	}
	if skipped, _ := n.f.Backoff().Skipped(fp.h.ID(), time.Now()); skipped {
		t.Fatal("the provider was backed off for the CID's fault")
	}
	assertUnused(t, n, root, 8<<20)
}

// TestFetchesOfAnotherSizeDoNotShareARun: a fetch declaring a wrong size,
// held up by a provider that withholds the root, does not decide a
// concurrent fetch of the same CID at its true size.
func TestFetchesOfAnotherSizeDoNotShareARun(t *testing.T) {
	n := newPeerNode(t, StoreOptions{}, ExchangeOptions{})
	withholder, honest := newFakeProvider(t), newFakeProvider(t)
	withholder.answer = func(int, cid.Cid) reply { return silent }
	data := randBytes(3*ChunkSize, 60)
	c, size := honest.add(data)
	withholder.add(data)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	wrong := make(chan error, 1)
	go func() {
		wrong <- n.f.Fetch(ctx, Request{CID: c, Size: size + 1, Sources: Sources{Named: []peer.AddrInfo{withholder.info()}}})
	}()
	for { // until the withholder holds the first fetch
		if wants, _ := withholder.stats(); len(wants) > 0 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := n.f.Fetch(testCtx(t), Request{CID: c, Size: size, Sources: Sources{Named: []peer.AddrInfo{honest.info()}}}); err != nil {
		t.Fatalf("the fetch at the true size: %v", err)
	}
	cancel()
	if err := <-wrong; err == nil {
		t.Fatal("the fetch at the wrong size succeeded")
	}
	var out bytes.Buffer
	if err := n.st.Export(context.Background(), c, size, &out); err != nil || !bytes.Equal(out.Bytes(), data) {
		t.Fatalf("export: %v", err)
	}
}

// TestStalledProviderIsLeftEarly: a provider that answers nothing is left
// after the idle timeout, well before the attempt's deadline, and backed
// off; the next provider completes the fetch.
func TestStalledProviderIsLeftEarly(t *testing.T) {
	n := newPeerNode(t, StoreOptions{}, ExchangeOptions{IdleTimeout: 300 * time.Millisecond})
	mute, honest := newFakeProvider(t), newFakeProvider(t)
	mute.answer = func(int, cid.Cid) reply { return silent }
	data := randBytes(2*ChunkSize, 61)
	c, size := honest.add(data)
	mute.add(data)
	start := time.Now()
	if err := n.f.Fetch(testCtx(t), Request{CID: c, Size: size, Sources: Sources{Named: []peer.AddrInfo{mute.info(), honest.info()}}}); err != nil {
		t.Fatalf("fetch: %v", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("the fetch took %v: the stalled provider was not left after its idle timeout", d)
	}
	if skipped, _ := n.f.Backoff().Skipped(mute.h.ID(), time.Now()); !skipped {
		t.Fatal("a stalled provider is not backed off")
	}
}

// TestLostWantIsSentAgain: a provider that lost one want (its stream or
// connection ended with it, or with the block it sent) gets the wants in
// flight again after a silent third of the idle timeout, and the fetch
// completes from it instead of stalling; a provider that stays silent is
// asked three times in all (the first wants and two rewants), then left.
func TestLostWantIsSentAgain(t *testing.T) {
	n := newPeerNode(t, StoreOptions{}, ExchangeOptions{IdleTimeout: 900 * time.Millisecond})
	lossy := newFakeProvider(t)
	var lost cid.Cid
	lossy.answer = func(i int, c cid.Cid) reply {
		if i == 2 { // the third want: as if its block was lost on the way
			lost = c
			return silent
		}
		return serveIt
	}
	c, size := lossy.add(randBytes(4*ChunkSize+5, 62))
	if err := n.f.Fetch(testCtx(t), Request{CID: c, Size: size, Sources: Sources{Named: []peer.AddrInfo{lossy.info()}}}); err != nil {
		t.Fatalf("fetch from a provider that lost a want: %v", err)
	}
	if got := n.x.Stats().Rewants; got < 1 {
		t.Fatalf("%d rewants, want at least 1", got)
	}
	wants, _ := lossy.stats()
	if asked := countOf(wants, lost); asked < 2 {
		t.Fatalf("the lost block was asked for %d times, want at least 2", asked)
	}

	mute := newFakeProvider(t)
	mute.answer = func(int, cid.Cid) reply { return silent }
	c2, size2 := mute.add(randBytes(ChunkSize+7, 63))
	before := n.x.Stats().Rewants
	err := n.f.Fetch(testCtx(t), Request{CID: c2, Size: size2, Sources: Sources{Named: []peer.AddrInfo{mute.info()}}})
	if !errors.Is(err, ErrStalled) {
		t.Fatalf("fetch from a silent provider: %v, want ErrStalled", err)
	}
	wants, _ = mute.stats()
	if root := countOf(wants, c2); root != 3 || n.x.Stats().Rewants-before != 2 {
		t.Fatalf("a silent provider was asked for the root %d times with %d rewants, want 3 and 2", root, n.x.Stats().Rewants-before)
	}
}

// countOf counts c in cs.
func countOf(cs []cid.Cid, c cid.Cid) int {
	n := 0
	for _, x := range cs {
		if x.Equals(c) {
			n++
		}
	}
	return n
}

// TestDroppedMessagesAreAskedAgain: a fetching host whose memory for one
// provider's bitswap messages holds two of them drops the others unread
// (their streams reset, as when a peer's memory is spent); the attempt
// asks again for the blocks it waits for, and the fetch completes
// instead of stalling.
func TestDroppedMessagesAreAskedAgain(t *testing.T) {
	lim := rcmgr.PartialLimitConfig{
		ServicePeer: map[string]rcmgr.ResourceLimits{ServiceName: {Memory: rcmgr.LimitVal64(2*MaxMessageBytes + 1)}},
	}.Build(rcmgr.DefaultLimits.AutoScale())
	rm, err := rcmgr.NewResourceManager(rcmgr.NewFixedLimiter(lim), rcmgr.WithMetricsDisabled())
	if err != nil {
		t.Fatal(err)
	}
	h, err := libp2p.New(libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"), libp2p.ResourceManager(rm))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	st, _, _ := newStore(t, StoreOptions{})
	// An idle timeout far below the test's: a lost message that is not
	// asked for again fails the attempt (ErrStalled).
	x := NewExchange(h, st, &ExchangeOptions{IdleTimeout: 3 * time.Second})
	t.Cleanup(x.Close)
	f := NewFetcher(x, st, nil)
	a := newPeerNode(t, StoreOptions{}, ExchangeOptions{})
	data := randBytes(24*ChunkSize, 390)
	c, size, err := a.st.Import(testCtx(t), bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Fetch(testCtx(t), Request{CID: c, Size: size, Sources: Sources{Named: []peer.AddrInfo{a.info()}}}); err != nil {
		t.Fatalf("fetch with messages dropped: %v", err)
	}
	var out bytes.Buffer
	if err := st.Export(testCtx(t), c, size, &out); err != nil || !bytes.Equal(out.Bytes(), data) {
		t.Fatalf("export: %v", err)
	}
}

// refusingNet is the exchange's network whose message senders refuse
// every send in refuse (counted from 0, over all senders) with the
// resource manager's error, as when the provider's messages in flight
// fill a stranger's memory here.
type refusingNet struct {
	bsnetwork.BitSwapNetwork
	mu     sync.Mutex
	sends  int
	refuse map[int]bool
}

func (n *refusingNet) NewMessageSender(ctx context.Context, p peer.ID, o *bsnetwork.MessageSenderOpts) (bsnetwork.MessageSender, error) {
	ms, err := n.BitSwapNetwork.NewMessageSender(ctx, p, o)
	if err != nil {
		return nil, err
	}
	return &refusingSender{MessageSender: ms, n: n}, nil
}

type refusingSender struct {
	bsnetwork.MessageSender
	n *refusingNet
}

func (s *refusingSender) SendMsg(ctx context.Context, m bsmsg.BitSwapMessage) error {
	s.n.mu.Lock()
	i := s.n.sends
	s.n.sends++
	s.n.mu.Unlock()
	if s.n.refuse[i] {
		return fmt.Errorf("peer:%s: %w", "provider", network.ErrResourceLimitExceeded)
	}
	return s.MessageSender.SendMsg(ctx, m)
}

// TestRefusedWantsAreSentLater: a send of wants refused for want of
// memory here (the resource manager's error) does not end the attempt:
// the wants go again with the next rewant, after the next block or a
// silent third of the idle timeout, and the fetch completes. Any other
// error still ends it.
func TestRefusedWantsAreSentLater(t *testing.T) {
	n := newPeerNode(t, StoreOptions{}, ExchangeOptions{Window: 2, IdleTimeout: 900 * time.Millisecond})
	rn := &refusingNet{BitSwapNetwork: n.x.net, refuse: map[int]bool{0: true, 2: true}}
	n.x.net = rn
	p := newFakeProvider(t)
	c, size := p.add(randBytes(5*ChunkSize+5, 64))
	if err := n.f.Fetch(testCtx(t), Request{CID: c, Size: size, Sources: Sources{Named: []peer.AddrInfo{p.info()}}}); err != nil {
		t.Fatalf("fetch with refused sends: %v", err)
	}
	if got := n.x.Stats().Rewants; got < 2 {
		t.Fatalf("%d rewants, want at least 2 (one per refused send)", got)
	}
	if ok, _ := n.st.Has(c); !ok {
		t.Fatal("not complete")
	}
}
