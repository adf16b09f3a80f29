package blobs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/cockroachdb/pebble/v2/vfs"
	blocks "github.com/ipfs/go-block-format"
	"github.com/ipfs/go-cid"
	ipld "github.com/ipfs/go-ipld-format"
)

// This file is the stream of a blob's bytes while it is fetched (ADR
// 0035): Fetcher.Stream runs Fetch and, beside it, writes the file in
// order from the store as the fetch's blocks land there.

// Stream makes the blob r.CID of the declared size r.Size complete in the
// store, as Fetch does (same rules, same sharing of a run), and writes its
// file bytes to w in order meanwhile, as they arrive: a leaf is written
// when it is in the store (checked against its CID by the exchange, and
// against what its parent claims by the walk and again here) and every
// byte before it has been written. Each byte is written once: a second
// provider continues where the first stopped, and the leaves already
// written are not written again. A blob already complete is written from
// the store.
//
// It returns the bytes written and nil only when the blob is complete,
// pinned, and exactly r.Size bytes were written. On failure the bytes
// written are a prefix of the blob, each verified, and the error says
// why: Fetch's error when the fetch failed (ErrTooLarge, ErrQuota before
// any request and before any byte; a content fault; the plan's), or w's.
// A failure of w, or ctx's end, cancels the fetch.
//
// Memory: besides what the fetch holds (its window of blocks in flight
// and its write queue), a stream holds one block and the links of the
// nodes above it. The fetch does not wait for w: a slow w reads the rest
// from the store after the blob is complete.
func (f *Fetcher) Stream(ctx context.Context, r Request, w io.Writer) (written uint64, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	fetched := make(chan struct{})
	var ferr error
	// A blob held complete already is read from the disk, not fetched:
	// its leaves are checked against their CIDs as Export checks them, so
	// that a data file damaged on disk gives ErrBadBlob, never wrong bytes
	// (ADR 0037). Only the leaves of a fetch, checked by the exchange as
	// they came, are copied unread (copyLeaf).
	held, _ := f.st.Has(r.CID)
	go func() {
		defer close(fetched)
		ferr = f.Fetch(ctx, r)
	}()
	s := &stream{st: f.st, w: w, root: r.CID, size: r.Size, visits: 1, fetched: fetched, ferr: &ferr, checked: held}
	err = s.node(ctx, item{c: r.CID, span: r.Size})
	if err == nil {
		// parseNode's sums make a mismatch impossible; said rather than
		// assumed.
		err = exactSize(r.CID, "wrote", s.n, r.Size)
	}
	if err != nil {
		cancel()
	}
	<-fetched
	switch {
	case errors.Is(err, errFetchEnded), err == nil && ferr != nil:
		return s.n, ferr
	case err != nil:
		return s.n, err
	}
	return s.n, nil
}

// errFetchEnded: the stream stopped because its fetch ended with an
// error, which Stream returns in its place.
var errFetchEnded = errors.New("blobs: the fetch ended")

// stream is the state of one Fetcher.Stream: a depth-first walk of the
// blob's DAG in file order, over the store.
type stream struct {
	st     *Store
	w      io.Writer
	root   cid.Cid
	size   uint64
	n      uint64 // bytes written to w
	visits uint64 // blocks visited, the root included; ≤ MaxBlocks(size)
	// fetched is closed when the fetch has ended; *ferr is then its error.
	fetched <-chan struct{}
	ferr    *error
	// checked: each leaf is read checked against its CID (Export); a
	// stream of a fetch reads the leaves the fetch has just checked.
	checked bool
}

// node writes the file bytes under it: its own, then its children's, in
// order. The recursion is at most MaxDepth+1 deep (parseNode).
func (s *stream) node(ctx context.Context, it item) error {
	if rf, ok := s.w.(io.ReaderFrom); ok && !s.checked && it.c.Type() == cid.Raw {
		if done, err := s.copyLeaf(ctx, it, rf); done || err != nil {
			return err
		}
	}
	data, err := s.block(ctx, it.c)
	if err != nil {
		return err
	}
	inline, kids, err := parseNode(it, data)
	if err != nil {
		return err
	}
	if err := visit(&s.visits, len(kids), s.root, s.size); err != nil {
		return err
	}
	if len(inline) > 0 {
		if _, err := s.w.Write(inline); err != nil {
			return err
		}
		s.n += uint64(len(inline))
	}
	for _, k := range kids {
		if err := s.node(ctx, k); err != nil {
			return err
		}
	}
	return nil
}

// copyLeaf writes the raw leaf it from its data file to rf without
// reading it here: an *os.File output (the file blob get passes, ADR 0036)
// copies it in the kernel (copy_file_range), file to file. It waits for
// the leaf as block does; done is false when the leaf is not in a data
// file of the operating system's (a leaf of an older store, an in-memory
// store), which the caller then reads as any block. The leaf is held to
// parseNode's rules for a raw leaf: at most ChunkSize, and exactly the
// bytes its parent says it covers.
func (s *stream) copyLeaf(ctx context.Context, it item, rf io.ReaderFrom) (done bool, err error) {
	if s.st.fs != vfs.Default {
		return false, nil
	}
	var l location
	if err := s.wait(ctx, it.c, func() (bool, error) {
		var ok bool
		l, ok, err = s.st.locate(it.c.Hash())
		return ok, err
	}); err != nil {
		// Not in a data file (yet): the block's own wait says the rest.
		if errors.Is(err, ErrIncomplete) {
			return false, nil
		}
		return false, err
	}
	if l.n > ChunkSize || uint64(l.n) != it.span {
		return false, fmt.Errorf("%w: leaf %s is %d bytes, its parent says %d", ErrBadBlob, it.c, l.n, it.span)
	}
	f, err := os.Open(s.st.dataPath(l.file))
	if err != nil {
		return false, nil // removed meanwhile: read as any block
	}
	defer f.Close()
	if _, err := f.Seek(l.off, io.SeekStart); err != nil {
		return false, err
	}
	if err := visit(&s.visits, 0, s.root, s.size); err != nil {
		return false, err
	}
	k, err := rf.ReadFrom(&io.LimitedReader{R: f, N: l.n})
	s.n += uint64(k)
	if err == nil && k != l.n {
		err = fmt.Errorf("%w: leaf %s: %d of its %d bytes in %s", ErrBadBlob, it.c, k, l.n, s.st.dataPath(l.file))
	}
	return true, err
}

// wait calls try until it reports the block c found, waiting between two
// calls for a fetched block to be written (Store.stored), the fetch to end
// or ctx to: once the fetch has ended with an error, errFetchEnded; once
// it has succeeded and try still fails, ErrIncomplete.
func (s *stream) wait(ctx context.Context, c cid.Cid, try func() (bool, error)) error {
	for {
		stored := s.st.stored.wait() // before the look-up: a write after it wakes this wait
		ok, err := try()
		if err != nil || ok {
			return err
		}
		select {
		case <-stored:
		case <-s.fetched:
			if *s.ferr != nil {
				return errFetchEnded
			}
			if ok, err := try(); err != nil || ok {
				return err
			}
			return fmt.Errorf("%w: block %s of %s is gone", ErrIncomplete, c, s.root)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// block returns the bytes of block c, waiting until it is in the store:
// until a fetched block is written (Store.stored), the fetch ends, or ctx
// does. Once the fetch has ended with an error, errFetchEnded; once it
// has succeeded, every block is there, and a missing one is
// ErrIncomplete (removed meanwhile).
func (s *stream) block(ctx context.Context, c cid.Cid) ([]byte, error) {
	var data []byte
	err := s.wait(ctx, c, func() (bool, error) {
		b, err := s.get(ctx, c)
		switch {
		case err == nil:
			data = b.RawData()
			return true, nil
		case ipld.IsNotFound(err):
			return false, nil
		}
		return false, fmt.Errorf("blobs: stream %s: %w", s.root, err)
	})
	return data, err
}

func (s *stream) get(ctx context.Context, c cid.Cid) (blocks.Block, error) {
	if s.checked {
		return s.st.checked.Get(ctx, c)
	}
	return s.st.GetBlock(ctx, c)
}

// signal wakes the goroutines waiting for the next event of some kind:
// wait returns a channel that notify closes. The zero value is ready to
// use. Safe for concurrent use.
type signal struct {
	mu sync.Mutex
	ch chan struct{} // nil while nobody waits
}

// wait returns a channel closed at the next notify.
func (g *signal) wait() <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ch == nil {
		g.ch = make(chan struct{})
	}
	return g.ch
}

// notify wakes every waiter.
func (g *signal) notify() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ch != nil {
		close(g.ch)
		g.ch = nil
	}
}
