package peercache

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/go-json-experiment/json"
	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/wats-network/wats/core"
)

// keyPrefix is the prefix of every key this package writes in the shared
// pebble database; the rest of the key is the peer ID's raw bytes.
const keyPrefix = "p/"

// MaxAddrs is the number of addresses kept per peer (docs/design.md §8: at most 16),
// the newest first. Addresses come from the peer's own hello, so the bound
// keeps one peer from growing its record without limit.
const MaxAddrs = 16

var (
	// ErrClosed is returned by writes after Close.
	ErrClosed = errors.New("peercache: closed")
	// ErrNotFound is returned by Forget for a peer the cache does not hold.
	ErrNotFound = errors.New("peercache: not found")
	// ErrInvalidOptions is wrapped by Open for options out of
	// range.
	ErrInvalidOptions = errors.New("peercache: invalid options")
)

// Record is what the node remembers of one peer. Times are UTC; a zero time
// means "never".
//
// Records written by older versions decode: unknown JSON fields are ignored
// and missing ones are zero (the counts of a record written before they
// existed are 0).
type Record struct {
	// Addrs are the peer's multiaddrs, newest first, at most MaxAddrs.
	Addrs []string `json:"addrs,omitempty"`
	// RemoteAddr is the remote multiaddr of the node's last connection to
	// the peer, as the node saw it (Addrs are what the peer's hello
	// claims): eviction groups records by it (ADR 0030). "" when unknown
	// (a record written before it existed).
	RemoteAddr string `json:"remote_addr,omitempty"`
	// FirstSeen and LastSeen bound the time the node has been connected to
	// the peer, across runs. LastSeen, then FirstSeen, orders eviction.
	FirstSeen time.Time `json:"first_seen"`
	LastSeen  time.Time `json:"last_seen"`
	// LastHello is when the peer last completed hello with this node.
	LastHello time.Time `json:"last_hello"`
	// Agent and Features are as the peer's last hello gave them.
	Agent    string   `json:"agent,omitempty"`
	Features []string `json:"features,omitempty"`
	// Cursor is the position in the peer's log up to which this node has
	// synced (docs/design.md §5): the next sync asks for events after it.
	Cursor core.Cursor `json:"cursor"`

	// Counts are the peer's value history (core.Counts), across runs,
	// kept by Add and Count and written in batches.
	core.Counts `json:",inline"`

	// LastUseful is when the peer last gave events or blobs.
	LastUseful time.Time `json:"last_useful"`
	// Value says how the peer first showed value, which earned it this
	// record (ADR 0030): ValueConnected, ValueEvents, ValueBlobs,
	// ValueSolved, or ValueMigrated for a record an older version wrote.
	Value string `json:"value,omitempty"`

	// V is the record's format: RecordVersion for a record this version
	// wrote; 0 for one written before value history (see Open).
	V int `json:"v,omitempty"`
}

// RecordVersion is the format of the records this version writes: since it,
// a record exists only for a peer that showed value (ADR 0030).
const RecordVersion = 2

// How a peer first showed value (Record.Value).
const (
	ValueConnected = "connected" // stayed connected after hello for a while
	ValueEvents    = "events"    // delivered valid events this node lacked
	ValueBlobs     = "blobs"     // served blobs this node lacked
	ValueSolved    = "solved"    // solved a challenge
	ValueMigrated  = "migrated"  // an older version's record that held a sync cursor or solutions
)

// Counter names one of the counts of a Record, for Count.
type Counter int

// The counters of a Record.
const (
	CountServed     Counter = iota // Record.Served
	CountRefused                   // Record.Refused
	CountChallenged                // Record.Challenged
	CountSolved                    // Record.Solved
	CountMiss                      // Record.Misses
)

// DamagedRecord describes a record Open could not decode; it was skipped and
// left in the database (a later Update of the same peer overwrites it, and
// Forget deletes it).
type DamagedRecord struct {
	Key []byte
	Err error
}

// Entry is one record as All lists it.
type Entry struct {
	ID     peer.ID `json:"id"`
	Record `json:",inline"`
	// MetInEarlierRun is whether the record was loaded at Open (see
	// Cache.MetInEarlierRun). Whether the peer is reputed is the node's
	// call (Cache.Reputed).
	MetInEarlierRun bool `json:"met_in_earlier_run"`
}

// Capacity bounds (docs/design.md §8, ADR 0026: peercache.max_peers).
const (
	// DefaultMaxPeers is the capacity when Options.MaxPeers is 0.
	DefaultMaxPeers = 10_000
	// MaxMaxPeers is the largest capacity accepted: every record lives in
	// memory (a few hundred bytes each), so a million is some hundreds of
	// MB, more than a node has reason to remember.
	MaxMaxPeers = 1_000_000
)

// DefaultFlushInterval is the flush interval Start uses for a non-positive
// interval: a kill -9 loses at most the counts of the last interval (ADR
// 0026: "at most the last seconds of counters").
const DefaultFlushInterval = 5 * time.Second

// Options configure a Cache (Open). The zero value, or nil, is the
// defaults; EnsureDefaults fills them in and Validate checks the ranges,
// as pebble's Options do.
type Options struct {
	// MaxPeers is the number of records kept, 1..MaxMaxPeers; 0 means
	// DefaultMaxPeers. Adding a record beyond it evicts by value (evict.go;
	// docs/design.md §8.3, ADR 0030 §4).
	MaxPeers int
	// FlushErrors, if set, is called with each error of a background flush
	// (Start). The records stay dirty and the next flush retries them.
	FlushErrors func(error)
	// Room, if set, is asked before each write of n bytes to the database;
	// its error (the node's: a full disk, ADR 0044) fails the write, and
	// the records stay dirty for the next flush.
	Room func(n int) error
}

// room asks Options.Room whether b may be written.
func (c *Cache) room(b *pebble.Batch) error {
	if c.opts.Room == nil {
		return nil
	}
	return c.opts.Room(b.Len())
}

// Validate reports options out of range, wrapping ErrInvalidOptions. A nil
// o is valid.
func (o *Options) Validate() error {
	if o == nil {
		return nil
	}
	if o.MaxPeers < 0 || o.MaxPeers > MaxMaxPeers {
		return fmt.Errorf("%w: max_peers %d out of range 1..%d (0 for the default %d)",
			ErrInvalidOptions, o.MaxPeers, MaxMaxPeers, DefaultMaxPeers)
	}
	return nil
}

// EnsureDefaults sets each zero field of o to its default and returns o; on
// a nil o it returns new Options of the defaults.
func (o *Options) EnsureDefaults() *Options {
	if o == nil {
		o = &Options{}
	}
	if o.MaxPeers == 0 {
		o.MaxPeers = DefaultMaxPeers
	}
	return o
}

// entry is the in-memory state of one record.
type entry struct {
	id  peer.ID
	rec Record
	// metEarlier: loaded at Open.
	metEarlier bool
	// dirty: changed by Count since it was last written; then it is in
	// Cache.mu.dirty exactly once.
	dirty bool
	// gone: evicted or forgotten; a flush skips it.
	gone bool
}

// Cache is the persisted peer cache. It is safe for concurrent use.
//
// Locking: writeMu serializes every pebble write (Update, Flush, Forget,
// Close), so that the database receives the versions of a record in the
// order they were taken; mu guards the in-memory state. Lock order: writeMu,
// then mu. Count takes only mu, and never writes.
type Cache struct {
	db   *pebble.DB
	opts Options

	writeMu sync.Mutex

	mu struct {
		sync.Mutex
		// records holds every known peer. INVARIANT: each entry's record
		// has been written to db, except for the changes of entries with
		// dirty set, and of an Update whose write failed (then dirty too).
		records map[peer.ID]*entry
		// dirty lists the entries with dirty set; spare is the previous
		// list, reused by the next flush to avoid allocation.
		dirty, spare []*entry
		evicted      uint64
		// migrated counts the records of an older version dropped at
		// Open for showing no value.
		migrated uint64
		closed   bool
	}

	// flusher state, see Start and Close.
	startOnce, stopOnce sync.Once
	stop                chan struct{}
	done                chan struct{}
}

// Open loads every record from db, configured by opts (nil: the defaults;
// opts itself is not changed). Records that fail to decode
// are skipped and returned in damaged, so that the caller can report them
// once; they never make Open fail. Records of an older version (before
// value history, ADR 0030), when a hello was enough for a record, are kept
// only if they show value, a sync cursor or solved challenges, and marked
// ValueMigrated; the others are deleted (Migrated counts them), so that a
// flood of ids that once said hello does not come back as "met in an
// earlier run". If more records than opts.MaxPeers remain, the least
// valuable are evicted (see evictLocked) down to it. Only invalid options
// or an I/O error from pebble make it fail.
func Open(db *pebble.DB, opts *Options) (c *Cache, damaged []DamagedRecord, err error) {
	if err := opts.Validate(); err != nil {
		return nil, nil, err
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	c = &Cache{db: db, opts: *o.EnsureDefaults(), stop: make(chan struct{}), done: make(chan struct{})}
	c.mu.records = make(map[peer.ID]*entry)
	it, err := db.NewIter(&pebble.IterOptions{
		LowerBound: []byte(keyPrefix),
		UpperBound: core.PrefixEnd([]byte(keyPrefix)),
	})
	if err != nil {
		return nil, nil, fmt.Errorf("peercache: open: %w", err)
	}
	b := db.NewBatch()
	defer b.Close()
	for it.First(); it.Valid(); it.Next() {
		k := append([]byte(nil), it.Key()...)
		id, err := peer.IDFromBytes(k[len(keyPrefix):])
		if err != nil {
			damaged = append(damaged, DamagedRecord{Key: k, Err: fmt.Errorf("bad peer id: %w", err)})
			continue
		}
		e := &entry{id: id, metEarlier: true}
		if err := json.Unmarshal(it.Value(), &e.rec); err != nil {
			damaged = append(damaged, DamagedRecord{Key: k, Err: err})
			continue
		}
		if e.rec.V < RecordVersion {
			if e.rec.Cursor == 0 && e.rec.Solved == 0 {
				c.mu.migrated++
				_ = b.Delete(k, nil) // fails only for a closed batch
				continue
			}
			e.rec.Value, e.rec.V = ValueMigrated, RecordVersion
			e.dirty = true
			c.mu.dirty = append(c.mu.dirty, e)
		}
		e.rec.trim()
		c.mu.records[id] = e
	}
	err = it.Error()
	if cerr := it.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, nil, fmt.Errorf("peercache: open: %w", err)
	}
	if over := len(c.mu.records) - c.opts.MaxPeers; over > 0 {
		c.evictLocked(b, over)
	}
	if !b.Empty() {
		if err := b.Commit(pebble.Sync); err != nil {
			return nil, nil, fmt.Errorf("peercache: open: evict: %w", err)
		}
	}
	return c, damaged, nil
}

// Get returns a copy of the record of id, and whether there is one. The
// counts include those not yet flushed.
func (c *Cache) Get(id peer.ID) (Record, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.mu.records[id]
	if !ok {
		return Record{}, false
	}
	return e.rec.clone(), true
}

// MetInEarlierRun reports whether id was in the cache when it was opened
// (and has not been evicted or forgotten since).
func (c *Cache) MetInEarlierRun(id peer.ID) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.mu.records[id]
	return ok && e.metEarlier
}

// Len returns the number of peers in the cache.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.mu.records)
}

// Migrated returns the number of records of an older version that Open
// deleted for showing no value.
func (c *Cache) Migrated() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mu.migrated
}

// Has reports whether id has a record.
func (c *Cache) Has(id peer.ID) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.mu.records[id]
	return ok
}

// Evicted returns the number of records evicted for capacity since Open,
// including those evicted by Open itself.
func (c *Cache) Evicted() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mu.evicted
}

// Update applies fn to the record of id (a new, zero record if there is
// none) and writes it, pending counts included, as one Set. With durable
// set, the write is synced before Update returns (the sync cursor must
// survive a crash, docs/design.md §10); otherwise it survives a kill -9 of the
// process but a machine crash may lose it.
//
// A new record beyond the capacity first evicts the least valuable
// existing ones (never the record being added; see evictLocked), in the
// same batch. Only a peer that showed value should get one (ADR 0030):
// the caller decides.
//
// fn runs under the cache's lock: it must not call the Cache. It may keep
// or replace r's slices but must not retain them.
func (c *Cache) Update(id peer.ID, durable bool, fn func(*Record)) error {
	if err := c.lockOpen(); err != nil {
		return err
	}
	defer c.writeMu.Unlock()
	b := c.db.NewBatch()
	defer b.Close()
	e, ok := c.mu.records[id]
	if !ok {
		if len(c.mu.records) >= c.opts.MaxPeers {
			c.evictLocked(b, evictionBatch(c.opts.MaxPeers))
		}
		e = &entry{id: id}
		c.mu.records[id] = e
	}
	fn(&e.rec)
	e.rec.trim()
	e.rec.V = RecordVersion
	// The write below carries the pending counts; if it fails, the entry
	// is marked dirty again so that a flush retries it.
	e.dirty = false
	snap := e.rec // shallow: slices change only under writeMu, which we hold
	c.mu.Unlock()

	err := c.setRecord(b, id, &snap)
	if err == nil {
		err = c.room(b)
	}
	if err == nil {
		opt := pebble.NoSync
		if durable {
			opt = pebble.Sync
		}
		err = b.Commit(opt)
	}
	if err != nil {
		c.mu.Lock()
		c.markDirtyLocked(e)
		c.mu.Unlock()
		return fmt.Errorf("peercache: write %s: %w", id, err)
	}
	return nil
}

// Count adds one to counter k of p's record; see Add.
func (c *Cache) Count(p peer.ID, k Counter) {
	var d core.Counts
	switch k {
	case CountServed:
		d.Served = 1
	case CountRefused:
		d.Refused = 1
	case CountChallenged:
		d.Challenged = 1
	case CountSolved:
		d.Solved = 1
	case CountMiss:
		d.Misses = 1
	default:
		return
	}
	c.Add(p, d, time.Time{})
}

// Add adds d to the counts of p's record, in memory only: the record is
// marked dirty and written by the next Flush (or Update of p). When d gives
// events or bytes, LastUseful becomes now (unless now is zero). One map
// lookup under the lock, no allocation and no I/O for a known peer. Only
// peers that already have a record are counted; counts for an unknown
// peer, or after Close, are dropped, so a flood of identities creates
// nothing. The node adds a peer's counts in batches, off its request path.
func (c *Cache) Add(p peer.ID, d core.Counts, now time.Time) {
	if d.IsZero() {
		return
	}
	c.mu.Lock()
	if e, ok := c.mu.records[p]; ok && !c.mu.closed {
		e.rec.Counts = e.rec.Counts.Plus(d)
		if (d.Events > 0 || d.Bytes > 0) && !now.IsZero() {
			e.rec.LastUseful = now.UTC()
		}
		c.markDirtyLocked(e)
	}
	c.mu.Unlock()
}

// REQUIRES: c.mu held.
func (c *Cache) markDirtyLocked(e *entry) {
	if !e.dirty && !e.gone {
		e.dirty = true
		c.mu.dirty = append(c.mu.dirty, e)
	}
}

// Flush writes every dirty record in one pebble batch, one Set per record,
// without sync: the write survives a kill -9 of the process (pebble's WAL),
// but a machine crash may lose the last flushes. It returns ErrClosed after
// Close. On error the records stay dirty and the next Flush retries them.
func (c *Cache) Flush() error {
	return c.flush(pebble.NoSync, false)
}

// lockOpen takes the write lock, then the lock of the records, for a
// write that reads or changes the records first. After Close it returns
// ErrClosed and holds neither; otherwise the caller unlocks c.mu once done
// with the records and c.writeMu once written.
func (c *Cache) lockOpen() error {
	c.writeMu.Lock()
	c.mu.Lock()
	if c.mu.closed {
		c.mu.Unlock()
		c.writeMu.Unlock()
		return ErrClosed
	}
	return nil
}

func (c *Cache) flush(opt *pebble.WriteOptions, closing bool) error {
	if err := c.lockOpen(); err != nil {
		return err
	}
	defer c.writeMu.Unlock()
	if closing {
		c.mu.closed = true
	}
	list := c.mu.dirty
	c.mu.dirty = c.mu.spare[:0]
	c.mu.spare = nil
	snaps := make([]Record, 0, len(list))
	ids := make([]peer.ID, 0, len(list))
	for _, e := range list {
		if e.gone {
			continue
		}
		e.dirty = false
		snaps = append(snaps, e.rec) // shallow: see Update
		ids = append(ids, e.id)
	}
	c.mu.Unlock()

	var err error
	if len(snaps) > 0 {
		b := c.db.NewBatch()
		for i := range snaps {
			if err = c.setRecord(b, ids[i], &snaps[i]); err != nil {
				break
			}
		}
		if err == nil {
			err = c.room(b)
		}
		if err == nil {
			err = b.Commit(opt)
		}
		b.Close()
	}

	c.mu.Lock()
	if err != nil {
		for _, e := range list {
			c.markDirtyLocked(e)
		}
	}
	clear(list) // drop the pointers, so that evicted entries can be freed
	c.mu.spare = list[:0]
	c.mu.Unlock()
	if err != nil {
		return fmt.Errorf("peercache: flush: %w", err)
	}
	return nil
}

// Start runs a background flush every interval (DefaultFlushInterval if
// interval <= 0) until Close. Errors go to Options.FlushErrors. Calls after
// the first, or after Close, do nothing.
func (c *Cache) Start(interval time.Duration) {
	if interval <= 0 {
		interval = DefaultFlushInterval
	}
	c.startOnce.Do(func() {
		t := time.NewTicker(interval)
		go func() {
			defer t.Stop()
			c.flushLoop(t.C, nil)
		}()
	})
}

// flushLoop flushes at each tick until Close, then closes c.done. flushed,
// if set, is called after each flush (for tests, which drive tick).
func (c *Cache) flushLoop(tick <-chan time.Time, flushed func()) {
	defer close(c.done)
	for {
		select {
		case <-c.stop:
			return
		case <-tick:
			if err := c.Flush(); err != nil && !errors.Is(err, ErrClosed) && c.opts.FlushErrors != nil {
				c.opts.FlushErrors(err)
			}
			if flushed != nil {
				flushed()
			}
		}
	}
}

// Close stops the background flusher (waiting for it), writes every dirty
// record in one synced batch, and stops further writes: Update, Flush and
// Forget then return ErrClosed, and Count does nothing. It returns the
// error of that last flush; a second Close returns nil. It does not close
// the database, which the node owns.
func (c *Cache) Close() error {
	c.startOnce.Do(func() { close(c.done) }) // never started: nothing to wait for
	c.stopOnce.Do(func() { close(c.stop) })
	<-c.done
	err := c.flush(pebble.Sync, true)
	if errors.Is(err, ErrClosed) { // closed before
		return nil
	}
	return err
}

// Forget deletes p's record from memory and from the database, synced. A
// record that was damaged (so not in memory) is deleted too. It returns
// ErrNotFound if there is neither, ErrClosed after Close.
func (c *Cache) Forget(p peer.ID) error {
	if err := c.lockOpen(); err != nil {
		return err
	}
	defer c.writeMu.Unlock()
	e, ok := c.mu.records[p]
	if ok {
		c.removeLocked(e)
	}
	c.mu.Unlock()
	if !ok {
		_, closer, err := c.db.Get(key(p))
		if errors.Is(err, pebble.ErrNotFound) {
			return ErrNotFound
		}
		if err != nil {
			return fmt.Errorf("peercache: forget %s: %w", p, err)
		}
		closer.Close()
	}
	if err := c.db.Delete(key(p), pebble.Sync); err != nil {
		return fmt.Errorf("peercache: forget %s: %w", p, err)
	}
	return nil
}

// All returns a copy of every record, most recently seen first (LastSeen,
// then FirstSeen, then ID), for `wats peers cache`. O(n log n).
func (c *Cache) All() []Entry {
	c.mu.Lock()
	out := make([]Entry, 0, len(c.mu.records))
	for _, e := range c.mu.records {
		out = append(out, Entry{ID: e.id, Record: e.rec.clone(), MetInEarlierRun: e.metEarlier})
	}
	c.mu.Unlock()
	slices.SortFunc(out, func(a, b Entry) int { return -seenOrder(&a.Record, a.ID, &b.Record, b.ID) })
	return out
}

// Known returns the peers to redial at start, most recently seen first (as
// All), with their addresses parsed. Addresses that do not parse are
// skipped, and so are peers left with none.
func (c *Cache) Known() []peer.AddrInfo {
	all := c.All()
	out := make([]peer.AddrInfo, 0, len(all))
	for _, e := range all {
		ai := peer.AddrInfo{ID: e.ID}
		for _, s := range e.Addrs {
			if a, err := ma.NewMultiaddr(s); err == nil {
				ai.Addrs = append(ai.Addrs, a)
			}
		}
		if len(ai.Addrs) > 0 {
			out = append(out, ai)
		}
	}
	return out
}

// Cursor returns the sync cursor into id's log, 0 when never synced.
func (c *Cache) Cursor(id peer.ID) core.Cursor {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.mu.records[id]; ok {
		return e.rec.Cursor
	}
	return 0
}

// REQUIRES: c.mu held.
func (c *Cache) removeLocked(e *entry) {
	delete(c.mu.records, e.id)
	e.gone = true
	e.dirty = false
}

func (c *Cache) setRecord(b *pebble.Batch, id peer.ID, r *Record) error {
	val, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("encode %s: %w", id, err)
	}
	return b.Set(key(id), val, nil)
}

// MergeAddrs puts addrs at the front of r.Addrs, without duplicates, keeping
// at most MaxAddrs.
func (r *Record) MergeAddrs(addrs []string) {
	out := make([]string, 0, MaxAddrs)
	seen := make(map[string]struct{}, MaxAddrs)
	for _, list := range [][]string{addrs, r.Addrs} {
		for _, a := range list {
			if _, dup := seen[a]; dup || len(out) == MaxAddrs {
				continue
			}
			seen[a] = struct{}{}
			out = append(out, a)
		}
	}
	r.Addrs = out
}

// trim enforces MaxAddrs on a record from fn or from disk.
func (r *Record) trim() {
	if len(r.Addrs) > MaxAddrs {
		r.Addrs = r.Addrs[:MaxAddrs:MaxAddrs]
	}
}

func (r *Record) clone() Record {
	c := *r
	c.Addrs = slices.Clone(r.Addrs)
	c.Features = slices.Clone(r.Features)
	return c
}

func key(id peer.ID) []byte {
	return append([]byte(keyPrefix), id...)
}
