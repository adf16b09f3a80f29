package blobs

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/ipfs/boxo/blockservice"
	"github.com/ipfs/boxo/blockstore"
	chunk "github.com/ipfs/boxo/chunker"
	dshelp "github.com/ipfs/boxo/datastore/dshelp"
	"github.com/ipfs/boxo/exchange/offline"
	"github.com/ipfs/boxo/ipld/merkledag"
	"github.com/ipfs/boxo/ipld/unixfs/importer/balanced"
	"github.com/ipfs/boxo/ipld/unixfs/importer/helpers"
	unixfsio "github.com/ipfs/boxo/ipld/unixfs/io"
	pin "github.com/ipfs/boxo/pinning/pinner"
	"github.com/ipfs/boxo/pinning/pinner/dspinner"
	blocks "github.com/ipfs/go-block-format"
	"github.com/ipfs/go-cid"
	ds "github.com/ipfs/go-datastore"
	"github.com/ipfs/go-datastore/namespace"
	"github.com/ipfs/go-datastore/query"
	pebbleds "github.com/ipfs/go-ds-pebble"
	ipld "github.com/ipfs/go-ipld-format"
	mh "github.com/multiformats/go-multihash"
	_ "github.com/multiformats/go-multihash/register/blake3" // BLAKE3 (0x1e) for the CID builder

	"github.com/wats-network/wats/core"
	"github.com/wats-network/wats/eventlog"
	"github.com/wats-network/wats/internal/humanize"
)

// KeyPrefix is the prefix of every key the store writes to the node's
// pebble database (docs/design.md §10: disjoint key prefixes in the one DB; the
// event log uses "ev/", the peer cache "p/"). Under it: "/blobs/blocks/…"
// (boxo blockstore), "/blobs/pins/…" and "/blobs/dirty…" (boxo dspinner),
// "/blobs/meta/<cid>" (this file: the size of each pinned blob, its data
// file, the time it was added and the name its add gave it).
const KeyPrefix = "/blobs/"

// metaPrefix holds one record per blob: key metaPrefix/<cid string>,
// value metaValue's.
const metaPrefix = "/meta"

// ErrIncomplete: the blob is not pinned in the store (never imported,
// removed, or a fetch that did not complete). ADR 0014: a blob is used
// (exported, shown) only when complete.
var ErrIncomplete = errors.New("blobs: blob not complete")

// CIDBuilder makes the CIDs of blobs (docs/design.md §9): CIDv1, BLAKE3
// multihash (code 0x1e) of 32 bytes. The importer turns it into codec raw
// for the leaves and dag-pb for the inner UnixFS nodes.
var CIDBuilder cid.Builder = cid.V1Builder{Codec: cid.DagProtobuf, MhType: mh.BLAKE3, MhLength: -1}

// StoreOptions configure a Store (OpenStore). The zero value, or nil, is
// the defaults; EnsureDefaults fills them in and Validate checks the
// ranges, as pebble's Options do.
type StoreOptions struct {
	// MaxBlobBytes is blobs.max_blob_bytes: the largest blob, in bytes,
	// that Import accepts, at most core.MaxSafeInt. 0 means
	// DefaultMaxBlobBytes (64 MiB).
	MaxBlobBytes uint64
	// QuotaBytes is blobs.quota_bytes: the most bytes of pinned blobs
	// (the sum of their file sizes) the store holds, at most 2^62. 0
	// means DefaultQuotaBytes (4 GiB).
	QuotaBytes uint64
	// DataDir is the directory of the blobs' data files (ADR 0037), on
	// FS; required. The node's is the "blobs" directory inside its
	// database's directory, so that the database and the bytes it
	// indexes move together. OpenStore creates it unless ReadOnly.
	DataDir string
	// FS is the file system of DataDir; nil means vfs.Default (the
	// operating system's). An in-memory database uses vfs.NewMem.
	FS vfs.FS
	// ReadOnly opens the store of a database opened read-only: OpenStore
	// does not delete the blocks, data files and location records no
	// blob references (what an import or a fetch cut off by a crash
	// left), which the next writable open does, and nothing can be
	// imported or fetched.
	ReadOnly bool
	// Pinned, if set, is told the root of each blob that becomes complete
	// (imported, or fetched to the end), once it is listed: the node
	// provides it on the DHT (docs/adr/0040). It is called with the
	// store's locks held, so it must return soon and must call none of
	// the Store's methods.
	Pinned func(cid.Cid)
	// Room, if set, is asked before each leaf is written to a data file,
	// with its size; its error (the node's: a full disk, ADR 0044) fails
	// the import, which keeps nothing of the blob, or the fetch, which
	// keeps what it stored before as a partial blob (ADR 0054; Remove
	// removes it). Removals are not asked: they are how room is made.
	Room func(n int) error
	// Now, if set, is the clock of the time each blob is recorded as
	// added (BlobInfo.Added) and a partial blob as progressed; nil means
	// time.Now.
	Now func() time.Time
	// MaxPartialBytes is blobs.max_partial_bytes: the most bytes of the
	// data files of partial blobs kept while no fetch runs for them (ADR
	// 0054), at most 2^62; past it the least recently progressed are
	// dropped. 0 means DefaultMaxPartialBytes (1 GiB); below 0, none is
	// kept.
	MaxPartialBytes int64
	// BootID is the boot id of the operating system (ADR 0054): the
	// leaves of a partial blob written under the running boot are whole
	// after an unclean stop, and are not checked. "" means Linux's
	// /proc/sys/kernel/random/boot_id; where there is none, the leaves of
	// every partial left by an unclean stop are checked. Tests set it to
	// stand for a reboot.
	BootID string
	// MaxPartialAge is blobs.max_partial_age: a partial blob to which no
	// leaf was added for longer is dropped (ADR 0054), checked when a
	// fetch ends and at open. 0 means DefaultMaxPartialAge (7 days);
	// below 0, no age bound.
	MaxPartialAge time.Duration
}

// MaxQuotaBytes bounds StoreOptions.QuotaBytes, 2^62 bytes: far beyond
// any disk, and far from overflowing a sum of sizes.
const MaxQuotaBytes = 1 << 62

// EnsureDefaults sets each zero field of o to its default and returns o; on
// a nil o it returns new StoreOptions of the defaults.
func (o *StoreOptions) EnsureDefaults() *StoreOptions {
	if o == nil {
		o = &StoreOptions{}
	}
	if o.MaxBlobBytes == 0 {
		o.MaxBlobBytes = DefaultMaxBlobBytes
	}
	if o.QuotaBytes == 0 {
		o.QuotaBytes = DefaultQuotaBytes
	}
	if o.MaxPartialBytes == 0 {
		o.MaxPartialBytes = DefaultMaxPartialBytes
	}
	if o.MaxPartialAge == 0 {
		o.MaxPartialAge = DefaultMaxPartialAge
	}
	return o
}

// Validate reports a field out of its range, wrapping ErrInvalidOptions.
// A nil o is valid.
func (o *StoreOptions) Validate() error {
	switch {
	case o == nil:
		return nil
	case o.MaxBlobBytes > core.MaxSafeInt:
		return fmt.Errorf("%w: max blob bytes %d beyond 2^53", ErrInvalidOptions, o.MaxBlobBytes)
	case o.QuotaBytes > MaxQuotaBytes:
		return fmt.Errorf("%w: quota bytes %d beyond 2^62", ErrInvalidOptions, o.QuotaBytes)
	case o.MaxPartialBytes > MaxQuotaBytes:
		return fmt.Errorf("%w: max partial bytes %d beyond 2^62", ErrInvalidOptions, o.MaxPartialBytes)
	}
	return nil
}

// BlobInfo is one pinned (complete) blob: its root CID, file size in
// bytes, and the time it was added (imported, or fetched to the end), to
// the millisecond; the zero time for a blob recorded before the store
// kept that time. Name is the name the operator gave it when adding it
// here (ImportSized; the file's base name for `wats blob add`), at most
// eventlog.MaxBlobNameBytes bytes; "" for none (a fetched blob, an import
// without one, a record written before the store kept names).
type BlobInfo struct {
	CID   cid.Cid
	Size  uint64
	Added time.Time
	Name  string
}

// Store holds blobs in the node's pebble database (docs/design.md §9, §10)
// and, their leaves, in a data file per blob (ADR 0037): a boxo blockstore
// on go-ds-pebble sharing the DB, under KeyPrefix, for the inner nodes,
// the leaves' location records under LocPrefix, and boxo's dspinner over
// an offline DAG service, so the store itself never fetches anything from
// the network. A blob is complete when it is
// pinned (recursively); only complete blobs are listed, exported and
// counted by the quota.
//
// Import and Remove are serialized by one mutex; Has, List, QuotaUsed and
// Export may run alongside.
type Store struct {
	opts   StoreOptions
	db     *pebble.DB
	fs     vfs.FS
	dstore ds.Batching // namespaced under KeyPrefix
	// bstore reads leaves from the data files, unchecked (what the
	// bitswap server and a fetch's walk read); pebble's blockstore under
	// it takes every Put and DeleteBlock.
	bstore blockstore.Blockstore
	dag    ipld.DAGService // offline, leaves checked against their CIDs
	// checked reads as bstore does, a leaf checked against its CID.
	checked blockstore.Blockstore
	pinner  pin.Pinner

	// syncs counts the data files being synced in the background
	// (syncLater), syncErrors those that failed; Close waits for them.
	syncs      sync.WaitGroup
	syncErrors atomic.Int64

	// writeMu serializes Import and Remove, so that the quota check and
	// the cleanup of a failed import see no concurrent writer.
	writeMu sync.Mutex

	// stored tells the streams waiting for a block (Fetcher.Stream) that
	// a fetched block was written (PutBlock, putBlocks).
	stored signal

	mu struct {
		sync.Mutex
		// INVARIANT: blobs holds exactly the recursively pinned roots with
		// their file sizes, and used is the sum of those sizes.
		blobs map[cid.Cid]uint64
		used  uint64
		// reserved is the sum of the sizes of the live Reservations: room
		// under the quota promised to fetches in flight.
		reserved uint64
		// refs counts, per block multihash (the blockstore's key), the
		// pinned blobs whose DAG holds the block. INVARIANT: a block is in
		// refs iff a pinned blob reaches it; only those blocks are served
		// (Referenced) and kept by the garbage collection.
		refs map[string]int32
		// files holds the data file number of each pinned blob that has
		// one (0 for none: a blob stored before ADR 0037, whose leaves
		// are in pebble).
		files map[cid.Cid]uint64
		// added holds the time each pinned blob was added, in Unix
		// milliseconds, for those whose record has it.
		added map[cid.Cid]int64
		// names holds the name each pinned blob's add gave it, for those
		// whose record has one.
		names map[cid.Cid]string
		// nextFile is the number of the last data file made or found.
		nextFile uint64
		// synced holds the data files synced in the background whose
		// unsynced records are still to be deleted (dropSynced).
		synced []uint64
		// dropped holds the blobs checkUnsynced removed at open.
		dropped []cid.Cid
		// partials holds the blobs not complete that fetches reserved
		// room for or stored blocks of (ADR 0054): from the first
		// Reserve or block until Complete pins the blob, Remove removes
		// it or a bound drops it.
		partials map[cid.Cid]*partial
		// hidden holds the data files of partials whose leaves are not
		// checked since open (hiddenN counts them): not read until then.
		hidden map[uint64]bool
	}
	hiddenN atomic.Int32
	// boot is StoreOptions.BootID, or the one read at open.
	boot string
}

// OpenStore opens the blob store on db, which the caller owns and closes
// (the store never closes it), configured by opts (nil: the defaults; opts
// itself is not changed). It loads the pinned blobs and recomputes
// the quota used from their size records, dropping records of blobs
// whose pin never completed (an import cut off by a crash).
func OpenStore(db *pebble.DB, opts *StoreOptions) (*Store, error) {
	if db == nil {
		return nil, errors.New("blobs: nil pebble DB")
	}
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	var o StoreOptions
	if opts != nil {
		o = *opts
	}
	if o.DataDir == "" {
		return nil, fmt.Errorf("%w: no data directory", ErrInvalidOptions)
	}
	// WithPebbleDB shares the DB; the datastore's Close would close the
	// DB, so it is never called.
	pds, err := pebbleds.NewDatastore("", pebbleds.WithPebbleDB(db))
	if err != nil {
		return nil, fmt.Errorf("blobs: datastore: %w", err)
	}
	s := &Store{opts: *o.EnsureDefaults(), db: db, fs: o.FS}
	if s.fs == nil {
		s.fs = vfs.Default
	}
	s.mu.partials = make(map[cid.Cid]*partial)
	s.boot = cmp.Or(s.opts.BootID, readBootID())
	s.mu.hidden = make(map[uint64]bool)
	s.dstore = namespace.Wrap(pds, ds.NewKey(KeyPrefix))
	inner := blockstore.NewBlockstore(s.dstore)
	s.bstore = &leafstore{Blockstore: inner, s: s}
	s.checked = &leafstore{Blockstore: inner, s: s, verify: true}
	// Offline: a missing block is an error, never a network request
	// (docs/design.md §9: an online DAG service would fetch whole graphs).
	s.dag = merkledag.NewDAGService(blockservice.New(s.checked, offline.Exchange(s.checked)))
	ctx := context.Background()
	p, err := dspinner.New(ctx, s.dstore, pinDAG{s.dag})
	if err != nil {
		return nil, fmt.Errorf("blobs: pinner: %w", err)
	}
	s.pinner = p
	if err := s.load(ctx); err != nil {
		return nil, err
	}
	if err := s.loadPartials(); err != nil {
		return nil, err
	}
	if s.opts.ReadOnly {
		// What sweepData does for a writable store, without deleting.
		if err := s.loadPartialLocs(); err != nil {
			return nil, err
		}
	}
	if !s.opts.ReadOnly {
		if err := s.sweep(ctx); err != nil {
			return nil, err
		}
		if err := s.sweepData(); err != nil {
			return nil, err
		}
		dropped, err := s.checkUnsynced(ctx)
		if err != nil {
			return nil, err
		}
		s.mu.dropped = dropped
		s.writeMu.Lock()
		err = s.trim(ctx)
		s.writeMu.Unlock()
		if err != nil {
			return nil, fmt.Errorf("blobs: dropping partial blobs past the bounds: %w", err)
		}
	}
	return s, nil
}

// load fills s.mu.blobs from the pins and the size records.
func (s *Store) load(ctx context.Context) error {
	blobs := make(map[cid.Cid]uint64)
	for sp := range s.pinner.RecursiveKeys(ctx, false) {
		if sp.Err != nil {
			return fmt.Errorf("blobs: listing pins: %w", sp.Err)
		}
		blobs[sp.Pin.Key] = 0
	}
	res, err := s.dstore.Query(ctx, query.Query{Prefix: metaPrefix})
	if err != nil {
		return fmt.Errorf("blobs: listing sizes: %w", err)
	}
	defer res.Close()
	seen := make(map[cid.Cid]bool)
	files := make(map[cid.Cid]uint64)
	added := make(map[cid.Cid]int64)
	names := make(map[cid.Cid]string)
	for r := range res.Next() {
		if r.Error != nil {
			return fmt.Errorf("blobs: listing sizes: %w", r.Error)
		}
		k := ds.RawKey(r.Key)
		c, err := cid.Decode(k.BaseNamespace())
		size, num, at, name, ok := parseMeta(r.Value)
		if err != nil || !ok {
			return fmt.Errorf("blobs: bad size record %q", r.Key)
		}
		if _, ok := blobs[c]; !ok {
			// A record without a pin: an import or a remove cut off.
			if err := s.dstore.Delete(ctx, k); err != nil {
				return fmt.Errorf("blobs: dropping size record: %w", err)
			}
			continue
		}
		blobs[c] = size
		seen[c] = true
		if num != 0 {
			files[c] = num
		}
		if at != 0 {
			added[c] = at
		}
		if name != "" {
			names[c] = name
		}
	}
	for c := range blobs {
		if seen[c] {
			continue
		}
		// A pin without a record (not written by this store): take the
		// size from the UnixFS root.
		size, err := s.fileSize(ctx, c)
		if err != nil {
			return fmt.Errorf("blobs: size of pinned %s: %w", c, err)
		}
		blobs[c] = size
	}
	var used uint64
	refs := make(map[string]int32)
	for c, size := range blobs {
		used += size // each ≤ 2^53 and few: no overflow in practice
		bl, err := s.dagBlocks(ctx, c)
		if err != nil {
			return fmt.Errorf("blobs: blocks of pinned %s: %w", c, err)
		}
		for _, h := range bl {
			refs[h]++
		}
	}
	s.mu.Lock()
	s.mu.blobs, s.mu.used, s.mu.refs, s.mu.files, s.mu.added, s.mu.names = blobs, used, refs, files, added, names
	s.mu.Unlock()
	return nil
}

// sweep is the garbage collection at open: it deletes every block no
// pinned blob reaches (the leftovers of fetches cut off by a crash or a
// restart, ADR 0029), so that an incomplete blob is never served.
func (s *Store) sweep(ctx context.Context) error {
	keys, err := s.bstore.AllKeysChan(ctx)
	if err != nil {
		return fmt.Errorf("blobs: listing blocks: %w", err)
	}
	// The inner nodes of partial blobs are kept with them (ADR 0054).
	keep := s.partialsNodes(ctx)
	var drop []cid.Cid
	s.mu.Lock()
	for c := range keys {
		if s.mu.refs[string(c.Hash())] == 0 && !keep[string(c.Hash())] {
			drop = append(drop, c)
		}
	}
	s.mu.Unlock()
	for _, c := range drop {
		if err := s.bstore.DeleteBlock(ctx, c); err != nil {
			return fmt.Errorf("blobs: deleting unreferenced block %s: %w", c, err)
		}
	}
	return nil
}

// dagBlocks returns the multihashes (as strings, the blockstore's keys) of
// the distinct blocks of the DAG under root, reading only the dag-pb
// nodes from the store: a raw leaf is known by its CID alone. A missing
// node is an error wrapping ErrIncomplete.
func (s *Store) dagBlocks(ctx context.Context, root cid.Cid) ([]string, error) {
	seen := map[string]struct{}{}
	var out []string
	stack := []cid.Cid{root}
	for len(stack) > 0 {
		c := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		h := string(c.Hash())
		if _, ok := seen[h]; ok {
			continue
		}
		seen[h] = struct{}{}
		out = append(out, h)
		if c.Type() == cid.Raw {
			continue
		}
		nd, err := s.dag.Get(ctx, c)
		if err != nil {
			if ipld.IsNotFound(err) {
				return nil, fmt.Errorf("%w: block %s missing", ErrIncomplete, c)
			}
			return nil, err
		}
		for _, l := range nd.Links() {
			stack = append(stack, l.Cid)
		}
	}
	return out, nil
}

func (s *Store) fileSize(ctx context.Context, c cid.Cid) (uint64, error) {
	nd, err := s.dag.Get(ctx, c)
	if err != nil {
		return 0, err
	}
	r, err := unixfsio.NewDagReader(ctx, nd, s.dag)
	if err != nil {
		return 0, err
	}
	return r.Size(), nil
}

func metaKey(c cid.Cid) ds.Key {
	return ds.NewKey(metaPrefix).ChildString(c.String())
}

// metaValue is a size record's value: the file size, the number of the
// blob's data file (ADR 0037) and the time it was added in Unix
// milliseconds, each an unsigned varint; then, for a blob its add named
// (docs/adr/0051), the name's length in bytes as an unsigned varint and
// its bytes. A record written before ADR 0037 has the size alone; one
// written before the time was kept, the size and the number; one without
// a name, the three numbers (as before names were kept).
func metaValue(size, num uint64, added int64, name string) []byte {
	v := binary.AppendUvarint(binary.AppendUvarint(nil, size), num)
	v = binary.AppendUvarint(v, uint64(max(added, 0)))
	if name == "" {
		return v
	}
	return append(binary.AppendUvarint(v, uint64(len(name))), name...)
}

// parseMeta reads a size record; num is 0 for a record of the size alone,
// added 0 for one without the time, name "" for one without a name. A
// name longer than eventlog.MaxBlobNameBytes, or failing
// eventlog.CheckBlobName, makes the record bad (not ok), as does a byte
// past the name.
func parseMeta(v []byte) (size, num uint64, added int64, name string, ok bool) {
	size, n := binary.Uvarint(v)
	if n <= 0 || size > core.MaxSafeInt {
		return 0, 0, 0, "", false
	}
	if n == len(v) {
		return size, 0, 0, "", true
	}
	num, m := binary.Uvarint(v[n:])
	if m <= 0 {
		return 0, 0, 0, "", false
	}
	if n += m; n == len(v) {
		return size, num, 0, "", true
	}
	at, m := binary.Uvarint(v[n:])
	if m <= 0 || at > math.MaxInt64 {
		return 0, 0, 0, "", false
	}
	if n += m; n == len(v) {
		return size, num, int64(at), "", true
	}
	l, m := binary.Uvarint(v[n:])
	if m <= 0 || l == 0 || l > eventlog.MaxBlobNameBytes || uint64(len(v)-n-m) != l {
		return 0, 0, 0, "", false
	}
	name = string(v[n+m:])
	if eventlog.CheckBlobName(name) != nil {
		return 0, 0, 0, "", false
	}
	return size, num, int64(at), name, true
}

// Dropped returns the blobs OpenStore removed because the node had
// stopped before their data file was synced and a leaf was then missing
// or damaged (ADR 0037). The node logs them; a fetch gets them again.
func (s *Store) Dropped() []cid.Cid {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.mu.dropped)
}

// QuotaUsed returns the bytes the quota counts: the sum of the file sizes
// of the pinned blobs.
func (s *Store) QuotaUsed() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.used
}

// Has reports whether the blob c is complete (pinned) in the store.
func (s *Store) Has(c cid.Cid) (complete bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.mu.blobs[c]
	return ok, nil
}

// SizeOf returns the file size of the blob c and whether it is complete
// (pinned) here.
func (s *Store) SizeOf(c cid.Cid) (size uint64, complete bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	size, complete = s.mu.blobs[c]
	return size, complete
}

// List returns the pinned blobs, in no particular order.
func (s *Store) List() []BlobInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]BlobInfo, 0, len(s.mu.blobs))
	for c, size := range s.mu.blobs {
		b := BlobInfo{CID: c, Size: size}
		if at, ok := s.mu.added[c]; ok {
			b.Added = time.UnixMilli(at)
		}
		b.Name = s.mu.names[c]
		out = append(out, b)
	}
	return out
}

// Import stores the bytes of r as a blob (docs/design.md §9: UnixFS v1 file,
// CIDv1, raw leaves, BLAKE3, ChunkSize chunks, balanced layout; a blob of
// one chunk is a single raw block) and pins it. It returns the root CID
// and the size, the number of bytes read.
//
// Bounds (ADR 0027: blobs.max_blob_bytes and blobs.quota_bytes, exactly):
// Import reads at most min(MaxBlobBytes, QuotaBytes-QuotaUsed())+1 bytes;
// if r holds more it fails with an error wrapping ErrTooLarge or ErrQuota.
// On any failure the blocks this import wrote that were not in the store
// before are deleted, nothing is pinned and the quota is unchanged. A
// blob already pinned is not counted twice.
func (s *Store) Import(ctx context.Context, r io.Reader) (cid.Cid, uint64, error) {
	return s.importNamed(ctx, r, "")
}

// importNamed is Import that records name (checked already) as the
// blob's name: in its size record for a new blob, in place of the name
// it had for one already pinned (unless name is "").
func (s *Store) importNamed(ctx context.Context, r io.Reader, name string) (cid.Cid, uint64, error) {
	if s.opts.ReadOnly {
		return cid.Undef, 0, errors.New("blobs: import: the store is read-only")
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()

	lr := s.importBound()
	lr.r = r
	file, err := s.newDataFile(false)
	if err != nil {
		return cid.Undef, 0, fmt.Errorf("blobs: import: %w", err)
	}
	rec := newImportDAG(s, file)
	params := helpers.DagBuilderParams{
		Maxlinks:   helpers.DefaultLinksPerBlock,
		RawLeaves:  true,
		CidBuilder: CIDBuilder,
		Dagserv:    rec,
	}
	var root ipld.Node
	db, err := params.New(chunk.NewSizeSplitter(lr, ChunkSize))
	if err == nil {
		root, err = balanced.Layout(db)
	}
	if werr := rec.wait(); err == nil {
		err = werr
	}
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		rec.undo()
		if errors.Is(err, ErrTooLarge) || errors.Is(err, ErrQuota) {
			return cid.Undef, 0, err // says what and why already
		}
		return cid.Undef, 0, fmt.Errorf("blobs: import: %w", err)
	}
	c, size := root.Cid(), lr.n

	s.mu.Lock()
	_, already := s.mu.blobs[c]
	s.mu.Unlock()
	if already {
		rec.undo() // the blob's own file holds every leaf already
		if err := s.rename(ctx, c, name); err != nil {
			return cid.Undef, 0, err
		}
		return c, size, nil
	}
	if err := s.pinSealed(ctx, root, size, file, name); err != nil {
		rec.undo()
		return cid.Undef, 0, err
	}
	if err := s.addPinned(ctx, c, size, file.num, nil); err != nil {
		return cid.Undef, 0, err
	}
	s.dropPinnedPartial(ctx, c)
	return c, size, nil
}

// rename makes name the name of the pinned blob c, rewriting its size
// record with the same size, data file and time; a name of "", or the
// one c has, changes nothing. REQUIRES: writeMu held, c pinned.
func (s *Store) rename(ctx context.Context, c cid.Cid, name string) error {
	s.mu.Lock()
	size, num, at, old := s.mu.blobs[c], s.mu.files[c], s.mu.added[c], s.mu.names[c]
	s.mu.Unlock()
	if name == "" || name == old {
		return nil
	}
	if err := s.dstore.Put(ctx, metaKey(c), metaValue(size, num, at, name)); err != nil {
		return fmt.Errorf("blobs: size record: %w", err)
	}
	if err := s.dstore.Sync(ctx, metaKey(c)); err != nil {
		return fmt.Errorf("blobs: sync: %w", err)
	}
	s.mu.Lock()
	s.mu.names[c] = name
	s.mu.Unlock()
	return nil
}

// CheckImport reports whether Import would take a blob of size bytes now:
// nil, or the error wrapping ErrTooLarge or ErrQuota that Import would
// fail with, saying so before a byte is read. It is advice for a caller
// that knows the size (a file's, a request's Content-Length): Import
// enforces the bound itself, since a file may grow and the quota's room
// change meanwhile.
func (s *Store) CheckImport(size uint64) error {
	b := s.importBound()
	if size > b.limit {
		return fmt.Errorf("%w: %s, more than %s", b.err, sizeText(size), b.what)
	}
	return nil
}

// importBound returns the reader bound of an import (without its reader):
// min(MaxBlobBytes, the quota's room) bytes, failing with ErrTooLarge or
// ErrQuota past it.
func (s *Store) importBound() *boundedReader {
	s.mu.Lock()
	used := s.mu.used + s.mu.reserved
	s.mu.Unlock()
	b := &boundedReader{limit: min(s.opts.MaxBlobBytes, core.MaxSafeInt), err: ErrTooLarge,
		what: boundText("blobs.max_blob_bytes", s.opts.MaxBlobBytes)}
	if free := s.opts.QuotaBytes - min(used, s.opts.QuotaBytes); free < b.limit {
		b.limit, b.err = free, ErrQuota
		b.what = fmt.Sprintf("the %s left of %s, %s being in use or reserved",
			humanize.Bytes(free), boundText("blobs.quota_bytes", s.opts.QuotaBytes), humanize.Bytes(used))
	}
	return b
}

// addPinned records the newly pinned blob c of size bytes, its leaves in
// data file num: in the list, the quota and the block references; the
// room of r (nil for none) moves into the quota used in the same step, so
// that no other Reserve sees it free in between. REQUIRES: writeMu held,
// c pinned.
func (s *Store) addPinned(ctx context.Context, c cid.Cid, size, num uint64, r *Reservation) error {
	bl, err := s.dagBlocks(ctx, c)
	if err != nil {
		return fmt.Errorf("blobs: blocks of %s: %w", c, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if r != nil {
		r.releaseLocked()
	}
	s.mu.blobs[c] = size
	s.mu.files[c] = num
	s.mu.used += size
	for _, h := range bl {
		s.mu.refs[h]++
	}
	if s.opts.Pinned != nil {
		s.opts.Pinned(c)
	}
	return nil
}

// pinSealed seals file, the data file of the blob root of size bytes,
// and pins the blob with its unsynced record (ADR 0037): the pin returns
// once the leaves are in the page cache, and file is synced in the
// background (syncLater); if the node stops before that, the blob is
// checked at the next open. name, "" for none, goes in its size record.
// On failure the unsynced record is deleted and the caller discards file.
func (s *Store) pinSealed(ctx context.Context, root ipld.Node, size uint64, file *dataFile, name string) error {
	if err := file.seal(); err != nil {
		return fmt.Errorf("blobs: %s: %w", root.Cid(), err)
	}
	b := s.db.NewBatch()
	err := errors.Join(s.dropSynced(b), b.Set(unsyncedKey(file.num), nil, nil), b.Commit(pebble.NoSync), b.Close())
	if err != nil { // synced with the pin
		return fmt.Errorf("blobs: %s: %w", root.Cid(), err)
	}
	if err := s.pinRoot(ctx, root, size, file.num, name); err != nil {
		_ = s.db.Delete(unsyncedKey(file.num), pebble.NoSync)
		return err
	}
	s.syncLater(file)
	return nil
}

// pinRoot writes the size record (with the number of the blob's data
// file, already synced, the time added and name, "" for none), then the
// pin, then syncs: the pin marks the blob complete, and a record without
// a pin is dropped at open, with the data file and location records it
// names.
func (s *Store) pinRoot(ctx context.Context, root ipld.Node, size, num uint64, name string) error {
	c := root.Cid()
	now := time.Now
	if s.opts.Now != nil {
		now = s.opts.Now
	}
	added := now().UnixMilli()
	if err := s.dstore.Put(ctx, metaKey(c), metaValue(size, num, added, name)); err != nil {
		return fmt.Errorf("blobs: size record: %w", err)
	}
	if err := s.pinner.Pin(ctx, root, true, ""); err != nil {
		_ = s.dstore.Delete(ctx, metaKey(c))
		return fmt.Errorf("blobs: pin: %w", err)
	}
	if err := s.pinner.Flush(ctx); err != nil {
		return fmt.Errorf("blobs: pin flush: %w", err)
	}
	if err := s.dstore.Sync(ctx, ds.NewKey("/")); err != nil {
		return fmt.Errorf("blobs: sync: %w", err)
	}
	s.mu.Lock()
	s.mu.added[c] = added
	if name != "" {
		s.mu.names[c] = name
	}
	s.mu.Unlock()
	return nil
}

// Remove unpins the blob c, drops it from the list and the quota, and
// deletes at once the blocks of its DAG that no other pinned blob
// reaches (reference-counted garbage collection, ADR 0029), so that a
// removed blob is neither served nor kept on disk. A partial blob (ADR
// 0054) is removed likewise: its data file, location records, record and
// inner nodes no other blob holds; while a fetch of it runs, an error
// wrapping ErrFetching. Removing a blob neither pinned nor partial
// returns an error wrapping ErrIncomplete. A crash half way leaves blocks
// that the sweep at the next open deletes.
func (s *Store) Remove(ctx context.Context, c cid.Cid) error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	s.mu.Lock()
	size, ok := s.mu.blobs[c]
	num := s.mu.files[c]
	s.mu.Unlock()
	if !ok {
		// A partial blob (ADR 0054) is removed too.
		if found, err := s.removePartial(ctx, c); found {
			return err
		}
		return fmt.Errorf("%w: %s", ErrIncomplete, c)
	}
	bl, err := s.dagBlocks(ctx, c)
	if err != nil {
		return fmt.Errorf("blobs: blocks of %s: %w", c, err)
	}
	if err := s.pinner.Unpin(ctx, c, true); err != nil {
		return fmt.Errorf("blobs: unpin: %w", err)
	}
	if err := s.pinner.Flush(ctx); err != nil {
		return fmt.Errorf("blobs: pin flush: %w", err)
	}
	var garbage []string
	s.mu.Lock()
	delete(s.mu.blobs, c)
	delete(s.mu.files, c)
	delete(s.mu.added, c)
	delete(s.mu.names, c)
	s.mu.used -= size
	for _, h := range bl {
		if s.mu.refs[h]--; s.mu.refs[h] <= 0 {
			delete(s.mu.refs, h)
			garbage = append(garbage, h)
		}
	}
	s.mu.Unlock()
	if num != 0 {
		if err := s.removeData(num, bl); err != nil {
			return fmt.Errorf("blobs: deleting the data file: %w", err)
		}
	}
	for _, h := range garbage {
		if err := s.bstore.DeleteBlock(ctx, cid.NewCidV1(cid.Raw, mh.Multihash(h))); err != nil {
			return fmt.Errorf("blobs: deleting block: %w", err)
		}
	}
	// After the unpin: a record left by a crash here is dropped at open.
	if err := s.dstore.Delete(ctx, metaKey(c)); err != nil {
		return fmt.Errorf("blobs: size record: %w", err)
	}
	if err := s.dstore.Sync(ctx, ds.NewKey("/")); err != nil {
		return fmt.Errorf("blobs: sync: %w", err)
	}
	return nil
}

// Export writes the file of blob c to w, only if c is complete (pinned;
// else an error wrapping ErrIncomplete) and its UnixFS file size is
// exactly size (else an error wrapping ErrSizeMismatch), as ADR 0014
// requires before a blob is used. Nothing is written to w on either
// error. It reads through the offline DAG service: no network.
func (s *Store) Export(ctx context.Context, c cid.Cid, size uint64, w io.Writer) error {
	s.mu.Lock()
	have, ok := s.mu.blobs[c]
	s.mu.Unlock()
	if !ok {
		return fmt.Errorf("%w: %s", ErrIncomplete, c)
	}
	if err := exactSize(c, "is", have, size); err != nil {
		return err
	}
	// The walk of a stream (stream.go), over a fetch that has ended: each
	// block read once, in file order, each leaf checked against its CID.
	ended := make(chan struct{})
	close(ended)
	var none error
	st := &stream{st: s, w: w, root: c, size: size, visits: 1, fetched: ended, ferr: &none, checked: true}
	if err := st.node(ctx, item{c: c, span: size}); err != nil {
		return fmt.Errorf("blobs: export %s: %w", c, err)
	}
	return exactSize(c, "yielded", st.n, size)
}

// boundedReader reads at most limit bytes and fails with err on the byte
// after: it stops reading at limit+1.
type boundedReader struct {
	r     io.Reader
	n     uint64 // bytes returned so far, ≤ limit
	limit uint64
	err   error
	what  string // the bound, as a refusal says it: "blobs.max_blob_bytes = 67108864 (64.0 MiB)"
}

func (b *boundedReader) Read(p []byte) (int, error) {
	if room := b.limit - b.n + 1; uint64(len(p)) > room {
		p = p[:room] // one byte past the limit at most, to detect it
	}
	k, err := b.r.Read(p)
	if b.n+uint64(k) > b.limit {
		return 0, fmt.Errorf("%w: more than %s", b.err, b.what)
	}
	b.n += uint64(k)
	return k, err
}

// importDAG is the DAG service of an import: each raw leaf goes to the
// import's data file, written by a goroutine of its own so that the
// writes overlap the reading and hashing of the next chunks (on two cores
// the import takes about as long as the longer of the two, not their
// sum), every other node to pebble; the nodes added that the blockstore
// did not hold before are remembered, so that a failed import can delete
// them.
type importDAG struct {
	ipld.DAGService
	bs    blockstore.Blockstore
	file  *dataFile
	added []cid.Cid

	leaves chan ipld.Node // to the writer; closed by wait
	werr   chan error     // the writer's first error, once it ends
}

// importQueue is how many leaves (chunks, up to ChunkSize each) wait for
// an import's writer, at most.
const importQueue = 4

func newImportDAG(s *Store, file *dataFile) *importDAG {
	r := &importDAG{DAGService: s.dag, bs: s.bstore, file: file,
		leaves: make(chan ipld.Node, importQueue), werr: make(chan error, 1)}
	go func() {
		var err error
		for nd := range r.leaves {
			if err == nil {
				err = file.put(nd.Cid(), nd.RawData())
			}
		}
		r.werr <- err
	}()
	return r
}

// wait ends the writer once it has written every leaf and returns its
// error. Called once.
func (r *importDAG) wait() error {
	close(r.leaves)
	return <-r.werr
}

func (r *importDAG) Add(ctx context.Context, nd ipld.Node) error {
	if nd.Cid().Type() == cid.Raw {
		// The chunker gives each chunk a buffer of its own, so the
		// writer may hold it while the next is read.
		r.leaves <- nd
		return nil
	}
	have, err := r.bs.Has(ctx, nd.Cid())
	if err != nil {
		return err
	}
	if err := r.DAGService.Add(ctx, nd); err != nil {
		return err
	}
	if !have {
		r.added = append(r.added, nd.Cid())
	}
	return nil
}

func (r *importDAG) AddMany(ctx context.Context, nds []ipld.Node) error {
	for _, nd := range nds {
		if err := r.Add(ctx, nd); err != nil {
			return err
		}
	}
	return nil
}

// undo deletes the data file and the recorded nodes. REQUIRES:
// Store.writeMu held, so no other import can have started using them.
func (r *importDAG) undo() {
	_ = r.file.discard()
	for _, c := range r.added {
		_ = r.bs.DeleteBlock(context.Background(), c)
	}
}

// pinDAG is the DAG service the pinner walks when it pins a blob
// recursively. A raw leaf has no links, so it is answered by a stub
// without reading its megabyte: Import wrote every leaf itself, and
// Complete checks that every leaf is present (hasKey) before it pins.
type pinDAG struct{ ipld.DAGService }

func (d pinDAG) Get(ctx context.Context, c cid.Cid) (ipld.Node, error) {
	if c.Type() != cid.Raw {
		return d.DAGService.Get(ctx, c)
	}
	// NewBlockWithCid does not hash the (empty) data: the stub stands for
	// the block only by its CID, which is all the pinner reads of it.
	b, err := blocks.NewBlockWithCid(nil, c)
	if err != nil {
		return nil, err
	}
	return &merkledag.RawNode{Block: b}, nil
}

// blockKey is the pebble key of the block with multihash h: boxo's
// blockstore keeps it under "/blocks/<base32 multihash>", inside the store's
// namespace (TestBlockKey holds this to the blockstore's own layout).
func blockKey(h mh.Multihash) []byte {
	return ds.NewKey(KeyPrefix).Child(blockstore.BlockPrefix).Child(dshelp.MultihashToDsKey(h)).Bytes()
}

// hasKey reports whether the block with multihash h is in pebble, by its
// key alone: the value (an inner node; before ADR 0037, a chunk of up to
// 1 MiB) is not read.
func (s *Store) hasKey(h mh.Multihash) (bool, error) {
	k := blockKey(h)
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: k, UpperBound: append(append([]byte(nil), k...), 0)})
	if err != nil {
		return false, err
	}
	ok := it.First()
	return ok, it.Close()
}

// Holds checks that every blob of refs is complete here and of the size
// it declares: what an event of this node's names it the provider of (a
// provider that does not serve what it names is backed off by its peers,
// ADR 0014). The error names the first blob that is not.
func (s *Store) Holds(refs []eventlog.BlobRef) error {
	for _, b := range refs {
		c, err := cid.Decode(b.CID)
		if err != nil {
			return fmt.Errorf("blob %q is not a CID", b.CID)
		}
		size, ok := s.SizeOf(c)
		switch {
		case !ok:
			return fmt.Errorf("blob %s is not stored here; add it first (blob add)", b.CID)
		case size != b.Size:
			return fmt.Errorf("blob %s is %d bytes here; the event declares %d", b.CID, size, b.Size)
		}
	}
	return nil
}

// CIDs returns the roots of the complete blobs (what the node provides on
// the DHT).
func (s *Store) CIDs() []cid.Cid {
	var out []cid.Cid
	for _, b := range s.List() {
		out = append(out, b.CID)
	}
	return out
}

// ImportSized is Import of a blob whose size the caller knows (a file's,
// a request's Content-Length), size bytes, checked first (CheckImport) so
// that a blob over the bounds is refused before a byte is read; a size of
// -1 is not known. name, "" for none, is the name the operator gives the
// blob (BlobInfo.Name, docs/adr/0051), kept in its size record: checked
// first by the rule of an event's blob name (eventlog.CheckBlobName, at
// most eventlog.MaxBlobNameBytes bytes), a bad one an error wrapping
// ErrBadName with nothing read. A blob already stored takes the new name
// in place of its old one (an empty name keeps the old).
func (s *Store) ImportSized(ctx context.Context, r io.Reader, size int64, name string) (cid.Cid, uint64, error) {
	if err := eventlog.CheckBlobName(name); err != nil {
		return cid.Undef, 0, fmt.Errorf("%w: %w", ErrBadName, err)
	}
	if size >= 0 {
		if err := s.CheckImport(uint64(size)); err != nil {
			return cid.Undef, 0, err
		}
	}
	return s.importNamed(ctx, r, name)
}
