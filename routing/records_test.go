package routing

import (
	"context"
	"errors"
	"fmt"
	"testing"

	ds "github.com/ipfs/go-datastore"
	dssync "github.com/ipfs/go-datastore/sync"
)

func recordKey(i int) ds.Key { return ds.NewKey(fmt.Sprintf("/providers/k%d/p", i)) }

// TestRecordStoreBound: the store takes new keys up to its bound and
// refuses the next, by Put (an error) and by a batch (dropped, counted); overwrites and deletes always
// pass, and a delete makes room; the count survives a reopen.
func TestRecordStoreBound(t *testing.T) {
	ctx := context.Background()
	under := dssync.MutexWrap(ds.NewMapDatastore())
	const max = 4
	s, err := newRecordStore(under, max)
	if err != nil {
		t.Fatal(err)
	}
	for i := range max {
		if err := s.Put(ctx, recordKey(i), []byte("v")); err != nil {
			t.Fatalf("put %d of %d: %v", i+1, max, err)
		}
	}
	if err := s.Put(ctx, recordKey(max), []byte("v")); !errors.Is(err, errRecordsFull) {
		t.Fatalf("put past the bound: %v, want errRecordsFull", err)
	}
	if err := s.Put(ctx, recordKey(0), []byte("renewed")); err != nil {
		t.Fatalf("overwrite at the bound: %v", err)
	}
	if s.Len() != max {
		t.Fatalf("Len %d, want %d", s.Len(), max)
	}

	// A batch: a delete makes room for one new key, the second is refused;
	// the rest of the batch is written.
	b, _ := s.Batch(ctx)
	_ = b.Delete(ctx, recordKey(1))
	_ = b.Put(ctx, recordKey(10), []byte("v"))
	_ = b.Put(ctx, recordKey(11), []byte("v"))
	_ = b.Put(ctx, recordKey(10), []byte("again")) // an overwrite within the batch
	if err := b.Commit(ctx); err != nil {
		t.Fatalf("batch past the bound: %v, want nil (the new key dropped, not an error kad-dht retries)", err)
	}
	if got := s.Refused(); got != 2 {
		t.Errorf("Refused %d, want 2 (one Put, one in the batch)", got)
	}
	for k, want := range map[ds.Key]bool{recordKey(1): false, recordKey(10): true, recordKey(11): false, recordKey(0): true} {
		if has, _ := under.Has(ctx, k); has != want {
			t.Errorf("after the batch: %s held %v, want %v", k, has, want)
		}
	}
	if v, _ := under.Get(ctx, recordKey(10)); string(v) != "again" {
		t.Errorf("the batch's overwrite left %q", v)
	}
	if s.Len() != max {
		t.Errorf("Len %d after the batch, want %d", s.Len(), max)
	}
	if err := s.Delete(ctx, recordKey(2)); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, recordKey(2)); err != nil { // a key not held: no count change
		t.Fatal(err)
	}
	if s.Len() != max-1 {
		t.Errorf("Len %d after a delete (twice), want %d", s.Len(), max-1)
	}
	s2, err := newRecordStore(under, max)
	if err != nil {
		t.Fatal(err)
	}
	if s2.Len() != max-1 {
		t.Errorf("reopened: Len %d, want %d", s2.Len(), max-1)
	}
	if err := s2.Put(ctx, recordKey(20), []byte("v")); err != nil {
		t.Errorf("put into the room a delete made: %v", err)
	}
	if err := s2.Put(ctx, recordKey(21), []byte("v")); !errors.Is(err, errRecordsFull) {
		t.Errorf("put past the bound after reopening: %v", err)
	}
}

// TestRecordStoreFullDisk: while the disk has no room, a Put is refused
// with room's error and a batch's puts are dropped (its deletes applied),
// each counted in Refused; once room is back, puts are written.
func TestRecordStoreFullDisk(t *testing.T) {
	ctx := context.Background()
	under := dssync.MutexWrap(ds.NewMapDatastore())
	s, err := newRecordStore(under, 10)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, recordKey(0), []byte("v")); err != nil {
		t.Fatal(err)
	}
	full := errors.New("disk full")
	s.room = func(n int) error {
		if n <= 0 {
			t.Errorf("room asked for %d bytes", n)
		}
		return full
	}
	if err := s.Put(ctx, recordKey(1), []byte("v")); !errors.Is(err, full) {
		t.Fatalf("put on a full disk: %v, want %v", err, full)
	}
	b, _ := s.Batch(ctx)
	_ = b.Delete(ctx, recordKey(0))
	_ = b.Put(ctx, recordKey(2), []byte("v"))
	if err := b.Commit(ctx); err != nil {
		t.Fatalf("batch on a full disk: %v, want nil", err)
	}
	for k, want := range map[ds.Key]bool{recordKey(0): false, recordKey(1): false, recordKey(2): false} {
		if has, _ := under.Has(ctx, k); has != want {
			t.Errorf("on a full disk: %s held %v, want %v", k, has, want)
		}
	}
	if s.Refused() != 2 || s.Len() != 0 {
		t.Errorf("Refused %d, Len %d; want 2 and 0", s.Refused(), s.Len())
	}
	s.room = func(int) error { return nil }
	if err := s.Put(ctx, recordKey(1), []byte("v")); err != nil {
		t.Fatalf("put once room is back: %v", err)
	}
}
