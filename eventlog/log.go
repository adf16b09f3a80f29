package eventlog

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"iter"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/wats-network/wats/core"
)

// Keys of this package in the node's pebble database (docs/design.md §10: disjoint
// prefixes). Every key starts with KeyPrefix; other packages must not use
// keys starting with it.
//
//	"ev/p/" + position (8 bytes, big-endian)  -> event JSON, as Event.Marshal
//	"ev/i/" + id (32 raw bytes)               -> position (8 bytes, big-endian)
//	"ev/c/" + a blob's CID, as the event has it -> the size the events declare (8 bytes,
//	                                             big-endian); one zero byte when they differ
//	"ev/m/cids2"                              -> empty: the "ev/c/" index is complete
//	"ev/a/" + author (peer ID string)         -> Usage: events, bytes, first (8+8+8 bytes, big-endian)
//	"ev/m/usage"                              -> the log's bytes and authors (8+8 bytes, big-endian)
//
// The head is not stored: Open finds it as the last "ev/p/" key, so it cannot
// disagree with the events. The keys of an event are written in the same
// batch, so the indexes never point at a missing event. A log written
// before the CID index or the author index existed gets it at its first
// Open (one scan each). The author index and the totals are written in the
// batch of the events they count, so they agree with the events.
const KeyPrefix = "ev/"

const (
	posPrefix = KeyPrefix + "p/"
	idPrefix  = KeyPrefix + "i/"
	cidPrefix = KeyPrefix + "c/"
	// authorPrefix keys each author's Usage.
	authorPrefix = KeyPrefix + "a/"
	// usageKey holds the log's bytes and authors.
	usageKey = KeyPrefix + "m/usage"
	// cidIndexDone marks a complete "ev/c/" index whose values are the
	// declared sizes and the first name given (cidValue); an index of an
	// older version (empty values, then sizes alone) is built again at
	// Open.
	cidIndexDone = KeyPrefix + "m/cids3"
	// cidEnd is the exclusive upper bound of the CID index keys.
	cidEnd = KeyPrefix + "c0"
	// posEnd is the exclusive upper bound of the position keys.
	posEnd = KeyPrefix + "p0" // '0' == '/'+1
)

// SpanPolicy is a pebble.SpanPolicyFunc for the node's database
// (pebble.Options.Experimental.SpanPolicyFunc) that ends an sstable at
// both bounds of the position keys ("ev/p/" up to posEnd), with pebble's
// default policy on every span. Events are written at ever higher
// positions, beside ids in no order and a few keys after "ev/p/" (the
// peer cache's, a sync cursor among them): in tables of their own, a
// flush's events overlap no table already in the tree, and pebble moves
// them down the levels instead of rewriting them with the ids (ADR 0039:
// a third less compaction in a catch-up of 1,000,000 events). It never
// fails; startKey is the first key of the table pebble starts.
func SpanPolicy(startKey []byte) (policy pebble.SpanPolicy, endKey []byte, err error) {
	switch {
	case bytes.Compare(startKey, []byte(posPrefix)) < 0:
		return policy, []byte(posPrefix), nil
	case bytes.Compare(startKey, []byte(posEnd)) < 0:
		return policy, []byte(posEnd), nil
	}
	return policy, nil, nil
}

func cidKey(c string) []byte { return append([]byte(cidPrefix), c...) }

// cidSizeValue is the start of the value of a CID's index key: the size
// the events declare for it, 8 bytes big-endian; the first name an event
// gives it follows (none: nothing follows). sizesDiffer when two events
// declare different sizes.
func cidSizeValue(size uint64) []byte { return binary.BigEndian.AppendUint64(nil, size) }

// sizesDiffer is the value of the index key of a CID that events name
// with different sizes.
var sizesDiffer = []byte{0}

// cidValue returns the index value of a CID named with size and name
// ("" for none: BlobRef.Name, at most MaxBlobNameBytes), given the value
// it had (nil: none). The first name given is kept.
func cidValue(old []byte, size uint64, name string) []byte {
	switch {
	case old == nil:
		return append(cidSizeValue(size), name...)
	case len(old) < 8 || binary.BigEndian.Uint64(old) != size:
		return sizesDiffer
	case len(old) == 8 && name != "":
		return append(bytes.Clone(old), name...)
	}
	return old
}

func posKey(pos core.Cursor) []byte {
	return binary.BigEndian.AppendUint64([]byte(posPrefix), uint64(pos))
}

func idKey(id [32]byte) []byte {
	return append([]byte(idPrefix), id[:]...)
}

// parseID decodes an event id, 64 lowercase hex digits, into its 32
// bytes; ok is false for anything else (uppercase digits included).
func parseID(id string) (raw [32]byte, ok bool) {
	if len(id) != idHexLen {
		return raw, false
	}
	var bad byte
	for i := range raw {
		hi, lo := lowerHexValue[id[2*i]], lowerHexValue[id[2*i+1]]
		bad |= hi | lo
		raw[i] = hi<<4 | lo&0x0f
	}
	return raw, bad&0xf0 == 0
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

	// bytes and authors are the log's totals (usageKey); written only by
	// commit, like head. groups counts the batches committed.
	bytes, authors, groups atomic.Uint64

	mu struct {
		sync.Mutex
		// changed is closed and replaced by Append when it adds events.
		changed chan struct{}
		// quota is SetQuota's; nil stores every event.
		quota QuotaFunc
		// now is SetClock's; nil is time.Now.
		now func() time.Time
		// room is SetRoom's; nil writes without asking.
		room func(n int) error
		// committed is SetCommitted's; nil: no one is told.
		committed func(first core.Cursor, ids []core.ShortID)
	}
	// gc is the group-commit queue of Append (ADR 0031): the calls
	// waiting for the commit running now, and whether one runs.
	gc struct {
		sync.Mutex
		queue []*appendReq
		busy  bool
	}
	// recent holds the short ids of the newest events (recentIDs of
	// them) by position modulo recentIDs, for ShortIDs; only commit
	// writes it, before it moves head.
	recent struct {
		sync.RWMutex
		ids [recentIDs]core.ShortID
		pos [recentIDs]core.Cursor // the position each slot holds; 0 for none
	}
	// seen filters the ids Append and Has look up (seen.go). Only Append
	// (holding mu) changes it, under the write lock; Has reads it under the
	// read lock, so lookups never wait for an Append's fsync.
	seen struct {
		sync.RWMutex
		f *seenFilter
	}
	// sums are the count and sum of the ids in each bucket of the id
	// space, for Fingerprint (idsums.go): built at Open, added to by
	// commit under the write lock once the batch is committed.
	sums idSums
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
	if l.seen.f, err = loadSeen(db, l.head.Load(), &l.sums); err != nil {
		return nil, err
	}
	if err := l.indexCIDs(); err != nil {
		return nil, err
	}
	if err := l.loadUsage(); err != nil {
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
	if err := b.DeleteRange([]byte(cidPrefix), []byte(cidEnd), nil); err != nil {
		return fmt.Errorf("eventlog: index CIDs: %w", err)
	}
	sizes := map[string][]byte{}
	for it.First(); it.Valid(); it.Next() {
		e, err := Decode(it.Value())
		if err != nil {
			continue // a damaged event names nothing usable
		}
		for _, r := range e.Blobs {
			sizes[r.CID] = cidValue(sizes[r.CID], r.Size, r.Name)
		}
	}
	for c, v := range sizes {
		if err := b.Set(cidKey(c), v, nil); err != nil {
			return fmt.Errorf("eventlog: index CIDs: %w", err)
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

// BlobSize returns the size the events of the log declare for the blob c
// (its canonical CID string): ok false when no event names it; an error
// wrapping ErrSizesDiffer when events name it with different sizes.
func (l *Log) BlobSize(c string) (size uint64, ok bool, err error) {
	v, closer, err := l.db.Get(cidKey(c))
	switch {
	case errors.Is(err, pebble.ErrNotFound):
		return 0, false, nil
	case err != nil:
		return 0, false, fmt.Errorf("eventlog: look up blob %q: %w", c, err)
	}
	defer closer.Close()
	if len(v) < 8 {
		return 0, true, fmt.Errorf("eventlog: blob %s: %w", c, ErrSizesDiffer)
	}
	return binary.BigEndian.Uint64(v), true, nil
}

// BlobName returns the file name the first event of the log that gave
// the blob c (its canonical CID string) a name gave it: "" when no event
// names it, or none gave it a name, or events name it with different
// sizes. One pebble lookup.
func (l *Log) BlobName(c string) (string, error) {
	v, err := l.cidIndexValue(c)
	if err != nil {
		return "", fmt.Errorf("eventlog: look up blob %q: %w", c, err)
	}
	if len(v) <= 8 {
		return "", nil
	}
	return string(v[8:]), nil
}

// ErrSizesDiffer: events of the log name one blob with different sizes.
var ErrSizesDiffer = errors.New("events name it with different sizes")

// cidIndexValue returns the index value of c, nil when no event names it.
func (l *Log) cidIndexValue(c string) ([]byte, error) {
	v, closer, err := l.db.Get(cidKey(c))
	switch {
	case errors.Is(err, pebble.ErrNotFound):
		return nil, nil
	case err != nil:
		return nil, err
	}
	defer closer.Close()
	return bytes.Clone(v), nil
}

// Head returns the position of the newest event, 0 when the log is empty.
// Positions are consecutive from 1, so Head is also the number of events.
func (l *Log) Head() core.Cursor { return core.Cursor(l.head.Load()) }

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
// order given, and returns those it added. An event the quota refuses
// (SetQuota) is left out, and so are later events of the call that repeat
// it. When Append returns, the events are durable (docs/design.md §10):
// they are in a pebble batch committed with pebble.Sync.
//
// Group commit (ADR 0031): concurrent calls share one batch and one sync.
// A call that finds no commit running commits its own events and all that
// were queued meanwhile, then hands the queue to the next caller; so the
// log stores as many events a second as arrive, not one sync's worth of
// calls. Each call's result is its own: a malformed call fails alone and
// adds nothing, and its neighbours in the group are stored.
//
// REQUIRES: the events were verified (Verify or VerifyBatch); Append only
// checks that the id is 64 lowercase hex and that the event encodes within
// MaxEventBytes, and then adds nothing (ErrMalformed, ErrTooLarge).
func (l *Log) Append(events []*Event) (added []*Event, err error) {
	r := l.enqueue(events, nil)
	return r.added, r.err
}

// AppendEncoded is Append with each event's stored form given: raws[i]
// is events[i].Marshal()'s result, computed by the caller ahead of the
// group commit (the sync client does it beside the write of the page
// before, so that the commit, which runs one group at a time, does not).
// A raws of another length than events is an ErrMalformed error, and
// nothing is added. overQuota counts the events the quota refused
// (SetQuota), each of them once.
func (l *Log) AppendEncoded(events []*Event, raws [][]byte) (added []*Event, overQuota int, err error) {
	if len(raws) != len(events) {
		return nil, 0, invalid(ErrMalformed, "", "%d encoded forms for %d events", len(raws), len(events))
	}
	r := l.enqueue(events, raws)
	return r.added, r.overQuota, r.err
}

// Add is Append for one event, saying why it was not added: (true, nil)
// when it was, (false, nil) when the log already held it, and an error
// wrapping ErrQuota when the quota refused it.
func (l *Log) Add(e *Event) (bool, error) {
	r := l.enqueue([]*Event{e}, nil)
	switch {
	case r.err != nil:
		return false, r.err
	case len(r.added) == 1:
		return true, nil
	}
	return false, r.quotaErr
}

// appendReq is one Append call waiting in the group-commit queue.
type appendReq struct {
	events []*Event
	raws   [][]byte // events' stored forms (AppendEncoded), or nil
	// wake receives one value: when the request is done (added, err and
	// quotaErr set) or when it is to lead the next group (lead true).
	wake chan struct{}
	lead bool

	added     []*Event
	err       error
	quotaErr  error // the first quota refusal, for Add
	overQuota int   // the events the quota refused
}

// enqueue runs r through the group commit and returns it done.
func (l *Log) enqueue(events []*Event, raws [][]byte) *appendReq {
	r := &appendReq{events: events, raws: raws, wake: make(chan struct{}, 1)}
	l.gc.Lock()
	l.gc.queue = append(l.gc.queue, r)
	if l.gc.busy {
		l.gc.Unlock()
		<-r.wake
		if !r.lead {
			return r
		}
		l.gc.Lock()
	}
	// Lead: commit everything queued (r with it), then hand over.
	l.gc.busy = true
	group := l.gc.queue
	l.gc.queue = nil
	l.gc.Unlock()

	l.commit(group)

	l.gc.Lock()
	if len(l.gc.queue) > 0 {
		next := l.gc.queue[0]
		next.lead = true
		next.wake <- struct{}{}
	} else {
		l.gc.busy = false
	}
	l.gc.Unlock()
	for _, g := range group {
		if g != r {
			g.wake <- struct{}{}
		}
	}
	return r
}

// staged is one new event of a group, encoded.
type staged struct {
	req *appendReq
	e   *Event
	id  [32]byte
	raw []byte
	pos core.Cursor // given by commit
}

// commit stores a group of requests in one synced batch and fills in each
// request's result.
func (l *Log) commit(group []*appendReq) {
	l.mu.Lock()
	defer l.mu.Unlock()

	total, size := 0, 0
	for _, r := range group {
		total += len(r.events)
		for _, raw := range r.raws {
			size += len(raw)
		}
	}
	news := make([]staged, 0, total)
	inGroup := make(map[[32]byte]struct{}, total)
	for _, r := range group {
		mine := make([]staged, 0, len(r.events))
		for i, e := range r.events {
			var err error
			id, ok := parseID(e.ID)
			if !ok {
				r.err = invalid(ErrMalformed, fmt.Sprintf("events[%d].id", i), "not 64 lowercase hex digits")
				break
			}
			var raw []byte
			if r.raws != nil {
				raw = r.raws[i]
			} else if raw, err = e.Marshal(); err != nil {
				r.err = err
				break
			}
			if len(raw) > MaxEventBytes {
				r.err = invalid(ErrTooLarge, fmt.Sprintf("events[%d]", i), "%d bytes over %d", len(raw), MaxEventBytes)
				break
			}
			mine = append(mine, staged{req: r, e: e, id: id, raw: raw})
		}
		if r.err != nil {
			continue // a malformed call adds nothing
		}
		for _, st := range mine {
			if _, dup := inGroup[st.id]; dup {
				continue
			}
			inGroup[st.id] = struct{}{}
			if l.seen.f.mayHave(st.id) { // commit is the only writer: no read lock needed
				if has, err := l.hasRaw(st.id); err != nil {
					r.err = err
					break
				} else if has {
					continue
				}
			}
			news = append(news, st)
		}
	}

	// Sized for the events' keys and stored forms (those given; the others
	// grow it), so that it is not copied as it grows.
	b := l.db.NewBatchWithSize(size + len(news)*(2*len(posPrefix)+2*32+64))
	defer b.Close()
	pos := l.head.Load()
	logBytes, authors := l.bytes.Load(), l.authors.Load()
	users := make(map[string]Usage)
	nowMS := l.nowMS()
	kept := make([]staged, 0, len(news))
	cidVals := make(map[string][]byte) // the CID index values set in this group
	var posBuf [8]byte
	fail := func(err error) {
		for _, r := range group {
			if r.err == nil {
				r.err = fmt.Errorf("eventlog: append: %w", err)
			}
		}
	}
	for _, st := range news {
		if st.req.err != nil {
			continue
		}
		u, ok := users[st.e.Author]
		if !ok {
			var err error
			if u, _, err = l.authorUsage(st.e.Author); err != nil {
				fail(err)
				return
			}
		}
		if l.mu.quota != nil {
			if err := l.mu.quota(st.e.Author, len(st.raw), u, Usage{Events: pos, Bytes: logBytes}); err != nil {
				if st.req.quotaErr == nil {
					st.req.quotaErr = err
				}
				st.req.overQuota++
				continue
			}
		}
		if u.Events == 0 {
			authors++
		}
		users[st.e.Author] = u.add(len(st.raw), nowMS) // only authors with an event added
		pos++
		st.pos = core.Cursor(pos)
		logBytes += uint64(len(st.raw))
		for _, r := range st.e.Blobs {
			old, ok := cidVals[r.CID] // named earlier in this group
			if !ok {
				var err error
				if old, err = l.cidIndexValue(r.CID); err != nil {
					fail(err)
					return
				}
			}
			cidVals[r.CID] = cidValue(old, r.Size, r.Name)
		}
		kept = append(kept, st)
	}
	if len(kept) == 0 {
		return
	}
	// The batch holds its keys in order, prefix by prefix: pebble inserts
	// them into its memtable (a skiplist) one after the other, starting
	// each search from where the last one ended, so that consecutive
	// positions cost a step each, where keys of alternating prefixes cost
	// a search from the top each (7% of a catch-up's CPU).
	set := func(key, value []byte) bool {
		if err := b.Set(key, value, nil); err != nil {
			fail(err)
			return false
		}
		return true
	}
	for _, st := range kept {
		if !set(posKey(st.pos), st.raw) {
			return
		}
	}
	byID := make([]int, len(kept))
	for i := range byID {
		byID[i] = i
	}
	slices.SortFunc(byID, func(i, j int) int { return bytes.Compare(kept[i].id[:], kept[j].id[:]) })
	for _, i := range byID {
		binary.BigEndian.PutUint64(posBuf[:], uint64(kept[i].pos))
		if !set(idKey(kept[i].id), posBuf[:]) {
			return
		}
	}
	for _, c := range slices.Sorted(maps.Keys(cidVals)) {
		if !set(cidKey(c), cidVals[c]) {
			return
		}
	}
	for _, a := range slices.Sorted(maps.Keys(users)) {
		if !set(usageKeyOf(a), encodeUsage(users[a])) {
			return
		}
	}
	if err := b.Set([]byte(usageKey), encodeTotals(logBytes, authors), nil); err != nil {
		fail(err)
		return
	}
	if l.mu.room != nil {
		if err := l.mu.room(b.Len()); err != nil {
			fail(err)
			return
		}
	}
	if err := b.Commit(pebble.Sync); err != nil {
		fail(err)
		return
	}
	l.groups.Add(1)
	l.recent.Lock()
	for _, st := range kept {
		i := st.pos % recentIDs
		l.recent.ids[i], l.recent.pos[i] = core.ShortID(st.id[:core.ShortIDBytes]), st.pos
	}
	l.recent.Unlock()
	l.head.Store(pos)
	if l.mu.committed != nil {
		ids := make([]core.ShortID, len(kept))
		for i, st := range kept {
			ids[i] = core.ShortID(st.id[:core.ShortIDBytes])
		}
		l.mu.committed(kept[0].pos, ids)
	}
	l.bytes.Store(logBytes)
	l.authors.Store(authors)
	l.seen.Lock()
	full := false
	for _, st := range kept {
		full = l.seen.f.add(st.id) || full
		st.req.added = append(st.req.added, st.e)
	}
	l.seen.Unlock()
	l.sums.Lock()
	for _, st := range kept {
		l.sums.add(st.id)
	}
	l.sums.Unlock()
	if full {
		// Rebuilt from the store, twice as large; until it succeeds the
		// old filter (more false positives, never a wrong answer) serves.
		if seen, err := loadSeen(l.db, pos, nil); err == nil {
			l.seen.Lock()
			l.seen.f = seen
			l.seen.Unlock()
		}
	}
	close(l.mu.changed)
	l.mu.changed = make(chan struct{})
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
func (l *Log) Page(after core.Cursor, limit int, maxBytes int) (events []jsontext.Value, next core.Cursor, more bool, err error) {
	return l.PageInto(nil, after, limit, maxBytes)
}

// PageInto is Page with the events copied into *buf, from its start: it
// grows *buf as needed (append) and leaves it holding them, so that a
// caller that serves many pages can recycle the buffer (a fresh one of a
// page's size cost more than the reads it held, in garbage collection;
// ADR 0038).
// The events alias *buf until the caller reuses it. A nil buf is a buffer
// of Page's own.
func (l *Log) PageInto(buf *[]byte, after core.Cursor, limit int, maxBytes int) (events []jsontext.Value, next core.Cursor, more bool, err error) {
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
	// allocation for the page (none with a recycled buffer) instead of one
	// per event.
	if buf == nil {
		buf = new([]byte)
	}
	data := (*buf)[:0]
	defer func() { *buf = data }()
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
		if len(data)+len(v) > maxBytes {
			if len(ends) == 0 {
				return nil, after, false, fmt.Errorf("%w: event of %d bytes, maxBytes %d", ErrPageTooSmall, len(v), maxBytes)
			}
			more = true
			break
		}
		if data == nil {
			// Guess the page from its first event; append grows it if the
			// guess is short.
			data = make([]byte, 0, min(maxBytes, limit*(len(v)+len(v)/4)))
		}
		k := it.Key()
		if len(k) != len(posPrefix)+8 {
			return nil, after, false, fmt.Errorf("eventlog: page: damaged position key %q", k)
		}
		data = append(data, v...)
		ends = append(ends, len(data))
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
		events[i] = jsontext.Value(data[start:end:end])
		start = end
	}
	return events, core.Cursor(positions[len(positions)-1]), more, nil
}

// Get returns the event with the given id and its position, or ErrNotFound.
// An id that is not 64 lowercase hex digits is ErrMalformed.
func (l *Log) Get(id string) (*Event, core.Cursor, error) {
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
func (l *Log) Find(prefix string) (*Event, core.Cursor, error) {
	return l.find(prefix, MinIDPrefix)
}

// find is Find with the shortest prefix as a parameter, for tests.
func (l *Log) find(prefix string, minLen int) (*Event, core.Cursor, error) {
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
	it, err := l.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: core.PrefixEnd(lower)})
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
func (l *Log) getRaw(raw [32]byte) (*Event, core.Cursor, error) {
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

func (l *Log) position(id [32]byte) (core.Cursor, bool, error) {
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
	return core.Cursor(binary.BigEndian.Uint64(v)), true, nil
}

// allPageEvents and allPageBytes are the pages All reads: as large as a
// sync page (docs/design.md §4), so that a walk of the whole log holds at
// most about 4 MiB of event JSON at once.
const (
	allPageEvents = core.MaxPageEvents
	allPageBytes  = 4 << 20
)

// All returns an iterator over the stored events at positions after
// `after`, in position order, each decoded and with its position. It reads
// the log a page at a time (Page), so events appended during the walk are
// seen if they come after the page being read. An event that no longer
// decodes (a damaged record) is yielded as a nil event with an error that
// wraps ErrDamaged and names its position, and the walk goes on; a failure
// to read the log is yielded as a nil event with that error, and the walk
// ends. Stopping the loop early is fine:
//
//	for e, err := range l.All(0) {
//		if errors.Is(err, eventlog.ErrDamaged) {
//			continue
//		}
//		if err != nil {
//			return err
//		}
//		use(e)
//	}
func (l *Log) All(after core.Cursor) iter.Seq2[*Event, error] {
	return func(yield func(*Event, error) bool) {
		for {
			page, next, more, err := l.Page(after, allPageEvents, allPageBytes)
			if err != nil {
				yield(nil, err)
				return
			}
			for i, raw := range page {
				e, err := Decode(raw)
				if err != nil {
					err = fmt.Errorf("%w: the event at position %d: %w", ErrDamaged, after+core.Cursor(i)+1, err)
				}
				if !yield(e, err) {
					return
				}
			}
			if !more {
				return
			}
			after = next
		}
	}
}
