package eventlog

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/libp2p/go-libp2p/core/crypto"

	"github.com/wats-network/wats/core"
)

// makeEvents signs n events by key, all at the same millisecond.
func makeEvents(tb testing.TB, key crypto.PrivKey, now time.Time, n, from int) []*Event {
	tb.Helper()
	evs := make([]*Event, n)
	for i := range evs {
		evs[i] = mustNew(tb, key, now, "note", fmt.Sprintf(`{"i":%d}`, from+i), nil)
	}
	return evs
}

func ids(evs []*Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.ID
	}
	return out
}

func TestAppendDedupe(t *testing.T) {
	l := openLog(t, memDB(t))
	if l.Head() != 0 {
		t.Fatalf("empty head %d", l.Head())
	}
	evs := makeEvents(t, testKey(t, 1), testNow, 4, 0)
	// Same id twice within one batch: stored once.
	added, err := l.Append([]*Event{evs[0], evs[1], clone(evs[0]), evs[2]})
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(added); len(got) != 3 || got[0] != evs[0].ID || got[1] != evs[1].ID || got[2] != evs[2].ID {
		t.Fatalf("added %v", got)
	}
	if l.Head() != 3 {
		t.Fatalf("head %d, want 3", l.Head())
	}
	// Across batches: only the new one is added, at position 4.
	added, err = l.Append([]*Event{evs[2], evs[3], evs[1]})
	if err != nil {
		t.Fatal(err)
	}
	if len(added) != 1 || added[0].ID != evs[3].ID || l.Head() != 4 {
		t.Fatalf("added %v, head %d", ids(added), l.Head())
	}
	// Nothing new: nothing added, head unchanged.
	added, err = l.Append(evs)
	if err != nil || len(added) != 0 || l.Head() != 4 {
		t.Fatalf("added %v, err %v, head %d", ids(added), err, l.Head())
	}
	if added, err := l.Append(nil); err != nil || added != nil {
		t.Fatalf("empty append: %v %v", added, err)
	}
	for i, e := range evs {
		got, pos, err := l.Get(e.ID)
		if err != nil {
			t.Fatal(err)
		}
		if pos != core.Cursor(i+1) || got.ID != e.ID || string(got.Body) != string(e.Body) {
			t.Errorf("Get(%d): pos %d, %+v", i, pos, got)
		}
		if err := got.Verify(testNow); err != nil {
			t.Errorf("stored event %d does not verify: %v", i, err)
		}
		if ok, err := l.Has(e.ID); !ok || err != nil {
			t.Errorf("Has(%d) = %v, %v", i, ok, err)
		}
	}
	other := mustNew(t, testKey(t, 2), testNow, "note", `{}`, nil)
	if _, _, err := l.Get(other.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get of absent id: %v", err)
	}
	if ok, err := l.Has(other.ID); ok || err != nil {
		t.Errorf("Has of absent id: %v %v", ok, err)
	}
	for _, bad := range []string{"", "xyz", evs[0].ID[:63], "A" + evs[0].ID[1:]} {
		if _, _, err := l.Get(bad); !errors.Is(err, ErrMalformed) {
			t.Errorf("Get(%q): %v", bad, err)
		}
		if _, err := l.Has(bad); !errors.Is(err, ErrMalformed) {
			t.Errorf("Has(%q): %v", bad, err)
		}
	}
}

func TestAppendRefusesBadIDAtomically(t *testing.T) {
	l := openLog(t, memDB(t))
	evs := makeEvents(t, testKey(t, 1), testNow, 2, 0)
	bad := clone(evs[1])
	bad.ID = "nothex"
	if _, err := l.Append([]*Event{evs[0], bad}); !errors.Is(err, ErrMalformed) {
		t.Fatalf("err %v", err)
	}
	if l.Head() != 0 {
		t.Fatalf("head %d after a refused batch", l.Head())
	}
	if ok, _ := l.Has(evs[0].ID); ok {
		t.Fatal("part of a refused batch was stored")
	}
}

// pageAll pages through the whole log and fails on a skip or a repeat.
func pageAll(t *testing.T, l *Log, limit, maxBytes int) []string {
	t.Helper()
	var got []string
	after := core.Cursor(0)
	for pages := 0; ; pages++ {
		if pages > 5000 {
			t.Fatal("paging does not end")
		}
		evs, next, more, err := l.Page(after, limit, maxBytes)
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) > limit {
			t.Fatalf("%d events over limit %d", len(evs), limit)
		}
		total := 0
		for _, raw := range evs {
			total += len(raw)
			e, err := Decode(raw)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, e.ID)
		}
		if total > maxBytes {
			t.Fatalf("%d bytes over maxBytes %d", total, maxBytes)
		}
		if next != after+core.Cursor(len(evs)) {
			t.Fatalf("next %d after %d with %d events", next, after, len(evs))
		}
		if more != (next < l.Head()) {
			t.Fatalf("more %v at next %d, head %d", more, next, l.Head())
		}
		after = next
		if !more {
			return got
		}
		if len(evs) == 0 {
			t.Fatal("empty page with more")
		}
	}
}

// TestPageSameTimestamp: 1000 events of one millisecond are paged with
// several limits and byte budgets; each comes exactly once, in order.
func TestPageSameTimestamp(t *testing.T) {
	l := openLog(t, memDB(t))
	evs := makeEvents(t, testKey(t, 1), testNow, 1000, 0)
	for i := 0; i < len(evs); i += 100 {
		if _, err := l.Append(evs[i : i+100]); err != nil {
			t.Fatal(err)
		}
	}
	if l.Head() != 1000 {
		t.Fatalf("head %d", l.Head())
	}
	raw, _ := evs[0].Marshal()
	size := len(raw)
	for _, limit := range []int{1, 7, 256, 1000, 5000} {
		for _, maxBytes := range []int{size + 10, 3*size + 1, 4 << 20} {
			t.Run(fmt.Sprintf("limit%d_bytes%d", limit, maxBytes), func(t *testing.T) {
				got := pageAll(t, l, limit, maxBytes)
				if len(got) != len(evs) {
					t.Fatalf("%d events, want %d", len(got), len(evs))
				}
				for i, id := range got {
					if id != evs[i].ID {
						t.Fatalf("event %d out of order", i)
					}
				}
			})
		}
	}
}

func TestPageBounds(t *testing.T) {
	l := openLog(t, memDB(t))
	evs := makeEvents(t, testKey(t, 1), testNow, 10, 0)
	if _, err := l.Append(evs); err != nil {
		t.Fatal(err)
	}
	raw0, _ := evs[0].Marshal()

	page, next, more, err := l.Page(0, 3, 1<<20)
	if err != nil || len(page) != 3 || next != 3 || !more {
		t.Fatalf("limit 3: %d events, next %d, more %v, %v", len(page), next, more, err)
	}
	if string(page[0]) != string(raw0) {
		t.Errorf("page[0] %s, want %s", page[0], raw0)
	}
	// Exactly two events' worth of bytes, then one byte less.
	two := len(page[0]) + len(page[1])
	if page, next, more, _ = l.Page(0, 10, two); len(page) != 2 || next != 2 || !more {
		t.Errorf("maxBytes %d: %d events, next %d, more %v", two, len(page), next, more)
	}
	if page, _, _, _ = l.Page(0, 10, two-1); len(page) != 1 {
		t.Errorf("maxBytes %d: %d events, want 1", two-1, len(page))
	}
	// The last page: more is false.
	if page, next, more, _ = l.Page(7, 3, 1<<20); len(page) != 3 || next != 10 || more {
		t.Errorf("last page: %d events, next %d, more %v", len(page), next, more)
	}
	if page, next, more, _ = l.Page(7, 4, 1<<20); len(page) != 3 || next != 10 || more {
		t.Errorf("last page, larger limit: %d events, next %d, more %v", len(page), next, more)
	}
	// At and past the head: empty, next = after, more false.
	for _, after := range []core.Cursor{10, 11, 1 << 40, math.MaxUint64 - 1, math.MaxUint64} {
		page, next, more, err := l.Page(after, 5, 1<<20)
		if err != nil || len(page) != 0 || next != after || more {
			t.Errorf("after %d: %d events, next %d, more %v, %v", after, len(page), next, more, err)
		}
	}
	// Bad arguments.
	for _, a := range [][2]int{{0, 100}, {-1, 100}, {1, 0}, {1, -5}} {
		if _, _, _, err := l.Page(0, a[0], a[1]); !errors.Is(err, ErrBadArgument) {
			t.Errorf("Page(limit %d, maxBytes %d): %v", a[0], a[1], err)
		}
	}
	// A byte budget below the next event: an error, not a stalled reader.
	if _, _, _, err := l.Page(0, 10, len(raw0)-1); !errors.Is(err, ErrPageTooSmall) {
		t.Errorf("budget below one event: %v", err)
	}
	if page, _, _, _ := l.Page(0, 10, len(raw0)); len(page) != 1 {
		t.Errorf("budget of exactly one event: %d events", len(page))
	}
	// Pages are copies: changing one does not change the store.
	page, _, _, _ = l.Page(0, 1, 1<<20)
	page[0][2] = 'X'
	again, _, _, _ := l.Page(0, 1, 1<<20)
	if string(again[0]) != string(raw0) {
		t.Error("page aliases the store")
	}
}

func TestHeadPersists(t *testing.T) {
	dir := t.TempDir()
	db, err := pebble.Open(dir, testOptions(nil))
	if err != nil {
		t.Fatal(err)
	}
	// Keys of other packages, on both sides of ours, must not confuse the log.
	for _, k := range []string{"a", "ev", "ev/", "ev/q", "ew/x", "f/x", "z"} {
		if err := db.Set([]byte(k), []byte("other"), pebble.Sync); err != nil {
			t.Fatal(err)
		}
	}
	l := openLog(t, db)
	if l.Head() != 0 {
		t.Fatalf("head %d with only foreign keys", l.Head())
	}
	key := testKey(t, 1)
	evs := makeEvents(t, key, testNow, 300, 0)
	if _, err := l.Append(evs[:250]); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	db, err = pebble.Open(dir, testOptions(nil))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	l = openLog(t, db)
	if l.Head() != 250 {
		t.Fatalf("head %d after reopen, want 250", l.Head())
	}
	// Appending resumes at 251 and still dedupes against the old events.
	added, err := l.Append(evs[200:])
	if err != nil || len(added) != 50 || l.Head() != 300 {
		t.Fatalf("added %d, head %d, %v", len(added), l.Head(), err)
	}
	if _, pos, err := l.Get(evs[250].ID); err != nil || pos != 251 {
		t.Fatalf("pos %d, %v", pos, err)
	}
	got := pageAll(t, l, 256, 4<<20)
	if len(got) != 300 {
		t.Fatalf("%d events", len(got))
	}
	for i, id := range got {
		if id != evs[i].ID {
			t.Fatalf("event %d out of order after reopen", i)
		}
	}
}

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func TestChanged(t *testing.T) {
	l := openLog(t, memDB(t))
	evs := makeEvents(t, testKey(t, 1), testNow, 2, 0)
	ch := l.Changed()
	if closed(ch) {
		t.Fatal("closed before any append")
	}
	if _, err := l.Append(evs[:1]); err != nil {
		t.Fatal(err)
	}
	if !closed(ch) {
		t.Fatal("not closed after an append")
	}
	ch2 := l.Changed()
	if closed(ch2) {
		t.Fatal("the new channel is already closed")
	}
	// A batch of duplicates adds nothing and wakes nobody.
	if _, err := l.Append(evs[:1]); err != nil {
		t.Fatal(err)
	}
	if closed(ch2) {
		t.Fatal("closed by an append that added nothing")
	}
	// A waiter blocked on the channel is woken.
	done := make(chan core.Cursor)
	go func() {
		<-ch2
		done <- l.Head()
	}()
	if _, err := l.Append(evs[1:]); err != nil {
		t.Fatal(err)
	}
	if h := <-done; h != 2 {
		t.Fatalf("waiter saw head %d, want 2", h)
	}
}

func TestConcurrentAppend(t *testing.T) {
	l := openLog(t, memDB(t))
	evs := makeEvents(t, testKey(t, 1), testNow, 200, 0)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			// Overlapping slices: every event is offered by two writers.
			for i := w * 50; i < w*50+100; i += 10 {
				if _, err := l.Append(evs[i%200 : i%200+10]); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	// A reader pages while writers append.
	wg.Go(func() {
		var after core.Cursor
		for after < 200 {
			changed := l.Changed() // before Page, so no wake-up is missed
			page, next, _, err := l.Page(after, 7, 1<<20)
			if err != nil {
				t.Error(err)
				return
			}
			if next != after+core.Cursor(len(page)) {
				t.Errorf("next %d after %d with %d events", next, after, len(page))
				return
			}
			after = next
			if len(page) == 0 {
				<-changed
			}
		}
	})
	wg.Wait()
	if l.Head() != 200 {
		t.Fatalf("head %d, want 200", l.Head())
	}
	seen := map[string]bool{}
	for _, id := range pageAll(t, l, 256, 4<<20) {
		if seen[id] {
			t.Fatalf("%s stored twice", id)
		}
		seen[id] = true
	}
	if len(seen) != 200 {
		t.Fatalf("%d distinct events", len(seen))
	}
}

func TestVerifyBatch(t *testing.T) {
	key := testKey(t, 1)
	evs := makeEvents(t, key, testNow, 40, 0)
	raws := make([]jsontext.Value, len(evs))
	for i, e := range evs {
		raws[i], _ = e.Marshal()
	}
	bad := map[int]error{}
	tamper := func(i int, sentinel error, f func(e *Event)) {
		e := clone(evs[i])
		f(e)
		raws[i], _ = e.Marshal()
		bad[i] = sentinel
	}
	tamper(3, ErrBadSignature, func(e *Event) { e.Body = jsontext.Value(`{"i":-1}`); reID(t, e) })
	tamper(7, ErrBadID, func(e *Event) { e.Time++ })
	raws[11] = jsontext.Value(`{"id":`)
	bad[11] = ErrMalformed
	future := mustNew(t, key, testNow.Add(time.Hour), "note", `{}`, nil)
	raws[39], _ = future.Marshal()
	bad[39] = ErrFuture

	ok, rejected := VerifyBatch(raws, testNow)
	if len(ok)+len(rejected) != len(raws) || len(rejected) != len(bad) {
		t.Fatalf("%d ok, %d rejected", len(ok), len(rejected))
	}
	j := 0
	for i, e := range evs {
		if _, isBad := bad[i]; isBad {
			continue
		}
		if ok[j].ID != e.ID {
			t.Fatalf("ok[%d] is not event %d: order lost", j, i)
		}
		j++
	}
	prev := -1
	for _, err := range rejected {
		var be *BatchError
		if !errors.As(err, &be) {
			t.Fatalf("%T %v", err, err)
		}
		if be.Index <= prev {
			t.Errorf("rejections out of order: %d after %d", be.Index, prev)
		}
		prev = be.Index
		want, isBad := bad[be.Index]
		if !isBad {
			t.Fatalf("good event %d rejected: %v", be.Index, err)
		}
		if !errors.Is(err, want) {
			t.Errorf("event %d: %v, want %v", be.Index, err, want)
		}
	}
	if ok, rej := VerifyBatch(nil, testNow); len(ok) != 0 || len(rej) != 0 {
		t.Error("empty batch")
	}
	if ok, rej := VerifyBatch(raws[:1], testNow); len(ok) != 1 || len(rej) != 0 {
		t.Error("batch of one")
	}
}

// TestNamesBlob: the CID index answers for the blobs of stored events, not
// for others; a log written before the index existed gets it at Open.
func TestNamesBlob(t *testing.T) {
	db := memDB(t)
	l := openLog(t, db)
	const named = "bafkr4ihkr4ld3m4gqkjf4reryxsy2s5tkbxprqkow6fin2iiyvreuzzab4"
	const other = "bafkr4ihkr4ld3m4gqkjf4reryxsy2s5tkbxprqkow6fin2iiyvreuzzaaa"
	ev := mustNew(t, testKey(t, 1), testNow, "file", `{}`, []BlobRef{{CID: named, Size: 3, Name: "a"}})
	if _, err := l.Append([]*Event{ev}); err != nil {
		t.Fatal(err)
	}
	check := func(l *Log, when string) {
		t.Helper()
		if ok, err := l.NamesBlob(named); !ok || err != nil {
			t.Fatalf("%s: named blob: %v %v", when, ok, err)
		}
		if ok, err := l.NamesBlob(other); ok || err != nil {
			t.Fatalf("%s: other blob: %v %v", when, ok, err)
		}
	}
	check(l, "after Append")
	// As an older version left it: no index.
	if err := db.DeleteRange([]byte(cidPrefix), core.PrefixEnd([]byte(cidPrefix)), pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if err := db.Delete([]byte(cidIndexDone), pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if ok, _ := l.NamesBlob(named); ok {
		t.Fatal("the index was not removed")
	}
	check(openLog(t, db), "after Open rebuilt it")
}

// TestBlobSize: the CID index holds the size events declare for a blob;
// one named twice with the same size keeps it, one named with two sizes
// (in one group or two) says so; an index of the older version (empty
// values, the old marker) is built again at Open.
func TestBlobSize(t *testing.T) {
	db := memDB(t)
	l := openLog(t, db)
	const a = "bafkr4ihkr4ld3m4gqkjf4reryxsy2s5tkbxprqkow6fin2iiyvreuzzab4"
	const b = "bafkr4iaq4xht2pekj6pti2gizrmo5kciskrc7ww3ygwlejaqdeaejqovkm"
	const c = "bafkr4ihkpkq7zhx5xyig3o3qg2nhl2lhd6rj2uv5kvjwoen7df2hpohqee"
	k := testKey(t, 1)
	ev := func(body string, refs ...BlobRef) *Event { return mustNew(t, k, testNow, "file", body, refs) }
	if _, err := l.Append([]*Event{ev(`{"n":1}`, BlobRef{CID: a, Size: 3}), ev(`{"n":2}`, BlobRef{CID: a, Size: 3})}); err != nil {
		t.Fatal(err)
	}
	// b: two sizes in one group; c: two sizes in two groups.
	if _, err := l.Append([]*Event{ev(`{"n":3}`, BlobRef{CID: b, Size: 1}), ev(`{"n":4}`, BlobRef{CID: b, Size: 2}),
		ev(`{"n":5}`, BlobRef{CID: c, Size: 1 << 40})}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append([]*Event{ev(`{"n":6}`, BlobRef{CID: c, Size: 7})}); err != nil {
		t.Fatal(err)
	}
	check := func(l *Log, when string) {
		t.Helper()
		if size, ok, err := l.BlobSize(a); size != 3 || !ok || err != nil {
			t.Errorf("%s: BlobSize(a) = %d, %v, %v; want 3", when, size, ok, err)
		}
		for _, x := range []string{b, c} {
			if _, ok, err := l.BlobSize(x); !ok || !errors.Is(err, ErrSizesDiffer) {
				t.Errorf("%s: BlobSize of a blob named with two sizes: %v, %v; want ErrSizesDiffer", when, ok, err)
			}
		}
		if _, ok, err := l.BlobSize("bafkr4nothing"); ok || err != nil {
			t.Errorf("%s: BlobSize of a blob nothing names: %v, %v", when, ok, err)
		}
	}
	check(l, "after Append")
	// As the older version left it: empty values, the old marker.
	for _, x := range []string{a, b, c} {
		if err := db.Set(cidKey(x), nil, pebble.Sync); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Delete([]byte(cidIndexDone), pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if err := db.Set([]byte(KeyPrefix+"m/cids"), nil, pebble.Sync); err != nil {
		t.Fatal(err)
	}
	check(openLog(t, db), "after Open rebuilt the index")
}

// TestAll: the walk yields every event after the start, in order, across
// pages (600 events: three pages of at most 256); a damaged record is
// yielded as ErrDamaged naming its position and the walk goes on; breaking
// out stops it.
func TestAll(t *testing.T) {
	db := memDB(t)
	l := openLog(t, db)
	evs := makeEvents(t, testKey(t, 1), testNow, 600, 0)
	if _, err := l.Append(evs); err != nil {
		t.Fatal(err)
	}
	for _, after := range []core.Cursor{0, 1, 255, 256, 599, 600, 1 << 40} {
		var got []string
		for e, err := range l.All(after) {
			if err != nil {
				t.Fatalf("after %d: %v", after, err)
			}
			got = append(got, e.ID)
		}
		want := ids(evs[min(int(after), len(evs)):])
		if !slices.Equal(got, want) {
			t.Fatalf("after %d: %d events, want %d", after, len(got), len(want))
		}
	}

	if err := db.Set(posKey(300), []byte(`{"id":"damaged"}`), pebble.Sync); err != nil {
		t.Fatal(err)
	}
	n, damaged := 0, 0
	for e, err := range l.All(0) {
		switch {
		case errors.Is(err, ErrDamaged):
			damaged++
			if e != nil || !strings.Contains(err.Error(), "position 300") {
				t.Fatalf("damaged record: event %v, error %v", e, err)
			}
		case err != nil:
			t.Fatal(err)
		default:
			n++
		}
	}
	if n != 599 || damaged != 1 {
		t.Fatalf("walked %d events and %d damaged, want 599 and 1", n, damaged)
	}

	n = 0
	for range l.All(0) {
		if n++; n == 3 {
			break
		}
	}
	if n != 3 {
		t.Fatalf("the walk went on after break: %d", n)
	}
}

// TestAppendEncoded: events appended with their stored forms given are
// stored as Append stores them (the same bytes, the same dedupe); a count
// of forms other than the events' (one short, one over) is refused and
// adds nothing.
func TestAppendEncoded(t *testing.T) {
	a, b := openLog(t, memDB(t)), openLog(t, memDB(t))
	evs := makeEvents(t, testKey(t, 2), testNow, 3, 0)
	raws := make([][]byte, len(evs))
	for i, e := range evs {
		raw, err := e.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		raws[i] = raw
	}
	for _, bad := range [][][]byte{raws[:2], append(append([][]byte(nil), raws...), raws[0])} {
		if added, _, err := a.AppendEncoded(evs, bad); !errors.Is(err, ErrMalformed) || len(added) != 0 || a.Head() != 0 {
			t.Fatalf("%d forms for %d events: added %d, %v", len(bad), len(evs), len(added), err)
		}
	}
	added, _, err := a.AppendEncoded(evs, raws)
	if err != nil || len(added) != 3 {
		t.Fatalf("AppendEncoded: %d added, %v", len(added), err)
	}
	if _, err := b.Append(evs); err != nil {
		t.Fatal(err)
	}
	if added, _, err := a.AppendEncoded(evs[:1], raws[:1]); err != nil || len(added) != 0 {
		t.Fatalf("again: %d added, %v", len(added), err)
	}
	pa, _, _, err := a.Page(0, 10, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	pb, _, _, err := b.Page(0, 10, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if len(pa) != 3 || len(pb) != 3 {
		t.Fatalf("%d and %d events stored, want 3", len(pa), len(pb))
	}
	for i := range pa {
		if !bytes.Equal(pa[i], pb[i]) || !bytes.Equal(pa[i], raws[i]) {
			t.Fatalf("event %d stored differently: %s, %s", i, pa[i], pb[i])
		}
	}
}

// TestVerifyPage: the forms VerifyPage makes are Marshal's,
// one per event that passed and in the same order, whatever the wire form
// (members reordered, spaces, a body not canonical); an event that fails
// (a bad signature) has none.
func TestVerifyPage(t *testing.T) {
	key := testKey(t, 3)
	evs := []*Event{
		mustNew(t, key, testNow, "note", `{"b":2,"a":[1,2.50,"x"]}`, nil),
		mustNew(t, key, testNow, "note", `{"i":1}`, []BlobRef{{CID: "bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy", Size: 3, Name: "f"}}),
		mustNew(t, key, testNow, "note", `{"i":2}`, nil),
	}
	var raws []jsontext.Value
	for i, e := range evs {
		raw, err := e.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		switch i {
		case 0: // the same event as another implementation might send it
			raw = []byte(strings.Replace(string(raw), `"body":{"a":[1,2.5,"x"],"b":2}`, `"body": { "b" : 2, "a" : [1, 2.50, "x"] }`, 1))
		case 2: // a signature of another event
			other, _ := evs[1].Marshal()
			sig := string(other[strings.Index(string(other), `"sig":`):])
			raw = []byte(string(raw[:strings.Index(string(raw), `"sig":`)]) + sig)
		}
		raws = append(raws, raw)
	}
	if m0, _ := evs[0].Marshal(); bytes.Equal(raws[0], m0) {
		t.Fatal("the wire form of event 0 is Marshal's: the test sends no other form")
	}
	ok, encoded, _, rejected := VerifyPage(raws, testNow, nil)
	if len(ok) != 2 || len(encoded) != 2 || len(rejected) != 1 {
		t.Fatalf("%d passed, %d encoded, %d rejected; want 2, 2, 1", len(ok), len(encoded), len(rejected))
	}
	for i, e := range ok {
		want, err := e.Marshal()
		if err != nil || !bytes.Equal(encoded[i], want) {
			t.Fatalf("event %d encoded as %s, Marshal gives %s", i, encoded[i], want)
		}
	}
	if ok[0].ID != evs[0].ID || ok[1].ID != evs[1].ID {
		t.Fatal("the events that passed are not the first two")
	}
}

// TestPageInto: a page read into a caller's buffer is Page's page, the
// buffer holding its events (grown when it is short, reused when not); a
// page read into a reused buffer leaves the earlier page's events to be
// overwritten, which is why the caller recycles it only when done with
// them.
func TestPageInto(t *testing.T) {
	l := openLog(t, memDB(t))
	key := testKey(t, 1)
	var evs []*Event
	for i := range 20 {
		evs = append(evs, mustNew(t, key, testNow, "note", fmt.Sprintf(`{"i":%d}`, i), nil))
	}
	if _, err := l.Append(evs); err != nil {
		t.Fatal(err)
	}
	for _, size := range []int{0, 10, 1 << 16} {
		buf := make([]byte, 0, size)
		for _, after := range []core.Cursor{0, 5, 19, 20} {
			want, wantNext, wantMore, err := l.Page(after, 8, 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			got, next, more, err := l.PageInto(&buf, after, 8, 1<<20)
			if err != nil || next != wantNext || more != wantMore || len(got) != len(want) {
				t.Fatalf("buffer of %d, after %d: %d events, next %d, more %v, %v; Page: %d, %d, %v", size, after, len(got), next, more, err, len(want), wantNext, wantMore)
			}
			total := 0
			for i := range want {
				if !bytes.Equal(got[i], want[i]) {
					t.Fatalf("buffer of %d, after %d: event %d differs", size, after, i)
				}
				total += len(got[i])
			}
			if len(buf) != total || (total > 0 && &buf[0] != &got[0][0]) {
				t.Fatalf("buffer of %d, after %d: the buffer holds %d bytes, not the page's %d", size, after, len(buf), total)
			}
			if size == 1<<16 && cap(buf) != 1<<16 {
				t.Fatalf("a buffer with room grew to %d", cap(buf))
			}
		}
	}
}

// TestParseID holds parseID and isLowerHex to their definition: 64
// lowercase hex digits, decoded as encoding/hex does; every other byte at
// every place refused, and lengths 63 and 65 too.
func TestParseID(t *testing.T) {
	const good = "0123456789abcdef00ff10e0fedcba9876543210aabbccddeeff0011223344ff"
	want, err := hex.DecodeString(good)
	if err != nil {
		t.Fatal(err)
	}
	raw, ok := parseID(good)
	if !ok || !bytes.Equal(raw[:], want) || !isLowerHex(good) {
		t.Fatalf("parseID(%q) = %x, %v; want %x, true", good, raw, ok, want)
	}
	for _, s := range []string{good[:63], good + "0", "", strings.ToUpper(good)} {
		if _, ok := parseID(s); ok {
			t.Errorf("parseID(%q) accepted", s)
		}
	}
	for pos := range len(good) {
		for b := range 256 {
			s := good[:pos] + string([]byte{byte(b)}) + good[pos+1:]
			lower := b >= '0' && b <= '9' || b >= 'a' && b <= 'f'
			raw, ok := parseID(s)
			if ok != lower || isLowerHex(s) != lower {
				t.Fatalf("byte %#x at %d: parseID ok = %v, isLowerHex = %v; want %v", b, pos, ok, isLowerHex(s), lower)
			}
			if ok {
				want, _ := hex.DecodeString(s)
				if !bytes.Equal(raw[:], want) {
					t.Fatalf("parseID(%q) = %x, want %x", s, raw, want)
				}
			}
		}
	}
}

// TestSpanPolicyBounds: SpanPolicy ends a table at "ev/p/" for any key
// before it, at the end of the position keys for a position key, and
// nowhere after them.
func TestSpanPolicyBounds(t *testing.T) {
	for _, c := range []struct {
		start, end string
	}{
		{"", posPrefix},
		{"ev/i/\xff\xff", posPrefix},
		{"ev/p", posPrefix},
		{"ev/p.\xff", posPrefix}, // just before "ev/p/"
		{posPrefix, posEnd},
		{string(posKey(1)), posEnd},
		{posPrefix + "\xff\xff\xff\xff\xff\xff\xff\xff", posEnd},
		{posEnd, ""},
		{"p/a peer", ""},
	} {
		policy, end, err := SpanPolicy([]byte(c.start))
		if err != nil || string(end) != c.end || policy != (pebble.SpanPolicy{}) {
			t.Errorf("SpanPolicy(%q) = %+v, %q, %v; want the default policy up to %q", c.start, policy, end, err, c.end)
		}
	}
}

// TestSpanPolicyKeepsEventsInTablesOfTheirOwn: flushed with SpanPolicy, no
// table holds both position keys and others (ids before them, a key of
// another package after them); flushed without it, one does (the data
// would show nothing otherwise).
func TestSpanPolicyKeepsEventsInTablesOfTheirOwn(t *testing.T) {
	key := testKey(t, 7)
	for _, withPolicy := range []bool{true, false} {
		opts := testOptions(vfs.NewMem())
		if withPolicy {
			opts.Experimental.SpanPolicyFunc = SpanPolicy
		}
		db, err := pebble.Open("", opts)
		if err != nil {
			t.Fatal(err)
		}
		l := openLog(t, db)
		var evs []*Event
		for i := range 100 {
			evs = append(evs, mustNew(t, key, testNow, "note", fmt.Sprintf(`{"n":%d}`, i), nil))
		}
		if _, err := l.Append(evs); err != nil {
			t.Fatal(err)
		}
		if err := db.Set([]byte("p/a peer's cursor"), []byte("1"), pebble.Sync); err != nil {
			t.Fatal(err)
		}
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
		levels, err := db.SSTables()
		if err != nil {
			t.Fatal(err)
		}
		mixed, tables := 0, 0
		for _, level := range levels {
			for _, tb := range level {
				tables++
				lo, hi := tb.Smallest.UserKey, tb.Largest.UserKey
				overlaps := bytes.Compare(lo, []byte(posEnd)) < 0 && bytes.Compare(hi, []byte(posPrefix)) >= 0
				within := bytes.Compare(lo, []byte(posPrefix)) >= 0 && bytes.Compare(hi, []byte(posEnd)) < 0
				if overlaps && !within {
					mixed++
				}
			}
		}
		if withPolicy && (mixed != 0 || tables < 3) {
			t.Errorf("with SpanPolicy: %d of %d tables hold position keys and others, want 0 of at least 3", mixed, tables)
		}
		if !withPolicy && mixed == 0 {
			t.Errorf("without SpanPolicy: no table of %d holds position keys and others; the test shows nothing", tables)
		}
		db.Close()
	}
}

// TestBlobName: the CID index keeps the first name an event gives a blob
// (a later name, or none, leaves it; a blob first named without a name
// takes the first name given later), across groups; a blob named with
// two sizes has none; and an index of the version before names (sizes
// alone, the marker "m/cids2") is built again at Open with the names.
func TestBlobName(t *testing.T) {
	db := memDB(t)
	l := openLog(t, db)
	const a = "bafkr4ihkr4ld3m4gqkjf4reryxsy2s5tkbxprqkow6fin2iiyvreuzzab4"
	const b = "bafkr4iaq4xht2pekj6pti2gizrmo5kciskrc7ww3ygwlejaqdeaejqovkm"
	const c = "bafkr4ihkpkq7zhx5xyig3o3qg2nhl2lhd6rj2uv5kvjwoen7df2hpohqee"
	k := testKey(t, 1)
	ev := func(body string, refs ...BlobRef) *Event { return mustNew(t, k, testNow, "file", body, refs) }
	if _, err := l.Append([]*Event{ev(`{"n":1}`, BlobRef{CID: a, Size: 3, Name: "first.txt"}), ev(`{"n":2}`, BlobRef{CID: a, Size: 3, Name: "second.txt"}),
		ev(`{"n":3}`, BlobRef{CID: b, Size: 5})}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append([]*Event{ev(`{"n":4}`, BlobRef{CID: b, Size: 5, Name: "later.bin"}), ev(`{"n":5}`, BlobRef{CID: a, Size: 3}),
		ev(`{"n":6}`, BlobRef{CID: c, Size: 1, Name: "one.bin"}), ev(`{"n":7}`, BlobRef{CID: c, Size: 2, Name: "two.bin"})}); err != nil {
		t.Fatal(err)
	}
	check := func(l *Log, when string) {
		t.Helper()
		for x, want := range map[string]string{a: "first.txt", b: "later.bin", c: "", "bafkr4nothing": ""} {
			if got, err := l.BlobName(x); got != want || err != nil {
				t.Errorf("%s: BlobName(%s) = %q, %v; want %q", when, x, got, err, want)
			}
		}
		if size, ok, err := l.BlobSize(a); size != 3 || !ok || err != nil {
			t.Errorf("%s: BlobSize(a) = %d, %v, %v; want 3 beside the name", when, size, ok, err)
		}
	}
	check(l, "after Append")
	// As the version before names left it: sizes alone, its marker.
	for x, v := range map[string][]byte{a: cidSizeValue(3), b: cidSizeValue(5), c: sizesDiffer} {
		if err := db.Set(cidKey(x), v, pebble.Sync); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Delete([]byte(cidIndexDone), pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if err := db.Set([]byte(KeyPrefix+"m/cids2"), nil, pebble.Sync); err != nil {
		t.Fatal(err)
	}
	check(openLog(t, db), "after Open rebuilt the index")
}
