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
// served, listed or exported), and Complete, which pins a blob only when
// every block is there and it is exactly of its declared size.

// Reservation is room under blobs.quota_bytes promised to one fetch, taken
// by Reserve before any request (ADR 0014). Release gives it back; Complete
// turns it into the pinned blob's share of the quota. Safe to release more
// than once.
type Reservation struct {
	s    *Store
	size uint64
	once sync.Once
}

// Release gives the reserved room back. Calling it again does nothing.
func (r *Reservation) Release() {
	if r == nil {
		return
	}
	r.s.mu.Lock()
	r.releaseLocked()
	r.s.mu.Unlock()
}

// releaseLocked gives the room back once. REQUIRES: r.s.mu held.
func (r *Reservation) releaseLocked() {
	r.once.Do(func() { r.s.mu.reserved -= r.size })
}

// Reserve checks a declared size against blobs.max_blob_bytes and the room
// left under blobs.quota_bytes (the pinned blobs and the other
// reservations counted), as ADR 0014 asks before any request, and reserves
// size bytes. The error wraps ErrTooLarge or ErrQuota, with the figures.
func (s *Store) Reserve(size uint64) (*Reservation, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := CheckBeforeFetch(size, s.opts.MaxBlobBytes, s.mu.used+s.mu.reserved, s.opts.QuotaBytes); err != nil {
		return nil, err
	}
	s.mu.reserved += size
	return &Reservation{s: s, size: size}, nil
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

// PutBlock writes a fetched block, unreferenced: it is not served, listed
// or exported until Complete pins a blob holding it. The caller has
// checked that b is one it asked for (its CID is computed from its bytes).
func (s *Store) PutBlock(ctx context.Context, b blocks.Block) error {
	if err := s.bstore.Put(ctx, b); err != nil {
		return err
	}
	s.stored.notify()
	return nil
}

// putBlocks writes fetched blocks, unreferenced (as PutBlock).
//
// One pebble write each: a batch of several 1 MiB values is a buffer that
// pebble does not recycle, where one of a single value mostly is.
func (s *Store) putBlocks(ctx context.Context, bs []blocks.Block) error {
	for _, b := range bs {
		if err := s.PutBlock(ctx, b); err != nil {
			return err
		}
	}
	return nil
}

// DropUnreferenced deletes those of the blocks cs that no pinned blob
// holds: the leftovers of a fetch that gave up. Blocks of pinned blobs are
// kept.
func (s *Store) DropUnreferenced(ctx context.Context, cs []cid.Cid) error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	var errs []error
	for _, c := range cs {
		if s.Referenced(c) {
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
		if have != size {
			return fmt.Errorf("%w: %s is %d bytes, declared %d", ErrSizeMismatch, root, have, size)
		}
		return nil
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
	if got != size {
		return fmt.Errorf("%w: %s is %d bytes, declared %d", ErrSizeMismatch, root, got, size)
	}
	// dagBlocks reads the inner nodes, so finds a missing one; the leaves
	// are checked by key (the pin does not read them, see pinDAG).
	bl, err := s.dagBlocks(ctx, root)
	if err != nil {
		return err
	}
	for _, h := range bl {
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
	if err := s.pinRoot(ctx, nd, size); err != nil {
		if ipld.IsNotFound(err) || errors.Is(err, ipld.ErrNotFound{}) {
			return fmt.Errorf("%w: %v", ErrIncomplete, err)
		}
		return err
	}
	return s.addPinned(ctx, root, size, r)
}
