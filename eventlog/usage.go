package eventlog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/wats-network/wats/core"
)

// Usage is what the log, or one author's part of it, holds: events and the
// bytes of their JSON (as Marshal encodes them). The log's quotas (ADR
// 0031) are on both.
type Usage struct {
	Events uint64 `json:"events"`
	Bytes  uint64 `json:"bytes"`
	// First is when the log stored the author's first event, in unix
	// milliseconds by the log's clock (SetClock); 0 for the whole log and
	// for an author it holds nothing of. How long an author has been known
	// here is its standing (ADR 0031).
	First int64 `json:"first,omitempty"`
}

// add returns u with one event of n bytes more, stored at now (unix ms).
func (u Usage) add(n int, now int64) Usage {
	if u.Events == 0 {
		u.First = now
	}
	return Usage{u.Events + 1, u.Bytes + uint64(n), u.First}
}

// ErrQuota: the log's quota refused to store an event (Log.SetQuota; ADR
// 0031). Nothing was stored; the event can be stored later, when the
// quota allows.
var ErrQuota = errors.New("eventlog: over the log's quota")

// QuotaFunc decides whether a new event may be stored: its author, its size
// in bytes, what the author holds already (zero for an author new to the
// log) and what the whole log holds, both before this event. It returns
// nil to store the event, or an error wrapping ErrQuota to leave it out.
// It is called during Append, once per new event, from one goroutine at a
// time, and must not call the Log.
type QuotaFunc func(author string, size int, authorUse, total Usage) error

// SetQuota installs the quota every later Append applies; nil (the
// default) stores every event.
func (l *Log) SetQuota(f QuotaFunc) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.mu.quota = f
}

// SetRoom installs the check every later Append makes before it writes a
// batch of n bytes: an error from room (the node's: a full disk, ADR 0044)
// fails every call of the batch with it, and nothing is written. nil (the
// default) writes without asking.
func (l *Log) SetRoom(room func(n int) error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.mu.room = room
}

// SetCommitted installs the function every later Append tells, once a
// batch is durable, of the events it added: at positions first, first+1,
// … with the short ids ids (the node's acknowledged mark, ADR 0045). It
// is called with the log's lock held, from one goroutine at a time, and
// must not call the Log; ids is its own.
func (l *Log) SetCommitted(f func(first core.Cursor, ids []core.ShortID)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.mu.committed = f
}

// Usage returns what the whole log holds and how many authors it holds
// events of.
func (l *Log) Usage() (total Usage, authors uint64) {
	return Usage{Events: l.head.Load(), Bytes: l.bytes.Load()}, l.authors.Load()
}

// Commits returns how many synced batches Append has committed: the events
// stored over it is what group commit saves (ADR 0031).
func (l *Log) Commits() uint64 { return l.groups.Load() }

// AuthorUsage returns what author (a peer ID string) holds in the log: the
// zero Usage for an author it holds nothing of. One pebble lookup, which
// the database's Bloom filters answer at once for a new author.
func (l *Log) AuthorUsage(author string) (Usage, error) {
	u, _, err := l.authorUsage(author)
	return u, err
}

func (l *Log) authorUsage(author string) (Usage, bool, error) {
	v, closer, err := l.db.Get(usageKeyOf(author))
	if errors.Is(err, pebble.ErrNotFound) {
		return Usage{}, false, nil
	}
	if err != nil {
		return Usage{}, false, fmt.Errorf("eventlog: author usage: %w", err)
	}
	defer closer.Close()
	u, ok := decodeUsage(v)
	if !ok {
		return Usage{}, false, fmt.Errorf("eventlog: author usage: damaged value of %d bytes", len(v))
	}
	return u, true, nil
}

func usageKeyOf(author string) []byte { return append([]byte(authorPrefix), author...) }

// encodeUsage is an author's value: events, bytes, first (8 bytes each,
// big-endian).
func encodeUsage(u Usage) []byte {
	b := binary.BigEndian.AppendUint64(make([]byte, 0, 24), u.Events)
	b = binary.BigEndian.AppendUint64(b, u.Bytes)
	return binary.BigEndian.AppendUint64(b, uint64(u.First))
}

func decodeUsage(v []byte) (Usage, bool) {
	if len(v) != 24 {
		return Usage{}, false
	}
	return Usage{binary.BigEndian.Uint64(v), binary.BigEndian.Uint64(v[8:]), int64(binary.BigEndian.Uint64(v[16:]))}, true
}

// encodeTotals is the value of usageKey: the log's bytes and its authors
// (8 bytes each, big-endian).
func encodeTotals(bytes, authors uint64) []byte {
	return binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(make([]byte, 0, 16), bytes), authors)
}

func decodeTotals(v []byte) (bytes, authors uint64, ok bool) {
	if len(v) != 16 {
		return 0, 0, false
	}
	return binary.BigEndian.Uint64(v), binary.BigEndian.Uint64(v[8:]), true
}

// SetClock sets the clock whose readings Usage.First records; nil (the
// default) is time.Now.
func (l *Log) SetClock(now func() time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.mu.now = now
}

// nowMS is the log's clock in unix milliseconds. REQUIRES: l.mu held.
func (l *Log) nowMS() int64 {
	if l.mu.now != nil {
		return l.mu.now().UnixMilli()
	}
	return time.Now().UnixMilli()
}

// loadUsage reads the log's totals, building the author index first for a
// log written before it existed (one scan, once).
func (l *Log) loadUsage() error {
	v, closer, err := l.db.Get([]byte(usageKey))
	switch {
	case err == nil:
		bytes, authors, ok := decodeTotals(v)
		closer.Close()
		if !ok {
			return fmt.Errorf("eventlog: open: damaged usage value of %d bytes", len(v))
		}
		l.bytes.Store(bytes)
		l.authors.Store(authors)
		return nil
	case !errors.Is(err, pebble.ErrNotFound):
		return fmt.Errorf("eventlog: open: %w", err)
	}
	it, err := l.db.NewIter(&pebble.IterOptions{LowerBound: []byte(posPrefix), UpperBound: []byte(posEnd)})
	if err != nil {
		return fmt.Errorf("eventlog: index authors: %w", err)
	}
	defer it.Close()
	// When the events were stored is not known: an author's first is its
	// earliest event's own time, no later than now.
	now := time.Now().UnixMilli()
	per := make(map[string]Usage)
	var bytes uint64
	for it.First(); it.Valid(); it.Next() {
		v := it.Value()
		bytes += uint64(len(v))
		e, err := Decode(v)
		if err != nil {
			continue // a damaged event has no author to count it against
		}
		u := per[e.Author].add(len(v), min(e.Time, now))
		u.First = min(u.First, e.Time, now)
		per[e.Author] = u
	}
	if err := it.Error(); err != nil {
		return fmt.Errorf("eventlog: index authors: %w", err)
	}
	b := l.db.NewBatch()
	defer b.Close()
	for a, u := range per {
		if err := b.Set(usageKeyOf(a), encodeUsage(u), nil); err != nil {
			return fmt.Errorf("eventlog: index authors: %w", err)
		}
	}
	if err := b.Set([]byte(usageKey), encodeTotals(bytes, uint64(len(per))), nil); err != nil {
		return fmt.Errorf("eventlog: index authors: %w", err)
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return fmt.Errorf("eventlog: index authors: %w", err)
	}
	l.bytes.Store(bytes)
	l.authors.Store(uint64(len(per)))
	return nil
}

// Quotas are the log's limits ([events], ADR 0031): the totals, and each
// author's share; 0 is no limit.
type Quotas struct {
	MaxEvents, MaxBytes                   uint64
	MaxEventsPerAuthor, MaxBytesPerAuthor uint64
}

// Func returns the quota policy of q: self is this node's author id,
// whose events are held to nothing; valued tells whether an author is a
// valued peer, which is held to the totals only. Past 90% of a total, an
// author new to the log is refused. Each refusal wraps ErrQuota and names
// the [events] key that refused it.
func (q Quotas) Func(self string, valued func(author string) bool) QuotaFunc {
	over := func(used, add, limit uint64) bool { return limit > 0 && used+add > limit }
	reserve := func(used, add, limit uint64) bool { return limit > 0 && used+add > limit/10*9 }
	return func(author string, size int, a, total Usage) error {
		if author == self {
			return nil
		}
		sz := uint64(size)
		switch {
		case over(total.Events, 1, q.MaxEvents) || over(total.Bytes, sz, q.MaxBytes):
			return fmt.Errorf("%w: the log is full (events.max_events %d, events.max_bytes %d)", ErrQuota, q.MaxEvents, q.MaxBytes)
		case a.Events == 0 && (reserve(total.Events, 1, q.MaxEvents) || reserve(total.Bytes, sz, q.MaxBytes)):
			return fmt.Errorf("%w: the log is 90%% full: no new authors", ErrQuota)
		case (over(a.Events, 1, q.MaxEventsPerAuthor) || over(a.Bytes, sz, q.MaxBytesPerAuthor)) && !valued(author):
			return fmt.Errorf("%w: author %s is at events.max_events_per_author %d or events.max_bytes_per_author %d",
				ErrQuota, author, q.MaxEventsPerAuthor, q.MaxBytesPerAuthor)
		}
		return nil
	}
}
