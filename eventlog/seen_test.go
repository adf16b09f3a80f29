package eventlog

import (
	"fmt"
	"slices"
	"testing"
	"time"
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
	l.mu.Lock()
	capacity, count := l.mu.seen.capacity, l.mu.seen.count
	l.mu.Unlock()
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
