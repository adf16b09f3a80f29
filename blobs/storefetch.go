package blobs

import (
	"context"
	"errors"
	"fmt"
	"sync"

	blocks "github.com/ipfs/go-block-format"
	"github.com/ipfs/go-cid"
	ipld "github.com/ipfs/go-ipld-format"
	mh "github.com/multiformats/go-multihash"
)

// This file is the store's side of a fetch (ADR 0029): room reserved under
// the quota before any request, blocks written unreferenced (so never
// served, listed or exported), the leaves to the blob's own data file
// (ADR 0037), and Complete, which pins a blob only when every block is
// there and it is exactly of its declared size.

// Reservation is room under blobs.quota_bytes promised to one fetch, taken
// by Reserve before any request (ADR 0014). Release gives it back; Complete
// turns it into the pinned blob's share of the quota. Safe to release more
// than once. It also holds the fetch's data file (ADR 0037): when the last
// Reservation for a blob that is not pinned is released, the leaves it
// fetched are deleted.
type Reservation struct {
	s    *Store
	root cid.Cid
	size uint64
	once sync.Once
}

// Release gives the reserved room back and, if no other fetch of the
// blob holds a Reservation, deletes the leaves this one fetched unless
// Complete pinned them. Calling it again does nothing.
func (r *Reservation) Release() {
	if r == nil {
		return
	}
	r.s.mu.Lock()
	r.releaseLocked()
	var drop *dataFile
	if r.s.mu.fetching[r.root] == 0 {
		drop = r.s.mu.pending[r.root]
		delete(r.s.mu.pending, r.root)
	}
	r.s.mu.Unlock()
	if drop != nil {
		_ = drop.discard() // a crash here leaves it to the sweep at open
	}
}

// releaseLocked gives the room back once. REQUIRES: r.s.mu held.
func (r *Reservation) releaseLocked() {
	r.once.Do(func() {
		r.s.mu.reserved -= r.size
		if r.s.mu.fetching[r.root]--; r.s.mu.fetching[r.root] <= 0 {
			delete(r.s.mu.fetching, r.root)
		}
	})
}

// Reserve checks a declared size against blobs.max_blob_bytes and the room
// left under blobs.quota_bytes (the pinned blobs and the other
// reservations counted), as ADR 0014 asks before any request, and reserves
// size bytes for a fetch of the blob root. The error wraps ErrTooLarge or
// ErrQuota, with the figures.
func (s *Store) Reserve(root cid.Cid, size uint64) (*Reservation, error) {
	if s.opts.ReadOnly {
		return nil, errors.New("blobs: the store is read-only")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := CheckBeforeFetch(size, s.opts.MaxBlobBytes, s.mu.used+s.mu.reserved, s.opts.QuotaBytes); err != nil {
		return nil, err
	}
	s.mu.reserved += size
	s.mu.fetching[root]++
	return &Reservation{s: s, root: root, size: size}, nil
}

// pendingFile returns the data file of the fetch of root, made at its
// first leaf.
func (s *Store) pendingFile(root cid.Cid) (*dataFile, error) {
	s.mu.Lock()
	d := s.mu.pending[root]
	s.mu.Unlock()
	if d != nil {
		return d, nil
	}
	d, err := s.newDataFile(true)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if other := s.mu.pending[root]; other != nil {
		_ = d.discard() // another attempt made one meanwhile
		return other, nil
	}
	s.mu.pending[root] = d
	return d, nil
}

// Reserved returns the bytes reserved by fetches in flight.
func (s *Store) Reserved() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.reserved
}

// Referenced reports whether a pinned (complete) blob holds the block c.
// Only such blocks are served to peers (ADR 0029): the blocks of a fetch
// in progress, of a cut-off fetch or of a removed blob are not.
func (s *Store) Referenced(c cid.Cid) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.refs[string(c.Hash())] > 0
}

// HasBlock reports whether the blockstore holds the block c, referenced
// or not.
func (s *Store) HasBlock(ctx context.Context, c cid.Cid) (bool, error) {
	return s.bstore.Has(ctx, c)
}

// GetBlock reads the block c from the blockstore; a missing block is an
// error for which ipld.IsNotFound holds.
func (s *Store) GetBlock(ctx context.Context, c cid.Cid) (blocks.Block, error) {
	return s.bstore.Get(ctx, c)
}

// PutBlock writes a block fetched for the blob root, unreferenced: it is
// not served, listed or exported until Complete pins a blob holding it. A
// raw leaf goes to the data file of root's fetch (ADR 0037), any other
// block to pebble. The caller has checked that b is one it asked for (its
// CID is computed from its bytes).
func (s *Store) PutBlock(ctx context.Context, root cid.Cid, b blocks.Block) error {
	if err := s.putBlock(ctx, root, b); err != nil {
		return err
	}
	s.stored.notify()
	return nil
}

func (s *Store) putBlock(ctx context.Context, root cid.Cid, b blocks.Block) error {
	if s.opts.ReadOnly {
		return errors.New("blobs: the store is read-only")
	}
	if b.Cid().Type() != cid.Raw {
		return s.bstore.Put(ctx, b)
	}
	d, err := s.pendingFile(root)
	if err != nil {
		return err
	}
	return d.put(b.Cid(), b.RawData())
}

// putBlocks writes blocks fetched for root, unreferenced (as PutBlock).
func (s *Store) putBlocks(ctx context.Context, root cid.Cid, bs []blocks.Block) error {
	for _, b := range bs {
		if err := s.putBlock(ctx, root, b); err != nil {
			return err
		}
	}
	s.stored.notify()
	return nil
}

// DropUnreferenced deletes those of the blocks cs in pebble that no
// pinned blob holds: the leftovers of a fetch that gave up (its leaves, in
// its data file, go when its Reservation is released). Blocks of pinned
// blobs are kept.
func (s *Store) DropUnreferenced(ctx context.Context, cs []cid.Cid) error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	var errs []error
	for _, c := range cs {
		if c.Type() == cid.Raw || s.Referenced(c) {
			continue
		}
		if err := s.bstore.DeleteBlock(ctx, c); err != nil && !ipld.IsNotFound(err) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Complete pins the fetched blob root of the declared size: only when
// every block of its DAG is in the store (else an error wrapping
// ErrIncomplete) and its UnixFS file size is exactly size (else one
// wrapping ErrSizeMismatch), as ADR 0014 asks before a blob is used. On
// success the room of the reservation r moves into the quota used (r nil:
// the quota is checked now); on failure r stays the caller's to release
// or to use again. A blob already pinned of that size completes at no
// cost.
func (s *Store) Complete(ctx context.Context, root cid.Cid, size uint64, r *Reservation) error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	s.mu.Lock()
	have, pinned := s.mu.blobs[root]
	s.mu.Unlock()
	if pinned {
		return exactSize(root, "is", have, size)
	}
	nd, err := s.dag.Get(ctx, root)
	if err != nil {
		if ipld.IsNotFound(err) {
			return fmt.Errorf("%w: root %s missing", ErrIncomplete, root)
		}
		return fmt.Errorf("blobs: complete %s: %w", root, err)
	}
	got, err := s.fileSize(ctx, root)
	if err != nil {
		return fmt.Errorf("%w: %s is not a UnixFS file: %v", ErrBadBlob, root, err)
	}
	if err := exactSize(root, "is", got, size); err != nil {
		return err
	}
	// dagBlocks reads the inner nodes, so finds a missing one; the leaves
	// are looked for in the fetch's data file (the pin does not read
	// them, see pinDAG).
	bl, err := s.dagBlocks(ctx, root)
	if err != nil {
		return err
	}
	file, err := s.pendingFile(root)
	if err != nil {
		return fmt.Errorf("blobs: complete %s: %w", root, err)
	}
	for _, h := range bl {
		c := cid.NewCidV1(cid.Raw, mh.Multihash(h))
		if file.has(c.Hash()) {
			continue
		}
		// Not fetched: held already, in the data file of another blob
		// (copied, so that every blob's file holds all its leaves) or,
		// before ADR 0037, in pebble (an inner node, or an old leaf).
		if data, ok, err := s.readLeaf(c, true); err != nil {
			return fmt.Errorf("blobs: complete %s: %w", root, err)
		} else if ok {
			if err := file.put(c, data); err != nil {
				return fmt.Errorf("blobs: complete %s: %w", root, err)
			}
			continue
		}
		ok, err := s.hasKey(mh.Multihash(h))
		if err != nil {
			return fmt.Errorf("blobs: complete %s: %w", root, err)
		}
		if !ok {
			return fmt.Errorf("%w: a block of %s is missing", ErrIncomplete, root)
		}
	}
	if r == nil {
		// No room was reserved (a caller that skipped Reserve): check now.
		s.mu.Lock()
		err := CheckBeforeFetch(size, s.opts.MaxBlobBytes, s.mu.used+s.mu.reserved, s.opts.QuotaBytes)
		s.mu.Unlock()
		if err != nil {
			return err
		}
	}
	s.mu.Lock()
	delete(s.mu.pending, root) // the blob's now, whatever follows
	s.mu.Unlock()
	if err := s.pinSealed(ctx, nd, size, file, ""); err != nil {
		_ = file.discard()
		if ipld.IsNotFound(err) || errors.Is(err, ipld.ErrNotFound{}) {
			return fmt.Errorf("%w: %v", ErrIncomplete, err)
		}
		return err
	}
	return s.addPinned(ctx, root, size, file.num, r)
}
