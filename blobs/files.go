package blobs

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/ipfs/boxo/blockstore"
	blocks "github.com/ipfs/go-block-format"
	"github.com/ipfs/go-cid"
	mh "github.com/multiformats/go-multihash"

	"github.com/wats-network/wats/core"
)

// This file keeps the leaves of blobs, their bytes, in data files of their
// own beside the pebble database (ADR 0037): one file per blob, written
// once, in the order the leaves came, and synced before the blob is
// pinned. pebble holds the inner UnixFS nodes, the pins and, per leaf, a
// location record: LocPrefix + the leaf's multihash + the file's number
// (8 bytes, big-endian), its value the leaf's offset and length in that
// file as two unsigned varints. A multihash is self-delimiting, so the
// records of one leaf are exactly those under LocPrefix + its multihash.
//
// Every pinned blob's file holds every leaf of that blob, so removing a
// blob removes its file and its location records and nothing another blob
// needs; the quota's sum of file sizes is then also the bytes on disk.

// LocPrefix is the prefix of the leaves' location records in the node's
// pebble database (ADR 0037), disjoint from the event log's "ev/", the
// peer cache's "p/" and the blockstore's KeyPrefix.
const LocPrefix = "bl/"

// DataDirName is the name the node gives its data directory
// (StoreOptions.DataDir), inside the database's directory.
const DataDirName = "blobs"

// dataFileExt ends the name of every data file: DataDir/<16 hex digits of
// its number>.blob.
const dataFileExt = ".blob"

// location is where one leaf is: in data file number file, n bytes at off.
type location struct {
	file   uint64
	off, n int64
}

func locKey(h mh.Multihash, file uint64) []byte {
	k := make([]byte, 0, len(LocPrefix)+len(h)+8)
	k = append(append(k, LocPrefix...), h...)
	return binary.BigEndian.AppendUint64(k, file)
}

func locValue(l location) []byte {
	return binary.AppendUvarint(binary.AppendUvarint(nil, uint64(l.off)), uint64(l.n))
}

// parseLoc reads a location record; ok is false for a malformed one.
func parseLoc(key, value []byte) (l location, ok bool) {
	if len(key) < len(LocPrefix)+8 {
		return l, false
	}
	l.file = binary.BigEndian.Uint64(key[len(key)-8:])
	off, a := binary.Uvarint(value)
	if a <= 0 {
		return l, false
	}
	n, b := binary.Uvarint(value[a:])
	if b <= 0 || a+b != len(value) || off > 1<<62 || n > ChunkSize {
		return l, false
	}
	l.off, l.n = int64(off), int64(n)
	return l, true
}

// locate returns a location of the leaf with multihash h, in any data
// file; ok is false when no data file holds it.
func (s *Store) locate(h mh.Multihash) (l location, ok bool, err error) {
	ls, err := s.locations(h, 1)
	if err != nil || len(ls) == 0 {
		return l, false, err
	}
	return ls[0], true, nil
}

// locations returns the locations of the leaf with multihash h, at most
// limit (0: all), in the order of their files' numbers.
func (s *Store) locations(h mh.Multihash, limit int) ([]location, error) {
	p := append([]byte(LocPrefix), h...)
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: p, UpperBound: core.PrefixEnd(p)})
	if err != nil {
		return nil, err
	}
	var ls []location
	for it.First(); it.Valid() && (limit == 0 || len(ls) < limit); it.Next() {
		if len(it.Key()) != len(p)+8 {
			continue
		}
		if l, ok := parseLoc(it.Key(), it.Value()); ok {
			ls = append(ls, l)
		}
	}
	// The leaves of a partial blob not yet checked since a crash may be
	// torn: not read until its check (ADR 0054).
	return s.visible(ls), errors.Join(it.Error(), it.Close())
}

// locateIn returns the location of the leaf with multihash h in data file
// num; ok is false when that file holds no such leaf.
func (s *Store) locateIn(h mh.Multihash, num uint64) (l location, ok bool, err error) {
	v, closer, err := s.db.Get(locKey(h, num))
	if errors.Is(err, pebble.ErrNotFound) {
		return l, false, nil
	}
	if err != nil {
		return l, false, err
	}
	defer closer.Close()
	l, ok = parseLoc(locKey(h, num), v)
	return l, ok, nil
}

func (s *Store) dataPath(file uint64) string {
	return s.fs.PathJoin(s.opts.DataDir, fmt.Sprintf("%016x%s", file, dataFileExt))
}

// parseDataName returns the number of the data file called name.
func parseDataName(name string) (uint64, bool) {
	hex, ok := strings.CutSuffix(name, dataFileExt)
	if !ok || len(hex) != 16 {
		return 0, false
	}
	n, err := strconv.ParseUint(hex, 16, 64)
	return n, err == nil && n > 0
}

// readLeaf reads the leaf c from a data file, checking its bytes against
// its CID if verify; ok is false when no data file holds it. A leaf
// whose bytes do not match is an error wrapping ErrBadBlob. A leaf held in
// several files is read from the first of them that is still there: a
// file removed since the look-up (Remove and a fetch given up delete the
// records first) is skipped, not taken for a missing leaf; with verify, so
// is a copy damaged on disk when another file holds the leaf whole (the
// error is returned only when no copy is).
func (s *Store) readLeaf(c cid.Cid, verify bool) (data []byte, ok bool, err error) {
	ls, err := s.locations(c.Hash(), 0)
	if err != nil {
		return nil, false, err
	}
	var bad error // the first copy found damaged, if verify
	for _, l := range ls {
		data, ok, err := s.readLeafAt(c, l, verify)
		if verify && err != nil && l.file != 0 && (errors.Is(err, ErrBadBlob) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)) {
			// Damaged in this file; another blob's copy may be whole.
			bad = cmp.Or(bad, err)
			continue
		}
		if err != nil || ok {
			return data, ok, err
		}
	}
	return nil, false, bad
}

// readLeafAt reads the leaf c at l, checking its bytes against its CID if
// verify; ok is false when l's file is gone.
func (s *Store) readLeafAt(c cid.Cid, l location, verify bool) (data []byte, ok bool, err error) {
	f, err := s.fs.Open(s.dataPath(l.file))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			// Removed since the look-up (Remove deletes the records first).
			return nil, false, nil
		}
		return nil, false, fmt.Errorf("blobs: leaf %s: %w", c, err)
	}
	defer f.Close()
	data = make([]byte, l.n)
	if _, err := f.ReadAt(data, l.off); err != nil && !(errors.Is(err, io.EOF) && l.n == 0) {
		// io.EOF: the file is shorter than its records say (damaged).
		return nil, false, fmt.Errorf("blobs: leaf %s in %s: %w", c, s.dataPath(l.file), err)
	}
	if verify {
		got, err := c.Prefix().Sum(data)
		if err != nil {
			return nil, false, fmt.Errorf("blobs: leaf %s: %w", c, err)
		}
		if !got.Equals(c) {
			return nil, false, fmt.Errorf("%w: leaf %s in %s does not match its CID (damaged on disk)", ErrBadBlob, c, s.dataPath(l.file))
		}
	}
	return data, true, nil
}

// dataFile is one blob's data file while it is written: by an import, or
// by a fetch from the first leaf it stores until Complete pins the blob
// or the fetch gives up.
type dataFile struct {
	s   *Store
	num uint64

	mu   sync.Mutex
	f    vfs.File // nil once closed
	size int64
	// locs holds the leaves written to this file, by multihash.
	locs map[string]location
	// indexed: each leaf's location record is written as the leaf is (a
	// fetch's, so that GetBlock finds it); an import writes them all at
	// the end.
	indexed bool
	// idle: the file of a partial blob (ADR 0054), closed while no fetch
	// writes to it; reopen opens it again, and its writes then go at
	// size (WriteAt), the file being open from its start.
	idle, reopened bool
	// behind is the drop-behind of a fetch's file (indexed), ADR 0053's
	// addendum; off for an import's.
	behind dropBehind
}

// newDataFile creates the next data file. REQUIRES: not ReadOnly.
func (s *Store) newDataFile(indexed bool) (*dataFile, error) {
	s.mu.Lock()
	s.mu.nextFile++
	num := s.mu.nextFile
	s.mu.Unlock()
	f, err := s.fs.Create(s.dataPath(num), vfs.WriteCategoryUnspecified)
	if err != nil {
		return nil, fmt.Errorf("blobs: data file: %w", err)
	}
	// An import's file starts no writeback while it is written (pebble's
	// BytesPerSync, sync_file_range): on ext4 the blocks it allocates
	// would join the journal's next commit, and the pin's sync of the WAL
	// would then wait for the whole file to reach the disk (ADR 0037). A
	// fetch's drops behind while the disk keeps up (ADR 0053, addendum):
	// the pin's sync then waits for its last step only.
	d := &dataFile{s: s, num: num, f: f, locs: make(map[string]location), indexed: indexed}
	if indexed {
		d.behind = newDropBehind(newFileCache(f.Fd()), 0)
	}
	return d, nil
}

// has reports whether the leaf with multihash h is in the file.
func (d *dataFile) has(h mh.Multihash) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	_, ok := d.locs[string(h)]
	return ok
}

// put appends the leaf c of bytes data, unless the file holds it already.
func (d *dataFile) put(c cid.Cid, data []byte) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	h := c.Hash()
	if _, ok := d.locs[string(h)]; ok {
		return nil
	}
	if d.f == nil {
		return fmt.Errorf("blobs: data file %d closed", d.num)
	}
	if room := d.s.opts.Room; room != nil {
		if err := room(len(data)); err != nil {
			return fmt.Errorf("blobs: data file %d: %w", d.num, err)
		}
	}
	l := location{file: d.num, off: d.size, n: int64(len(data))}
	// vfs.File.Write may change its argument in general; the files of
	// vfs.Default (the operating system's) and of vfs.NewMem do not, and
	// data may be read by others meanwhile (a block in flight).
	var err error
	if d.reopened {
		_, err = d.f.WriteAt(data, d.size)
	} else {
		_, err = d.f.Write(data)
	}
	if err != nil {
		return fmt.Errorf("blobs: data file %d: %w", d.num, err)
	}
	d.size += l.n
	d.locs[string(h)] = l
	if d.indexed {
		if err := d.s.db.Set(locKey(h, d.num), locValue(l), pebble.NoSync); err != nil {
			return fmt.Errorf("blobs: location of %s: %w", c, err)
		}
	}
	return nil
}

// settleBehind and startBehind are the two halves of a step of the
// file's drop-behind (dropBehind), taken around a sync of pebble's WAL;
// settleBehind reports whether the step goes on (dropBehind.settle).
func (d *dataFile) settleBehind() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.f == nil || d.behind.settle()
}

func (d *dataFile) startBehind() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.f != nil {
		d.behind.start(d.size)
	}
}

// seal ends the writes to the file and writes the location records an
// import kept back (not synced: the pin's sync takes them). The file
// stays open for sync.
func (d *dataFile) seal() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.f == nil {
		return fmt.Errorf("blobs: data file %d closed", d.num)
	}
	if d.indexed {
		return nil
	}
	b := d.s.db.NewBatch()
	defer b.Close()
	for h, l := range d.locs {
		if err := b.Set(locKey(mh.Multihash(h), d.num), locValue(l), nil); err != nil {
			return err
		}
	}
	d.indexed = true
	return b.Commit(pebble.NoSync)
}

// sync makes the file and its directory entry durable and closes it.
func (d *dataFile) sync() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.f == nil {
		return fmt.Errorf("blobs: data file %d closed", d.num)
	}
	err := d.f.Sync()
	if cerr := d.f.Close(); err == nil {
		err = cerr
	}
	d.f = nil
	if err == nil {
		err = d.s.syncDataDir()
	}
	if err != nil {
		return fmt.Errorf("blobs: data file %d: %w", d.num, err)
	}
	return nil
}

// UnsyncedPrefix is the prefix of the records of the data files of pinned
// blobs not yet synced (ADR 0037): UnsyncedPrefix + the file's number (8
// bytes, big-endian), empty value. Written with the pin, deleted once the
// file is synced; a record found at open means the node stopped before
// that, and the blob is checked.
const UnsyncedPrefix = "bu/"

func unsyncedKey(num uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte(UnsyncedPrefix), num)
}

// syncLater syncs the sealed file d of a pinned blob in the background.
// Its unsynced record is deleted afterwards, with the next pin's write or
// by Close, so that the goroutine never writes to a database that may be
// closed meanwhile (a record left only means a check at the next open).
func (s *Store) syncLater(d *dataFile) {
	s.syncs.Add(1)
	go func() {
		defer s.syncs.Done()
		if err := d.sync(); err != nil {
			// The record stays: the blob is checked at the next open.
			s.syncErrors.Add(1)
			return
		}
		s.mu.Lock()
		s.mu.synced = append(s.mu.synced, d.num)
		s.mu.Unlock()
	}()
}

// dropSynced adds to b the deletion of the unsynced records of the data
// files synced since the last call.
func (s *Store) dropSynced(b *pebble.Batch) error {
	s.mu.Lock()
	nums := s.mu.synced
	s.mu.synced = nil
	s.mu.Unlock()
	for _, num := range nums {
		if err := b.Delete(unsyncedKey(num), nil); err != nil {
			return err
		}
	}
	return nil
}

// Close waits until the data files of the pinned blobs are synced and
// deletes their unsynced records, and syncs the files of the partial
// blobs no fetch writes to (ADR 0054: not checked at the next open). Call it before closing the database;
// nothing is written to the store after it.
func (s *Store) Close() error {
	s.syncs.Wait()
	var err error
	if !s.opts.ReadOnly {
		b := s.db.NewBatch()
		err = errors.Join(s.dropSynced(b), b.Commit(pebble.Sync), b.Close(), s.syncPartials())
	}
	if n := s.syncErrors.Load(); n > 0 {
		err = errors.Join(err, fmt.Errorf("blobs: %d data files could not be synced; their blobs are checked at the next open", n))
	}
	return err
}

// checkUnsynced checks, at open, the blobs whose data file was not known
// to be synced when the node stopped (an unclean stop: a crash, a kill, a
// power cut): each leaf is read and checked against its CID, and a blob
// with a leaf missing or damaged is removed, never kept pinned and
// served wrong. Returns the blobs removed. REQUIRES: loaded, writable.
func (s *Store) checkUnsynced(ctx context.Context) ([]cid.Cid, error) {
	p := []byte(UnsyncedPrefix)
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: p, UpperBound: core.PrefixEnd(p)})
	if err != nil {
		return nil, err
	}
	var nums []uint64
	for it.First(); it.Valid(); it.Next() {
		if len(it.Key()) == len(p)+8 {
			nums = append(nums, binary.BigEndian.Uint64(it.Key()[len(p):]))
		}
	}
	if err := errors.Join(it.Error(), it.Close()); err != nil {
		return nil, fmt.Errorf("blobs: listing unsynced data files: %w", err)
	}
	if len(nums) == 0 {
		return nil, nil
	}
	byNum := make(map[uint64]cid.Cid)
	s.mu.Lock()
	for c, num := range s.mu.files {
		byNum[num] = c
	}
	s.mu.Unlock()
	var dropped []cid.Cid
	for _, num := range nums {
		if c, ok := byNum[num]; ok {
			if err := s.checkLeaves(ctx, c, num); err != nil {
				if err := s.Remove(ctx, c); err != nil {
					return dropped, fmt.Errorf("blobs: removing damaged %s: %w", c, err)
				}
				dropped = append(dropped, c)
			}
		}
		if err := s.db.Delete(unsyncedKey(num), pebble.NoSync); err != nil {
			return dropped, err
		}
	}
	return dropped, s.db.Flush()
}

// checkLeaves reads every leaf of the pinned blob c from its data file
// num, checked against its CID: from that file, not from another blob's
// that holds the same leaf, since it is num that may have lost writes. A
// leaf that file does not hold (one Complete found in pebble, of a store
// before ADR 0037) is read from pebble.
func (s *Store) checkLeaves(ctx context.Context, c cid.Cid, num uint64) error {
	bl, err := s.dagBlocks(ctx, c)
	if err != nil {
		return err
	}
	for _, h := range bl {
		leaf := cid.NewCidV1(cid.Raw, mh.Multihash(h))
		l, ok, err := s.locateIn(leaf.Hash(), num)
		if err != nil {
			return err
		}
		if !ok {
			if _, err := s.checked.(*leafstore).Blockstore.Get(ctx, leaf); err != nil {
				return err
			}
			continue
		}
		if _, ok, err := s.readLeafAt(leaf, l, true); err != nil {
			return err
		} else if !ok {
			return fmt.Errorf("%w: data file %d of %s is gone", ErrIncomplete, num, c)
		}
	}
	return nil
}

// discard deletes the file and its location records: the import or fetch
// that wrote it failed, or the blob was pinned already.
func (d *dataFile) discard() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	var errs []error
	if d.f != nil {
		errs = append(errs, d.f.Close())
		d.f = nil
	}
	if d.indexed {
		b := d.s.db.NewBatch()
		for h := range d.locs {
			errs = append(errs, b.Delete(locKey(mh.Multihash(h), d.num), nil))
		}
		errs = append(errs, b.Commit(pebble.NoSync), b.Close())
	}
	if err := d.s.fs.Remove(d.s.dataPath(d.num)); err != nil && !errors.Is(err, os.ErrNotExist) {
		errs = append(errs, err)
	}
	d.locs = nil
	return errors.Join(errs...)
}

func (s *Store) syncDataDir() error {
	dir, err := s.fs.OpenDir(s.opts.DataDir)
	if err != nil {
		return err
	}
	err = dir.Sync()
	return errors.Join(err, dir.Close())
}

// removeData deletes the data file num of a removed blob and the location
// records of its leaves hs: the records first, so that a reader that
// finds one may still find the file gone, never a record of a deleted
// file left behind (the sweep at open deletes those of a crash).
func (s *Store) removeData(num uint64, hs []string) error {
	b := s.db.NewBatch()
	defer b.Close()
	for _, h := range hs {
		if err := b.Delete(locKey(mh.Multihash(h), num), nil); err != nil {
			return err
		}
	}
	if err := b.Delete(unsyncedKey(num), nil); err != nil {
		return err
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		return err
	}
	if err := s.fs.Remove(s.dataPath(num)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// sweepData deletes the data files and location records of no pinned
// blob and no partial one (an import cut off by a crash, a fetch whose
// partial record was lost), loads the location records of the partial
// blobs' files (ADR 0054), and sets the next file number past every one
// seen. REQUIRES: s.mu.files and s.mu.partials loaded.
func (s *Store) sweepData() error {
	live := make(map[uint64]bool)
	partFiles := make(map[uint64]*dataFile)
	s.mu.Lock()
	for _, num := range s.mu.files {
		live[num] = true
		s.mu.nextFile = max(s.mu.nextFile, num)
	}
	for _, p := range s.mu.partials {
		if p.file == nil {
			continue
		}
		fi, err := s.fs.Stat(s.dataPath(p.file.num))
		if err != nil {
			// Gone (or never made before a crash): the partial holds
			// no leaf, and a new file is made at its next leaf.
			s.unhide(p.file.num)
			p.file = nil
			continue
		}
		p.file.size = fi.Size()
		live[p.file.num] = true
		partFiles[p.file.num] = p.file
	}
	s.mu.Unlock()
	if err := s.fs.MkdirAll(s.opts.DataDir, 0o755); err != nil {
		return fmt.Errorf("blobs: data directory: %w", err)
	}
	names, err := s.fs.List(s.opts.DataDir)
	if err != nil {
		return fmt.Errorf("blobs: data directory: %w", err)
	}
	var high uint64
	for _, name := range names {
		num, ok := parseDataName(name)
		if !ok {
			continue
		}
		high = max(high, num)
		if !live[num] {
			if err := s.fs.Remove(s.fs.PathJoin(s.opts.DataDir, name)); err != nil {
				return fmt.Errorf("blobs: deleting an unpinned data file: %w", err)
			}
		}
	}
	p := []byte(LocPrefix)
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: p, UpperBound: core.PrefixEnd(p)})
	if err != nil {
		return err
	}
	b := s.db.NewBatch()
	defer b.Close()
	for it.First(); it.Valid(); it.Next() {
		l, ok := parseLoc(it.Key(), it.Value())
		if d := partFiles[l.file]; ok && d != nil {
			h := it.Key()[len(p) : len(it.Key())-8]
			d.locs[string(h)] = l
			continue
		}
		if ok && live[l.file] {
			continue
		}
		if err := b.Delete(it.Key(), nil); err != nil {
			_ = it.Close()
			return err
		}
	}
	if err := errors.Join(it.Error(), it.Close()); err != nil {
		return fmt.Errorf("blobs: listing leaf locations: %w", err)
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return fmt.Errorf("blobs: deleting stale leaf locations: %w", err)
	}
	s.mu.Lock()
	s.mu.nextFile = max(s.mu.nextFile, high)
	s.mu.Unlock()
	return nil
}

// leafstore is the blockstore the store reads through: raw leaves from
// the data files (then, for a blob stored before ADR 0037, from pebble),
// every other block from pebble's blockstore, where Put, DeleteBlock and
// AllKeysChan also go. With verify, a leaf read from a data file is
// checked against its CID (exports, checks); without, it is not (serving
// peers, who check it themselves, and the walk of a fetch).
type leafstore struct {
	blockstore.Blockstore // pebble's
	s                     *Store
	verify                bool
}

func (b *leafstore) Has(ctx context.Context, c cid.Cid) (bool, error) {
	if c.Type() == cid.Raw {
		if _, ok, err := b.s.locate(c.Hash()); err != nil || ok {
			return ok, err
		}
	}
	return b.Blockstore.Has(ctx, c)
}

func (b *leafstore) Get(ctx context.Context, c cid.Cid) (blocks.Block, error) {
	if c.Type() == cid.Raw {
		data, ok, err := b.s.readLeaf(c, b.verify)
		if err != nil {
			return nil, err
		}
		if ok {
			return blocks.NewBlockWithCid(data, c)
		}
	}
	return b.Blockstore.Get(ctx, c)
}

func (b *leafstore) GetSize(ctx context.Context, c cid.Cid) (int, error) {
	if c.Type() == cid.Raw {
		l, ok, err := b.s.locate(c.Hash())
		if err != nil {
			return 0, err
		}
		if ok {
			return int(l.n), nil
		}
	}
	return b.Blockstore.GetSize(ctx, c)
}

// AllKeysChan lists pebble's blocks, then the leaves of the data files
// (as raw CIDs, each once).
func (b *leafstore) AllKeysChan(ctx context.Context) (<-chan cid.Cid, error) {
	inner, err := b.Blockstore.AllKeysChan(ctx)
	if err != nil {
		return nil, err
	}
	p := []byte(LocPrefix)
	it, err := b.s.db.NewIter(&pebble.IterOptions{LowerBound: p, UpperBound: core.PrefixEnd(p)})
	if err != nil {
		return nil, err
	}
	out := make(chan cid.Cid)
	go func() {
		defer close(out)
		defer it.Close()
		send := func(c cid.Cid) bool {
			select {
			case out <- c:
				return true
			case <-ctx.Done():
				return false
			}
		}
		for c := range inner {
			if !send(c) {
				return
			}
		}
		var last []byte
		for it.First(); it.Valid(); it.Next() {
			k := it.Key()
			if len(k) < len(p)+8 {
				continue
			}
			h := k[len(p) : len(k)-8]
			if bytes.Equal(h, last) {
				continue
			}
			last = append(last[:0], h...)
			m, err := mh.Cast(h)
			if err != nil {
				continue
			}
			if !send(cid.NewCidV1(cid.Raw, append(mh.Multihash(nil), m...))) {
				return
			}
		}
	}()
	return out, nil
}

var _ blockstore.Blockstore = (*leafstore)(nil)

// CheckBlob reads the pinned blob c of size bytes as Export does and
// checks every leaf in its own data file against its CID (ADR 0037), so
// that a blob whose file is damaged is found even where Export reads a
// shared leaf whole from another blob's file (repo check).
func (s *Store) CheckBlob(ctx context.Context, c cid.Cid, size uint64) error {
	if err := s.Export(ctx, c, size, io.Discard); err != nil {
		return err
	}
	s.mu.Lock()
	num := s.mu.files[c]
	s.mu.Unlock()
	if num == 0 {
		return nil
	}
	if err := s.checkLeaves(ctx, c, num); err != nil {
		return fmt.Errorf("blobs: check %s: %w", c, err)
	}
	return nil
}
