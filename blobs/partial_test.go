package blobs

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/ipfs/boxo/ipld/merkledag"
	blocks "github.com/ipfs/go-block-format"
	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"
)

// fileBlocks returns the root of the blob c held complete by src and its
// leaves in file order (a blob of at most 174 chunks: the root links to
// the leaves).
func fileBlocks(t *testing.T, src *Store, c cid.Cid) (root blocks.Block, leaves []blocks.Block) {
	t.Helper()
	ctx := context.Background()
	root, err := src.checked.Get(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	nd, err := merkledag.DecodeProtobuf(root.RawData())
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range nd.Links() {
		b, err := src.checked.Get(ctx, l.Cid)
		if err != nil {
			t.Fatal(err)
		}
		leaves = append(leaves, b)
	}
	return root, leaves
}

// fetchPart stores in dst, as a fetch of c would, its root and the leaves
// of leaves that dst does not hold, then ends the fetch without
// completing the blob; it returns the bytes the fetch found held when it
// began (Reservation.Resumed).
func fetchPart(t *testing.T, dst *Store, c cid.Cid, size uint64, root blocks.Block, leaves []blocks.Block) uint64 {
	t.Helper()
	ctx := context.Background()
	res, err := dst.Reserve(c, size)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Release()
	for _, b := range append([]blocks.Block{root}, leaves...) {
		if ok, _ := dst.HasBlock(ctx, b.Cid()); ok {
			continue
		}
		if err := dst.PutBlock(ctx, c, b); err != nil {
			t.Fatal(err)
		}
	}
	return res.Resumed()
}

// finish fetches the rest of c into dst, completes it and checks its
// bytes; it returns the bytes held when the fetch began and the leaves it
// had to store.
func finish(t *testing.T, dst *Store, c cid.Cid, size uint64, root blocks.Block, leaves []blocks.Block, data []byte) (resumed uint64, stored int) {
	t.Helper()
	ctx := context.Background()
	res, err := dst.Reserve(c, size)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Release()
	for _, b := range append([]blocks.Block{root}, leaves...) {
		if ok, _ := dst.HasBlock(ctx, b.Cid()); ok {
			continue
		}
		if b.Cid().Type() == cid.Raw {
			stored++
		}
		if err := dst.PutBlock(ctx, c, b); err != nil {
			t.Fatal(err)
		}
	}
	if err := dst.Complete(ctx, c, size, res); err != nil {
		t.Fatalf("complete after resuming: %v", err)
	}
	var out bytes.Buffer
	if err := dst.Export(ctx, c, size, &out); err != nil || !bytes.Equal(out.Bytes(), data) {
		t.Fatalf("export after resuming: %v", err)
	}
	if ps := dst.Partials(); len(ps) != 0 {
		t.Fatalf("partials after completion: %+v", ps)
	}
	return res.Resumed(), stored
}

// TestPartialKeptAcrossReopen: the leaves a fetch that did not complete
// stored are kept across a Close and an Open, across a reopen without
// Close (a crash of the process) and across one under another boot id (a
// crash of the machine), never listed, counted or served; the next fetch
// goes on from them and stores only the rest (ADR 0054). Only after a
// reboot are they hidden until the fetch resumes and checks them.
func TestPartialKeptAcrossReopen(t *testing.T) {
	for _, tc := range []struct {
		name  string
		clean bool
		boot  string // at the reopen
	}{{"close", true, "boot 1"}, {"crash", false, "boot 1"}, {"reboot", false, "boot 2"}} {
		t.Run(tc.name, func(t *testing.T) {
			src, _, _ := newStore(t, StoreOptions{})
			dir := t.TempDir()
			db := openDB(t, dir)
			t.Cleanup(func() { db.Close() })
			dst, err := OpenStore(db, inDir(dir, &StoreOptions{BootID: "boot 1"}))
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			data := randBytes(6*ChunkSize, 60)
			c, size, err := src.Import(ctx, bytes.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			root, leaves := fileBlocks(t, src, c)
			if got := fetchPart(t, dst, c, size, root, leaves[:3]); got != 0 {
				t.Fatalf("a first fetch resumed from %d bytes", got)
			}
			if tc.clean {
				if err := dst.Close(); err != nil {
					t.Fatal(err)
				}
			}
			if dst, err = OpenStore(db, inDir(dir, &StoreOptions{BootID: tc.boot})); err != nil {
				t.Fatal(err)
			}
			ps := dst.Partials()
			if len(ps) != 1 || !ps[0].CID.Equals(c) || ps[0].Held != 3*ChunkSize || ps[0].Bytes != 3*ChunkSize || ps[0].Size != size || ps[0].Fetching {
				t.Fatalf("partials after reopening: %+v", ps)
			}
			if ok, _ := dst.Has(c); ok || len(dst.List()) != 0 || dst.QuotaUsed() != 0 {
				t.Fatal("a partial blob is listed or counted as a blob")
			}
			for _, b := range slices.Concat(leaves[:3], []blocks.Block{root}) {
				if dst.Referenced(b.Cid()) {
					t.Fatalf("block %s of a partial blob is served", b.Cid())
				}
			}
			// After a reboot the leaves are hidden until checked; after a
			// clean Close they are known synced, after a crash of the
			// process written under this boot: whole.
			if ok, _ := dst.HasBlock(ctx, leaves[0].Cid()); ok != (tc.boot == "boot 1") {
				t.Fatalf("a leaf of the partial visible before its fetch resumed: %v", ok)
			}
			resumed, stored := finish(t, dst, c, size, root, leaves, data)
			if resumed != 3*ChunkSize || stored != 3 {
				t.Fatalf("resumed from %d bytes storing %d leaves; want 3 leaves held, the other 3 stored", resumed, stored)
			}
			if files := dataFiles(t, dst); len(files) != 1 {
				t.Fatalf("data files after completion: %v, want the blob's", files)
			}
		})
	}
}

// TestPartialTornLeafDropped: after a crash of the machine (another boot
// id), a partial's last leaf cut short (the file lost its end) and a leaf
// damaged on disk are dropped at the check when the fetch resumes,
// fetched again, and never exported.
func TestPartialTornLeafDropped(t *testing.T) {
	src, _, _ := newStore(t, StoreOptions{})
	dir := t.TempDir()
	db := openDB(t, dir)
	t.Cleanup(func() { db.Close() })
	dst, err := OpenStore(db, inDir(dir, &StoreOptions{BootID: "boot 1"}))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	data := randBytes(5*ChunkSize, 61)
	c, size, err := src.Import(ctx, bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	root, leaves := fileBlocks(t, src, c)
	fetchPart(t, dst, c, size, root, leaves[:4])
	files := dataFiles(t, dst)
	if len(files) != 1 {
		t.Fatalf("data files: %v", files)
	}
	var path string
	for name := range files {
		path = filepath.Join(dir, "blobs", name)
	}
	// The last leaf torn (half of it lost), the second damaged.
	if err := os.Truncate(path, 3*ChunkSize+ChunkSize/2); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte{0xff, 0x00, 0xff}, ChunkSize+100); err != nil {
		t.Fatal(err)
	}
	f.Close()

	// Reopened without Close under another boot id: as after a power cut.
	if dst, err = OpenStore(db, inDir(dir, &StoreOptions{BootID: "boot 2"})); err != nil {
		t.Fatal(err)
	}
	resumed, stored := finish(t, dst, c, size, root, leaves, data)
	if resumed != 2*ChunkSize || stored != 3 {
		t.Fatalf("resumed from %d bytes storing %d leaves; want the 2 whole leaves held, 3 stored", resumed, stored)
	}
}

// TestPartialBound: the partials no fetch runs for are kept while the
// bytes of their files are at most MaxPartialBytes; one byte past it, the
// least recently progressed is dropped, with its file, location records,
// record and inner nodes. A partial not progressed for more than
// MaxPartialAge is dropped at the next fetch's end or the next open.
func TestPartialBound(t *testing.T) {
	src, _, _ := newStore(t, StoreOptions{})
	ctx := context.Background()
	type blob struct {
		c      cid.Cid
		size   uint64
		root   blocks.Block
		leaves []blocks.Block
	}
	var bs []blob
	for i := range 3 {
		c, size, err := src.Import(ctx, bytes.NewReader(randBytes(3*ChunkSize, uint64(70+i))))
		if err != nil {
			t.Fatal(err)
		}
		root, leaves := fileBlocks(t, src, c)
		bs = append(bs, blob{c, size, root, leaves})
	}
	for _, tc := range []struct {
		name  string
		bound int64
		kept  int // of the three partials, the most recent kept
	}{
		{"at", 4 * ChunkSize, 2},        // 2 leaves + 2 leaves: at the bound
		{"past", 4*ChunkSize - 1, 1},    // one byte short: the oldest goes
		{"none", -1, 0},                 // none kept
		{"one", 2 * ChunkSize, 1},       // exactly one
		{"all", 6 * ChunkSize, 3},       // all three
		{"tiny", 2*ChunkSize - 1, 0},    // not even the last
		{"default", 0, 3},               // DefaultMaxPartialBytes
		{"three+1", 6*ChunkSize - 1, 2}, // the oldest goes
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := &testClock{now: time.Unix(1_800_000_000, 0)}
			dst, db, _ := newStore(t, StoreOptions{MaxPartialBytes: tc.bound, Now: clock.Now})
			for _, b := range bs {
				fetchPart(t, dst, b.c, b.size, b.root, b.leaves[:2])
				clock.Advance(time.Second)
			}
			ps := dst.Partials()
			if len(ps) != tc.kept {
				t.Fatalf("%d partials kept, want %d: %+v", len(ps), tc.kept, ps)
			}
			for i, p := range ps {
				if want := bs[3-tc.kept+i].c; !p.CID.Equals(want) {
					t.Fatalf("partial %d is %s, want %s (the most recent kept)", i, p.CID, want)
				}
			}
			if files := dataFiles(t, dst); len(files) != tc.kept {
				t.Fatalf("data files %v, want %d", files, tc.kept)
			}
			if n := locRecords(t, db); n != 2*tc.kept {
				t.Fatalf("%d location records, want %d", n, 2*tc.kept)
			}
			if n := countPrefix(t, db, PartialPrefix); n != tc.kept {
				t.Fatalf("%d partial records, want %d", n, tc.kept)
			}
			for i, b := range bs {
				ok, _ := dst.HasBlock(ctx, b.root.Cid())
				if want := i >= 3-tc.kept; ok != want {
					t.Fatalf("root of partial %d held: %v, want %v", i, ok, want)
				}
			}
		})
	}

	t.Run("age", func(t *testing.T) {
		clock := &testClock{now: time.Unix(1_800_000_000, 0)}
		dir := t.TempDir()
		db := openDB(t, dir)
		t.Cleanup(func() { db.Close() })
		opts := StoreOptions{MaxPartialAge: time.Hour, Now: clock.Now}
		dst, err := OpenStore(db, inDir(dir, &opts))
		if err != nil {
			t.Fatal(err)
		}
		fetchPart(t, dst, bs[0].c, bs[0].size, bs[0].root, bs[0].leaves[:2])
		clock.Advance(time.Hour)
		fetchPart(t, dst, bs[1].c, bs[1].size, bs[1].root, bs[1].leaves[:2])
		if n := len(dst.Partials()); n != 2 {
			t.Fatalf("%d partials at the age bound, want 2", n)
		}
		clock.Advance(time.Millisecond)
		fetchPart(t, dst, bs[2].c, bs[2].size, bs[2].root, bs[2].leaves[:2])
		ps := dst.Partials()
		if len(ps) != 2 || !ps[0].CID.Equals(bs[1].c) {
			t.Fatalf("partials a millisecond past the age bound: %+v, want the last two", ps)
		}
		if err := dst.Close(); err != nil {
			t.Fatal(err)
		}
		clock.Advance(time.Hour)
		if dst, err = OpenStore(db, inDir(dir, &opts)); err != nil {
			t.Fatal(err)
		}
		if ps := dst.Partials(); len(ps) != 1 || !ps[0].CID.Equals(bs[2].c) {
			t.Fatalf("partials at open, an hour on: %+v, want the last", ps)
		}
	})
}

// TestPartialRemove: `blob rm` of a partial blob removes it, unless a
// fetch of it runs (ErrFetching); a content fault drops it when the fetch
// ends; so does an import of the blob.
func TestPartialRemove(t *testing.T) {
	src, _, _ := newStore(t, StoreOptions{})
	dst, db, _ := newStore(t, StoreOptions{})
	ctx := context.Background()
	data := randBytes(3*ChunkSize, 80)
	c, size, err := src.Import(ctx, bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	root, leaves := fileBlocks(t, src, c)
	res, err := dst.Reserve(c, size)
	if err != nil {
		t.Fatal(err)
	}
	if err := dst.PutBlock(ctx, c, leaves[0]); err != nil {
		t.Fatal(err)
	}
	if err := dst.Remove(ctx, c); !errors.Is(err, ErrFetching) {
		t.Fatalf("remove while fetching: %v, want ErrFetching", err)
	}
	res.Release()
	if err := dst.Remove(ctx, c); err != nil {
		t.Fatalf("remove of a partial: %v", err)
	}
	if len(dst.Partials()) != 0 || len(dataFiles(t, dst)) != 0 || locRecords(t, db) != 0 || countPrefix(t, db, PartialPrefix) != 0 {
		t.Fatal("something of a removed partial is left")
	}

	// A content fault: dropped at the fetch's end.
	res, err = dst.Reserve(c, size)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range []blocks.Block{root, leaves[0]} {
		if err := dst.PutBlock(ctx, c, b); err != nil {
			t.Fatal(err)
		}
	}
	res.Drop()
	res.Release()
	if len(dst.Partials()) != 0 || len(dataFiles(t, dst)) != 0 || countBlocks(t, dst) != 0 {
		t.Fatal("something of a dropped partial is left")
	}

	// An import of the blob: its partial goes.
	fetchPart(t, dst, c, size, root, leaves[:2])
	if _, _, err := dst.Import(ctx, bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	if ps := dst.Partials(); len(ps) != 0 || len(dataFiles(t, dst)) != 1 || countPrefix(t, db, PartialPrefix) != 0 {
		t.Fatalf("after an import of a partial blob: partials %+v, data files %v", ps, dataFiles(t, dst))
	}
	var out bytes.Buffer
	if err := dst.Export(ctx, c, size, &out); err != nil || !bytes.Equal(out.Bytes(), data) {
		t.Fatalf("export of the imported blob: %v", err)
	}
}

// TestFetchResumesFromTheSameProvider, on real libp2p hosts: the only
// provider stalls after the root and three leaves of six, and the fetch
// fails; later the same provider serves, and the next fetch, a stream,
// goes on from the three leaves kept: it says so, asks for and receives
// only the other three, and writes the whole blob (ADR 0054).
func TestFetchResumesFromTheSameProvider(t *testing.T) {
	n := newPeerNode(t, StoreOptions{}, ExchangeOptions{IdleTimeout: 300 * time.Millisecond})
	p := newFakeProvider(t)
	data := randBytes(6*ChunkSize, 90)
	c, size := p.add(data)
	serveLeaves(t, p, c, func(i int) bool { return i < 3 })
	if err := n.f.Fetch(testCtx(t), Request{CID: c, Size: size, Sources: Sources{Named: []peer.AddrInfo{p.info()}}}); !errors.Is(err, ErrStalled) {
		t.Fatalf("fetch from a provider that stalls: %v, want ErrStalled", err)
	}
	if ps := n.st.Partials(); len(ps) != 1 || ps[0].Held != 3*ChunkSize {
		t.Fatalf("partials after the stall: %+v, want the blob with 3 leaves", ps)
	}
	wantsBefore, _ := p.stats()
	receivedBefore := n.x.Stats().ReceivedBytes
	var leaves []cid.Cid
	p.mu.Lock()
	rootData := p.blocks[string(c.Hash())]
	p.mu.Unlock()
	if nd, err := merkledag.DecodeProtobuf(rootData); err == nil {
		for _, l := range nd.Links() {
			leaves = append(leaves, l.Cid)
		}
	}
	if len(leaves) != 6 {
		t.Fatalf("%d leaves, want 6", len(leaves))
	}

	serveLeaves(t, p, c, func(int) bool { return true })
	var resumed uint64
	var w recorder
	req := Request{CID: c, Size: size, Sources: Sources{First: p.h.ID(), FirstExempt: true, Named: []peer.AddrInfo{p.info()}},
		Resumed: func(held, _ uint64) { resumed = held }}
	got, err := n.f.Stream(testCtx(t), req, &w)
	if err != nil {
		t.Fatalf("the fetch that resumes: %v", err)
	}
	if got != size || !bytes.Equal(w.bytes(), data) {
		t.Fatalf("wrote %d bytes that differ from the blob", got)
	}
	if resumed != 3*ChunkSize {
		t.Fatalf("the fetch said it resumed from %d bytes, want 3 leaves", resumed)
	}
	// Wanted the second time: the 3 leaves not kept, each maybe more than
	// once (the wants in flight are sent again after a silent third of
	// the idle timeout, which a slow run may reach).
	wants, _ := p.stats()
	asked := map[string]bool{}
	for _, w := range wants[len(wantsBefore):] {
		asked[w.KeyString()] = true
	}
	if len(asked) != 3 || !asked[leaves[3].KeyString()] || !asked[leaves[4].KeyString()] || !asked[leaves[5].KeyString()] {
		t.Fatalf("the second fetch asked for %d blocks, want the 3 leaves not kept", len(asked))
	}
	if r := n.x.Stats().ReceivedBytes - receivedBefore; r != 3*ChunkSize {
		t.Fatalf("received %d bytes the second time, want the 3 leaves not kept (%d)", r, 3*ChunkSize)
	}
	if ps := n.st.Partials(); len(ps) != 0 {
		t.Fatalf("partials after completion: %+v", ps)
	}
}

// TestPartialRecord: a partial record reads back as written, its boot id
// at maxBootID bytes and not one past it; a record cut short or with a
// byte past its end is malformed.
func TestPartialRecord(t *testing.T) {
	for _, boot := range []string{"", "4ea647ce-f9fe-42d0-a92c-03629289ce6e", strings.Repeat("b", maxBootID)} {
		p := &partial{size: 5 << 20, file: &dataFile{num: 7}, progressed: 1_800_000_000_000, synced: true, boot: boot}
		v := partialValue(p)
		size, num, at, synced, got, ok := parsePartial(v)
		if !ok || size != p.size || num != 7 || at != p.progressed || !synced || got != boot {
			t.Fatalf("boot %q: read back %d %d %d %v %q %v", boot, size, num, at, synced, got, ok)
		}
		if _, _, _, _, _, ok := parsePartial(v[:len(v)-1]); ok && len(boot) > 0 {
			t.Fatalf("boot %q: a record cut short is read", boot)
		}
		if _, _, _, _, _, ok := parsePartial(append(v, 0)); ok {
			t.Fatalf("boot %q: a record with a byte past its end is read", boot)
		}
	}
	p := &partial{boot: strings.Repeat("b", maxBootID+1)}
	if _, _, _, _, _, ok := parsePartial(partialValue(p)); ok {
		t.Fatal("a boot id one byte past maxBootID is read")
	}
}

// BenchmarkPartialCheck256MiB: the check of a partial's leaves when its
// fetch resumes after a reboot (ADR 0054), 256 leaves of 1 MiB read from
// the page cache and hashed.
func BenchmarkPartialCheck256MiB(b *testing.B) {
	s, _, _ := newStore(b, StoreOptions{})
	ctx := context.Background()
	root := rawBlock(b, []byte("the root of a partial blob")).Cid()
	for i := range 256 {
		if err := s.PutBlock(ctx, root, rawBlock(b, randBytes(ChunkSize, uint64(1000+i)))); err != nil {
			b.Fatal(err)
		}
	}
	s.mu.Lock()
	d := s.mu.partials[root].file
	s.mu.Unlock()
	b.SetBytes(256 * ChunkSize)
	for b.Loop() {
		if err := d.check(); err != nil {
			b.Fatal(err)
		}
	}
	if n := d.held(); n != 256*ChunkSize {
		b.Fatalf("%d bytes held after the checks", n)
	}
}

// TestReadPartial: ReadPartial gives every block of a partial blob that
// reads and matches its CID, the inner nodes first, then the leaves in
// file order; an inner node changed in pebble and a leaf changed in the
// data file are not given but said, and the leaves under that inner node
// are given still; put's error ends the read; a blob with no partial is
// ErrIncomplete.
func TestReadPartial(t *testing.T) {
	src, _, _ := newStore(t, StoreOptions{})
	dst, db, dir := newStore(t, StoreOptions{})
	ctx := context.Background()
	data := randBytes(6*ChunkSize, 62)
	c, size, err := src.Import(ctx, bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	root, leaves := fileBlocks(t, src, c)
	fetchPart(t, dst, c, size, root, leaves[:3])
	read := func() (got []cid.Cid, held uint64, bad []error) {
		t.Helper()
		held, bad, err := dst.ReadPartial(ctx, c, func(b blocks.Block) error {
			if err := matches(b.Cid(), b.RawData()); err != nil {
				t.Fatalf("given a block that does not match its CID: %v", err)
			}
			got = append(got, b.Cid())
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return got, held, bad
	}
	got, held, bad := read()
	want := []cid.Cid{root.Cid(), leaves[0].Cid(), leaves[1].Cid(), leaves[2].Cid()}
	if !slices.EqualFunc(got, want, cid.Cid.Equals) || held != 3*ChunkSize || len(bad) != 0 {
		t.Fatalf("read %v (%d bytes of leaves), bad %v; want %v", got, held, bad, want)
	}

	// The root changed in pebble, the first leaf in the data file.
	if err := db.Set(blockKey(root.Cid().Hash()), append(slices.Clone(root.RawData()), 0), pebble.Sync); err != nil {
		t.Fatal(err)
	}
	files := dataFiles(t, dst)
	if len(files) != 1 {
		t.Fatalf("data files: %v", files)
	}
	for name := range files {
		f, err := os.OpenFile(filepath.Join(dir, "blobs", name), os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteAt([]byte{0xff, 0, 0xff}, 10); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	got, held, bad = read()
	want = []cid.Cid{leaves[1].Cid(), leaves[2].Cid()}
	if !slices.EqualFunc(got, want, cid.Cid.Equals) || held != 2*ChunkSize || len(bad) != 2 ||
		!strings.Contains(bad[0].Error(), "inner node "+root.Cid().String()) || !errors.Is(bad[1], ErrBadBlob) ||
		!strings.Contains(bad[1].Error(), "leaf "+leaves[0].Cid().String()) {
		t.Fatalf("read %v (%d bytes of leaves), bad %v; want %v and the root and first leaf said", got, held, bad, want)
	}

	stop := errors.New("stop")
	n := 0
	if _, _, err := dst.ReadPartial(ctx, c, func(blocks.Block) error { n++; return stop }); !errors.Is(err, stop) || n != 1 {
		t.Fatalf("put's error: %v after %d blocks, want it after 1", err, n)
	}
	if _, _, err := dst.ReadPartial(ctx, leaves[0].Cid(), func(blocks.Block) error { return nil }); !errors.Is(err, ErrIncomplete) {
		t.Fatalf("ReadPartial of no partial: %v, want ErrIncomplete", err)
	}
}
