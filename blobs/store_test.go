package blobs

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	blocks "github.com/ipfs/go-block-format"
	"github.com/ipfs/go-cid"

	"github.com/wats-network/wats/core"
)

// openDB opens a pebble DB in dir with the options the blob store needs
// (TunePebble, docs/design.md §10) and
// a 64 MiB memtable (the node's is 16 MiB).
func openDB(t testing.TB, dir string) *pebble.DB {
	t.Helper()
	opts := &pebble.Options{MemTableSize: 64 << 20}
	TunePebble(opts)
	db, err := pebble.Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	return db
}

func newStore(t testing.TB, opts StoreOptions) (*Store, *pebble.DB, string) {
	t.Helper()
	dir := t.TempDir()
	db := openDB(t, dir)
	t.Cleanup(func() { db.Close() })
	s, err := OpenStore(db, inDir(dir, &opts))
	if err != nil {
		t.Fatal(err)
	}
	return s, db, dir
}

// inDir returns o (nil: the defaults) with the data directory the node
// would give a database opened at dir, unless o names one.
func inDir(dir string, o *StoreOptions) *StoreOptions {
	var c StoreOptions
	if o != nil {
		c = *o
	}
	if c.DataDir == "" {
		c.DataDir = filepath.Join(dir, "blobs")
	}
	return &c
}

func randBytes(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 1))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func TestStoreRoundTrip(t *testing.T) {
	s, _, _ := newStore(t, StoreOptions{})
	ctx := context.Background()
	var want uint64
	for i, n := range []int{0, 1, ChunkSize, ChunkSize + 1, 3*ChunkSize + 5} {
		data := randBytes(n, uint64(i))
		c, size, err := s.Import(ctx, bytes.NewReader(data))
		if err != nil {
			t.Fatalf("size %d: import: %v", n, err)
		}
		if size != uint64(n) {
			t.Fatalf("size %d: Import says %d", n, size)
		}
		if c.Version() != 1 || c.Prefix().MhType != 0x1e {
			t.Fatalf("size %d: CID %s: want v1 BLAKE3", n, c)
		}
		wantCodec := uint64(cid.DagProtobuf)
		if n <= ChunkSize {
			wantCodec = cid.Raw // one chunk: a single raw block
		}
		if c.Type() != wantCodec {
			t.Fatalf("size %d: codec %#x, want %#x", n, c.Type(), wantCodec)
		}
		want += uint64(n)
		if got := s.QuotaUsed(); got != want {
			t.Fatalf("size %d: quota used %d, want %d", n, got, want)
		}
		var out bytes.Buffer
		if err := s.Export(ctx, c, size, &out); err != nil {
			t.Fatalf("size %d: export: %v", n, err)
		}
		if !bytes.Equal(out.Bytes(), data) {
			t.Fatalf("size %d: exported bytes differ (%d bytes)", n, out.Len())
		}
		if ok, err := s.Has(c); err != nil || !ok {
			t.Fatalf("size %d: Has = %v, %v", n, ok, err)
		}
	}
	if got := len(s.List()); got != 5 {
		t.Fatalf("List has %d blobs, want 5", got)
	}
}

func TestStoreOneChunkIsRawBlock(t *testing.T) {
	s, _, _ := newStore(t, StoreOptions{})
	ctx := context.Background()
	data := randBytes(ChunkSize, 7)
	c, _, err := s.Import(ctx, bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(c.String(), "bafkr4") {
		t.Fatalf("one-chunk blob CID %s, want prefix bafkr4", c)
	}
	blk, err := s.bstore.Get(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(blk.RawData(), data) {
		t.Fatal("the raw block is not the file's bytes")
	}
	// The same bytes under a CID computed independently.
	want, err := CIDBuilder.WithCodec(cid.Raw).Sum(data)
	if err != nil {
		t.Fatal(err)
	}
	if !c.Equals(want) {
		t.Fatalf("CID %s, want %s", c, want)
	}
}

func TestStoreMaxBlobBytes(t *testing.T) {
	const max = 2*ChunkSize + 3
	s, _, _ := newStore(t, StoreOptions{MaxBlobBytes: max})
	ctx := context.Background()
	if err := s.CheckImport(max); err != nil {
		t.Fatalf("CheckImport at the bound: %v", err)
	}
	if err := s.CheckImport(max + 1); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("CheckImport one past the bound: %v, want ErrTooLarge", err)
	}
	c, size, err := s.Import(ctx, bytes.NewReader(randBytes(max, 1)))
	if err != nil || size != max {
		t.Fatalf("at the bound: %v, size %d", err, size)
	}
	blocks := countBlocks(t, s)
	r := &countingReader{r: bytes.NewReader(randBytes(max+1+ChunkSize, 2))}
	if _, _, err := s.Import(ctx, r); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("one past the bound: %v, want ErrTooLarge", err)
	}
	if r.n != max+1 {
		t.Fatalf("read %d bytes, want to stop at max+1 = %d", r.n, max+1)
	}
	if got := s.QuotaUsed(); got != max {
		t.Fatalf("quota used %d after a refused import, want %d", got, max)
	}
	if got := countBlocks(t, s); got != blocks {
		t.Fatalf("%d blocks after a refused import, want %d", got, blocks)
	}
	if l := s.List(); len(l) != 1 || !l[0].CID.Equals(c) {
		t.Fatalf("List = %v", l)
	}
}

func TestStoreQuota(t *testing.T) {
	const quota = 3*ChunkSize + 10
	s, _, _ := newStore(t, StoreOptions{QuotaBytes: quota})
	ctx := context.Background()
	if _, _, err := s.Import(ctx, bytes.NewReader(randBytes(2*ChunkSize, 1))); err != nil {
		t.Fatal(err)
	}
	blocks := countBlocks(t, s)
	if err := s.CheckImport(ChunkSize + 10); err != nil {
		t.Fatalf("CheckImport of the room left: %v", err)
	}
	if err := s.CheckImport(ChunkSize + 11); !errors.Is(err, ErrQuota) {
		t.Fatalf("CheckImport one past the room left: %v, want ErrQuota", err)
	}
	// One past the room left: refused, nothing stored.
	r := &countingReader{r: bytes.NewReader(randBytes(ChunkSize+11, 2))}
	if _, _, err := s.Import(ctx, r); !errors.Is(err, ErrQuota) {
		t.Fatalf("one past the quota: %v, want ErrQuota", err)
	}
	if r.n != ChunkSize+11 {
		t.Fatalf("read %d bytes, want %d", r.n, ChunkSize+11)
	}
	if got := s.QuotaUsed(); got != 2*ChunkSize {
		t.Fatalf("quota used %d after a refused import", got)
	}
	if got := countBlocks(t, s); got != blocks {
		t.Fatalf("%d blocks after a refused import, want %d", got, blocks)
	}
	// Exactly the room left: accepted, the quota is full.
	if _, _, err := s.Import(ctx, bytes.NewReader(randBytes(ChunkSize+10, 3))); err != nil {
		t.Fatalf("exactly at the quota: %v", err)
	}
	if got := s.QuotaUsed(); got != quota {
		t.Fatalf("quota used %d, want %d", got, quota)
	}
	if _, _, err := s.Import(ctx, bytes.NewReader([]byte{1})); !errors.Is(err, ErrQuota) {
		t.Fatalf("a byte over a full quota: %v, want ErrQuota", err)
	}
}

func TestStoreExportRefused(t *testing.T) {
	s, _, _ := newStore(t, StoreOptions{})
	ctx := context.Background()
	data := randBytes(ChunkSize+1, 1)
	c, size, err := s.Import(ctx, bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	for _, wrong := range []uint64{size - 1, size + 1, 0} {
		var out bytes.Buffer
		if err := s.Export(ctx, c, wrong, &out); !errors.Is(err, ErrSizeMismatch) {
			t.Fatalf("size %d: %v, want ErrSizeMismatch", wrong, err)
		}
		if out.Len() != 0 {
			t.Fatalf("size %d: %d bytes written on refusal", wrong, out.Len())
		}
	}
	other, err := CIDBuilder.WithCodec(cid.Raw).Sum([]byte("never stored"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Export(ctx, other, 12, io.Discard); !errors.Is(err, ErrIncomplete) {
		t.Fatalf("unknown blob: %v, want ErrIncomplete", err)
	}
	if err := s.Remove(ctx, c); err != nil {
		t.Fatal(err)
	}
	if err := s.Export(ctx, c, size, io.Discard); !errors.Is(err, ErrIncomplete) {
		t.Fatalf("removed blob: %v, want ErrIncomplete", err)
	}
	if ok, _ := s.Has(c); ok {
		t.Fatal("Has after Remove")
	}
	if got := s.QuotaUsed(); got != 0 {
		t.Fatalf("quota used %d after Remove", got)
	}
	if err := s.Remove(ctx, c); !errors.Is(err, ErrIncomplete) {
		t.Fatalf("second Remove: %v, want ErrIncomplete", err)
	}
}

func TestStoreReopen(t *testing.T) {
	dir := t.TempDir()
	db := openDB(t, dir)
	s, err := OpenStore(db, inDir(dir, nil))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	want := map[cid.Cid]uint64{}
	var removed cid.Cid
	for i, n := range []int{5, ChunkSize + 7, 2 * ChunkSize} {
		c, size, err := s.Import(ctx, bytes.NewReader(randBytes(n, uint64(i))))
		if err != nil {
			t.Fatal(err)
		}
		want[c] = size
		removed = c
	}
	if err := s.Remove(ctx, removed); err != nil {
		t.Fatal(err)
	}
	delete(want, removed)
	used := s.QuotaUsed()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	db = openDB(t, dir)
	defer db.Close()
	s, err = OpenStore(db, inDir(dir, nil))
	if err != nil {
		t.Fatal(err)
	}
	if got := s.QuotaUsed(); got != used || used != 5+ChunkSize+7 {
		t.Fatalf("quota used %d after reopen, want %d (= %d)", got, used, 5+ChunkSize+7)
	}
	got := s.List()
	if len(got) != len(want) {
		t.Fatalf("List after reopen = %v, want %v", got, want)
	}
	for _, b := range got {
		if want[b.CID] != b.Size {
			t.Fatalf("List after reopen has %s size %d, want %d", b.CID, b.Size, want[b.CID])
		}
		if err := s.Export(ctx, b.CID, b.Size, io.Discard); err != nil {
			t.Fatalf("export after reopen: %v", err)
		}
	}
	if ok, _ := s.Has(removed); ok {
		t.Fatal("a removed blob is back after reopen")
	}
}

// TestStoreReopenDropsUnpinnedRecord: a size record without a pin (an
// import cut off between the record and the pin) is not counted and is
// dropped at open.
func TestStoreReopenDropsUnpinnedRecord(t *testing.T) {
	s, db, dir := newStore(t, StoreOptions{})
	ctx := context.Background()
	c, _, err := s.Import(ctx, bytes.NewReader(randBytes(100, 1)))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.pinner.Unpin(ctx, c, true); err != nil { // as if the pin never happened
		t.Fatal(err)
	}
	if err := s.pinner.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	s2, err := OpenStore(db, inDir(dir, nil))
	if err != nil {
		t.Fatal(err)
	}
	if s2.QuotaUsed() != 0 || len(s2.List()) != 0 {
		t.Fatalf("unpinned record counted: used %d, list %v", s2.QuotaUsed(), s2.List())
	}
	if ok, _ := s2.dstore.Has(ctx, metaKey(c)); ok {
		t.Fatal("unpinned size record not dropped")
	}
}

// TestStoreKeysUnderPrefix: every key the store keeps once closed is
// under KeyPrefix or, a leaf's location, LocPrefix.
func TestStoreKeysUnderPrefix(t *testing.T) {
	s, db, _ := newStore(t, StoreOptions{})
	ctx := context.Background()
	c, _, err := s.Import(ctx, bytes.NewReader(randBytes(2*ChunkSize+1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Import(ctx, bytes.NewReader(randBytes(3, 2))); err != nil {
		t.Fatal(err)
	}
	if err := s.Remove(ctx, c); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil { // the unsynced records ("bu/") gone
		t.Fatal(err)
	}
	it, err := db.NewIter(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		n++
		if !strings.HasPrefix(string(it.Key()), KeyPrefix) && !strings.HasPrefix(string(it.Key()), LocPrefix) {
			t.Errorf("key %q outside %q and %q", it.Key(), KeyPrefix, LocPrefix)
		}
	}
	if n < 5 { // 3 + 1 blocks, a pin, a size record at least
		t.Fatalf("only %d keys in the DB", n)
	}
}

func TestBoundedReader(t *testing.T) {
	for _, tc := range []struct {
		n, limit int
		ok       bool
	}{{0, 0, true}, {1, 0, false}, {10, 10, true}, {11, 10, false}} {
		b := &boundedReader{r: bytes.NewReader(make([]byte, tc.n)), limit: uint64(tc.limit), err: ErrTooLarge}
		got, err := io.ReadAll(b)
		if tc.ok != (err == nil) || (err != nil && !errors.Is(err, ErrTooLarge)) {
			t.Fatalf("%d bytes, limit %d: %v", tc.n, tc.limit, err)
		}
		if tc.ok && len(got) != tc.n {
			t.Fatalf("%d bytes, limit %d: read %d", tc.n, tc.limit, len(got))
		}
	}
}

// BenchmarkStoreImport64MiB imports 64 MiB blobs (max_blob_bytes),
// with pebble's default memtable (4 MiB) and with a 64 MiB one (design
// §10: tune pebble for 1 MiB values).
func BenchmarkStoreImport64MiB(b *testing.B) {
	data := randBytes(64<<20, 1)
	for _, bc := range []struct {
		name     string
		memtable uint64
		tune     bool
	}{
		{"memtable=default", 0, false},
		{"memtable=64MiB", 64 << 20, false},
		{"memtable=16MiB,separated", 16 << 20, true}, // the node's setting
	} {
		b.Run(bc.name, func(b *testing.B) {
			opts := &pebble.Options{MemTableSize: bc.memtable}
			if bc.tune {
				TunePebble(opts)
			}
			dir := b.TempDir()
			db, err := pebble.Open(dir, opts)
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			s, err := OpenStore(db, inDir(dir, &StoreOptions{QuotaBytes: 1 << 40}))
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			b.SetBytes(int64(len(data)))
			for i := 0; b.Loop(); i++ {
				data[0], data[1] = byte(i), byte(i>>8) // a new blob each time
				if _, _, err := s.Import(ctx, bytes.NewReader(data)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkStoreImportFile256MiB imports a 256 MiB pseudo-random file
// from disk (the page cache, after the first read) with the node's pebble
// settings (16 MiB memtable, TunePebble), removing it after each
// import and pausing 2 s outside the timer (as the measurements of
// `wats blob add` do between adds): the in-process anchor of blob add
// (docs/performance.md). cpu-s/op is the process's CPU time (user and
// system, every goroutine: pebble's flushes too) per import, the cost
// that a busy machine's load does not inflate as it does the time.
func BenchmarkStoreImportFile256MiB(b *testing.B) {
	const size = 256 << 20
	dir := b.TempDir()
	file := filepath.Join(dir, "blob.bin")
	if err := os.WriteFile(file, randBytes(size, 1), 0o600); err != nil {
		b.Fatal(err)
	}
	if err := syncFile(file); err != nil { // not written back during the imports
		b.Fatal(err)
	}
	opts := &pebble.Options{MemTableSize: 16 << 20}
	TunePebble(opts)
	db, err := pebble.Open(filepath.Join(dir, "db"), opts)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	s, err := OpenStore(db, &StoreOptions{MaxBlobBytes: size, DataDir: filepath.Join(dir, "db", "blobs")})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.SetBytes(size)
	var cpu time.Duration
	for b.Loop() {
		f, err := os.Open(file)
		if err != nil {
			b.Fatal(err)
		}
		start := cpuTime()
		c, _, err := s.Import(ctx, f)
		cpu += cpuTime() - start
		f.Close()
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if err := s.Remove(ctx, c); err != nil {
			b.Fatal(err)
		}
		time.Sleep(2 * time.Second) // pebble's work on the removal, mostly
		b.StartTimer()
	}
	b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op")
}

func syncFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	k, err := c.r.Read(p)
	c.n += k
	return k, err
}

func countBlocks(t *testing.T, s *Store) int {
	t.Helper()
	ch, err := s.bstore.AllKeysChan(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for range ch {
		n++
	}
	return n
}

// TestBlockKey holds blockKey (hasKey) to the blockstore's own layout: a
// block the blockstore has is found by key, one it lacks is not.
func TestBlockKey(t *testing.T) {
	s, _, _ := newStore(t, StoreOptions{})
	// Two chunks: the root is a dag-pb node, in pebble (a leaf is in a
	// data file, ADR 0037).
	c, _, err := s.Import(context.Background(), bytes.NewReader(randBytes(ChunkSize+1, 99)))
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := s.hasKey(c.Hash()); !ok || err != nil {
		t.Fatalf("hasKey of a stored block: %v, %v", ok, err)
	}
	other := rawBlock(t, []byte("not stored"))
	if ok, err := s.hasKey(other.Cid().Hash()); ok || err != nil {
		t.Fatalf("hasKey of a block not stored: %v, %v", ok, err)
	}
	// A key that extends the stored one is not a match.
	if ok, _ := s.bstore.Has(context.Background(), other.Cid()); ok {
		t.Fatal("the blockstore has a block never stored")
	}
}

// TestCompleteNeedsEveryBlock: Complete pins a fetched blob only when every
// block is in the store and its size is the declared one.
func TestCompleteNeedsEveryBlock(t *testing.T) {
	src, _, _ := newStore(t, StoreOptions{})
	dst, _, _ := newStore(t, StoreOptions{})
	ctx := context.Background()
	c, size, err := src.Import(ctx, bytes.NewReader(randBytes(3*ChunkSize+1, 98)))
	if err != nil {
		t.Fatal(err)
	}
	keys, _ := src.bstore.AllKeysChan(ctx)
	var leaf cid.Cid
	for k := range keys {
		b, err := src.bstore.Get(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		if b.Cid().Hash().HexString() == c.Hash().HexString() {
			b, _ = blocks.NewBlockWithCid(b.RawData(), c) // the root, as dag-pb
		} else if !leaf.Defined() {
			leaf = k // keep one leaf out
			continue
		}
		if err := dst.PutBlock(ctx, c, b); err != nil {
			t.Fatal(err)
		}
	}
	if err := dst.Complete(ctx, c, size, nil); !errors.Is(err, ErrIncomplete) {
		t.Fatalf("Complete without a leaf: %v, want ErrIncomplete", err)
	}
	lb, _ := src.bstore.Get(ctx, leaf)
	if err := dst.PutBlock(ctx, c, lb); err != nil {
		t.Fatal(err)
	}
	if err := dst.Complete(ctx, c, size+1, nil); !errors.Is(err, ErrSizeMismatch) {
		t.Fatalf("Complete at another size: %v, want ErrSizeMismatch", err)
	}
	if ok, _ := dst.Has(c); ok {
		t.Fatal("pinned after failed Completes")
	}
	if err := dst.Complete(ctx, c, size, nil); err != nil {
		t.Fatal(err)
	}
	if ok, _ := dst.Has(c); !ok || dst.QuotaUsed() != size {
		t.Fatalf("after Complete: has %v, quota used %d", ok, dst.QuotaUsed())
	}
}

// TestStoreOptions: each bound at and just past it, 0 for the default;
// OpenStore refuses options out of range and leaves its options as they
// were.
func TestStoreOptions(t *testing.T) {
	for _, tc := range []struct {
		o  StoreOptions
		ok bool
	}{
		{StoreOptions{}, true},
		{StoreOptions{MaxBlobBytes: core.MaxSafeInt, QuotaBytes: MaxQuotaBytes}, true},
		{StoreOptions{MaxBlobBytes: core.MaxSafeInt + 1}, false},
		{StoreOptions{QuotaBytes: MaxQuotaBytes + 1}, false},
	} {
		o := tc.o
		if err := o.Validate(); (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrInvalidOptions)) {
			t.Errorf("%+v: Validate %v, want ok %v", tc.o, err, tc.ok)
		}
		dir := t.TempDir()
		db := openDB(t, dir)
		o.DataDir = filepath.Join(dir, "blobs")
		want := o
		_, err := OpenStore(db, &o)
		if (err == nil) != tc.ok {
			t.Errorf("%+v: OpenStore %v, want ok %v", tc.o, err, tc.ok)
		}
		if !reflect.DeepEqual(o, want) { // Pinned nil in both
			t.Errorf("OpenStore changed its options: %+v, was %+v", o, want)
		}
		// Without a data directory: refused, whatever the rest.
		o.DataDir = ""
		if _, err := OpenStore(db, &o); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("%+v: OpenStore without a data directory: %v, want ErrInvalidOptions", o, err)
		}
		db.Close()
	}
	if d := (*StoreOptions)(nil).EnsureDefaults(); d.MaxBlobBytes != DefaultMaxBlobBytes || d.QuotaBytes != DefaultQuotaBytes {
		t.Errorf("defaults %+v", d)
	}
}
