package catchup

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/wats-network/wats/eventlog"
	"github.com/wats-network/wats/proto"
)

// testID is the id numbered i: 64 lowercase hex digits, ascending with i.
func testID(i int) string { return fmt.Sprintf("%064x", i) }

// testIDs returns the ids numbered from..to-1 for which keep is true (nil:
// all of them).
func testIDs(from, to int, keep func(i int) bool) []string {
	var out []string
	for i := from; i < to; i++ {
		if keep == nil || keep(i) {
			out = append(out, testID(i))
		}
	}
	return out
}

// TestFetchRanges: the ranges fetched of a peer's list are the runs of
// ids this node lacks, [first, last+1), apart unless they take more pages
// than the ids listed fetched whole, then merged over the fewest held ids
// first: what a list makes this node fetch never takes more requests
// than the span listed fetched whole.
func TestFetchRanges(t *testing.T) {
	r := func(from, to int) proto.IDRange { return proto.IDRange{From: testID(from), To: testID(to)} }
	odd := func(i int) bool { return i%2 == 1 }
	not := func(ids ...int) func(int) bool { return func(i int) bool { return !slices.Contains(ids, i) } }
	for _, tc := range []struct {
		name         string
		theirs, ours []string
		want         []proto.IDRange
	}{
		{name: "nothing listed", theirs: nil, ours: testIDs(0, 10, nil), want: nil},
		{name: "all held", theirs: testIDs(0, 100, nil), ours: testIDs(0, 100, nil), want: nil},
		{name: "ours a superset: the peer lacks ours, nothing new", theirs: testIDs(0, 100, odd),
			ours: testIDs(0, 100, nil), want: nil},
		{name: "none held", theirs: testIDs(5, 300, nil), want: []proto.IDRange{r(5, 300)}},
		{name: "one missing", theirs: testIDs(0, 100, nil), ours: testIDs(0, 100, not(42)),
			want: []proto.IDRange{r(42, 43)}},
		// A run is consecutive in the peer's list: ours between its ids
		// are not the peer's, and not sent.
		{name: "ours between theirs", theirs: testIDs(0, 10, func(i int) bool { return i < 3 || i > 6 }),
			ours: testIDs(3, 7, nil), want: []proto.IDRange{r(0, 10)}},
		{name: "two runs in a page's worth: merged", theirs: testIDs(0, 256, nil), ours: testIDs(1, 255, nil),
			want: []proto.IDRange{r(0, 256)}},
		{name: "two runs in one past a page's worth: apart", theirs: testIDs(0, 257, nil), ours: testIDs(1, 256, nil),
			want: []proto.IDRange{r(0, 1), r(256, 257)}},
		{name: "three runs in three pages' worth: apart", theirs: testIDs(0, 625, nil),
			ours: testIDs(0, 625, not(10, 300, 600)), want: []proto.IDRange{r(10, 11), r(300, 301), r(600, 601)}},
		{name: "four runs in three pages' worth: the closest two merged", theirs: testIDs(0, 625, nil),
			ours: testIDs(0, 625, not(10, 20, 300, 600)),
			want: []proto.IDRange{r(10, 21), r(300, 301), r(600, 601)}},
		{name: "runs of 200 with 100 held between: apart", theirs: testIDs(0, 500, nil),
			ours: testIDs(200, 300, nil), want: []proto.IDRange{r(0, 200), r(300, 500)}},
		// A list that interleaves missing and held ids one by one (a
		// liar's, say): 4,096 listed, 2,048 missing, one range of 16
		// pages, as the 4,096 fetched whole.
		{name: "interleaved", theirs: testIDs(0, 4096, nil), ours: testIDs(0, 4096, odd),
			want: []proto.IDRange{r(0, 4095)}},
		{name: "the last id of the space", theirs: []string{strings.Repeat("f", 64)},
			want: []proto.IDRange{{From: strings.Repeat("f", 64)}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := fetchRanges(tc.theirs, tc.ours)
			if !slices.Equal(got, tc.want) {
				t.Fatalf("got %d ranges %v\nwant %d %v", len(got), got, len(tc.want), tc.want)
			}
			// Every missing id is in a range; the ranges take no more pages
			// than the ids listed fetched whole.
			pages := 0
			for _, g := range got {
				n := 0
				for _, id := range tc.theirs {
					if g.Contains(id) {
						n++
					}
				}
				pages += pagesOf(n)
			}
			if len(tc.theirs) > 0 && pages > pagesOf(len(tc.theirs)) {
				t.Fatalf("%d pages for %d ids listed", pages, len(tc.theirs))
			}
			for _, id := range tc.theirs {
				_, held := slices.BinarySearch(tc.ours, id)
				in := slices.ContainsFunc(got, func(g proto.IDRange) bool { return g.Contains(id) })
				if !held && !in {
					t.Fatalf("missing id %.8s… not fetched", id)
				}
			}
		})
	}
}

// TestListPays: a range that differs is listed when this node holds at
// least half as many ids in it as the peer; at and just past the half.
func TestListPays(t *testing.T) {
	for _, tc := range []struct {
		theirs, ours int
		want         bool
	}{
		{theirs: 4096, ours: 4416, want: true}, // the peer lacks ours
		{theirs: 4096, ours: 2048, want: true},
		{theirs: 4096, ours: 2047, want: false},
		{theirs: 4096, ours: 3, want: false}, // a fresh shard gossip brought a few events into
		{theirs: 65_536, ours: 65_536, want: true},
		{theirs: 1, ours: 1, want: true},
	} {
		if got := listPays(tc.theirs, tc.ours); got != tc.want {
			t.Errorf("listPays(%d, %d) = %v, want %v", tc.theirs, tc.ours, got, tc.want)
		}
	}
}

// TestCheckIDList: an id list holds at most proto.MaxListIDs ids, each in
// [from, to), ascending, and is not empty when it says more; at and just
// past each bound.
func TestCheckIDList(t *testing.T) {
	rng := proto.IDRange{From: testID(0x10), To: testID(0x20000)}
	for _, tc := range []struct {
		name string
		ids  []string
		more bool
		ok   bool
	}{
		{name: "none", ok: true},
		{name: "none with more", more: true},
		{name: "the range's ends", ids: []string{testID(0x10), testID(0x1ffff)}, ok: true},
		{name: "below from", ids: []string{testID(0x0f)}},
		{name: "at to", ids: []string{testID(0x20000)}},
		{name: "twice", ids: []string{testID(0x12), testID(0x12)}},
		{name: "descending", ids: []string{testID(0x13), testID(0x12)}},
		{name: "short", ids: []string{testID(0x12)[1:]}},
		{name: "MaxListIDs", ids: testIDs(0x10, 0x10+proto.MaxListIDs, nil), more: true, ok: true},
		{name: "one past MaxListIDs", ids: testIDs(0x10, 0x11+proto.MaxListIDs, nil)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			last, err := checkIDList(tc.ids, tc.more, rng, rng.From)
			if tc.ok != (err == nil) || (err != nil && !errors.Is(err, ErrBadPage)) {
				t.Fatalf("%v", err)
			}
			if tc.ok && len(tc.ids) > 0 && last != tc.ids[len(tc.ids)-1] {
				t.Fatalf("last %s", last)
			}
		})
	}
	// From a later answer's from: an id below it is outside.
	if _, err := checkIDList([]string{testID(0x11)}, false, rng, testID(0x12)); !errors.Is(err, ErrBadPage) {
		t.Fatalf("an id below the answer's from: %v", err)
	}
}

// sparseEvents signs n events, at most two in a shard of a catch-up of
// 10,000 events (16 shards of some 625, three pages): the runs a list shows
// of them in a shard are fewer than its pages, and fetched apart
// (fetchRanges).
func sparseEvents(t *testing.T, n int, text string) []*eventlog.Event {
	t.Helper()
	key, _, _ := crypto.GenerateEd25519Key(nil)
	shards := planShards(10_000)
	per := make([]int, len(shards))
	var out []*eventlog.Event
	for i := 0; len(out) < n; i++ {
		e := signed(t, key, time.Now(), fmt.Sprint(text, " ", i))
		k := slices.IndexFunc(shards, func(s proto.IDRange) bool { return s.Contains(e.ID) })
		if per[k] < 2 {
			per[k]++
			out = append(out, e)
		}
	}
	return out
}

// TestSpreadListsWhatDiffers: a catch-up from two peers, one of which
// lacks events the other holds (and this node then), receives every event
// once (ADR 0057): the shards the other served differ at the first, which
// lists its ids and has nothing new, so that nothing more is fetched from
// it; every event ends in the log once. Without the lists (ADR 0052
// alone), each of those shards was fetched again whole from the first.
func TestSpreadListsWhatDiffers(t *testing.T) {
	for _, lists := range []bool{true, false} {
		t.Run(fmt.Sprint("lists ", lists), func(t *testing.T) {
			cl := newCluster(t, 2, 10_000)
			extra := sparseEvents(t, 24, "only at peer 1")
			if _, err := cl.peers[cl.ids[1]].log.Append(extra); err != nil {
				t.Fatal(err)
			}
			cl.events = append(cl.events, extra...)
			cl.o.Serves = func(_ peer.ID, feature string) bool { return lists || feature == proto.FeatureSyncIDs }
			sts, err := cl.syncAll(t)
			if err != nil {
				t.Fatal(err)
			}
			cl.holdsAll(t)
			var received uint64
			for _, st := range sts {
				if !st.Done {
					t.Fatalf("%+v not done", st)
				}
				received += st.Received
			}
			listed := cl.peers[cl.ids[0]].idLists.Load() + cl.peers[cl.ids[1]].idLists.Load()
			switch {
			case lists && received != uint64(len(cl.events)):
				t.Fatalf("received %d events for %d", received, len(cl.events))
			case lists && listed == 0:
				t.Fatal("no id list asked")
			case !lists && (received <= uint64(len(cl.events)) || listed > 0):
				t.Fatalf("without lists: received %d events for %d, %d lists", received, len(cl.events), listed)
			}
		})
	}
}

// TestSpreadFetchesWhatTheListShows: a peer holding events this node
// lacks among many it holds has only those fetched: this node holds the
// events already, the peer 20 more; a second catch-up lists the shards
// that differ and receives the new events alone.
func TestSpreadFetchesWhatTheListShows(t *testing.T) {
	cl := newCluster(t, 1, 10_000)
	if _, err := cl.syncAll(t); err != nil {
		t.Fatal(err)
	}
	extra := sparseEvents(t, 20, "new at peer 0")
	if _, err := cl.peers[cl.ids[0]].log.Append(extra); err != nil {
		t.Fatal(err)
	}
	cl.events = append(cl.events, extra...)
	sts, err := cl.syncAll(t)
	if err != nil {
		t.Fatal(err)
	}
	cl.holdsAll(t)
	if sts[0].Received != uint64(len(extra)) || sts[0].Stored != uint64(len(extra)) {
		t.Fatalf("received %d, stored %d, want the %d new ones", sts[0].Received, sts[0].Stored, len(extra))
	}
}

// TestSpreadListLiars: a peer whose id list breaks its rules is dropped
// from the catch-up, as a peer that sends a bad page is (ADR 0052 §4);
// the others serve its share and the log ends with every event once.
func TestSpreadListLiars(t *testing.T) {
	for _, tc := range []struct {
		name string
		lie  func(r *proto.SyncRequest) *proto.SyncResponse
	}{
		{name: "ids outside the range", lie: func(r *proto.SyncRequest) *proto.SyncResponse {
			return &proto.SyncResponse{IDs: []string{zeroID}}
		}},
		{name: "ids descending", lie: func(r *proto.SyncRequest) *proto.SyncResponse {
			b := []byte(r.IDs.From)
			b[63] = '9'
			a := slices.Clone(b)
			a[63] = '8'
			return &proto.SyncResponse{IDs: []string{string(b), string(a)}}
		}},
		{name: "an empty list with more", lie: func(r *proto.SyncRequest) *proto.SyncResponse {
			return &proto.SyncResponse{More: true}
		}},
		{name: "events for ids", lie: func(r *proto.SyncRequest) *proto.SyncResponse {
			return &proto.SyncResponse{Events: []jsontext.Value{jsontext.Value(`{"id":"` + r.IDs.From + `"}`)}}
		}},
		{name: "past MaxListIDs", lie: func(r *proto.SyncRequest) *proto.SyncResponse {
			ids := make([]string, proto.MaxListIDs+1)
			for i := range ids {
				ids[i] = r.IDs.From[:56] + fmt.Sprintf("%08x", i)
			}
			return &proto.SyncResponse{IDs: ids, More: true}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cl := newCluster(t, 3, 2000)
			key, _, _ := crypto.GenerateEd25519Key(nil)
			var extra []*eventlog.Event
			for i := range 40 {
				extra = append(extra, signed(t, key, time.Now(), fmt.Sprint("only at peer 0: ", i)))
			}
			if _, err := cl.peers[cl.ids[0]].log.Append(extra); err != nil {
				t.Fatal(err)
			}
			cl.events = append(cl.events, extra...)
			liar := cl.peers[cl.ids[2]]
			liar.lie = func(_ context.Context, r *proto.SyncRequest) (*proto.Response, bool, error) {
				if !r.IDList {
					return nil, false, nil
				}
				return &proto.Response{Type: proto.TypeSync, Sync: tc.lie(r)}, true, nil
			}
			sts, err := cl.syncAll(t)
			if !errors.Is(err, ErrBadPage) {
				t.Fatalf("SyncAll: %v, want a bad page", err)
			}
			cl.holdsAll(t)
			if sts[2].Done || !sts[0].Done || !sts[1].Done || cl.cursors[liar.id] != 0 {
				t.Fatalf("progress %+v, the liar's cursor %d", sts, cl.cursors[liar.id])
			}
		})
	}
}
