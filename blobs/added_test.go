package blobs

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/ipfs/go-cid"

	"github.com/wats-network/wats/eventlog"
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
	v := metaValue(size, num, 0, "")
	return v[:len(v)-1] // the time's varint of 0 is one byte
}

// TestParseMeta: a size record of the size alone, of the size and data
// file, of all three numbers, and of the three and a name of 1 to
// eventlog.MaxBlobNameBytes bytes parse; a record cut within a varint or
// within the name, with a byte past the name, a name one byte past the
// bound, an empty name written out, or a name that breaks the rule of an
// event's blob name, does not.
func TestParseMeta(t *testing.T) {
	const at = 1_800_000_000_000
	full := metaValue(1<<40, 3, at, "")
	atBound := strings.Repeat("n", eventlog.MaxBlobNameBytes)
	named := metaValue(1<<40, 3, at, atBound)
	pastBound := append(binary.AppendUvarint(bytes.Clone(full), eventlog.MaxBlobNameBytes+1), atBound+"n"...)
	withName := func(name string) []byte {
		return append(binary.AppendUvarint(bytes.Clone(full), uint64(len(name))), name...)
	}
	for _, tc := range []struct {
		name      string
		v         []byte
		size, num uint64
		added     int64
		blobName  string
		ok        bool
	}{
		{"size alone", metaValue(9, 0, 0, "")[:1], 9, 0, 0, "", true},
		{"size and file", binaryMeta(9, 4), 9, 4, 0, "", true},
		{"all three", full, 1 << 40, 3, at, "", true},
		{"a one-byte name", metaValue(1<<40, 3, at, "x"), 1 << 40, 3, at, "x", true},
		{"a name at the bound", named, 1 << 40, 3, at, atBound, true},
		{"a name one byte past the bound", pastBound, 0, 0, 0, "", false},
		{"a byte past the name", append(bytes.Clone(named), 'n'), 0, 0, 0, "", false},
		{"cut in the name", named[:len(named)-1], 0, 0, 0, "", false},
		{"an empty name written out", append(bytes.Clone(full), 0), 0, 0, 0, "", false},
		{"a name with a newline", withName("a\nb"), 0, 0, 0, "", false},
		{"a name not UTF-8", withName("a\xffb"), 0, 0, 0, "", false},
		{"cut in the time", full[:len(full)-1], 0, 0, 0, "", false},
		{"empty", nil, 0, 0, 0, "", false},
	} {
		size, num, added, name, ok := parseMeta(tc.v)
		if size != tc.size || num != tc.num || added != tc.added || name != tc.blobName || ok != tc.ok {
			t.Errorf("%s: parseMeta = %d, %d, %d, %q, %v; want %d, %d, %d, %q, %v",
				tc.name, size, num, added, name, ok, tc.size, tc.num, tc.added, tc.blobName, tc.ok)
		}
	}
}

// TestStoreNames: ImportSized keeps the name it is given in the blob's
// record, listed and kept across a reopen (a record of the store before
// names, the three numbers, still opens, without one); a second import
// of the same bytes with another name renames the blob, one without a
// name keeps it; a name that breaks the rule of an event's blob name,
// or one byte past eventlog.MaxBlobNameBytes, is refused with ErrBadName
// and nothing is stored, while one at the bound is kept; a remove
// forgets the name.
func TestStoreNames(t *testing.T) {
	dir := t.TempDir()
	db := openDB(t, dir)
	s, err := OpenStore(db, inDir(dir, nil))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	names := func(s *Store) map[cid.Cid]string {
		out := map[cid.Cid]string{}
		for _, b := range s.List() {
			out[b.CID] = b.Name
		}
		return out
	}
	a, _, err := s.ImportSized(ctx, bytes.NewReader(randBytes(5, 1)), 5, "report.pdf")
	if err != nil {
		t.Fatal(err)
	}
	atBound := strings.Repeat("é", eventlog.MaxBlobNameBytes/2) + "z" // 255 bytes
	b, _, err := s.ImportSized(ctx, bytes.NewReader(randBytes(7, 2)), -1, atBound)
	if err != nil {
		t.Fatalf("a name of %d bytes: %v", len(atBound), err)
	}
	old, _, err := s.Import(ctx, bytes.NewReader(randBytes(9, 3)))
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{atBound + "z", "two\nlines", "\xff"} {
		c, _, err := s.ImportSized(ctx, bytes.NewReader(randBytes(11, 4)), 11, bad)
		if !errors.Is(err, ErrBadName) || c.Defined() {
			t.Errorf("name %q: %v, %v; want ErrBadName", bad, c, err)
		}
	}
	want := map[cid.Cid]string{a: "report.pdf", b: atBound, old: ""}
	if got := names(s); !maps.Equal(got, want) {
		t.Fatalf("after the imports: %q; want %q", got, want)
	}
	// The same bytes again: another name renames, none keeps it.
	if _, _, err := s.ImportSized(ctx, bytes.NewReader(randBytes(5, 1)), 5, "renamed.pdf"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.ImportSized(ctx, bytes.NewReader(randBytes(7, 2)), 7, ""); err != nil {
		t.Fatal(err)
	}
	want[a] = "renamed.pdf"
	if got := names(s); !maps.Equal(got, want) {
		t.Fatalf("after the imports again: %q; want %q", got, want)
	}
	// The unnamed blob's record is the three numbers, as before names.
	v, err := s.dstore.Get(ctx, metaKey(old))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, at, _, ok := parseMeta(v); !ok || !bytes.Equal(v, metaValue(9, s.mu.files[old], at, "")) {
		t.Errorf("the record of a blob without a name is %x", v)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openDB(t, dir)
	defer db.Close()
	if s, err = OpenStore(db, inDir(dir, nil)); err != nil {
		t.Fatal(err)
	}
	if got := names(s); !maps.Equal(got, want) {
		t.Fatalf("after a reopen: %q; want %q", got, want)
	}
	if err := s.Remove(ctx, a); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Import(ctx, bytes.NewReader(randBytes(5, 1))); err != nil {
		t.Fatal(err)
	}
	if got := names(s)[a]; got != "" {
		t.Errorf("a blob removed and imported again without a name is named %q", got)
	}
}
