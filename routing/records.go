package routing

import (
	"context"
	"errors"
	"fmt"
	"sync"

	ds "github.com/ipfs/go-datastore"
	"github.com/ipfs/go-datastore/query"
)

// errRecordsFull is what a write of a new record gets from a full
// recordStore.
var errRecordsFull = errors.New("routing: the DHT's provider record store is full")

// recordStore is the datastore of the provider records other peers put
// here through the DHT (dht.ProviderDatastore): a datastore that holds at
// most max keys, and refuses a write of a new key past them with
// errRecordsFull (docs/adr/0040). Overwrites (a provider renewing its
// record) and deletes (kad-dht's expiry of records older than 48 h) always
// pass, so a full store empties as records expire.
//
// The count of keys is taken at open and kept by every write; a write and
// its count change under one mutex, so that two writes of new keys never
// both take the last place.
type recordStore struct {
	ds.Batching
	max int
	// room, if set, is asked before a write of n bytes (ADR 0044: a full
	// disk refuses new records as a full store does).
	room func(n int) error

	mu      sync.Mutex
	count   int
	refused uint64
}

// newRecordStore counts the keys of d and returns the store over it.
func newRecordStore(d ds.Batching, max int) (*recordStore, error) {
	res, err := d.Query(context.Background(), query.Query{KeysOnly: true})
	if err != nil {
		return nil, err
	}
	defer res.Close()
	count := 0
	for r := range res.Next() {
		if r.Error != nil {
			return nil, r.Error
		}
		count++
	}
	return &recordStore{Batching: d, max: max, count: count}, nil
}

// Len returns the keys held.
func (s *recordStore) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.count
}

// Put writes k unless it is a new key and the store is full.
func (s *recordStore) Put(ctx context.Context, k ds.Key, v []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	had, err := s.Batching.Has(ctx, k)
	if err != nil {
		return err
	}
	if !had && s.count >= s.max {
		s.refused++
		return fmt.Errorf("%w (%d records)", errRecordsFull, s.max)
	}
	if err := s.hasRoom(len(k.String()) + len(v)); err != nil {
		s.refused++
		return err
	}
	if err := s.Batching.Put(ctx, k, v); err != nil {
		return err
	}
	if !had {
		s.count++
	}
	return nil
}

// hasRoom asks room, if set, for n bytes.
func (s *recordStore) hasRoom(n int) error {
	if s.room == nil {
		return nil
	}
	return s.room(n)
}

// Delete deletes k.
func (s *recordStore) Delete(ctx context.Context, k ds.Key) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	had, err := s.Batching.Has(ctx, k)
	if err != nil {
		return err
	}
	if err := s.Batching.Delete(ctx, k); err != nil {
		return err
	}
	if had {
		s.count--
	}
	return nil
}

// Batch returns a batch whose writes are counted and bounded as the
// store's, at Commit: the puts of new keys past the bound are dropped
// (counted in Refused), and so are all of its puts when the disk has no
// room for them, the rest written, and Commit returns nil. Not an
// error: kad-dht keeps a batch that failed to retry it, and would rewrite
// its whole buffer at each new record while the store is full.
func (s *recordStore) Batch(ctx context.Context) (ds.Batch, error) {
	return &recordBatch{s: s}, nil
}

// recordBatch is a recordStore's batch: its operations, in order, applied
// at Commit.
type recordBatch struct {
	s   *recordStore
	ops []recordOp
}

type recordOp struct {
	k   ds.Key
	v   []byte
	del bool
}

func (b *recordBatch) Put(_ context.Context, k ds.Key, v []byte) error {
	b.ops = append(b.ops, recordOp{k: k, v: v})
	return nil
}

func (b *recordBatch) Delete(_ context.Context, k ds.Key) error {
	b.ops = append(b.ops, recordOp{k: k, del: true})
	return nil
}

// Commit applies the batch's operations in one batch of the datastore
// below, under the store's mutex.
func (b *recordBatch) Commit(ctx context.Context) error {
	s := b.s
	s.mu.Lock()
	defer s.mu.Unlock()
	inner, err := s.Batching.Batch(ctx)
	if err != nil {
		return err
	}
	// Keys written or deleted earlier in this batch, for the count: the
	// datastore below does not see them before Commit.
	pending := make(map[ds.Key]bool, len(b.ops))
	has := func(k ds.Key) (bool, error) {
		if h, ok := pending[k]; ok {
			return h, nil
		}
		return s.Batching.Has(ctx, k)
	}
	count := s.count
	refused := 0
	size := 0
	for _, op := range b.ops {
		size += len(op.k.String()) + len(op.v)
	}
	noRoom := s.hasRoom(size) != nil
	for _, op := range b.ops {
		had, err := has(op.k)
		if err != nil {
			return err
		}
		switch {
		case op.del:
			if err := inner.Delete(ctx, op.k); err != nil {
				return err
			}
			pending[op.k] = false
			if had {
				count--
			}
		case noRoom || !had && count >= s.max:
			refused++
		default:
			if err := inner.Put(ctx, op.k, op.v); err != nil {
				return err
			}
			pending[op.k] = true
			if !had {
				count++
			}
		}
	}
	if err := inner.Commit(ctx); err != nil {
		return err
	}
	s.count = count
	s.refused += uint64(refused)
	b.ops = nil
	return nil
}

// Refused returns how many new records the store refused, full.
func (s *recordStore) Refused() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refused
}
