package eventlog

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"
	"github.com/go-json-experiment/json/jsontext"
)

// Keys of this package in the node's pebble database (docs/design.md §10: disjoint
// prefixes). Every key starts with KeyPrefix; other packages must not use
// keys starting with it.
//
//	"ev/p/" + position (8 bytes, big-endian)  -> event JSON, as Event.Marshal
//	"ev/i/" + id (32 raw bytes)               -> position (8 bytes, big-endian)
//	"ev/c/" + a blob's CID, as the event has it -> empty: an event names it
//	"ev/m/cids"                               -> empty: the "ev/c/" index is complete
//
// The head is not stored: Open finds it as the last "ev/p/" key, so it cannot
// disagree with the events. The keys of an event are written in the same
// batch, so the indexes never point at a missing event. A log written
// before the CID index existed gets it at its first Open (one scan).
const KeyPrefix = "ev/"

const (
	posPrefix = KeyPrefix + "p/"
	idPrefix  = KeyPrefix + "i/"
	cidPrefix = KeyPrefix + "c/"
	// cidIndexDone marks a complete "ev/c/" index.
	cidIndexDone = KeyPrefix + "m/cids"
	// posEnd is the exclusive upper bound of the position keys.
	posEnd = KeyPrefix + "p0" // '0' == '/'+1
)

func cidKey(c string) []byte { return append([]byte(cidPrefix), c...) }

func posKey(pos uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte(posPrefix), pos)
}

func idKey(id [32]byte) []byte {
	return append([]byte(idPrefix), id[:]...)
}

func parseID(id string) ([32]byte, bool) {
	var raw [32]byte
	if len(id) != idHexLen || !isLowerHex(id) {
		return raw, false
	}
	_, err := hex.Decode(raw[:], []byte(id))
	return raw, err == nil
}

// Log is the append-only event log on the node's pebble database: each new
// event gets the next local position (1, 2, …), and readers page through
// positions (docs/design.md §5). A Log is safe for concurrent use. Open one Log per
// database: Append relies on being the only writer of its keys.
type Log struct {
	db *pebble.DB
	// head is the position of the newest event; written only by Append
	// while holding mu, after the batch is durable.
	head atomic.Uint64

	mu struct {
		sync.Mutex
		// changed is closed and replaced by Append when it adds events.
		changed chan struct{}
	}
	// seen filters the ids Append and Has look up (seen.go). Only Append
	// (holding mu) changes it, under the write lock; Has reads it under the
	// read lock, so lookups never wait for an Append's fsync.
	seen struct {
		sync.RWMutex
		f *seenFilter
	}
}

// Open returns the log stored in db, loading its head. It does not take
// ownership of db: the node closes it after it stops using the Log.
func Open(db *pebble.DB) (*Log, error) {
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: []byte(posPrefix), UpperBound: []byte(posEnd)})
	if err != nil {
		return nil, fmt.Errorf("eventlog: open: %w", err)
	}
	defer it.Close()
	l := &Log{db: db}
	if it.Last() {
		k := it.Key()
		if len(k) != len(posPrefix)+8 {
			return nil, fmt.Errorf("eventlog: open: damaged position key %q", k)
		}
		l.head.Store(binary.BigEndian.Uint64(k[len(posPrefix):]))
	}
	if err := it.Error(); err != nil {
		return nil, fmt.Errorf("eventlog: open: %w", err)
	}
	l.mu.changed = make(chan struct{})
	if l.seen.f, err = loadSeen(db, l.head.Load()); err != nil {
		return nil, err
	}
	if err := l.indexCIDs(); err != nil {
		return nil, err
	}
	return l, nil
}

// indexCIDs builds the CID index of a log written before it existed, once.
func (l *Log) indexCIDs() error {
	switch _, closer, err := l.db.Get([]byte(cidIndexDone)); {
	case err == nil:
		closer.Close()
		return nil
	case !errors.Is(err, pebble.ErrNotFound):
		return fmt.Errorf("eventlog: open: %w", err)
	}
	it, err := l.db.NewIter(&pebble.IterOptions{LowerBound: []byte(posPrefix), UpperBound: []byte(posEnd)})
	if err != nil {
		return fmt.Errorf("eventlog: index CIDs: %w", err)
	}
	defer it.Close()
	b := l.db.NewBatch()
	defer b.Close()
	for it.First(); it.Valid(); it.Next() {
		e, err := Decode(it.Value())
		if err != nil {
			continue // a damaged event names nothing usable
		}
		for _, r := range e.Blobs {
			if err := b.Set(cidKey(r.CID), nil, nil); err != nil {
				return fmt.Errorf("eventlog: index CIDs: %w", err)
			}
		}
	}
	if err := it.Error(); err != nil {
		return fmt.Errorf("eventlog: index CIDs: %w", err)
	}
	if err := b.Set([]byte(cidIndexDone), nil, nil); err != nil {
		return fmt.Errorf("eventlog: index CIDs: %w", err)
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return fmt.Errorf("eventlog: index CIDs: %w", err)
	}
	return nil
}

// NamesBlob reports whether an event in the log names the blob c (its CID
// as the events have it: the canonical string form). One pebble lookup,
// which the database's Bloom filters answer at once for a CID nothing
// names: the cheap existence check of a replicate or bitswap request (ADR
// 0030).
func (l *Log) NamesBlob(c string) (bool, error) {
	_, closer, err := l.db.Get(cidKey(c))
	switch {
	case err == nil:
		closer.Close()
		return true, nil
	case errors.Is(err, pebble.ErrNotFound):
		return false, nil
	}
	return false, fmt.Errorf("eventlog: look up blob %q: %w", c, err)
}

// Head returns the position of the newest event, 0 when the log is empty.
// Positions are consecutive from 1, so Head is also the number of events.
func (l *Log) Head() uint64 { return l.head.Load() }

// Changed returns a channel that is closed the next time Append adds events.
// Take a new channel after each wake-up: the idiom is
//
//	ch := l.Changed(); if l.Head() == seen { <-ch }
func (l *Log) Changed() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.mu.changed
}

// Append stores the events that are not in the log yet (by id, against the
// store and within events), at consecutive positions after Head in the
// order given, and returns those it added. All of it is one pebble batch,
// committed with pebble.Sync: when Append returns, the events are durable
// (docs/design.md §10). Calls are serialized.
//
// REQUIRES: the events were verified (Verify or VerifyBatch); Append only
// checks that the id is 64 lowercase hex and that the event encodes within
// MaxEventBytes, and then adds nothing (ErrMalformed, ErrTooLarge).
func (l *Log) Append(events []*Event) (added []*Event, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()

	b := l.db.NewBatch()
	defer b.Close()
	head := l.head.Load()
	pos := head
	inBatch := make(map[[32]byte]struct{}, len(events))
	addedIDs := make([][32]byte, 0, len(events))
	var posBuf [8]byte
	for i, e := range events {
		id, ok := parseID(e.ID)
		if !ok {
			return nil, invalid(ErrMalformed, fmt.Sprintf("events[%d].id", i), "not 64 lowercase hex digits")
		}
		if _, dup := inBatch[id]; dup {
			continue
		}
		inBatch[id] = struct{}{}
		if l.seen.f.mayHave(id) { // Append is the only writer: no read lock needed
			if has, err := l.hasRaw(id); err != nil {
				return nil, err
			} else if has {
				continue
			}
		}
		raw, err := e.Marshal()
		if err != nil {
			return nil, err
		}
		if len(raw) > MaxEventBytes {
			return nil, invalid(ErrTooLarge, fmt.Sprintf("events[%d]", i), "%d bytes over %d", len(raw), MaxEventBytes)
		}
		pos++
		binary.BigEndian.PutUint64(posBuf[:], pos)
		if err := b.Set(posKey(pos), raw, nil); err != nil {
			return nil, fmt.Errorf("eventlog: append: %w", err)
		}
		if err := b.Set(idKey(id), posBuf[:], nil); err != nil {
			return nil, fmt.Errorf("eventlog: append: %w", err)
		}
		for _, r := range e.Blobs {
			if err := b.Set(cidKey(r.CID), nil, nil); err != nil {
				return nil, fmt.Errorf("eventlog: append: %w", err)
			}
		}
		added = append(added, e)
		addedIDs = append(addedIDs, id)
	}
	if len(added) == 0 {
		return nil, nil
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return nil, fmt.Errorf("eventlog: append: %w", err)
	}
	l.head.Store(pos)
	l.seen.Lock()
	full := false
	for _, id := range addedIDs {
		full = l.seen.f.add(id) || full
	}
	l.seen.Unlock()
	if full {
		// Rebuilt from the store, twice as large; until it succeeds the
		// old filter (more false positives, never a wrong answer) serves.
		if seen, err := loadSeen(l.db, pos); err == nil {
			l.seen.Lock()
			l.seen.f = seen
			l.seen.Unlock()
		}
	}
	close(l.mu.changed)
	l.mu.changed = make(chan struct{})
	return added, nil
}

// Page returns the stored events (as Marshal encoded them) at positions
// after `after`, in position order: at most limit events and at most
// maxBytes bytes of event JSON in total. next is the position of the last
// event returned (after when none), and more reports whether events exist
// past next. Paging by position never skips or repeats an event, however
// many share a timestamp (docs/design.md §5).
//
// limit and maxBytes must be at least 1 (ErrBadArgument). With maxBytes ≥
// MaxEventBytes a page holds at least one event whenever one exists; with
// less, Page fails with ErrPageTooSmall rather than return an empty page
// that would stall the reader. after ≥ Head gives an empty page, more false.
func (l *Log) Page(after uint64, limit int, maxBytes int) (events []jsontext.Value, next uint64, more bool, err error) {
	if limit < 1 || maxBytes < 1 {
		return nil, after, false, fmt.Errorf("%w: page limit %d, maxBytes %d (both must be ≥ 1)", ErrBadArgument, limit, maxBytes)
	}
	next = after
	if after == math.MaxUint64 {
		return nil, next, false, nil
	}
	it, err := l.db.NewIter(&pebble.IterOptions{LowerBound: posKey(after + 1), UpperBound: []byte(posEnd)})
	if err != nil {
		return nil, after, false, fmt.Errorf("eventlog: page: %w", err)
	}
	defer it.Close()
	// Values are copied into one buffer and sliced at the end: one
	// allocation for the page instead of one per event.
	var buf []byte
	var ends []int
	var positions []uint64
	for ok := it.First(); ok; ok = it.Next() {
		if len(ends) == limit {
			more = true
			break
		}
		v, err := it.ValueAndErr()
		if err != nil {
			return nil, after, false, fmt.Errorf("eventlog: page: %w", err)
		}
		if len(buf)+len(v) > maxBytes {
			if len(ends) == 0 {
				return nil, after, false, fmt.Errorf("%w: event of %d bytes, maxBytes %d", ErrPageTooSmall, len(v), maxBytes)
			}
			more = true
			break
		}
		if buf == nil {
			// Guess the page from its first event; append grows it if the
			// guess is short.
			buf = make([]byte, 0, min(maxBytes, limit*(len(v)+len(v)/4)))
		}
		k := it.Key()
		if len(k) != len(posPrefix)+8 {
			return nil, after, false, fmt.Errorf("eventlog: page: damaged position key %q", k)
		}
		buf = append(buf, v...)
		ends = append(ends, len(buf))
		positions = append(positions, binary.BigEndian.Uint64(k[len(posPrefix):]))
	}
	if err := it.Error(); err != nil {
		return nil, after, false, fmt.Errorf("eventlog: page: %w", err)
	}
	if len(ends) == 0 {
		return nil, after, false, nil
	}
	events = make([]jsontext.Value, len(ends))
	start := 0
	for i, end := range ends {
		events[i] = jsontext.Value(buf[start:end:end])
		start = end
	}
	return events, positions[len(positions)-1], more, nil
}

// Get returns the event with the given id and its position, or ErrNotFound.
// An id that is not 64 lowercase hex digits is ErrMalformed.
func (l *Log) Get(id string) (*Event, uint64, error) {
	raw, ok := parseID(id)
	if !ok {
		return nil, 0, invalid(ErrMalformed, "id", "not 64 lowercase hex digits")
	}
	return l.getRaw(raw)
}

// MinIDPrefix is the shortest id prefix Find accepts: 8 hex digits (32
// bits) name one event among tens of thousands with little chance of a
// collision, like a short git commit hash.
const MinIDPrefix = 8

// Find returns the event whose id starts with prefix: MinIDPrefix to 64
// lowercase hex digits (ErrMalformed otherwise). Errors: ErrNotFound when
// no event matches, ErrAmbiguous when several do.
func (l *Log) Find(prefix string) (*Event, uint64, error) {
	return l.find(prefix, MinIDPrefix)
}

// find is Find with the shortest prefix as a parameter, for tests.
func (l *Log) find(prefix string, minLen int) (*Event, uint64, error) {
	if len(prefix) == idHexLen {
		return l.Get(prefix)
	}
	if len(prefix) < minLen || len(prefix) > idHexLen || !isLowerHex(prefix) {
		return nil, 0, invalid(ErrMalformed, "id", "want %d to %d lowercase hex digits", minLen, idHexLen)
	}
	// Scan the ids that start with the whole bytes of the prefix; an odd
	// last digit is checked on each.
	whole, _ := hex.DecodeString(prefix[:len(prefix)&^1])
	lower := append([]byte(idPrefix), whole...)
	it, err := l.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: prefixEnd(string(lower))})
	if err != nil {
		return nil, 0, fmt.Errorf("eventlog: find: %w", err)
	}
	defer it.Close()
	var match [32]byte
	found := 0
	for it.First(); it.Valid() && found < 2; it.Next() {
		id := it.Key()[len(idPrefix):]
		if len(id) != 32 || !strings.HasPrefix(hex.EncodeToString(id), prefix) {
			continue
		}
		copy(match[:], id)
		found++
	}
	if err := it.Error(); err != nil {
		return nil, 0, fmt.Errorf("eventlog: find: %w", err)
	}
	switch found {
	case 0:
		return nil, 0, ErrNotFound
	case 1:
		return l.getRaw(match)
	default:
		return nil, 0, fmt.Errorf("%w: %q", ErrAmbiguous, prefix)
	}
}

// getRaw is Get by raw id.
func (l *Log) getRaw(raw [32]byte) (*Event, uint64, error) {
	pos, found, err := l.position(raw)
	if err != nil {
		return nil, 0, err
	}
	if !found {
		return nil, 0, ErrNotFound
	}
	v, closer, err := l.db.Get(posKey(pos))
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, 0, fmt.Errorf("eventlog: get: index points at missing position %d", pos)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("eventlog: get: %w", err)
	}
	defer closer.Close()
	e, err := Decode(v)
	if err != nil {
		return nil, 0, fmt.Errorf("eventlog: get: stored event at %d: %w", pos, err)
	}
	return e, pos, nil
}

// Has reports whether an event with the given id is stored. An id that is
// not 64 lowercase hex digits is ErrMalformed.
func (l *Log) Has(id string) (bool, error) {
	raw, ok := parseID(id)
	if !ok {
		return false, invalid(ErrMalformed, "id", "not 64 lowercase hex digits")
	}
	l.seen.RLock()
	maybe := l.seen.f.mayHave(raw)
	l.seen.RUnlock()
	if !maybe {
		return false, nil
	}
	return l.hasRaw(raw)
}

func (l *Log) hasRaw(id [32]byte) (bool, error) {
	_, found, err := l.position(id)
	return found, err
}

func (l *Log) position(id [32]byte) (uint64, bool, error) {
	v, closer, err := l.db.Get(idKey(id))
	if errors.Is(err, pebble.ErrNotFound) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("eventlog: lookup: %w", err)
	}
	defer closer.Close()
	if len(v) != 8 {
		return 0, false, fmt.Errorf("eventlog: lookup: damaged index value of %d bytes", len(v))
	}
	return binary.BigEndian.Uint64(v), true, nil
}
