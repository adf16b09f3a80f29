package eventlog

import (
	"encoding/binary"
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/wats-network/wats/core"
)

// recentIDs is how many of the newest events' short ids the log keeps in
// memory: a heads announcement (docs/adr/0041) names the events stored
// since the one before, tens of them at most, and reads them from here
// rather than from the store.
const recentIDs = 1024

// storedIDStart is where the id's hex digits begin in an event as stored:
// Marshal writes `{"id":"` first.
const storedIDStart = len(`{"id":"`)

// ShortIDs returns the short ids (core.ShortID) of the events at the
// positions after `after` up to the head, in position order: the newest
// max of them when there are more. from is the position before the first
// one returned (at least after; after itself when there are none). They
// come from memory for the newest
// recentIDs events, else from the store; a stored event whose id cannot be
// read is an error wrapping ErrDamaged.
func (l *Log) ShortIDs(after core.Cursor, max int) (ids []core.ShortID, from core.Cursor, err error) {
	head := l.Head()
	if after >= head || max <= 0 {
		return nil, after, nil
	}
	from = after
	if uint64(head-from) > uint64(max) {
		from = head - core.Cursor(max)
	}
	ids = make([]core.ShortID, 0, head-from)
	l.recent.RLock()
	for p := from + 1; p <= head; p++ {
		i := p % recentIDs
		if l.recent.pos[i] != p {
			break
		}
		ids = append(ids, l.recent.ids[i])
	}
	l.recent.RUnlock()
	if got := from + core.Cursor(len(ids)); got < head {
		rest, err := l.storedShortIDs(got, head)
		if err != nil {
			return nil, from, err
		}
		ids = append(ids, rest...)
	}
	return ids, from, nil
}

// storedShortIDs reads the short ids of the events at positions after
// `after` up to head from the store.
func (l *Log) storedShortIDs(after, head core.Cursor) ([]core.ShortID, error) {
	it, err := l.db.NewIter(&pebble.IterOptions{LowerBound: posKey(after + 1), UpperBound: posKey(head + 1)})
	if err != nil {
		return nil, fmt.Errorf("eventlog: short ids: %w", err)
	}
	defer it.Close()
	ids := make([]core.ShortID, 0, head-after)
	want := after + 1
	for it.First(); it.Valid(); it.Next() {
		k, v := it.Key(), it.Value()
		pos := core.Cursor(binary.BigEndian.Uint64(k[len(posPrefix):]))
		if pos != want {
			return nil, fmt.Errorf("%w: position %d is missing", ErrDamaged, want)
		}
		if len(v) < storedIDStart+2*core.ShortIDBytes {
			return nil, fmt.Errorf("%w: the event at position %d is %d bytes", ErrDamaged, pos, len(v))
		}
		id, err := core.ParseShortID(string(v[storedIDStart : storedIDStart+2*core.ShortIDBytes]))
		if err != nil {
			return nil, fmt.Errorf("%w: the event at position %d: %w", ErrDamaged, pos, err)
		}
		ids = append(ids, id)
		want++
	}
	if err := it.Error(); err != nil {
		return nil, fmt.Errorf("eventlog: short ids: %w", err)
	}
	if want != head+1 {
		return nil, fmt.Errorf("%w: position %d is missing", ErrDamaged, want)
	}
	return ids, nil
}

// HasShort reports whether an event whose id starts with the short id s
// is stored (one lookup in the id index).
func (l *Log) HasShort(s core.ShortID) (bool, error) {
	lower := append([]byte(idPrefix), s[:]...)
	it, err := l.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: core.PrefixEnd(lower)})
	if err != nil {
		return false, fmt.Errorf("eventlog: has short id: %w", err)
	}
	defer it.Close()
	found := it.First()
	if err := it.Error(); err != nil {
		return false, fmt.Errorf("eventlog: has short id: %w", err)
	}
	return found, nil
}
