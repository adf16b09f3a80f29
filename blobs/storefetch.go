package blobs

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/cockroachdb/pebble/v2"
	blocks "github.com/ipfs/go-block-format"
	"github.com/ipfs/go-cid"
	ipld "github.com/ipfs/go-ipld-format"
	mh "github.com/multiformats/go-multihash"
)

// This file is the store's side of a fetch (ADR 0029): room reserved under
// the quota before any request, blocks written unreferenced (so never
// served, listed or exported), the leaves to the blob's own data file
// (ADR 0037), kept as a partial blob when the fetch does not complete
// (ADR 0054, partial.go), and Complete, which pins a blob only when every
// block is there and it is exactly of its declared size.

// Reservation is room under blobs.quota_bytes promised to one fetch, taken
// by Reserve before any request (ADR 0014). Release gives it back; Complete
// turns it into the pinned blob's share of the quota. Safe to release more
// than once. It also counts the fetch on the blob's partial (ADR 0054):
// when the last Reservation of a blob that is not pinned is released,
// what its fetches stored is kept as a partial blob, within the bounds
// (StoreOptions.MaxPartialBytes, MaxPartialAge), for the next fetch to go
// on from.
type Reservation struct {
	s       *Store
	root    cid.Cid
	size    uint64
	p       *partial // the partial counting this fetch
	resumed uint64
	once    sync.Once
}

// Release gives the reserved room back and, if no other fetch of the
// blob holds a Reservation and Complete did not pin it, keeps what its
// fetches stored as a partial blob, then applies the bounds on partial
// blobs (or drops it, after Drop). Calling it again does nothing.
func (r *Reservation) Release() {
	if r == nil {
		return
	}
	r.s.mu.Lock()
	r.releaseLocked()
	idle := r.s.mu.partials[r.root] == r.p && r.p.fetching == 0
	r.s.mu.Unlock()
	if idle {
		r.s.idle(r.root, r.p)
	}
}

// Drop makes the blob's partial dropped, not kept, when the last
// Reservation of it is released: its fetch found a content fault (ADR
// 0014), and what it stored is of no use.
func (r *Reservation) Drop() {
	r.s.mu.Lock()
	r.p.drop = true
	r.s.mu.Unlock()
}

// Resumed returns the bytes of the blob's leaves held when the
// reservation was taken: what an earlier fetch that did not complete
// stored and verified (ADR 0054), checked again if a crash may have torn
// it; 0 for a fetch that starts from nothing.
func (r *Reservation) Resumed() uint64 { return r.resumed }

// releaseLocked gives the room back once. REQUIRES: r.s.mu held.
func (r *Reservation) releaseLocked() {
	r.once.Do(func() {
		r.s.mu.reserved -= r.size
		r.p.fetching--
	})
}

// Reserve checks a declared size against blobs.max_blob_bytes and the room
// left under blobs.quota_bytes (the pinned blobs and the other
// reservations counted; partial blobs are not, ADR 0054), as ADR 0014 asks
// before any request, and reserves size bytes for a fetch of the blob
// root. The error wraps ErrTooLarge or ErrQuota, with the figures. If a
// partial of root is held, it is made ready for the fetch to go on from:
// its leaves checked if a crash may have torn them (a damaged one is
// dropped, to be fetched again); an error doing so wraps ErrStore.
func (s *Store) Reserve(root cid.Cid, size uint64) (*Reservation, error) {
	if s.opts.ReadOnly {
		return nil, errors.New("blobs: the store is read-only")
	}
	s.mu.Lock()
	if err := CheckBeforeFetch(size, s.opts.MaxBlobBytes, s.mu.used+s.mu.reserved, s.opts.QuotaBytes); err != nil {
		s.mu.Unlock()
		return nil, err
	}
	s.mu.reserved += size
	p := s.mu.partials[root]
	if p == nil {
		p = &partial{checked: true, boot: s.boot}
		s.mu.partials[root] = p
	}
	p.fetching++
	p.size = size
	s.mu.Unlock()
	r := &Reservation{s: s, root: root, size: size, p: p}
	held, err := s.resume(root, p)
	if err != nil {
		r.Release()
		return nil, fmt.Errorf("%w: %w", ErrStore, err)
	}
	r.resumed = held
	return r, nil
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
	leaf := b.Cid().Type() == cid.Raw
	p, err := s.partialFor(root, leaf)
	if err != nil || p == nil {
		return err // nil: root is pinned, and its file holds every leaf
	}
	if !leaf {
		return s.bstore.Put(ctx, b)
	}
	if err := p.file.put(b.Cid(), b.RawData()); err != nil {
		return err
	}
	s.mu.Lock()
	p.progressed = s.now().UnixMilli()
	p.unsynced += uint64(len(b.RawData()))
	syncNow := p.unsynced >= partialSyncBytes
	if syncNow {
		p.unsynced = 0
	}
	s.mu.Unlock()
	if syncNow {
		// pebble keeps writes without a sync in the process's memory
		// until its WAL's block fills: a kill would take the partial
		// record and the location records of this fetch with it. The
		// data file needs no sync for that: the leaves, in the page
		// cache, outlive the process, and are checked when the fetch
		// resumes (ADR 0054). The sync is a step of the file's
		// drop-behind too (ADR 0053, addendum): settled before it, so
		// that it finds none of the file's blocks in flight, started
		// after; a step held, for a range not on the disk yet, leaves
		// the sync to a later one (partialSyncBytes).
		if !p.file.settleBehind() {
			return nil
		}
		if err := s.db.LogData(nil, pebble.Sync); err != nil {
			return fmt.Errorf("blobs: partial %s: %w", root, err)
		}
		p.file.startBehind()
	}
	return nil
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
	p, err := s.partialFor(root, true)
	if err != nil {
		return fmt.Errorf("blobs: complete %s: %w", root, err)
	}
	file := p.file
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
	delete(s.mu.partials, root) // the blob's now, whatever follows
	s.unhide(file.num)
	s.mu.Unlock()
	if err := s.pinSealed(ctx, nd, size, file, ""); err != nil {
		_ = file.discard()
		_ = s.db.Delete(partialKey(root), pebble.NoSync)
		if ipld.IsNotFound(err) || errors.Is(err, ipld.ErrNotFound{}) {
			return fmt.Errorf("%w: %v", ErrIncomplete, err)
		}
		return err
	}
	if err := s.addPinned(ctx, root, size, file.num, r); err != nil {
		return err
	}
	// After the pin: a record left by a crash here is deleted at open.
	if err := s.db.Delete(partialKey(root), pebble.NoSync); err != nil {
		return fmt.Errorf("blobs: partial record of %s: %w", root, err)
	}
	return nil
}
