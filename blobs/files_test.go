package blobs

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	blocks "github.com/ipfs/go-block-format"
	"github.com/ipfs/go-cid"

	"github.com/wats-network/wats/core"
)

// dataFiles lists the data files of the store at DataDir.
func dataFiles(t *testing.T, s *Store) map[string]int64 {
	t.Helper()
	ents, err := os.ReadDir(s.opts.DataDir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, e := range ents {
		fi, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = fi.Size()
	}
	return out
}

// locRecords counts the location records in db.
func locRecords(t *testing.T, db *pebble.DB) int {
	t.Helper()
	return countPrefix(t, db, LocPrefix)
}

// TestBlobInADataFile: an import writes one data file holding exactly the
// blob's bytes and one location record per distinct leaf; Remove deletes
// both; a repeated chunk is stored once.
func TestBlobInADataFile(t *testing.T) {
	s, db, _ := newStore(t, StoreOptions{})
	ctx := context.Background()
	data := randBytes(3*ChunkSize+7, 40)
	c, size, err := s.Import(ctx, bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	files := dataFiles(t, s)
	if len(files) != 1 || files["0000000000000001.blob"] != int64(size) {
		t.Fatalf("data files %v, want one of %d bytes", files, size)
	}
	if n := locRecords(t, db); n != 4 {
		t.Fatalf("%d location records, want 4 (one per leaf)", n)
	}
	var out bytes.Buffer
	if err := s.Export(ctx, c, size, &out); err != nil || !bytes.Equal(out.Bytes(), data) {
		t.Fatalf("export: %v, %d bytes", err, out.Len())
	}
	// Two equal chunks and a short one: two leaves, the file 1 MiB + 5.
	rep := slices.Concat(data[:ChunkSize], data[:ChunkSize], []byte("tail!"))
	c2, _, err := s.Import(ctx, bytes.NewReader(rep))
	if err != nil {
		t.Fatal(err)
	}
	if got := dataFiles(t, s)["0000000000000002.blob"]; got != ChunkSize+5 {
		t.Fatalf("the file of a blob with a repeated chunk: %d bytes, want %d", got, ChunkSize+5)
	}
	if err := s.Remove(ctx, c); err != nil {
		t.Fatal(err)
	}
	if files := dataFiles(t, s); len(files) != 1 {
		t.Fatalf("data files after a remove: %v", files)
	}
	if n := locRecords(t, db); n != 2 {
		t.Fatalf("%d location records after a remove, want the other blob's 2", n)
	}
	// The leaf both blobs share is still there, in the other's file.
	out.Reset()
	if err := s.Export(ctx, c2, uint64(len(rep)), &out); err != nil || !bytes.Equal(out.Bytes(), rep) {
		t.Fatalf("export of the other blob: %v", err)
	}
}

// TestImportAlreadyHeldLeavesNoFile: importing a blob held already leaves
// no second data file; a failed import leaves none either.
func TestImportAlreadyHeldLeavesNoFile(t *testing.T) {
	s, db, _ := newStore(t, StoreOptions{MaxBlobBytes: 2 * ChunkSize})
	ctx := context.Background()
	data := randBytes(ChunkSize+1, 41)
	for range 2 {
		if _, _, err := s.Import(ctx, bytes.NewReader(data)); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := s.Import(ctx, bytes.NewReader(randBytes(2*ChunkSize+1, 42))); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("import past the bound: %v", err)
	}
	if files := dataFiles(t, s); len(files) != 1 {
		t.Fatalf("data files %v, want the one blob's", files)
	}
	if n := locRecords(t, db); n != 2 {
		t.Fatalf("%d location records, want 2", n)
	}
}

// TestReopenSweepsDataFiles: a data file and location records no pinned
// blob names (an import or fetch cut off by a crash) are deleted at the
// next open, and new files are numbered past every one seen.
func TestReopenSweepsDataFiles(t *testing.T) {
	s, db, dir := newStore(t, StoreOptions{})
	var err error
	ctx := context.Background()
	data := randBytes(ChunkSize+3, 43)
	c, size, err := s.Import(ctx, bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	// What a crash leaves: a file, numbered high, and its records.
	stray := filepath.Join(dir, DataDirName, "00000000000000a0.blob")
	if err := os.WriteFile(stray, []byte("half a leaf"), 0o644); err != nil {
		t.Fatal(err)
	}
	leaf := rawBlock(t, []byte("half a leaf"))
	if err := db.Set(locKey(leaf.Cid().Hash(), 0xa0), locValue(location{n: 11}), pebble.Sync); err != nil {
		t.Fatal(err)
	}
	// And a file that is not the store's: left alone.
	other := filepath.Join(dir, DataDirName, "README")
	if err := os.WriteFile(other, []byte("not a data file"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err = OpenStore(db, inDir(dir, nil))
	if err != nil {
		t.Fatal(err)
	}
	files := dataFiles(t, s)
	if _, ok := files["00000000000000a0.blob"]; ok || len(files) != 2 {
		t.Fatalf("data files after reopen: %v", files)
	}
	if n := locRecords(t, db); n != 2 {
		t.Fatalf("%d location records after reopen, want the blob's 2", n)
	}
	if ok, _ := s.HasBlock(ctx, leaf.Cid()); ok {
		t.Fatal("the stray leaf is still found")
	}
	var out bytes.Buffer
	if err := s.Export(ctx, c, size, &out); err != nil || !bytes.Equal(out.Bytes(), data) {
		t.Fatalf("export after reopen: %v", err)
	}
	if _, _, err := s.Import(ctx, bytes.NewReader(randBytes(10, 44))); err != nil {
		t.Fatal(err)
	}
	if _, ok := dataFiles(t, s)["00000000000000a1.blob"]; !ok {
		t.Fatalf("the next file is not numbered past the stray one: %v", dataFiles(t, s))
	}
}

// TestDamagedDataFile: a leaf whose bytes changed on disk fails an export
// with ErrBadBlob, not a wrong file.
func TestDamagedDataFile(t *testing.T) {
	s, _, dir := newStore(t, StoreOptions{})
	ctx := context.Background()
	c, size, err := s.Import(ctx, bytes.NewReader(randBytes(2*ChunkSize, 45)))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, DataDirName, "0000000000000001.blob")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[ChunkSize+10] ^= 1
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := s.Export(ctx, c, size, &out); !errors.Is(err, ErrBadBlob) {
		t.Fatalf("export of a damaged blob: %v, want ErrBadBlob", err)
	}
	if out.Len() > ChunkSize {
		t.Fatalf("export wrote %d bytes, past the damaged leaf", out.Len())
	}
	// Shortened: an error too.
	if err := os.Truncate(path, ChunkSize+5); err != nil {
		t.Fatal(err)
	}
	if err := s.Export(ctx, c, size, &bytes.Buffer{}); err == nil {
		t.Fatal("export of a truncated data file succeeded")
	}
}

// TestCompleteCopiesHeldLeaves: a fetched blob that shares a leaf with a
// blob held already gets its own copy at Complete, so removing the other
// blob leaves it whole; a fetch that gives up leaves its data file, as a
// partial blob (ADR 0054), until the partial is removed.
func TestCompleteCopiesHeldLeaves(t *testing.T) {
	src, _, _ := newStore(t, StoreOptions{})
	dst, db, _ := newStore(t, StoreOptions{})
	ctx := context.Background()
	a := randBytes(2*ChunkSize, 46)
	b := slices.Concat(a[:ChunkSize], randBytes(ChunkSize, 47)) // a's first chunk, then its own
	ca, _, err := dst.Import(ctx, bytes.NewReader(a))
	if err != nil {
		t.Fatal(err)
	}
	cb, sb, err := src.Import(ctx, bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	// The fetch of b, in store terms: its blocks dst lacks, then Complete.
	res, err := dst.Reserve(cb, sb)
	if err != nil {
		t.Fatal(err)
	}
	for _, blk := range blocksOf(t, src, cb) {
		if ok, _ := dst.HasBlock(ctx, blk.Cid()); ok {
			continue // the shared leaf
		}
		if err := dst.PutBlock(ctx, cb, blk); err != nil {
			t.Fatal(err)
		}
	}
	if err := dst.Complete(ctx, cb, sb, res); err != nil {
		t.Fatal(err)
	}
	res.Release()
	if err := dst.Remove(ctx, ca); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := dst.Export(ctx, cb, sb, &out); err != nil || !bytes.Equal(out.Bytes(), b) {
		t.Fatalf("export of the fetched blob after the other's removal: %v", err)
	}
	if files := dataFiles(t, dst); len(files) != 1 {
		t.Fatalf("data files %v, want the fetched blob's", files)
	}

	// A fetch that gives up: its leaves and file are kept as a partial
	// blob (ADR 0054) until it is removed.
	c3, s3, err := src.Import(ctx, bytes.NewReader(randBytes(2*ChunkSize, 48)))
	if err != nil {
		t.Fatal(err)
	}
	res, err = dst.Reserve(c3, s3)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(blocksOf(t, src, c3), func(b blocks.Block) bool {
		ok, _ := dst.HasBlock(ctx, b.Cid())
		return b.Cid().Type() == cid.Raw && !ok
	})
	leaf := blocksOf(t, src, c3)[i]
	if err := dst.PutBlock(ctx, c3, leaf); err != nil {
		t.Fatal(err)
	}
	if ok, _ := dst.HasBlock(ctx, leaf.Cid()); !ok {
		t.Fatal("a fetched leaf is not found while its fetch runs")
	}
	if dst.Referenced(leaf.Cid()) {
		t.Fatal("a leaf of a fetch in progress is served")
	}
	if files := dataFiles(t, dst); len(files) != 2 {
		t.Fatalf("data files while fetching: %v", files)
	}
	res.Release()
	if files := dataFiles(t, dst); len(files) != 2 {
		t.Fatalf("data files after a fetch gave up: %v, want the blob's and the partial's", files)
	}
	if dst.Referenced(leaf.Cid()) {
		t.Fatal("a leaf of a partial blob is served")
	}
	if err := dst.Remove(ctx, c3); err != nil {
		t.Fatalf("remove of a partial blob: %v", err)
	}
	if files := dataFiles(t, dst); len(files) != 1 {
		t.Fatalf("data files after the partial's removal: %v", files)
	}
	if n := locRecords(t, db); n != 2 {
		t.Fatalf("%d location records after the partial's removal, want the blob's 2", n)
	}
	if err := dst.Remove(ctx, c3); !errors.Is(err, ErrIncomplete) {
		t.Fatalf("remove of a removed partial: %v, want ErrIncomplete", err)
	}
}

// blocksOf returns every block of s, those of pebble's blockstore with the
// raw codec in their CIDs (it keeps them by multihash) but the root's,
// which gets root's.
func blocksOf(t *testing.T, s *Store, root cid.Cid) []blocks.Block {
	t.Helper()
	ctx := context.Background()
	ch, err := s.bstore.AllKeysChan(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out []blocks.Block
	for k := range ch {
		b, err := s.bstore.Get(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Equal(k.Hash(), root.Hash()) {
			b, _ = blocks.NewBlockWithCid(b.RawData(), root)
		}
		out = append(out, b)
	}
	return out
}

// TestBlobOfAnOlderStore: a blob whose leaves are in pebble (stored before
// ADR 0037: a size record with no data file) is still read, served,
// exported and removed.
func TestBlobOfAnOlderStore(t *testing.T) {
	s, db, dir := newStore(t, StoreOptions{})
	var err error
	ctx := context.Background()
	data := randBytes(2*ChunkSize+9, 49)
	c, size, err := s.Import(ctx, bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	// Rewrite it as an older store held it: every block in pebble, the
	// size record the size alone, no data file.
	inner := s.bstore.(*leafstore).Blockstore
	for _, b := range blocksOf(t, s, c) {
		if err := inner.Put(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.dstore.Put(ctx, metaKey(c), binary.AppendUvarint(nil, size)); err != nil {
		t.Fatal(err)
	}
	if err := s.removeData(1, mustDAG(t, s, c)); err != nil {
		t.Fatal(err)
	}
	s, err = OpenStore(db, inDir(dir, nil))
	if err != nil {
		t.Fatal(err)
	}
	if len(dataFiles(t, s)) != 0 || locRecords(t, db) != 0 {
		t.Fatal("a data file or location record left")
	}
	var out bytes.Buffer
	if err := s.Export(ctx, c, size, &out); err != nil || !bytes.Equal(out.Bytes(), data) {
		t.Fatalf("export of an older blob: %v", err)
	}
	if !s.Referenced(c) {
		t.Fatal("an older blob is not served")
	}
	if err := s.Remove(ctx, c); err != nil {
		t.Fatal(err)
	}
	if n := countBlocks(t, s); n != 0 {
		t.Fatalf("%d blocks left after removing an older blob", n)
	}
}

func mustDAG(t *testing.T, s *Store, c cid.Cid) []string {
	t.Helper()
	bl, err := s.dagBlocks(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	return bl
}

// TestUnsyncedBlobsAreChecked: a blob whose data file was not known to be
// synced when the store stopped (its unsynced record left, as after a
// crash or a power cut) is checked at the next open: kept when whole,
// removed (and listed by Dropped) when a leaf is damaged. After Close,
// every data file is synced and no record is left.
func TestUnsyncedBlobsAreChecked(t *testing.T) {
	s, db, dir := newStore(t, StoreOptions{})
	var err error
	ctx := context.Background()
	whole, damaged := randBytes(2*ChunkSize+1, 50), randBytes(2*ChunkSize+1, 51)
	cw, sw, err := s.Import(ctx, bytes.NewReader(whole))
	if err != nil {
		t.Fatal(err)
	}
	cd, _, err := s.Import(ctx, bytes.NewReader(damaged))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if n := countPrefix(t, db, UnsyncedPrefix); n != 0 {
		t.Fatalf("%d unsynced records after Close", n)
	}
	// As if the store had stopped before the syncs: both records back,
	// and the second blob's file lost its last write.
	for _, num := range []uint64{1, 2} {
		if err := db.Set(unsyncedKey(num), nil, pebble.Sync); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Truncate(filepath.Join(dir, DataDirName, "0000000000000002.blob"), 2*ChunkSize); err != nil {
		t.Fatal(err)
	}
	s, err = OpenStore(db, inDir(dir, nil))
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Dropped(); len(got) != 1 || !got[0].Equals(cd) {
		t.Fatalf("dropped %v, want the damaged blob %s", got, cd)
	}
	if ok, _ := s.Has(cd); ok {
		t.Fatal("the damaged blob is still pinned")
	}
	var out bytes.Buffer
	if err := s.Export(ctx, cw, sw, &out); err != nil || !bytes.Equal(out.Bytes(), whole) {
		t.Fatalf("the whole blob after the check: %v", err)
	}
	if n := countPrefix(t, db, UnsyncedPrefix); n != 0 {
		t.Fatalf("%d unsynced records after the check", n)
	}
	if files := dataFiles(t, s); len(files) != 1 || s.QuotaUsed() != sw {
		t.Fatalf("data files %v, quota used %d after the check", files, s.QuotaUsed())
	}
}

func countPrefix(t *testing.T, db *pebble.DB, prefix string) int {
	t.Helper()
	p := []byte(prefix)
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: p, UpperBound: core.PrefixEnd(p)})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	n := 0
	for it.First(); it.Valid(); it.Next() {
		n++
	}
	return n
}

// TestUnsyncedCheckReadsTheBlobsOwnFile: the check at open reads each
// leaf of an unsynced blob from that blob's own data file, not from the
// file of another blob holding the same leaf: else a blob whose file lost
// its last write is kept, and is damaged once the other blob is removed.
func TestUnsyncedCheckReadsTheBlobsOwnFile(t *testing.T) {
	dir := t.TempDir()
	db := openDB(t, dir)
	defer func() { db.Close() }()
	s, err := OpenStore(db, inDir(dir, nil))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	shared := randBytes(2*ChunkSize, 60)
	other := slices.Concat(shared, randBytes(7, 61)) // file 1: both leaves, and one of its own
	co, so, err := s.Import(ctx, bytes.NewReader(other))
	if err != nil {
		t.Fatal(err)
	}
	cs, _, err := s.Import(ctx, bytes.NewReader(shared)) // file 2: the two shared leaves
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// As if the store had stopped before file 2 was synced and it then
	// lost its second leaf.
	if err := db.Set(unsyncedKey(2), nil, pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(filepath.Join(dir, DataDirName, "0000000000000002.blob"), ChunkSize); err != nil {
		t.Fatal(err)
	}
	s, err = OpenStore(db, inDir(dir, nil))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := s.Dropped(); len(got) != 1 || !got[0].Equals(cs) {
		t.Fatalf("dropped %v, want the blob of the shortened file %s", got, cs)
	}
	if ok, _ := s.Has(cs); ok {
		t.Fatal("the blob of the shortened file is still pinned")
	}
	var out bytes.Buffer
	if err := s.Export(ctx, co, so, &out); err != nil || !bytes.Equal(out.Bytes(), other) {
		t.Fatalf("the other blob after the check: %v", err)
	}
}

// TestReadLeafSkipsAGoneFile: a leaf held in two data files is read from
// the second when the first is gone (a Remove, or a fetch given up, between
// the look-up of its location and the open of its file).
func TestReadLeafSkipsAGoneFile(t *testing.T) {
	s, db, dir := newStore(t, StoreOptions{})
	ctx := context.Background()
	data := randBytes(2*ChunkSize, 62)
	c, size, err := s.Import(ctx, bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	// A first file holding the same leaves, as a fetch's that is given up
	// or a blob's that is removed: its records still there, its file gone.
	var recs [][2][]byte
	p := []byte(LocPrefix)
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: p, UpperBound: core.PrefixEnd(p)})
	if err != nil {
		t.Fatal(err)
	}
	for it.First(); it.Valid(); it.Next() {
		k := slices.Clone(it.Key())
		binary.BigEndian.PutUint64(k[len(k)-8:], 0) // file 0 < file 1
		recs = append(recs, [2][]byte{k, slices.Clone(it.Value())})
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if err := db.Set(r[0], r[1], pebble.NoSync); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, DataDirName, "0000000000000000.blob")); !os.IsNotExist(err) {
		t.Fatalf("file 0: %v", err)
	}
	var out bytes.Buffer
	if err := s.Export(ctx, c, size, &out); err != nil || !bytes.Equal(out.Bytes(), data) {
		t.Fatalf("export with a gone first location: %v", err)
	}
}

// TestDamagedCopyOfASharedLeaf: a leaf held in two blobs' data files and
// damaged in the first is read, checked, from the second: both blobs
// export whole, and CheckBlob (repo check) finds the damaged file.
func TestDamagedCopyOfASharedLeaf(t *testing.T) {
	s, _, dir := newStore(t, StoreOptions{})
	ctx := context.Background()
	shared := randBytes(ChunkSize, 63)
	x := slices.Concat(shared, randBytes(9, 64))
	y := slices.Concat(shared, randBytes(11, 65))
	cx, sx, err := s.Import(ctx, bytes.NewReader(x)) // file 1
	if err != nil {
		t.Fatal(err)
	}
	cy, sy, err := s.Import(ctx, bytes.NewReader(y)) // file 2
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, DataDirName, "0000000000000001.blob")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[10] ^= 1 // the shared leaf, in x's file
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := s.Export(ctx, cy, sy, &out); err != nil || !bytes.Equal(out.Bytes(), y) {
		t.Fatalf("export of the blob whose own file is whole: %v", err)
	}
	// x's bytes are read whole from y's copy, but its own file is damaged:
	// the check (repo check) says so.
	out.Reset()
	if err := s.Export(ctx, cx, sx, &out); err != nil || !bytes.Equal(out.Bytes(), x) {
		t.Fatalf("export of the blob whose shared leaf is damaged in its own file: %v", err)
	}
	if err := s.CheckBlob(ctx, cx, sx); !errors.Is(err, ErrBadBlob) {
		t.Fatalf("check of the damaged blob: %v, want ErrBadBlob", err)
	}
	if err := s.CheckBlob(ctx, cy, sy); err != nil {
		t.Fatalf("check of the whole blob: %v", err)
	}
}

// TestRoomRefusesAnImport: an import whose leaf Room refuses (a full disk)
// fails with its error and leaves no data file or record; once room is
// back the same import succeeds.
func TestRoomRefusesAnImport(t *testing.T) {
	full := errors.New("disk full")
	var budget int // bytes Room allows before it refuses
	var asked int
	s, db, _ := newStore(t, StoreOptions{MaxBlobBytes: 4 * ChunkSize, Room: func(n int) error {
		asked += n
		if asked > budget {
			return full
		}
		return nil
	}})
	ctx := context.Background()
	data := randBytes(2*ChunkSize+5, 44)
	budget = ChunkSize // the first leaf goes, the second is refused
	if _, _, err := s.Import(ctx, bytes.NewReader(data)); !errors.Is(err, full) {
		t.Fatalf("import on a full disk: %v, want %v", err, full)
	}
	if files := dataFiles(t, s); len(files) != 0 {
		t.Fatalf("data files %v left by a refused import", files)
	}
	if n := locRecords(t, db); n != 0 {
		t.Fatalf("%d location records left by a refused import", n)
	}
	asked, budget = 0, len(data)+1<<20
	if _, size, err := s.Import(ctx, bytes.NewReader(data)); err != nil || size != uint64(len(data)) {
		t.Fatalf("import once room is back: %d bytes, %v", size, err)
	}
	if asked < len(data) {
		t.Fatalf("Room was asked for %d bytes of a %d-byte blob", asked, len(data))
	}
}
