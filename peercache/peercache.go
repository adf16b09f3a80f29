package peercache

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/go-json-experiment/json"
	"github.com/libp2p/go-libp2p/core/peer"
)

// keyPrefix is the prefix of every key this package writes in the shared
// pebble database; the rest of the key is the peer ID's raw bytes.
const keyPrefix = "p/"

// MaxAddrs is the number of addresses kept per peer (design §8: at most 16),
// the newest first.
const MaxAddrs = 16

// ErrClosed is returned by writes after Close.
var ErrClosed = errors.New("peercache: closed")

// Record is what the node remembers of one peer. Times are UTC; a zero time
// means "never".
type Record struct {
	// Addrs are the peer's multiaddrs, newest first, at most MaxAddrs.
	Addrs []string `json:"addrs,omitempty"`
	// FirstSeen and LastSeen bound the time the node has been connected to
	// the peer, across runs.
	FirstSeen time.Time `json:"first_seen"`
	LastSeen  time.Time `json:"last_seen"`
	// LastHello is when the peer last completed hello with this node.
	LastHello time.Time `json:"last_hello"`
	// Agent and Features are as the peer's last hello gave them.
	Agent    string   `json:"agent,omitempty"`
	Features []string `json:"features,omitempty"`
	// Cursor is the position in the peer's log up to which this node has
	// synced (design §5): the next sync asks for events after it.
	Cursor uint64 `json:"cursor,string"`
}

// DamagedRecord describes a record Open could not decode; it was skipped.
type DamagedRecord struct {
	Key []byte
	Err error
}

// Cache is the persisted peer cache. It is safe for concurrent use.
type Cache struct {
	db *pebble.DB

	mu struct {
		sync.Mutex
		// records holds every known peer. INVARIANT: each entry has been
		// written to db, except for changes made since the last write of a
		// non-durable update.
		records map[peer.ID]*Record
		closed  bool
	}
	// loaded holds the peers read at Open: "met in an earlier run".
	loaded map[peer.ID]struct{}
}

// Open loads every record from db. Records that fail to decode are skipped
// and returned in damaged, so that the caller can report them once; they
// never make Open fail. Only an I/O error from pebble does.
func Open(db *pebble.DB) (c *Cache, damaged []DamagedRecord, err error) {
	c = &Cache{db: db, loaded: make(map[peer.ID]struct{})}
	c.mu.records = make(map[peer.ID]*Record)
	it, err := db.NewIter(&pebble.IterOptions{
		LowerBound: []byte(keyPrefix),
		UpperBound: prefixEnd(keyPrefix),
	})
	if err != nil {
		return nil, nil, fmt.Errorf("peercache: open: %w", err)
	}
	defer it.Close()
	for it.First(); it.Valid(); it.Next() {
		key := append([]byte(nil), it.Key()...)
		id, err := peer.IDFromBytes(key[len(keyPrefix):])
		if err != nil {
			damaged = append(damaged, DamagedRecord{Key: key, Err: fmt.Errorf("bad peer id: %w", err)})
			continue
		}
		var r Record
		if err := json.Unmarshal(it.Value(), &r); err != nil {
			damaged = append(damaged, DamagedRecord{Key: key, Err: err})
			continue
		}
		c.mu.records[id] = &r
		c.loaded[id] = struct{}{}
	}
	if err := it.Error(); err != nil {
		return nil, nil, fmt.Errorf("peercache: open: %w", err)
	}
	return c, damaged, nil
}

// Get returns a copy of the record of id, and whether there is one.
func (c *Cache) Get(id peer.ID) (Record, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.mu.records[id]
	if !ok {
		return Record{}, false
	}
	return r.clone(), true
}

// MetInEarlierRun reports whether id was in the cache when it was opened.
func (c *Cache) MetInEarlierRun(id peer.ID) bool {
	_, ok := c.loaded[id]
	return ok
}

// ReputationAge is how long ago a peer must have first completed hello
// with this node to have an established reputation (ADR 0014: "it
// completed hello with this node at least 10 minutes ago").
const ReputationAge = 10 * time.Minute

// Reputed reports whether p has an established reputation at now (ADR
// 0014, "Load challenge"): it is in the cache from an earlier run, or it
// first completed hello with this node at least ReputationAge ago.
func (c *Cache) Reputed(p peer.ID, now time.Time) bool {
	if c.MetInEarlierRun(p) {
		return true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.mu.records[p]
	return ok && !r.FirstSeen.IsZero() && !now.Before(r.FirstSeen.Add(ReputationAge))
}

// Len returns the number of peers in the cache.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.mu.records)
}

// Update applies fn to the record of id (a new, zero record if there is
// none) and writes it. With durable set, the write is synced before Update
// returns (the sync cursor must survive a crash, design §10); otherwise it
// reaches disk with the next synced write of the database.
func (c *Cache) Update(id peer.ID, durable bool, fn func(*Record)) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.closed {
		return ErrClosed
	}
	r, ok := c.mu.records[id]
	if !ok {
		r = &Record{}
		c.mu.records[id] = r
	}
	fn(r)
	if len(r.Addrs) > MaxAddrs {
		r.Addrs = r.Addrs[:MaxAddrs]
	}
	val, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("peercache: encode %s: %w", id, err)
	}
	opt := pebble.NoSync
	if durable {
		opt = pebble.Sync
	}
	if err := c.db.Set(key(id), val, opt); err != nil {
		return fmt.Errorf("peercache: write %s: %w", id, err)
	}
	return nil
}

// Cursor returns the sync cursor into id's log, 0 when never synced.
func (c *Cache) Cursor(id peer.ID) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if r, ok := c.mu.records[id]; ok {
		return r.Cursor
	}
	return 0
}

// Close stops further writes. It does not close the database, which the
// node owns.
func (c *Cache) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.mu.closed = true
	return nil
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

func (r *Record) clone() Record {
	c := *r
	c.Addrs = append([]string(nil), r.Addrs...)
	c.Features = append([]string(nil), r.Features...)
	return c
}

func key(id peer.ID) []byte {
	return append([]byte(keyPrefix), id...)
}

// prefixEnd returns the smallest key greater than every key with prefix p.
func prefixEnd(p string) []byte {
	end := []byte(p)
	end[len(end)-1]++
	return end
}
