package blobs

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/ipfs/boxo/ipld/merkledag"
	blocks "github.com/ipfs/go-block-format"
	"github.com/ipfs/go-cid"
	ipld "github.com/ipfs/go-ipld-format"
	mh "github.com/multiformats/go-multihash"

	"github.com/wats-network/wats/core"
)

// This file keeps what a fetch that did not complete had verified, so
// that the next fetch of the blob goes on from it (ADR 0054): its leaves
// in its data file with their location records (ADR 0037), its inner
// nodes in pebble, and a partial record. A partial blob is never served
// (only pinned blobs' blocks are, ADR 0029), listed as a blob, exported
// or counted by the quota; it is kept until the blob completes, it is
// removed (Remove), or a bound drops it (StoreOptions.MaxPartialBytes,
// MaxPartialAge): the least recently progressed first.

// PartialPrefix is the prefix of the partial records in the node's pebble
// database (ADR 0054): PartialPrefix + the root CID's bytes → the
// declared size of its last fetch, its data file's number (0 for none
// yet), the time a leaf was last stored for it (Unix milliseconds) and
// flags (bit 0: the file was synced at a clean Close), each an unsigned
// varint, then the boot id of the operating system its leaves were
// written under (StoreOptions.BootID), an unsigned varint length and the
// bytes, at most maxBootID.
const PartialPrefix = "bp/"

// Defaults of the bounds on partial blobs (ADR 0054).
const (
	// DefaultMaxPartialBytes is the default of blobs.max_partial_bytes
	// (1 GiB): the most bytes of data files of partial blobs kept while
	// no fetch runs for them.
	DefaultMaxPartialBytes = 1 << 30
	// DefaultMaxPartialAge is the default of blobs.max_partial_age (7
	// days): a partial blob to which no leaf was added for longer is
	// dropped.
	DefaultMaxPartialAge = 7 * 24 * time.Hour
)

// ErrFetching: the blob is being fetched; a partial blob is removed only
// when no fetch of it runs (ADR 0054).
var ErrFetching = errors.New("blobs: the blob is being fetched")

// partialSyncBytes is how many bytes of leaves a fetch stores between two
// syncs of pebble's WAL (ADR 0054): what a kill of the process can lose
// of a partial blob's location records, at most, or up to maxHeldSteps
// more of them while the drop-behind holds its steps for a busy disk
// (ADR 0053, addendum); a sync every 16 MiB costs a fetch next to
// nothing.
const partialSyncBytes = 16 << 20

// maxBootID bounds the boot id in a partial record, in bytes (Linux's is
// a 36-byte UUID).
const maxBootID = 64

// partialSynced is bit 0 of a partial record's flags: its data file was
// synced when the store was closed, and its leaves need no check.
const partialSynced = 1

// partial is a blob not complete of which fetches stored blocks, or that
// a fetch reserved room for (ADR 0054). Its fields are guarded by
// Store.mu, but file, which has a lock of its own, and resumeMu.
type partial struct {
	size uint64    // the declared size of its last fetch
	file *dataFile // its data file; nil until its first leaf
	// progressed is when a leaf was last stored for it, in Unix
	// milliseconds: the least recently progressed go first.
	progressed int64
	recorded   bool // its partial record is written
	synced     bool // its record says its file was synced
	// boot is the boot id its leaves were written under ("" unknown).
	boot string
	// checked: its leaves were checked against their CIDs since open,
	// or written since; until then its file is hidden from readers.
	checked  bool
	fetching int // the live Reservations counting it
	// unsynced is the bytes of leaves stored since pebble's WAL was last
	// synced for it (partialSyncBytes).
	unsynced uint64
	drop     bool // dropped when its last fetch ends (a content fault)
	// resumeMu serializes opening and closing the file for fetches and
	// the check at resume.
	resumeMu sync.Mutex
}

// PartialInfo is one partial blob (Store.Partials).
type PartialInfo struct {
	// CID is the blob's root; Size the declared size of its last fetch.
	CID  cid.Cid
	Size uint64
	// Held is the bytes of its leaves held (verified, stored); Bytes the
	// bytes of its data file, what counts against MaxPartialBytes.
	Held, Bytes uint64
	// Progressed is when a leaf was last stored for it, to the
	// millisecond.
	Progressed time.Time
	// Fetching: a fetch of it runs now.
	Fetching bool
}

func partialKey(root cid.Cid) []byte {
	return append([]byte(PartialPrefix), root.Bytes()...)
}

func partialValue(p *partial) []byte {
	num := uint64(0)
	if p.file != nil {
		num = p.file.num
	}
	flags := uint64(0)
	if p.synced {
		flags |= partialSynced
	}
	v := binary.AppendUvarint(binary.AppendUvarint(nil, p.size), num)
	v = binary.AppendUvarint(binary.AppendUvarint(v, uint64(max(p.progressed, 0))), flags)
	return append(binary.AppendUvarint(v, uint64(len(p.boot))), p.boot...)
}

// parsePartial reads a partial record; ok is false for a malformed one.
func parsePartial(v []byte) (size, num uint64, progressed int64, synced bool, boot string, ok bool) {
	var f [5]uint64
	for i := range f {
		x, n := binary.Uvarint(v)
		if n <= 0 {
			return 0, 0, 0, false, "", false
		}
		f[i], v = x, v[n:]
	}
	if f[4] > maxBootID || uint64(len(v)) != f[4] || f[0] > core.MaxSafeInt || f[2] > math.MaxInt64 {
		return 0, 0, 0, false, "", false
	}
	return f[0], f[1], int64(f[2]), f[3]&partialSynced != 0, string(v), true
}

// readBootID returns the boot id of the running operating system: Linux's
// /proc/sys/kernel/random/boot_id, new at each boot; "" where there is
// none.
func readBootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	s := strings.TrimSpace(string(b))
	if len(s) > maxBootID {
		return ""
	}
	return s
}

func (s *Store) now() time.Time {
	if s.opts.Now != nil {
		return s.opts.Now()
	}
	return time.Now()
}

// loadPartials reads the partial records at open. A record of a blob
// pinned since (a crash between the pin and the record's deletion) is
// deleted; its file, the blob's, is kept. REQUIRES: loaded.
func (s *Store) loadPartials() error {
	p := []byte(PartialPrefix)
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: p, UpperBound: core.PrefixEnd(p)})
	if err != nil {
		return err
	}
	var stale [][]byte
	s.mu.Lock()
	for it.First(); it.Valid(); it.Next() {
		root, err := cid.Cast(it.Key()[len(p):])
		size, num, at, synced, boot, ok := parsePartial(it.Value())
		_, pinned := s.mu.blobs[root]
		if err != nil || !ok || pinned {
			stale = append(stale, slices.Clone(it.Key()))
			continue
		}
		// Its leaves are whole if its file was synced at a clean Close,
		// or if they were written under this boot of the operating
		// system: a leaf's location record is written once its write
		// returned, and until the next boot the page cache (or the
		// disk) gives back every write that returned, whatever became
		// of the process. After a reboot (a power cut, a kernel crash)
		// they may be torn, and are checked when a fetch resumes.
		whole := synced || boot != "" && boot == s.boot
		pt := &partial{size: size, progressed: at, recorded: true, synced: synced, checked: whole, boot: boot}
		if num != 0 {
			pt.file = &dataFile{s: s, num: num, locs: make(map[string]location), indexed: true, idle: true}
			s.mu.nextFile = max(s.mu.nextFile, num)
			if !whole {
				s.hide(num)
			}
		}
		s.mu.partials[root] = pt
	}
	s.mu.Unlock()
	if err := errors.Join(it.Error(), it.Close()); err != nil {
		return fmt.Errorf("blobs: listing partial blobs: %w", err)
	}
	if s.opts.ReadOnly {
		return nil
	}
	for _, k := range stale {
		if err := s.db.Delete(k, pebble.NoSync); err != nil {
			return err
		}
	}
	return nil
}

// loadPartialLocs loads the location records of the partials' data files
// and their sizes, for a read-only store (a writable one's sweepData does
// it).
func (s *Store) loadPartialLocs() error {
	files := make(map[uint64]*dataFile)
	s.mu.Lock()
	for _, p := range s.mu.partials {
		if p.file == nil {
			continue
		}
		if fi, err := s.fs.Stat(s.dataPath(p.file.num)); err == nil {
			p.file.size = fi.Size()
			files[p.file.num] = p.file
		}
	}
	s.mu.Unlock()
	if len(files) == 0 {
		return nil
	}
	p := []byte(LocPrefix)
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: p, UpperBound: core.PrefixEnd(p)})
	if err != nil {
		return err
	}
	for it.First(); it.Valid(); it.Next() {
		if l, ok := parseLoc(it.Key(), it.Value()); ok && files[l.file] != nil {
			files[l.file].locs[string(it.Key()[len(p):len(it.Key())-8])] = l
		}
	}
	return errors.Join(it.Error(), it.Close())
}

// hide makes the leaves of data file num invisible to readers until its
// partial's check at resume. REQUIRES: s.mu held.
func (s *Store) hide(num uint64) {
	if !s.mu.hidden[num] {
		s.mu.hidden[num] = true
		s.hiddenN.Add(1)
	}
}

// unhide undoes hide. REQUIRES: s.mu held.
func (s *Store) unhide(num uint64) {
	if s.mu.hidden[num] {
		delete(s.mu.hidden, num)
		s.hiddenN.Add(-1)
	}
}

// visible drops from ls the locations in hidden files.
func (s *Store) visible(ls []location) []location {
	if s.hiddenN.Load() == 0 {
		return ls
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.DeleteFunc(ls, func(l location) bool { return s.mu.hidden[l.file] })
}

// partialFor returns the partial of root, made if there is none, with its
// record written and, if leaf, its data file made and open for writing;
// nil if root is pinned (its file holds every leaf already).
func (s *Store) partialFor(root cid.Cid, leaf bool) (*partial, error) {
	s.mu.Lock()
	if _, pinned := s.mu.blobs[root]; pinned {
		s.mu.Unlock()
		return nil, nil
	}
	p := s.mu.partials[root]
	if p == nil {
		p = &partial{checked: true, boot: s.boot}
		s.mu.partials[root] = p
	}
	ready := p.recorded && (!leaf || p.file != nil && p.file.open())
	s.mu.Unlock()
	if ready {
		return p, nil
	}
	p.resumeMu.Lock()
	defer p.resumeMu.Unlock()
	s.mu.Lock()
	d := p.file
	s.mu.Unlock()
	if leaf && d == nil {
		var err error
		if d, err = s.newDataFile(true); err != nil {
			return nil, err
		}
		s.mu.Lock()
		p.file = d
		p.recorded = false // rewritten with the file's number
		s.mu.Unlock()
	}
	if leaf && !d.open() {
		if _, err := s.resumeLocked(root, p); err != nil {
			return nil, err
		}
	}
	s.mu.Lock()
	rec := !p.recorded
	p.recorded = true
	p.progressed = s.now().UnixMilli()
	v := partialValue(p)
	s.mu.Unlock()
	if rec {
		// Not synced: a record lost in a crash leaves a file and
		// location records that the sweep at open deletes.
		if err := s.db.Set(partialKey(root), v, pebble.NoSync); err != nil {
			return nil, fmt.Errorf("blobs: partial record of %s: %w", root, err)
		}
	}
	return p, nil
}

// resume makes the partial p of root ready for a fetch: its leaves
// checked if they may have been torn by a crash, its file open for
// writing. It returns the bytes of the leaves it holds.
func (s *Store) resume(root cid.Cid, p *partial) (held uint64, err error) {
	p.resumeMu.Lock()
	defer p.resumeMu.Unlock()
	return s.resumeLocked(root, p)
}

// resumeLocked is resume. REQUIRES: p.resumeMu held.
func (s *Store) resumeLocked(root cid.Cid, p *partial) (held uint64, err error) {
	s.mu.Lock()
	d, checked, stale := p.file, p.checked, p.synced || p.boot != s.boot
	s.mu.Unlock()
	if d == nil {
		return 0, nil
	}
	if !checked {
		if err := d.check(); err != nil {
			return 0, fmt.Errorf("blobs: checking partial %s: %w", root, err)
		}
	}
	if stale {
		// Unsynced, of this boot, before the first new write: a crash
		// from here on leaves leaves to check unless under this boot.
		s.mu.Lock()
		p.synced, p.boot = false, s.boot
		v := partialValue(p)
		s.mu.Unlock()
		if err := s.db.Set(partialKey(root), v, pebble.Sync); err != nil {
			return 0, fmt.Errorf("blobs: partial record of %s: %w", root, err)
		}
	}
	if err := d.reopen(); err != nil {
		return 0, err
	}
	s.mu.Lock()
	p.checked = true
	s.unhide(d.num)
	s.mu.Unlock()
	s.stored.notify() // a stream may wait for the leaves now visible
	return d.held(), nil
}

// heldLeaf returns the length of the leaf it (not a root) when a data
// file holds it, from its location record, without reading it: what the
// walk of a fetch needs of a leaf held already (ADR 0054). The leaves of
// a partial not checked since a crash are not found.
func (s *Store) heldLeaf(it item) (n uint64, ok bool) {
	if it.depth == 0 || it.c.Type() != cid.Raw {
		return 0, false
	}
	l, ok, err := s.locate(it.c.Hash())
	if err != nil || !ok {
		return 0, false
	}
	return uint64(l.n), true
}

// open reports whether the file is open for writing.
func (d *dataFile) open() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.f != nil
}

// held returns the bytes of the leaves in the file.
func (d *dataFile) held() uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	var n uint64
	for _, l := range d.locs {
		n += uint64(l.n)
	}
	return n
}

// bytes returns the size of the file, in bytes.
func (d *dataFile) bytes() uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return uint64(d.size)
}

// reopen opens the file of an idle partial for writing, appending past
// its end (made anew if it is gone).
func (d *dataFile) reopen() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.f != nil {
		return nil
	}
	f, err := d.s.fs.OpenReadWrite(d.s.dataPath(d.num), vfs.WriteCategoryUnspecified)
	if err != nil {
		return fmt.Errorf("blobs: data file %d: %w", d.num, err)
	}
	fi, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return fmt.Errorf("blobs: data file %d: %w", d.num, err)
	}
	d.f, d.size, d.idle, d.reopened = f, fi.Size(), false, true
	d.behind = newDropBehind(newFileCache(f.Fd()), d.size)
	return nil
}

// closeIdle closes the file of a partial no fetch writes to now, without
// syncing it.
func (d *dataFile) closeIdle() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.f == nil {
		return nil
	}
	err := d.f.Close()
	d.f, d.idle = nil, true
	return err
}

// check reads every leaf of the file and checks it against its CID; a
// leaf torn or damaged (the file lost writes in a crash) loses its
// location record and is fetched again (ADR 0054).
func (d *dataFile) check() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	// The leaves in file order, checked by a worker a core (at most 4):
	// hashing is most of the work, and no fetch runs meanwhile.
	hs := make([]string, 0, len(d.locs))
	for h := range d.locs {
		hs = append(hs, h)
	}
	slices.SortFunc(hs, func(a, b string) int { return cmp.Compare(d.locs[a].off, d.locs[b].off) })
	bad := make([]bool, len(hs))
	workers := min(runtime.GOMAXPROCS(0), 4)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < len(hs); i += workers {
				c := cid.NewCidV1(cid.Raw, mh.Multihash(hs[i]))
				_, ok, err := d.s.readLeafAt(c, d.locs[hs[i]], true)
				bad[i] = err != nil || !ok
			}
		})
	}
	wg.Wait()
	b := d.s.db.NewBatch()
	defer b.Close()
	for i, h := range hs {
		if !bad[i] {
			continue
		}
		delete(d.locs, h)
		if err := b.Delete(locKey(mh.Multihash(h), d.num), nil); err != nil {
			return err
		}
	}
	if fi, err := d.s.fs.Stat(d.s.dataPath(d.num)); err == nil {
		d.size = fi.Size()
	}
	return b.Commit(pebble.NoSync)
}

// Partials returns the partial blobs, the least recently progressed
// first: those of which a fetch that did not complete stored leaves, and
// those being fetched.
func (s *Store) Partials() []PartialInfo {
	s.mu.Lock()
	out := make([]PartialInfo, 0, len(s.mu.partials))
	for root, p := range s.mu.partials {
		if !p.recorded {
			continue
		}
		pi := PartialInfo{CID: root, Size: p.size, Progressed: time.UnixMilli(p.progressed), Fetching: p.fetching > 0}
		if p.file != nil {
			pi.Held, pi.Bytes = p.file.held(), p.file.bytes()
		}
		out = append(out, pi)
	}
	s.mu.Unlock()
	slices.SortFunc(out, func(a, b PartialInfo) int {
		return cmp.Or(a.Progressed.Compare(b.Progressed), cmp.Compare(a.CID.KeyString(), b.CID.KeyString()))
	})
	return out
}

// idle is called when the last fetch of the partial p of root ended
// without completing it: its file is closed and its record rewritten,
// then the bounds applied; a partial that holds nothing, or whose fetch
// found a content fault, is dropped.
func (s *Store) idle(root cid.Cid, p *partial) {
	p.resumeMu.Lock()
	s.mu.Lock()
	if s.mu.partials[root] != p || p.fetching > 0 {
		s.mu.Unlock()
		p.resumeMu.Unlock()
		return
	}
	drop := p.drop || !p.recorded
	if drop {
		delete(s.mu.partials, root)
	}
	v := partialValue(p)
	s.mu.Unlock()
	if !drop {
		if p.file != nil {
			_ = p.file.closeIdle()
		}
		_ = s.db.Set(partialKey(root), v, pebble.NoSync)
	}
	p.resumeMu.Unlock()
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if drop {
		if p.recorded {
			_ = s.dropPartial(context.Background(), root, p) // a crash here leaves it to the sweep at open
		}
		return
	}
	_ = s.trim(context.Background())
}

// trim drops the partials no fetch runs for that are past the bounds:
// first those to which no leaf was added for more than MaxPartialAge,
// then, the least recently progressed first, until the bytes of the
// files of those left are at most MaxPartialBytes (ADR 0054). REQUIRES:
// writeMu held.
func (s *Store) trim(ctx context.Context) error {
	now := s.now().UnixMilli()
	type idle struct {
		root  cid.Cid
		p     *partial
		bytes uint64
	}
	var list []idle
	var total uint64
	s.mu.Lock()
	for root, p := range s.mu.partials {
		if p.fetching > 0 || !p.recorded {
			continue
		}
		var n uint64
		if p.file != nil {
			n = p.file.bytes()
		}
		list = append(list, idle{root, p, n})
		total += n
	}
	slices.SortFunc(list, func(a, b idle) int {
		return cmp.Or(cmp.Compare(a.p.progressed, b.p.progressed), cmp.Compare(a.root.KeyString(), b.root.KeyString()))
	})
	var drop []idle
	for _, it := range list {
		old := s.opts.MaxPartialAge >= 0 && now-it.p.progressed > s.opts.MaxPartialAge.Milliseconds()
		if s.opts.MaxPartialBytes < 0 || old || total > uint64(s.opts.MaxPartialBytes) {
			delete(s.mu.partials, it.root)
			drop = append(drop, it)
			total -= it.bytes
		}
	}
	s.mu.Unlock()
	var errs []error
	for _, it := range drop {
		errs = append(errs, s.dropPartial(ctx, it.root, it.p))
	}
	return errors.Join(errs...)
}

// dropPinnedPartial drops the partial of c, a blob an import has just
// pinned: at once if no fetch of it runs, else when the last ends (the
// fetch then finds the blob complete). REQUIRES: writeMu held.
func (s *Store) dropPinnedPartial(ctx context.Context, c cid.Cid) {
	s.mu.Lock()
	p := s.mu.partials[c]
	switch {
	case p == nil:
		s.mu.Unlock()
		return
	case p.fetching > 0:
		p.drop = true
		s.mu.Unlock()
		return
	}
	delete(s.mu.partials, c)
	s.mu.Unlock()
	if p.recorded {
		_ = s.dropPartial(ctx, c, p) // a crash here leaves it to the sweep at open
	}
}

// removePartial drops the partial root if no fetch of it runs (else an
// error wrapping ErrFetching); ok is false when there is none. REQUIRES:
// writeMu held.
func (s *Store) removePartial(ctx context.Context, root cid.Cid) (ok bool, err error) {
	s.mu.Lock()
	p := s.mu.partials[root]
	switch {
	case p == nil || !p.recorded:
		s.mu.Unlock()
		return false, nil
	case p.fetching > 0:
		s.mu.Unlock()
		return true, fmt.Errorf("%w: %s; stop its fetch first", ErrFetching, root)
	}
	delete(s.mu.partials, root)
	s.mu.Unlock()
	return true, s.dropPartial(ctx, root, p)
}

// dropPartial deletes the partial p of root, already taken out of
// s.mu.partials: its record, its data file and location records, and its
// inner nodes that no pinned blob and no other partial holds. REQUIRES:
// writeMu held.
func (s *Store) dropPartial(ctx context.Context, root cid.Cid, p *partial) error {
	var errs []error
	errs = append(errs, s.db.Delete(partialKey(root), pebble.NoSync))
	if p.file != nil {
		errs = append(errs, p.file.discard())
		s.mu.Lock()
		s.unhide(p.file.num)
		s.mu.Unlock()
	}
	keep := s.partialsNodes(ctx)
	for _, n := range s.partialNodes(ctx, root) {
		if keep[string(n.Hash())] || s.Referenced(n) {
			continue
		}
		if err := s.bstore.DeleteBlock(ctx, n); err != nil && !ipld.IsNotFound(err) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// partialsNodes returns the multihashes of the inner nodes that the
// partial blobs in s.mu.partials hold: what a drop or a sweep keeps.
func (s *Store) partialsNodes(ctx context.Context) map[string]bool {
	s.mu.Lock()
	roots := make([]cid.Cid, 0, len(s.mu.partials))
	for c := range s.mu.partials {
		roots = append(roots, c)
	}
	s.mu.Unlock()
	keep := make(map[string]bool)
	for _, c := range roots {
		for _, n := range s.partialNodes(ctx, c) {
			keep[string(n.Hash())] = true
		}
	}
	return keep
}

// maxPartialNodes bounds the inner nodes partialNodes visits.
const maxPartialNodes = 1 << 16

// partialNodes returns the inner (dag-pb) nodes of the DAG under root
// that pebble holds, reached through nodes it holds: what a fetch of root
// stored of them.
func (s *Store) partialNodes(ctx context.Context, root cid.Cid) []cid.Cid {
	var out []cid.Cid
	_ = s.walkNodes(ctx, root, func(c cid.Cid, b blocks.Block, err error) ([]cid.Cid, bool, error) {
		if err != nil {
			return nil, false, nil
		}
		out = append(out, c)
		nd, err := merkledag.DecodeProtobuf(b.RawData())
		if err != nil {
			return nil, true, nil
		}
		return linkCids(nd), true, nil
	})
	return out
}

// walkNodes gives visit each inner (dag-pb) node of the DAG under root that
// pebble holds, or the error of its read, depth first from root, each
// once; one pebble does not hold (not fetched yet) is skipped. visit
// returns the nodes to go on to (its links), whether the node counts
// towards the walk's bound (maxPartialNodes counted, then the walk ends)
// and an error that ends the walk, which walkNodes returns.
func (s *Store) walkNodes(ctx context.Context, root cid.Cid, visit func(c cid.Cid, b blocks.Block, err error) (next []cid.Cid, counted bool, stop error)) error {
	seen := make(map[string]bool)
	stack := []cid.Cid{root}
	for n := 0; len(stack) > 0 && n < maxPartialNodes; {
		c := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if c.Type() != cid.DagProtobuf || seen[c.KeyString()] {
			continue
		}
		seen[c.KeyString()] = true
		b, err := s.bstore.Get(ctx, c)
		if ipld.IsNotFound(err) {
			continue
		}
		next, counted, stop := visit(c, b, err)
		if stop != nil {
			return stop
		}
		if counted {
			n++
		}
		stack = append(stack, next...)
	}
	return nil
}

// linkCids returns the CIDs nd links to.
func linkCids(nd *merkledag.ProtoNode) []cid.Cid {
	out := make([]cid.Cid, 0, len(nd.Links()))
	for _, l := range nd.Links() {
		out = append(out, l.Cid)
	}
	return out
}

// syncPartials syncs, at Close, the data files of the partials no fetch
// writes to and marks their records synced, so that the next open need
// not check their leaves.
func (s *Store) syncPartials() error {
	type todo struct {
		root cid.Cid
		p    *partial
	}
	var list []todo
	s.mu.Lock()
	for root, p := range s.mu.partials {
		if p.fetching == 0 && p.recorded && p.file != nil && !p.synced && p.checked {
			list = append(list, todo{root, p})
		}
	}
	s.mu.Unlock()
	if len(list) == 0 {
		return nil
	}
	b := s.db.NewBatch()
	defer b.Close()
	var errs []error
	for _, t := range list {
		if err := t.p.file.syncIdle(); err != nil {
			errs = append(errs, err)
			continue
		}
		s.mu.Lock()
		t.p.synced = true
		v := partialValue(t.p)
		s.mu.Unlock()
		errs = append(errs, b.Set(partialKey(t.root), v, nil))
	}
	errs = append(errs, b.Commit(pebble.Sync))
	return errors.Join(errs...)
}

// syncIdle makes the file of an idle partial durable and leaves it
// closed.
func (d *dataFile) syncIdle() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	f := d.f
	if f == nil {
		var err error
		if f, err = d.s.fs.Open(d.s.dataPath(d.num)); err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil
			}
			return fmt.Errorf("blobs: data file %d: %w", d.num, err)
		}
	}
	err := f.Sync()
	err = errors.Join(err, f.Close())
	d.f, d.idle = nil, true
	if err == nil {
		err = d.s.syncDataDir()
	}
	return err
}

// ReadPartial gives put each block of the partial blob root (ADR 0054)
// that still reads whole and matches its CID: its inner nodes, from root
// down through the dag-pb nodes pebble holds (at most maxPartialNodes),
// then the leaves of its data file in file order. It is how `wats repo
// repair` carries a partial blob out of a damaged database into a new
// one's store, by that store's fetch path (Reserve, PutBlock, Release;
// ADR 0054, addendum), and it trusts nothing of the database but what a
// CID checks: every block is hashed as it is read, whether or not the
// partial's leaves are hidden (after a reboot, ADR 0054). A block that does
// not read (a file cut short or gone, a damaged pebble block) or does not
// match its CID is not given to put, and its error is in bad; the inner
// nodes under a bad inner node are not reached (the next fetch asks for
// them). held is the bytes of the leaves given to put. err is put's
// error, which ends the read, or one wrapping ErrIncomplete when s holds
// no partial blob root.
func (s *Store) ReadPartial(ctx context.Context, root cid.Cid, put func(blocks.Block) error) (held uint64, bad []error, err error) {
	s.mu.Lock()
	p := s.mu.partials[root]
	var locs []location
	var hs []string
	if p != nil && p.file != nil {
		p.file.mu.Lock()
		for h, l := range p.file.locs {
			hs, locs = append(hs, h), append(locs, l)
		}
		p.file.mu.Unlock()
	}
	s.mu.Unlock()
	if p == nil || !p.recorded {
		return 0, nil, fmt.Errorf("%w: %s is no partial blob", ErrIncomplete, root)
	}
	err = s.walkNodes(ctx, root, func(c cid.Cid, b blocks.Block, err error) ([]cid.Cid, bool, error) {
		if err == nil {
			err = matches(c, b.RawData())
		}
		var nd *merkledag.ProtoNode
		if err == nil {
			nd, err = merkledag.DecodeProtobuf(b.RawData())
		}
		if err != nil {
			bad = append(bad, fmt.Errorf("inner node %s: %w", c, err))
			return nil, false, nil
		}
		if err := put(b); err != nil {
			return nil, true, err
		}
		return linkCids(nd), true, nil
	})
	if err != nil {
		return held, bad, err
	}
	order := make([]int, len(locs))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return cmp.Compare(locs[a].off, locs[b].off) })
	for _, i := range order {
		c := cid.NewCidV1(cid.Raw, mh.Multihash(hs[i]))
		data, ok, err := s.readLeafAt(c, locs[i], true)
		if err == nil && !ok {
			err = fmt.Errorf("%w: its data file is gone", ErrIncomplete)
		}
		if err != nil {
			bad = append(bad, fmt.Errorf("leaf %s: %w", c, err))
			continue
		}
		b, err := blocks.NewBlockWithCid(data, c)
		if err != nil {
			bad = append(bad, fmt.Errorf("leaf %s: %w", c, err))
			continue
		}
		if err := put(b); err != nil {
			return held, bad, err
		}
		held += uint64(len(data))
	}
	return held, bad, nil
}

// matches reports, as an error wrapping ErrBadBlob, whether data is not
// the block c.
func matches(c cid.Cid, data []byte) error {
	got, err := c.Prefix().Sum(data)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrBadBlob, err)
	}
	if !got.Equals(c) {
		return fmt.Errorf("%w: does not match its CID (damaged on disk)", ErrBadBlob)
	}
	return nil
}
