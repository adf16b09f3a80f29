package node

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	"golang.org/x/sync/semaphore"

	"github.com/wats-network/wats/core"
	"github.com/wats-network/wats/eventlog"
)

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
		w := pageBytes(pages[0])
		for _, pg := range pages {
			if pageBytes(pg) != w {
				t.Fatalf("pages of %d and %d bytes; the test needs them equal", w, pageBytes(pg))
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
			if vp.next != want.next || len(vp.ok) != len(want.events) || len(vp.rejected) != 0 {
				t.Fatalf("page %d: next %d, %d valid, %d rejected; want next %d, %d valid", i, vp.next, len(vp.ok), len(vp.rejected), want.next, len(want.events))
			}
			v.ahead.Release(pageBytes(vp.page))
		}
		if _, open := <-out; open {
			t.Fatal("a page more than came")
		}
	})
}

// TestVerifyStageStopsPastTheInvalidBound: once the pages handed on hold
// more than maxInvalidPerRun rejected events, the stage stops the run and
// hands on nothing more; at the bound itself it goes on.
func TestVerifyStageStopsPastTheInvalidBound(t *testing.T) {
	key, _, _ := crypto.GenerateEd25519Key(nil)
	synctest.Test(t, func(t *testing.T) {
		now := time.Now()
		per := maxInvalidPerRun / 2 // the bound is reached by page 2, passed by page 3
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
			if len(vp.rejected) != per {
				t.Fatalf("page to %d: %d rejected, want %d", vp.next, len(vp.rejected), per)
			}
			got = append(got, vp.next)
		}
		if want := []core.Cursor{pages[0].next, pages[1].next, pages[2].next}; !slices.Equal(got, want) || stops != 1 {
			t.Fatalf("pages handed on %v, stop called %d times; want %v and once", got, stops, want)
		}
	})
}

// TestStorePagesWritesAGroup: pages written together land in the log in
// page order, with the counts of all and the cursor of the last.
func TestStorePagesWritesAGroup(t *testing.T) {
	n := startNode(t, testConfig(false, time.Hour))
	key, _, _ := crypto.GenerateEd25519Key(nil)
	now := n.now()
	pages := syncPages(t, key, now, 3, 5, false)
	// One event of the middle page is forged: dropped, the rest kept.
	forged := signed(t, key, now, "forged")
	forged.Sig = signed(t, key, now, "another").Sig
	pages[1].events[2] = marshal(t, forged)

	var group []verifiedPage
	var want [][]byte
	for _, pg := range pages {
		ok, raws, _, rejected := eventlog.VerifyPage(pg.events, now, nil)
		group = append(group, verifiedPage{page: pg, ok: ok, raws: raws, rejected: rejected})
		want = append(want, raws...)
	}
	st := SyncProgress{}
	if err := n.storePages(peer.ID("a peer"), group, &st); err != nil {
		t.Fatal(err)
	}
	if st.Received != 15 || st.Stored != 14 || st.Dropped != 1 || st.Cursor != pages[2].next || st.PeerHead != pages[2].next {
		t.Fatalf("progress %+v; want 15 received, 14 stored, 1 dropped, cursor and head %d", st, pages[2].next)
	}
	stored, _, _, err := n.events.Page(0, 100, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if len(stored) != len(want) {
		t.Fatalf("%d events in the log, want %d", len(stored), len(want))
	}
	for i := range want {
		if string(stored[i]) != string(want[i]) {
			t.Fatalf("position %d holds %s, want %s (page order)", i+1, stored[i], want[i])
		}
	}
}
