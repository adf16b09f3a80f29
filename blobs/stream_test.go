package blobs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ipfs/boxo/ipld/merkledag"
	upb "github.com/ipfs/boxo/ipld/unixfs/pb"
	blocks "github.com/ipfs/go-block-format"
	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"
)

// recorder is the w of a Stream: it keeps every byte and the length of
// each write, and may run a check at each write.
type recorder struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	writes []int
	// each, if set, runs before each write is taken; an error fails it.
	each func(i int) error
}

func (r *recorder) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.each != nil {
		if err := r.each(len(r.writes)); err != nil {
			return 0, err
		}
	}
	r.writes = append(r.writes, len(p))
	return r.buf.Write(p)
}

func (r *recorder) bytes() []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return bytes.Clone(r.buf.Bytes())
}

// TestStreamHeldBlob: a blob held complete is streamed from the store,
// with no provider; held at another size than declared, nothing is
// written.
func TestStreamHeldBlob(t *testing.T) {
	n := newPeerNode(t, StoreOptions{}, ExchangeOptions{})
	data := randBytes(3*ChunkSize+5, 310)
	c, size, err := n.st.Import(testCtx(t), bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	var w recorder
	if got, err := n.f.Stream(testCtx(t), Request{CID: c, Size: size}, &w); err != nil || got != size || !bytes.Equal(w.bytes(), data) {
		t.Fatalf("stream of a held blob: %d bytes, %v", got, err)
	}
	for _, declared := range []uint64{size - 1, size + 1} {
		var w recorder
		got, err := n.f.Stream(testCtx(t), Request{CID: c, Size: declared}, &w)
		if !errors.Is(err, ErrSizeMismatch) || got != 0 || len(w.writes) != 0 {
			t.Fatalf("held blob declared %d of %d: %d bytes in %d writes, %v; want a size mismatch and nothing", declared, size, got, len(w.writes), err)
		}
	}
}

// serveLeaves makes fp serve the root of the blob c and those of its
// leaves (by their place in the file, from 0) that serve says, and stay
// silent for the others. (A bitswap message's wants come in no order, so
// a provider's answers are chosen by CID, not by the order of the wants.)
func serveLeaves(t *testing.T, fp *fakeProvider, c cid.Cid, serve func(leaf int) bool) {
	t.Helper()
	fp.mu.Lock()
	data := fp.blocks[string(c.Hash())]
	fp.mu.Unlock()
	nd, err := merkledag.DecodeProtobuf(data)
	if err != nil {
		t.Fatal(err)
	}
	place := map[string]int{}
	for i, l := range nd.Links() {
		place[l.Cid.KeyString()] = i
	}
	fp.answer = func(_ int, w cid.Cid) reply {
		if i, leaf := place[w.KeyString()]; leaf && !serve(i) {
			return silent
		}
		return serveIt
	}
}

// TestStreamRetryContinuesInOrder: the first provider sends the root and
// leaves 0, 2 and 3 of six, then stalls; the second sends the three
// missing. The stream writes leaf 0 while the first attempt still runs,
// then exactly the rest, in order, each byte once; the second provider is
// asked only for what the first did not send.
func TestStreamRetryContinuesInOrder(t *testing.T) {
	n := newPeerNode(t, StoreOptions{}, ExchangeOptions{IdleTimeout: time.Second})
	cutter, honest := newFakeProvider(t), newFakeProvider(t)
	data := randBytes(6*ChunkSize, 320)
	c, size := cutter.add(data)
	honest.add(data)
	serveLeaves(t, cutter, c, func(i int) bool { return i == 0 || i == 2 || i == 3 })
	w := &recorder{each: func(i int) error {
		if i > 0 {
			return nil
		}
		if ok, _ := n.st.Has(c); ok {
			return errors.New("the first byte was written once the blob was complete: not streamed")
		}
		if wants, _ := honest.stats(); len(wants) > 0 {
			return errors.New("the first byte was written after the first attempt ended")
		}
		return nil
	}}
	req := Request{CID: c, Size: size, Sources: Sources{Named: []peer.AddrInfo{cutter.info(), honest.info()}}}
	got, err := n.f.Stream(testCtx(t), req, w)
	if err != nil {
		t.Fatalf("stream: %v", err)
	}
	if got != size || !bytes.Equal(w.bytes(), data) {
		t.Fatalf("wrote %d bytes (%d counted) that differ from the blob", len(w.bytes()), got)
	}
	if len(w.writes) != 6 {
		t.Fatalf("%d writes, want one a leaf (6)", len(w.writes))
	}
	if _, sent := honest.stats(); sent != 3 {
		t.Fatalf("the second provider sent %d blocks, want the 3 the first did not", sent)
	}
	if skipped, _ := n.f.Backoff().Skipped(cutter.h.ID(), time.Now()); !skipped {
		t.Fatal("the stalled provider is not backed off")
	}
}

// TestStreamFailsAfterAPrefix: the only provider stalls after two leaves
// of four. The stream fails with the fetch's error after writing exactly
// those two leaves; they are kept as a partial blob (ADR 0054), not used.
func TestStreamFailsAfterAPrefix(t *testing.T) {
	n := newPeerNode(t, StoreOptions{}, ExchangeOptions{IdleTimeout: 300 * time.Millisecond})
	cutter := newFakeProvider(t)
	data := randBytes(4*ChunkSize, 330)
	c, size := cutter.add(data)
	serveLeaves(t, cutter, c, func(i int) bool { return i < 2 })
	var w recorder
	got, err := n.f.Stream(testCtx(t), Request{CID: c, Size: size, Sources: Sources{Named: []peer.AddrInfo{cutter.info()}}}, &w)
	if !errors.Is(err, ErrStalled) || !errors.Is(err, ErrNoProvider) {
		t.Fatalf("stream: %v, want the fetch's error (no provider left after a stall)", err)
	}
	if got != 2*ChunkSize || !bytes.Equal(w.bytes(), data[:2*ChunkSize]) {
		t.Fatalf("wrote %d bytes (%d counted); want the first two leaves exactly", len(w.bytes()), got)
	}
	assertUnused(t, n, c, size)
	if ps := n.st.Partials(); len(ps) != 1 || ps[0].Held != 2*ChunkSize || ps[0].Fetching {
		t.Fatalf("partials: %+v, want the blob with its 2 leaves", ps)
	}
}

// TestStreamSizeMismatch: a provider whose blob is not of the declared
// size (larger or smaller) gives a size mismatch, found from the root
// alone, and the stream writes nothing.
func TestStreamSizeMismatch(t *testing.T) {
	n := newPeerNode(t, StoreOptions{}, ExchangeOptions{})
	for _, tc := range []struct {
		actual   int
		declared uint64
	}{
		{3 * ChunkSize, 3*ChunkSize + 1},
		{3 * ChunkSize, 3*ChunkSize - 1},
		{ChunkSize, 1000},
	} {
		t.Run(fmt.Sprintf("%d declared %d", tc.actual, tc.declared), func(t *testing.T) {
			fp := newFakeProvider(t)
			c, _ := fp.add(randBytes(tc.actual, uint64(tc.actual)+340))
			var w recorder
			got, err := n.f.Stream(testCtx(t), Request{CID: c, Size: tc.declared, Sources: Sources{Named: []peer.AddrInfo{fp.info()}}}, &w)
			if !errors.Is(err, ErrSizeMismatch) || got != 0 || len(w.writes) != 0 {
				t.Fatalf("stream: %d bytes in %d writes, %v; want a size mismatch and nothing written", got, len(w.writes), err)
			}
			assertUnused(t, n, c, tc.declared)
		})
	}
}

// TestStreamWriterFailureCancelsTheFetch: when w fails, the stream ends
// with w's error at once and its fetch is cancelled: the provider, which
// would have stalled for the idle timeout, is not backed off.
func TestStreamWriterFailureCancelsTheFetch(t *testing.T) {
	n := newPeerNode(t, StoreOptions{}, ExchangeOptions{IdleTimeout: time.Hour})
	fp := newFakeProvider(t)
	data := randBytes(3*ChunkSize, 350)
	c, size := fp.add(data)
	serveLeaves(t, fp, c, func(i int) bool { return i == 0 })
	broken := errors.New("disk full")
	w := &recorder{each: func(int) error { return broken }}
	got, err := n.f.Stream(testCtx(t), Request{CID: c, Size: size, Sources: Sources{Named: []peer.AddrInfo{fp.info()}}}, w)
	if !errors.Is(err, broken) || got != 0 {
		t.Fatalf("stream into a failing writer: %d bytes, %v; want its error", got, err)
	}
	if skipped, _ := n.f.Backoff().Skipped(fp.h.ID(), time.Now()); skipped {
		t.Fatal("a provider was backed off for the writer's failure")
	}
	assertUnused(t, n, c, size)
}

// TestStreamSlowWriterDoesNotHoldTheFetch: a writer that takes its first
// leaf only once the blob is complete does not hold the fetch; the rest
// is read from the store.
func TestStreamSlowWriterDoesNotHoldTheFetch(t *testing.T) {
	stored := make(chan struct{})
	n := newPeerNode(t, StoreOptions{}, ExchangeOptions{Node: &testNode{served: func(peer.ID, uint64) { close(stored) }}})
	a := newPeerNode(t, StoreOptions{}, ExchangeOptions{})
	data := randBytes(4*ChunkSize+3, 360)
	c, size, err := a.st.Import(testCtx(t), bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	w := &recorder{each: func(i int) error {
		if i == 0 {
			select {
			case <-stored:
			case <-ctx.Done():
				return errors.New("the blob was not completed while the writer waited")
			}
		}
		return nil
	}}
	got, err := n.f.Stream(ctx, Request{CID: c, Size: size, Sources: Sources{Named: []peer.AddrInfo{a.info()}}}, w)
	if err != nil || got != size || !bytes.Equal(w.bytes(), data) {
		t.Fatalf("stream into a slow writer: %d bytes, %v", got, err)
	}
}

// TestStreamChecksWhatItWrites: the stream writes a node's inline data
// before its children's bytes, and checks each block it reads against its
// parent's claim, whoever stored it: of a root whose two children claim
// 500 bytes each, stored with leaves of 500 and 600 bytes, the first leaf
// is written and the second refused (ErrBadBlob).
func TestStreamChecksWhatItWrites(t *testing.T) {
	st, _, _ := newStore(t, StoreOptions{})
	ctx := testCtx(t)
	leaf1, leaf2, long := rawBlock(t, randBytes(500, 370)), rawBlock(t, randBytes(500, 371)), rawBlock(t, randBytes(600, 372))
	fetched := make(chan struct{})
	close(fetched) // the fetch ended well: every block is there
	var ferr error
	for _, tc := range []struct {
		name   string
		inline []byte
		second blocks.Block
		want   error
		out    []byte
	}{
		{"inline data first", []byte("inline"), leaf2, nil, slices.Concat([]byte("inline"), leaf1.RawData(), leaf2.RawData())},
		{"a leaf longer than claimed", nil, long, ErrBadBlob, leaf1.RawData()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, data := pbNode{typ: upb.Data_File, data: tc.inline, sizes: []uint64{500, 500}, links: []cid.Cid{leaf1.Cid(), tc.second.Cid()}}.build(t)
			// A lying leaf's CID stands for its bytes: the parent names it.
			root, err := blocks.NewBlockWithCid(data, c)
			if err != nil {
				t.Fatal(err)
			}
			for _, b := range []blocks.Block{leaf1, tc.second, root} {
				if err := st.PutBlock(ctx, c, b); err != nil {
					t.Fatal(err)
				}
			}
			size := uint64(len(tc.inline)) + 1000
			var w recorder
			s := &stream{st: st, w: &w, root: c, size: size, visits: 1, fetched: fetched, ferr: &ferr}
			err = s.node(ctx, item{c: c, span: size})
			if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) || s.n != uint64(len(tc.out)) || !bytes.Equal(w.bytes(), tc.out) {
				t.Fatalf("stream: %d bytes, %v; want %d bytes, %v", s.n, err, len(tc.out), tc.want)
			}
		})
	}
	// A block that never comes, once the fetch has ended well (the blob
	// removed meanwhile): incomplete, not a wait.
	missing := rawBlock(t, randBytes(10, 373))
	var w recorder
	s := &stream{st: st, w: &w, root: missing.Cid(), size: 10, visits: 1, fetched: fetched, ferr: &ferr}
	if err := s.node(ctx, item{c: missing.Cid(), span: 10}); !errors.Is(err, ErrIncomplete) {
		t.Fatalf("a missing block after the fetch: %v, want ErrIncomplete", err)
	}
}

// TestStreamWaitsForTheNextBlock: a stream waiting for a block takes it
// when it is stored, and stops with errFetchEnded when the fetch ends
// with an error first.
func TestStreamWaitsForTheNextBlock(t *testing.T) {
	st, _, _ := newStore(t, StoreOptions{})
	ctx := testCtx(t)
	leaf := rawBlock(t, randBytes(100, 380))
	fetched := make(chan struct{})
	var ferr error
	var w recorder
	s := &stream{st: st, w: &w, root: leaf.Cid(), size: 100, visits: 1, fetched: fetched, ferr: &ferr}
	done := make(chan error, 1)
	go func() { done <- s.node(ctx, item{c: leaf.Cid(), span: 100}) }()
	if err := st.PutBlock(ctx, leaf.Cid(), leaf); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil || !bytes.Equal(w.bytes(), leaf.RawData()) {
		t.Fatalf("a block stored while the stream waits: %v, %d bytes", err, len(w.bytes()))
	}
	other := rawBlock(t, randBytes(100, 381))
	s = &stream{st: st, w: &w, root: other.Cid(), size: 100, visits: 1, fetched: fetched, ferr: &ferr}
	go func() { done <- s.node(ctx, item{c: other.Cid(), span: 100}) }()
	ferr = ErrDontHave // set before fetched closes, as Stream's goroutine does
	close(fetched)
	if err := <-done; !errors.Is(err, errFetchEnded) {
		t.Fatalf("the fetch ended with an error while the stream waits: %v, want errFetchEnded", err)
	}
}

// TestStreamOfAHeldDamagedBlob: a blob held complete whose data file was
// damaged on disk is streamed checked, as Export reads it: the stream
// fails with ErrBadBlob and writes no byte of the damaged leaf, to a file
// (copy_file_range) or to any writer.
func TestStreamOfAHeldDamagedBlob(t *testing.T) {
	n := newPeerNode(t, StoreOptions{}, ExchangeOptions{})
	data := randBytes(3*ChunkSize, 320)
	c, size, err := n.st.Import(testCtx(t), bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	path := n.st.dataPath(1)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[ChunkSize+10] ^= 1 // the second leaf
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	for _, w := range []io.Writer{out, &recorder{}} {
		got, err := n.f.Stream(testCtx(t), Request{CID: c, Size: size}, w)
		if !errors.Is(err, ErrBadBlob) || got > ChunkSize {
			t.Fatalf("stream of a damaged held blob to %T: %d bytes, %v; want ErrBadBlob before the damaged leaf", w, got, err)
		}
	}
}
