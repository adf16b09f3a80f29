package catchup

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/libp2p/go-libp2p/core/crypto"
	"golang.org/x/sync/semaphore"

	"github.com/wats-network/wats/core"
	"github.com/wats-network/wats/eventlog"
	"github.com/wats-network/wats/limits"
	"github.com/wats-network/wats/proto"
)

// signed is a note event of text by key at at.
func signed(t *testing.T, key crypto.PrivKey, at time.Time, text string) *eventlog.Event {
	t.Helper()
	ev, err := eventlog.New(key, at, "note", jsontext.Value(`{"text":"`+text+`"}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

func marshal(t *testing.T, ev *eventlog.Event) jsontext.Value {
	t.Helper()
	b, err := ev.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// syncPages makes count pages of per events each by key at now, the
// events of page i numbered from i*per; with forged, each event carries
// another event's signature (invalid). Every event encodes to the same
// length, so that every page weighs the same (pageBytes).
func syncPages(t *testing.T, key crypto.PrivKey, now time.Time, count, per int, forged bool) []page {
	t.Helper()
	other := signed(t, key, now, "other")
	pages := make([]page, count)
	for i := range pages {
		for j := range per {
			ev := signed(t, key, now, fmt.Sprintf("event %06d", i*per+j))
			if forged {
				ev.Sig = other.Sig
			}
			pages[i].events = append(pages[i].events, marshal(t, ev))
		}
		pages[i].next = core.Cursor((i + 1) * per)
		pages[i].more = i < count-1
	}
	return pages
}

// feed returns a closed channel holding pages.
func feed(pages []page) <-chan page {
	in := make(chan page, len(pages))
	for _, pg := range pages {
		in <- pg
	}
	close(in)
	return in
}

// TestVerifyStageHoldsAtMostAhead: the verify stage hands on pages in the
// order they came while the pages not yet stored weigh at most its ahead
// budget: with room for two pages, two wait and not a third, and each
// page's bytes given back lets exactly one more through.
func TestVerifyStageHoldsAtMostAhead(t *testing.T) {
	key, _, _ := crypto.GenerateEd25519Key(nil)
	synctest.Test(t, func(t *testing.T) {
		now := time.Now()
		pages := syncPages(t, key, now, 8, 4, false)
		w := pageBytes(pages[0].events)
		for _, pg := range pages {
			if pageBytes(pg.events) != w {
				t.Fatalf("pages of %d and %d bytes; the test needs them equal", w, pageBytes(pg.events))
			}
		}
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		v := verifyStage{
			now:   func() time.Time { return now },
			known: func(string) bool { return false },
			ahead: semaphore.NewWeighted(2 * w),
			stop:  cancel,
		}
		out := v.verify(ctx, feed(pages))
		for i, want := range pages {
			synctest.Wait()
			if waiting := min(2, len(pages)-i); len(out) != waiting {
				t.Fatalf("before page %d is taken: %d pages handed on, want %d (the budget holds 2)", i, len(out), waiting)
			}
			vp := <-out
			if vp.Next != want.next || len(vp.OK) != len(want.events) || len(vp.Rejected) != 0 {
				t.Fatalf("page %d: next %d, %d valid, %d rejected; want next %d, %d valid", i, vp.Next, len(vp.OK), len(vp.Rejected), want.next, len(want.events))
			}
			v.ahead.Release(vp.weight)
		}
		if _, open := <-out; open {
			t.Fatal("a page more than came")
		}
	})
}

// TestVerifyStageStopsPastTheInvalidBound: once the pages handed on hold
// more than MaxInvalidPerRun rejected events, the stage stops the run and
// hands on nothing more; at the bound itself it goes on.
func TestVerifyStageStopsPastTheInvalidBound(t *testing.T) {
	key, _, _ := crypto.GenerateEd25519Key(nil)
	synctest.Test(t, func(t *testing.T) {
		now := time.Now()
		per := MaxInvalidPerRun / 2 // the bound is reached by page 2, passed by page 3
		pages := syncPages(t, key, now, 6, per, true)
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		stops := 0
		v := verifyStage{
			now:   func() time.Time { return now },
			known: func(string) bool { return false },
			ahead: semaphore.NewWeighted(verifiedAheadBytes),
			stop:  func() { stops++; cancel() },
		}
		var got []core.Cursor
		for vp := range v.verify(ctx, feed(pages)) {
			if len(vp.Rejected) != per {
				t.Fatalf("page to %d: %d rejected, want %d", vp.Next, len(vp.Rejected), per)
			}
			got = append(got, vp.Next)
		}
		if want := []core.Cursor{pages[0].next, pages[1].next, pages[2].next}; !slices.Equal(got, want) || stops != 1 {
			t.Fatalf("pages handed on %v, stop called %d times; want %v and once", got, stops, want)
		}
	})
}

// TestGatherTakesThePagesOnTheirWay: the store stage's group holds the
// pages verified and those on their way, up to storeGroupPages, and is
// written at once when none is on its way or when the next one waits for
// the bytes the group holds.
func TestGatherTakesThePagesOnTheirWay(t *testing.T) {
	key, _, _ := crypto.GenerateEd25519Key(nil)
	synctest.Test(t, func(t *testing.T) {
		now := time.Now()
		pages := syncPages(t, key, now, 2*storeGroupPages+2, 2, false)
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		v := newVerifyStage(func() time.Time { return now }, func(string) bool { return false }, cancel)
		v.ahead = semaphore.NewWeighted(int64(len(pages)) * pageBytes(pages[0].events))
		v.pages = make(chan page, len(pages)) // room for all, so the test never waits to deliver
		out := v.verify(ctx, v.pages)
		// gather returns the group it makes; the test fails if it waits
		// for a page that never comes (synctest reports the deadlock).
		gather := func(send []page) []Page {
			for _, pg := range send {
				if err := v.deliver(ctx, pg); err != nil {
					t.Fatal(err)
				}
			}
			group := v.gather([]Page{<-out}, out)
			for _, vp := range group {
				v.ahead.Release(vp.weight)
			}
			return group
		}
		next := func(group []Page) core.Cursor { return group[len(group)-1].Next }

		// One page, none behind it: written alone, at once.
		if g := gather(pages[:1]); len(g) != 1 || next(g) != pages[0].next {
			t.Fatalf("one page on its own: a group of %d to %d, want 1 to %d", len(g), next(g), pages[0].next)
		}
		// Three more at once: the two behind the first are waited for.
		if g := gather(pages[1:4]); len(g) != 3 || next(g) != pages[3].next {
			t.Fatalf("three pages: a group of %d to %d, want 3 to %d", len(g), next(g), pages[3].next)
		}
		// Seventeen: sixteen, then the one left.
		if g := gather(pages[4:21]); len(g) != storeGroupPages || next(g) != pages[19].next {
			t.Fatalf("seventeen pages: a group of %d to %d, want %d to %d", len(g), next(g), storeGroupPages, pages[19].next)
		}
		if g := gather(nil); len(g) != 1 || next(g) != pages[20].next {
			t.Fatalf("the page left: a group of %d to %d, want 1 to %d", len(g), next(g), pages[20].next)
		}

		// Room for two pages: the third finds the budget full, and the
		// group of two is written rather than wait for it.
		w := pageBytes(pages[0].events)
		v.ahead = semaphore.NewWeighted(2 * w)
		if g := gather(pages[21:24]); len(g) != 2 || next(g) != pages[22].next {
			t.Fatalf("room for two of three pages: a group of %d to %d, want 2 to %d", len(g), next(g), pages[22].next)
		}
		if g := gather(nil); len(g) != 1 || next(g) != pages[23].next {
			t.Fatalf("after the budget was given back: a group of %d to %d, want 1 to %d", len(g), next(g), pages[23].next)
		}
		close(v.pages)
		if _, open := <-out; open {
			t.Fatal("a page more than came")
		}
		if got := v.onTheWay.Load(); got != 0 {
			t.Fatalf("%d pages still counted on their way", got)
		}
	})
}

// logPeer answers the sync requests of a run (Options.Call) from a log
// whose events sit at the given positions (ascending), and records the
// cursor of every request. With a hold, the answer to the request after
// holdAfter waits until a request after holdUntil has come, or fails the
// test after 10 s: it shows the two in flight at once.
type logPeer struct {
	mu     sync.Mutex
	afters []core.Cursor
	call   func(ctx context.Context, req *proto.SyncRequest) (*proto.Response, error)
}

func (lp *logPeer) requested() []core.Cursor {
	lp.mu.Lock()
	defer lp.mu.Unlock()
	return slices.Clone(lp.afters)
}

func serveLog(t *testing.T, positions []core.Cursor, holdAfter, holdUntil core.Cursor) *logPeer {
	lp := &logPeer{}
	arrived := make(chan struct{})
	var once sync.Once
	lp.call = func(ctx context.Context, req *proto.SyncRequest) (*proto.Response, error) {
		after := req.After
		lp.mu.Lock()
		lp.afters = append(lp.afters, after)
		lp.mu.Unlock()
		if after == holdUntil {
			once.Do(func() { close(arrived) })
		}
		if after == holdAfter {
			select {
			case <-arrived:
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(10 * time.Second): // a bound on a broken test, not a wait for time
				t.Errorf("the request after %d never came while the one after %d was in flight", holdUntil, holdAfter)
			}
		}
		return &proto.Response{Type: proto.TypeSync, Sync: logPage(positions, after)}, nil
	}
	return lp
}

// logOptions are a run's options with call as the peer, unpaced.
func logOptions(call func(ctx context.Context, req *proto.SyncRequest) (*proto.Response, error)) Options {
	return Options{Peer: "a peer", Call: call, Pacer: limits.NewPacer(0), MaxPages: MaxPagesPerRun}
}

// fetchAll runs fetchPages from lp from cursor 0 and returns the positions
// of the events it delivered, in order.
func fetchAll(t *testing.T, lp *logPeer) []core.Cursor {
	t.Helper()
	o := logOptions(lp.call)
	out := make(chan page, 64)
	if err := fetchPages(context.Background(), &o, 0, func(pg page) error { out <- pg; return nil }); err != nil {
		t.Fatal(err)
	}
	close(out)
	var got []core.Cursor
	for pg := range out {
		for _, e := range pg.events {
			var at core.Cursor
			if _, err := fmt.Sscanf(string(e), `{"at":%d}`, &at); err != nil {
				t.Fatal(err)
			}
			got = append(got, at)
		}
		if pg.next != got[len(got)-1] {
			t.Fatalf("a page ends at %d but says next %d", got[len(got)-1], pg.next)
		}
	}
	return got
}

func positionsOf(ranges ...[2]core.Cursor) []core.Cursor {
	var ps []core.Cursor
	for _, r := range ranges {
		for p := r[0]; p <= r[1]; p++ {
			ps = append(ps, p)
		}
	}
	return ps
}

// TestFetchAsksAheadOfDensePages: on a log of dense positions the page
// after the next is asked for while the next is in flight (the answer
// after 256 is held until the request after 512 came), every event comes
// once and in order, and the only request more than the pages is the
// guess past the end (which may not reach the peer: the run ends first).
func TestFetchAsksAheadOfDensePages(t *testing.T) {
	positions := positionsOf([2]core.Cursor{1, 5*256 + 10})
	lp := serveLog(t, positions, 256, 512)
	if got := fetchAll(t, lp); !slices.Equal(got, positions) {
		t.Fatalf("delivered %d events, want the %d of the log in order", len(got), len(positions))
	}
	// The guess past the end (after 1536) may be cancelled before it
	// reaches the peer, once the last page said no more.
	want := []core.Cursor{0, 256, 512, 768, 1024, 1280}
	got := sortedCursors(lp.requested())
	if last := len(got) - 1; last >= 0 && got[last] == 1536 {
		got = got[:last]
	}
	if !slices.Equal(got, want) {
		t.Fatalf("requests after %v, want %v and perhaps 1536: six pages and the guess past the end", lp.requested(), want)
	}
}

// TestFetchStopsGuessingOnAGap: when a page does not end where the guess
// said (a gap in the peer's positions), the guess is dropped, the page
// asked again with the right cursor, and no more guesses are made: one
// request more than the pages, and every event once, in order.
func TestFetchStopsGuessingOnAGap(t *testing.T) {
	positions := positionsOf([2]core.Cursor{1, 256}, [2]core.Cursor{300, 1000}, [2]core.Cursor{2000, 2009})
	// The answer after 256 waits for the guess (after 512) to reach the
	// peer, so the run cannot end before it does.
	lp := serveLog(t, positions, 256, 512)
	if got := fetchAll(t, lp); !slices.Equal(got, positions) {
		t.Fatalf("delivered %d events, want the %d of the log in order", len(got), len(positions))
	}
	// Pages: 1-256 (dense: the next, after 256, and a guess, after 512,
	// asked), 300-555 (not where the guess said: asked again after 555,
	// no guess), 556-811, and 812-1000 with 2000-2009, the last.
	want := []core.Cursor{0, 256, 512, 555, 811}
	if got := sortedCursors(lp.requested()); !slices.Equal(got, want) {
		t.Fatalf("requests after %v, want %v: the four pages' and the one wrong guess", got, want)
	}
}

func sortedCursors(cs []core.Cursor) []core.Cursor {
	cs = slices.Clone(cs)
	slices.Sort(cs)
	return cs
}

// BenchmarkFetchPagesRoundTrip fetches 32 dense pages from a peer that
// answers each request 20 ms after it came (a round trip across a
// continent), one request at a time against two in flight (ADR 0038):
// ms/page is what a catch-up over such a link costs a page, the sync rate
// (100 ms a page by default) aside.
func BenchmarkFetchPagesRoundTrip(b *testing.B) {
	for _, ahead := range []bool{false, true} {
		name := map[bool]string{false: "one-at-a-time", true: "ahead"}[ahead]
		b.Run(name, func(b *testing.B) {
			old := fetchAhead
			fetchAhead = ahead
			defer func() { fetchAhead = old }()
			positions := positionsOf([2]core.Cursor{1, 32 * 256})
			o := logOptions(func(_ context.Context, req *proto.SyncRequest) (*proto.Response, error) {
				time.Sleep(20 * time.Millisecond) // the link's round trip, which this benchmark is about
				return &proto.Response{Type: proto.TypeSync, Sync: logPage(positions, req.After)}, nil
			})
			for b.Loop() {
				if err := fetchPages(context.Background(), &o, 0, func(page) error { return nil }); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N)/32, "ms/page")
		})
	}
}

// logPage is the sync page after cursor after of a log whose events sit
// at positions (ascending), each event {"at":POSITION}.
func logPage(positions []core.Cursor, after core.Cursor) *proto.SyncResponse {
	resp := &proto.SyncResponse{Next: after}
	i, _ := slices.BinarySearch(positions, after+1)
	for ; i < len(positions) && len(resp.Events) < core.MaxPageEvents; i++ {
		resp.Events = append(resp.Events, jsontext.Value(fmt.Sprintf(`{"at":%d}`, positions[i])))
		resp.Next = positions[i]
	}
	resp.More = i < len(positions)
	return resp
}

// TestRunNeedsCallAndStore: a run without a peer to call or a store to
// write to is an error, not a panic.
func TestRunNeedsCallAndStore(t *testing.T) {
	call := func(context.Context, *proto.SyncRequest) (*proto.Response, error) { return nil, nil }
	for _, o := range []Options{{}, {Call: call}, {Store: func([]Page) error { return nil }}} {
		if err := Run(context.Background(), 0, o); err == nil {
			t.Errorf("Run with Call set %v, Store set %v: no error", o.Call != nil, o.Store != nil)
		}
	}
}

// TestRunStoresEveryPageOnce: a run over a log of three pages and a few
// events hands every event to Store once, in order, the last group ending
// at the log's last position, and returns nil when the peer has no more.
func TestRunStoresEveryPageOnce(t *testing.T) {
	key, _, _ := crypto.GenerateEd25519Key(nil)
	now := time.Now()
	pages := syncPages(t, key, now, 3, 7, false)
	call := func(_ context.Context, req *proto.SyncRequest) (*proto.Response, error) {
		for _, pg := range pages {
			if pg.next > req.After {
				return &proto.Response{Type: proto.TypeSync, Sync: &proto.SyncResponse{Events: pg.events, Next: pg.next, More: pg.more}}, nil
			}
		}
		return &proto.Response{Type: proto.TypeSync, Sync: &proto.SyncResponse{Next: req.After}}, nil
	}
	var stored []core.Cursor
	var ok int
	err := Run(context.Background(), 0, Options{Peer: "a peer", Call: call, Now: func() time.Time { return now },
		Store: func(group []Page) error {
			for _, p := range group {
				stored = append(stored, p.Next)
				ok += len(p.OK)
			}
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	if want := []core.Cursor{7, 14, 21}; !slices.Equal(stored, want) || ok != 21 {
		t.Fatalf("stored pages to %v with %d valid events, want %v and 21", stored, ok, want)
	}
}
