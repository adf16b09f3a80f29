package eventlog

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
)

// TestSeenFilterGrowsAndNeverChangesDedupe: with a tiny filter that must be
// rebuilt several times, Append still adds every new event once and drops
// every duplicate, and a reopened log agrees.
func TestSeenFilterGrowsAndNeverChangesDedupe(t *testing.T) {
	old := minSeenCapacity
	minSeenCapacity = 8
	defer func() { minSeenCapacity = old }()

	db := memDB(t)
	l, err := Open(db)
	if err != nil {
		t.Fatal(err)
	}
	key := testKey(t, 1)
	now := time.Unix(1767225600, 0)
	var all []*Event
	for i := range 100 {
		all = append(all, mustNew(t, key, now, "note", fmt.Sprintf(`{"n":%d}`, i), nil))
	}
	for start := 0; start < len(all); start += 10 {
		batch := all[start : start+10]
		added, err := l.Append(slices.Concat(batch, all[:start/2])) // new ones plus old duplicates
		if err != nil {
			t.Fatal(err)
		}
		if len(added) != len(batch) {
			t.Fatalf("batch at %d added %d events, want %d (only the new ones)", start, len(added), len(batch))
		}
	}
	l.seen.RLock()
	capacity, count := l.seen.f.capacity, l.seen.f.count
	l.seen.RUnlock()
	if count != 100 || capacity < 100 {
		t.Fatalf("filter holds %d ids with capacity %d, want 100 ids and a grown capacity", count, capacity)
	}
	if l.Head() != 100 {
		t.Fatalf("head %d, want 100", l.Head())
	}
	l2, err := Open(db)
	if err != nil {
		t.Fatal(err)
	}
	if added, err := l2.Append(all); err != nil || len(added) != 0 {
		t.Fatalf("after reopen, appending all again added %d (%v), want 0", len(added), err)
	}
}

func TestFindByPrefix(t *testing.T) {
	db := memDB(t)
	l := openLog(t, db)
	key := testKey(t, 2)
	now := time.Unix(1767225600, 0)
	var events []*Event
	for i := range 300 {
		events = append(events, mustNew(t, key, now, "note", fmt.Sprintf(`{"n":%d}`, i), nil))
	}
	if _, err := l.Append(events); err != nil {
		t.Fatal(err)
	}
	for _, e := range events[:20] {
		for _, n := range []int{MinIDPrefix, MinIDPrefix + 1, 63, 64} {
			got, _, err := l.Find(e.ID[:n])
			if err != nil || got.ID != e.ID {
				t.Fatalf("Find(%s) = %v, %v; want %s", e.ID[:n], got, err, e.ID)
			}
		}
	}
	for _, bad := range []string{events[0].ID[:MinIDPrefix-1], "ABCDEF01", "zzzzzzzz", events[0].ID + "0"} {
		if _, _, err := l.Find(bad); !errors.Is(err, ErrMalformed) {
			t.Errorf("Find(%q) = %v, want ErrMalformed", bad, err)
		}
	}
	// A prefix no event has.
	missing := "ffffffff"
	for _, e := range events {
		if strings.HasPrefix(e.ID, missing) {
			t.Skip("an id happens to start with ffffffff")
		}
	}
	if _, _, err := l.Find(missing); !errors.Is(err, ErrNotFound) {
		t.Errorf("Find(%q) = %v, want ErrNotFound", missing, err)
	}
	// With 300 events, some two ids share their first hex digit (and
	// some digit starts none): below MinIDPrefix only through find.
	first := map[byte]int{}
	for _, e := range events {
		first[e.ID[0]]++
	}
	for d, n := range first {
		_, _, err := l.find(string(d), 1)
		switch {
		case n > 1 && !errors.Is(err, ErrAmbiguous):
			t.Errorf("find(%q) with %d matches = %v, want ErrAmbiguous", d, n, err)
		case n == 1 && err != nil:
			t.Errorf("find(%q) with one match = %v", d, err)
		}
	}
}

// TestVerifyNewSkipsKnownEvents: events the caller holds are counted as
// duplicates without a signature check (a tampered copy of a known event is
// a duplicate, not a rejection); unknown ones are verified as usual.
func TestVerifyNewSkipsKnownEvents(t *testing.T) {
	key := testKey(t, 3)
	now := time.Unix(1767225600, 0)
	a := mustNew(t, key, now, "note", `{"n":1}`, nil)
	b := mustNew(t, key, now, "note", `{"n":2}`, nil)
	bad := clone(b)
	bad.Sig = a.Sig // invalid signature
	rawA, _ := a.Marshal()
	rawB, _ := b.Marshal()
	rawBad, _ := bad.Marshal()
	known := func(id string) bool { return id == a.ID }
	ok, dups, rejected := VerifyNew([]jsontext.Value{rawA, rawB, rawBad}, now, known)
	if dups != 1 || len(ok) != 1 || ok[0].ID != b.ID || len(rejected) != 1 {
		t.Fatalf("ok %d, dups %d, rejected %d; want 1 (b), 1 (a), 1 (the bad copy of b)", len(ok), dups, len(rejected))
	}
	tamperedKnown := clone(a)
	tamperedKnown.Sig = b.Sig
	rawT, _ := tamperedKnown.Marshal()
	ok, dups, rejected = VerifyNew([]jsontext.Value{rawT}, now, known)
	if dups != 1 || len(ok) != 0 || len(rejected) != 0 {
		t.Fatalf("a bad copy of a known event: ok %d, dups %d, rejected %d; want a duplicate", len(ok), dups, len(rejected))
	}
}
