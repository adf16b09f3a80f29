package eventlog

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/wats-network/wats/core"
)

// shortOf is the short id of e.
func shortOf(tb testing.TB, e *Event) core.ShortID {
	tb.Helper()
	id, err := core.ParseShortID(e.ID[:2*core.ShortIDBytes])
	if err != nil {
		tb.Fatal(err)
	}
	return id
}

// appendNotes appends k notes of key b to l, one call each, and returns them.
func appendNotes(tb testing.TB, l *Log, b byte, k int) []*Event {
	tb.Helper()
	var out []*Event
	for i := range k {
		e := mustNew(tb, testKey(tb, b), testNow, "note", fmt.Sprintf(`{"i":%d}`, i), nil)
		if _, err := l.Append([]*Event{e}); err != nil {
			tb.Fatal(err)
		}
		out = append(out, e)
	}
	return out
}

// TestShortIDs: the short ids of the positions after `after` up to the
// head, the newest max of them, the same from memory and from the store
// (a log reopened has none in memory); from names the position before the
// first.
func TestShortIDs(t *testing.T) {
	db := memDB(t)
	l := openLog(t, db)
	evs := appendNotes(t, l, 1, 10)
	want := make([]core.ShortID, len(evs))
	for i, e := range evs {
		want[i] = shortOf(t, e)
	}
	for _, log := range []*Log{l, openLog(t, db)} { // memory, then the store
		for _, c := range []struct {
			after    core.Cursor
			max      int
			from     core.Cursor
			wantFrom int // index into want of the first id
		}{
			{after: 0, max: 64, from: 0, wantFrom: 0},
			{after: 7, max: 64, from: 7, wantFrom: 7},
			{after: 0, max: 3, from: 7, wantFrom: 7}, // the newest 3
			{after: 9, max: 1, from: 9, wantFrom: 9},
		} {
			got, from, err := log.ShortIDs(c.after, c.max)
			if err != nil || from != c.from || !slices.Equal(got, want[c.wantFrom:]) {
				t.Errorf("ShortIDs(%d, %d) = %v, %d, %v; want %v, %d", c.after, c.max, got, from, err, want[c.wantFrom:], c.from)
			}
		}
		for _, after := range []core.Cursor{10, 11, 1 << 40} {
			if got, from, err := log.ShortIDs(after, 64); len(got) != 0 || from != after || err != nil {
				t.Errorf("ShortIDs(%d) past the head = %v, %d, %v", after, got, from, err)
			}
		}
		if got, _, _ := log.ShortIDs(0, 0); len(got) != 0 {
			t.Errorf("ShortIDs with max 0: %v", got)
		}
	}
}

// TestShortIDsPastMemory: past recentIDs events the oldest come from the
// store, and a whole window mixes the two.
func TestShortIDsPastMemory(t *testing.T) {
	l := openLog(t, memDB(t))
	var evs []*Event
	for i := range recentIDs + 10 {
		evs = append(evs, mustNew(t, testKey(t, 2), testNow, "note", fmt.Sprintf(`{"i":%d}`, i), nil))
	}
	for batch := range slices.Chunk(evs, 256) {
		if _, err := l.Append(batch); err != nil {
			t.Fatal(err)
		}
	}
	got, from, err := l.ShortIDs(0, len(evs))
	if err != nil || from != 0 || len(got) != len(evs) {
		t.Fatalf("ShortIDs = %d ids, %d, %v", len(got), from, err)
	}
	for i, e := range evs {
		if got[i] != shortOf(t, e) {
			t.Fatalf("position %d: %v, want %v", i+1, got[i], shortOf(t, e))
		}
	}
}

// TestShortIDsDamaged: a stored event that does not start with its id is
// ErrDamaged, not a wrong id.
func TestShortIDsDamaged(t *testing.T) {
	db := memDB(t)
	l := openLog(t, db)
	appendNotes(t, l, 3, 2)
	if err := db.Set(posKey(1), []byte(`{"ID":"x"}`), nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := openLog(t, db).ShortIDs(0, 8); !errors.Is(err, ErrDamaged) {
		t.Errorf("ShortIDs over a damaged event: %v, want ErrDamaged", err)
	}
}

// TestHasShort: true for the short id of a stored event, false for one
// that differs in its last byte or its first.
func TestHasShort(t *testing.T) {
	l := openLog(t, memDB(t))
	e := appendNotes(t, l, 4, 1)[0]
	s := shortOf(t, e)
	if ok, err := l.HasShort(s); !ok || err != nil {
		t.Errorf("HasShort of a stored event: %v, %v", ok, err)
	}
	for _, i := range []int{0, core.ShortIDBytes - 1} {
		other := s
		other[i] ^= 1
		if ok, err := l.HasShort(other); ok || err != nil {
			t.Errorf("HasShort with byte %d changed: %v, %v", i, ok, err)
		}
	}
}
