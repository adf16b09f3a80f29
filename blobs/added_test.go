package blobs

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/ipfs/go-cid"
)

// TestStoreAddedTime: each blob is listed with the time it was added (the
// store's clock, to the millisecond), kept across a reopen; a record
// written before the time was kept (size and data file only) still opens,
// its blob listed with the zero time.
func TestStoreAddedTime(t *testing.T) {
	dir := t.TempDir()
	db := openDB(t, dir)
	now := time.UnixMilli(1_800_000_000_000)
	clock := func() time.Time { return now }
	s, err := OpenStore(db, inDir(dir, &StoreOptions{Now: clock}))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	first, _, err := s.Import(ctx, bytes.NewReader(randBytes(5, 1)))
	if err != nil {
		t.Fatal(err)
	}
	now = now.Add(90 * time.Second)
	second, _, err := s.Import(ctx, bytes.NewReader(randBytes(7, 2)))
	if err != nil {
		t.Fatal(err)
	}
	want := map[cid.Cid]time.Time{first: time.UnixMilli(1_800_000_000_000), second: time.UnixMilli(1_800_000_090_000)}
	check := func(s *Store, when string) {
		t.Helper()
		got := s.List()
		if len(got) != len(want) {
			t.Fatalf("%s: %d blobs listed, want %d", when, len(got), len(want))
		}
		for _, b := range got {
			if !b.Added.Equal(want[b.CID]) {
				t.Errorf("%s: %s added %v, want %v", when, b.CID, b.Added, want[b.CID])
			}
		}
	}
	check(s, "after the imports")
	// The first blob's record as a store before this one wrote it.
	if err := s.dstore.Put(ctx, metaKey(first), binaryMeta(5, s.mu.files[first])); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openDB(t, dir)
	defer db.Close()
	if s, err = OpenStore(db, inDir(dir, nil)); err != nil {
		t.Fatalf("a record without the time: %v", err)
	}
	want[first] = time.Time{}
	check(s, "after a reopen")
	if err := s.Remove(ctx, second); err != nil {
		t.Fatal(err)
	}
	delete(want, second)
	check(s, "after a remove")
}

// binaryMeta is a size record as it was before the time was kept.
func binaryMeta(size, num uint64) []byte {
	v := metaValue(size, num, 0)
	return v[:len(v)-1] // the time's varint of 0 is one byte
}

// TestParseMeta: a size record of the size alone, of the size and data
// file, and of all three parse; a record cut within a varint, or with a
// byte past the time, does not.
func TestParseMeta(t *testing.T) {
	full := metaValue(1<<40, 3, 1_800_000_000_000)
	for _, tc := range []struct {
		name      string
		v         []byte
		size, num uint64
		added     int64
		ok        bool
	}{
		{"size alone", metaValue(9, 0, 0)[:1], 9, 0, 0, true},
		{"size and file", binaryMeta(9, 4), 9, 4, 0, true},
		{"all three", full, 1 << 40, 3, 1_800_000_000_000, true},
		{"a byte past the time", append(bytes.Clone(full), 0), 0, 0, 0, false},
		{"cut in the time", full[:len(full)-1], 0, 0, 0, false},
		{"empty", nil, 0, 0, 0, false},
	} {
		size, num, added, ok := parseMeta(tc.v)
		if size != tc.size || num != tc.num || added != tc.added || ok != tc.ok {
			t.Errorf("%s: parseMeta = %d, %d, %d, %v; want %d, %d, %d, %v", tc.name, size, num, added, ok, tc.size, tc.num, tc.added, tc.ok)
		}
	}
}
