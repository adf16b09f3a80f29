package eventlog

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/wats-network/wats/core"
)

// TestGroupCommit: Appends that arrive while a commit runs wait for it and
// are stored together in the next batch, each with its own result; a
// malformed call in the group fails alone.
func TestGroupCommit(t *testing.T) {
	l := openLog(t, memDB(t))
	key := testKey(t, 1)
	evs := makeEvents(t, key, testNow, 64, 0)

	// The quota holds the first commit until the other 63 calls (and a
	// malformed one) are queued behind it, so the second group is all of
	// them: two commits for 65 calls.
	hold := make(chan struct{})
	var commits int
	var once sync.Once
	l.SetQuota(func(string, int, Usage, Usage) error {
		once.Do(func() { <-hold })
		return nil
	})
	var wg sync.WaitGroup
	results := make([][]*Event, len(evs))
	wg.Go(func() {
		var err error
		if results[0], err = l.Append(evs[:1]); err != nil {
			t.Error(err)
		}
	})
	waitQueued(t, l, 0)
	commits++
	for i := 1; i < len(evs); i++ {
		wg.Go(func() {
			var err error
			if results[i], err = l.Append([]*Event{evs[i], evs[0]}); err != nil {
				t.Error(err)
			}
		})
	}
	bad := clone(evs[5])
	bad.ID = "NOT-HEX"
	var badErr error
	wg.Go(func() { _, badErr = l.Append([]*Event{evs[63], bad}) })
	waitQueued(t, l, len(evs))
	commits++
	close(hold)
	wg.Wait()

	if !errors.Is(badErr, ErrMalformed) {
		t.Errorf("malformed call in the group: %v, want ErrMalformed", badErr)
	}
	for i, added := range results {
		// evs[0] was stored by the first call: the later calls add only
		// their own event.
		if len(added) != 1 || added[0].ID != evs[i].ID {
			t.Errorf("call %d added %v, want its own event", i, ids(added))
		}
	}
	if l.Head() != 64 {
		t.Fatalf("head %d, want 64", l.Head())
	}
	if got := l.groups.Load(); got != uint64(commits) {
		t.Errorf("%d commits for 65 calls, want %d", got, commits)
	}
}

// waitQueued waits until n calls wait in l's group-commit queue behind a
// running commit.
func waitQueued(t *testing.T, l *Log, n int) {
	t.Helper()
	for {
		l.gc.Lock()
		q, busy := len(l.gc.queue), l.gc.busy
		l.gc.Unlock()
		if busy && q == n {
			return
		}
		if q > n {
			t.Fatalf("%d calls queued, want %d", q, n)
		}
		runtime.Gosched()
	}
}

// TestQuota: the quota sees each new event with its author's and the log's
// usage before it, an event it refuses is not stored (Add says ErrQuota)
// and the usage counts only what was stored.
func TestQuota(t *testing.T) {
	l := openLog(t, memDB(t))
	a, b := testKey(t, 1), testKey(t, 2)
	ea := makeEvents(t, a, testNow, 5, 0)
	eb := makeEvents(t, b, testNow, 5, 100)
	authorA := ea[0].Author

	errFull := fmt.Errorf("%w: author over 3 events", ErrQuota)
	var sawTotal []uint64
	l.SetQuota(func(author string, size int, au, total Usage) error {
		if size <= 0 {
			t.Errorf("size %d", size)
		}
		sawTotal = append(sawTotal, total.Events)
		if author == authorA && au.Events >= 3 {
			return errFull
		}
		return nil
	})
	added, err := l.Append(append(append([]*Event{}, ea...), eb...))
	if err != nil || len(added) != 8 {
		t.Fatalf("added %d, %v; want 8 (3 of a, 5 of b)", len(added), err)
	}
	for i, want := range []uint64{0, 1, 2, 3, 3, 3, 4, 5, 6, 7} {
		if sawTotal[i] != want {
			t.Fatalf("quota saw totals %v", sawTotal)
		}
	}
	if ok, err := l.Add(ea[4]); ok || !errors.Is(err, ErrQuota) {
		t.Errorf("Add over the quota: %v, %v; want false, ErrQuota", ok, err)
	}
	if ok, err := l.Add(eb[0]); ok || err != nil {
		t.Errorf("Add of a stored event: %v, %v; want false, nil", ok, err)
	}
	ua, _ := l.AuthorUsage(authorA)
	ub, _ := l.AuthorUsage(eb[0].Author)
	if ua.Events != 3 || ub.Events != 5 {
		t.Errorf("usage a %+v, b %+v; want 3 and 5 events", ua, ub)
	}
	total, authors := l.Usage()
	if total.Events != 8 || total.Bytes != ua.Bytes+ub.Bytes || authors != 2 {
		t.Errorf("total %+v, %d authors; want 8 events, %d bytes, 2 authors", total, authors, ua.Bytes+ub.Bytes)
	}
	if u, err := l.AuthorUsage("12D3KooWNeverSeen"); err != nil || u != (Usage{}) {
		t.Errorf("unknown author: %+v, %v", u, err)
	}
	// AppendEncoded counts what the quota refused, each event once.
	raws := make([][]byte, 0, 3)
	for _, e := range []*Event{ea[3], ea[4], ea[3]} {
		raw, err := e.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		raws = append(raws, raw)
	}
	if added, over, err := l.AppendEncoded([]*Event{ea[3], ea[4], ea[3]}, raws); err != nil || len(added) != 0 || over != 2 {
		t.Errorf("AppendEncoded over the quota: %d added, %d over it, %v; want 0, 2, nil", len(added), over, err)
	}
	rawB, err := eb[0].Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if added, over, err := l.AppendEncoded(eb[:1], [][]byte{rawB}); err != nil || len(added) != 0 || over != 0 {
		t.Errorf("AppendEncoded of a stored event: %d added, %d over the quota, %v; want 0, 0, nil", len(added), over, err)
	}
	// Lifting the quota lets the refused events in.
	l.SetQuota(nil)
	if ok, err := l.Add(ea[4]); !ok || err != nil {
		t.Errorf("Add without a quota: %v, %v", ok, err)
	}
}

// TestUsagePersistsAndMigrates: the usage survives a reopen, and a log
// written before the author index existed gets the same figures at Open.
func TestUsagePersistsAndMigrates(t *testing.T) {
	dir := t.TempDir()
	db, err := pebble.Open(dir, testOptions(nil))
	if err != nil {
		t.Fatal(err)
	}
	l := openLog(t, db)
	for k := range byte(3) {
		if _, err := l.Append(makeEvents(t, testKey(t, k+1), testNow, int(k)+1, 0)); err != nil {
			t.Fatal(err)
		}
	}
	want, wantAuthors := l.Usage()
	ua, _ := l.AuthorUsage(makeEvents(t, testKey(t, 3), testNow, 1, 0)[0].Author)
	if want.Events != 6 || wantAuthors != 3 || ua.Events != 3 {
		t.Fatalf("usage %+v, %d authors, third author %+v", want, wantAuthors, ua)
	}
	db.Close()

	for _, drop := range []bool{false, true} {
		db, err := pebble.Open(dir, testOptions(nil))
		if err != nil {
			t.Fatal(err)
		}
		if drop { // as a log written before the author index
			if err := db.DeleteRange([]byte(authorPrefix), []byte(KeyPrefix+"a0"), pebble.Sync); err != nil {
				t.Fatal(err)
			}
			if err := db.Delete([]byte(usageKey), pebble.Sync); err != nil {
				t.Fatal(err)
			}
		}
		l := openLog(t, db)
		got, authors := l.Usage()
		u, _ := l.AuthorUsage(makeEvents(t, testKey(t, 3), testNow, 1, 0)[0].Author)
		wantA := ua
		if drop { // when the events were stored is lost: their own time stands in
			wantA.First = testNow.UnixMilli()
		}
		if got != want || authors != wantAuthors || u != wantA {
			t.Errorf("dropped %v: usage %+v, %d authors, third %+v; want %+v, %d, %+v", drop, got, authors, u, want, wantAuthors, wantA)
		}
		db.Close()
	}
}

// TestUsageFirst: an author's First is the log's clock when its first
// event was stored, and later events do not move it, whatever the clock
// does.
func TestUsageFirst(t *testing.T) {
	l := openLog(t, memDB(t))
	clock := time.UnixMilli(1_000_000)
	l.SetClock(func() time.Time { return clock })
	evs := makeEvents(t, testKey(t, 1), testNow, 3, 0)
	if _, err := l.Append(evs[:1]); err != nil {
		t.Fatal(err)
	}
	for _, step := range []time.Duration{time.Hour, -2 * time.Hour} {
		clock = clock.Add(step)
		if _, err := l.Append(evs[1:2]); err != nil {
			t.Fatal(err)
		}
		evs = append(evs[:1], evs[2:]...)
	}
	u, _ := l.AuthorUsage(evs[0].Author)
	if u.First != 1_000_000 || u.Events != 3 {
		t.Fatalf("usage %+v, want 3 events first stored at 1000000", u)
	}
}

// TestRoomRefusesAWrite: while SetRoom's check refuses, Append fails with
// its error and writes nothing (head, usage and lookups as before); once
// it allows, the same events are stored.
func TestRoomRefusesAWrite(t *testing.T) {
	l := openLog(t, memDB(t))
	evs := makeEvents(t, testKey(t, 1), testNow, 3, 0)
	if _, err := l.Append(evs[:1]); err != nil {
		t.Fatal(err)
	}
	full := errors.New("disk full")
	var asked []int
	refuse := true
	l.SetRoom(func(n int) error {
		asked = append(asked, n)
		if refuse {
			return full
		}
		return nil
	})
	added, err := l.Append(evs[1:])
	if !errors.Is(err, full) || len(added) != 0 {
		t.Fatalf("Append while full = %d added, %v; want none, %v", len(added), err, full)
	}
	if len(asked) != 1 || asked[0] <= len(evs[1].mustMarshal(t))+len(evs[2].mustMarshal(t)) {
		t.Fatalf("room asked for %v bytes; want one batch larger than the two events", asked)
	}
	if h := l.Head(); h != 1 {
		t.Fatalf("head %d after a refused write, want 1", h)
	}
	if u, _ := l.Usage(); u.Events != 1 {
		t.Fatalf("usage %+v after a refused write", u)
	}
	if ok, err := l.Has(evs[1].ID); ok || err != nil {
		t.Fatalf("Has(refused event) = %v, %v", ok, err)
	}
	refuse = false
	if added, err := l.Append(evs[1:]); err != nil || len(added) != 2 {
		t.Fatalf("Append once room is back = %d added, %v; want 2", len(added), err)
	}
	if h := l.Head(); h != 3 {
		t.Fatalf("head %d, want 3", h)
	}
}

// TestCommittedTellsWhatWasAdded: SetCommitted's function hears, after
// each durable batch, the first position and the short ids of the events
// it added, not of those it left out (duplicates), nor of a refused batch.
func TestCommittedTellsWhatWasAdded(t *testing.T) {
	l := openLog(t, memDB(t))
	evs := makeEvents(t, testKey(t, 1), testNow, 5, 0)
	type call struct {
		first core.Cursor
		ids   []core.ShortID
	}
	var calls []call
	l.SetCommitted(func(first core.Cursor, ids []core.ShortID) { calls = append(calls, call{first, ids}) })
	if _, err := l.Append(evs[:2]); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(evs[1:4]); err != nil { // evs[1] is held: two added
		t.Fatal(err)
	}
	l.SetRoom(func(int) error { return errors.New("full") })
	l.Append(evs[4:])
	short := func(e *Event) core.ShortID {
		raw, _ := parseID(e.ID)
		return core.ShortID(raw[:core.ShortIDBytes])
	}
	want := []call{{1, []core.ShortID{short(evs[0]), short(evs[1])}}, {3, []core.ShortID{short(evs[2]), short(evs[3])}}}
	if fmt.Sprint(calls) != fmt.Sprint(want) {
		t.Fatalf("committed calls %v, want %v", calls, want)
	}
}
