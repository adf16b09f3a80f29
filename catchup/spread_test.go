package catchup

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"log"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/wats-network/wats/core"
	"github.com/wats-network/wats/eventlog"
	"github.com/wats-network/wats/limits"
	"github.com/wats-network/wats/proto"
)

// memLog opens an event log on an in-memory pebble.
func memLog(t *testing.T) *eventlog.Log {
	t.Helper()
	db, err := pebble.Open("", &pebble.Options{FS: vfs.NewMem(), Logger: quietPebble{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	l, err := eventlog.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// quietPebble drops pebble's informational lines ("Found 0 WALs").
type quietPebble struct{}

func (quietPebble) Infof(string, ...any)         {}
func (quietPebble) Errorf(f string, args ...any) { log.Printf("pebble: "+f, args...) }
func (quietPebble) Fatalf(f string, args ...any) { log.Fatalf("pebble: "+f, args...) }

// spreadPeerLog is a peer of a cluster: its log, served as a node serves
// it (peers.Page.Read), unless lie answers a request first.
type spreadPeerLog struct {
	id       peer.ID
	log      *eventlog.Log
	lie      func(ctx context.Context, r *proto.SyncRequest) (*proto.Response, bool, error)
	requests atomic.Int64
	// idPages counts the requests for a page of an id range, idLists
	// those for a list of ids; head, if set, is the head the peer
	// advertises instead of its log's.
	idPages, idLists atomic.Int64
	head             core.Cursor
}

// serve answers r from the peer's log.
func (sp *spreadPeerLog) serve(ctx context.Context, r *proto.SyncRequest) (*proto.Response, error) {
	sp.requests.Add(1)
	if sp.lie != nil {
		if resp, ok, err := sp.lie(ctx, r); ok {
			return resp, err
		}
	}
	page := &proto.SyncResponse{Next: sp.log.Head()}
	var err error
	switch {
	case r.IDs != nil && r.IDList:
		sp.idLists.Add(1)
		var ids []string
		ids, page.More, err = sp.log.IDs(r.IDs.From, r.IDs.To, proto.MaxListIDs)
		page.IDs = ids
	case r.IDs != nil && r.Fingerprint:
		count, sum, more, ferr := sp.log.Fingerprint(r.IDs.From, r.IDs.To, proto.MaxFingerprintIDs)
		page.Count, page.Fingerprint, page.More, err = int64(count), hex.EncodeToString(sum[:]), more, ferr
	case r.IDs != nil:
		sp.idPages.Add(1)
		page.Events, page.More, err = sp.log.PageIDsInto(nil, r.IDs.From, r.IDs.To, r.Limit, proto.MaxPageBytes)
	default:
		page.Events, page.Next, page.More, err = sp.log.Page(r.After, r.Limit, proto.MaxPageBytes)
	}
	return &proto.Response{Type: proto.TypeSync, Sync: page}, err
}

// cluster is a Client on an in-memory log and the peers it syncs from.
type cluster struct {
	*Client
	log    *eventlog.Log
	peers  map[peer.ID]*spreadPeerLog
	ids    []peer.ID
	events []*eventlog.Event

	mu      sync.Mutex
	cursors map[peer.ID]core.Cursor
	locks   map[peer.ID]*sync.Mutex
	stored  map[peer.ID]int
	invalid map[peer.ID]uint64
	wg      sync.WaitGroup
}

// newCluster returns a client and k peers that each hold the same n
// events, appended in an order of their own.
func newCluster(t *testing.T, k, n int) *cluster {
	t.Helper()
	key, _, _ := crypto.GenerateEd25519Key(nil)
	now := time.Now()
	cl := &cluster{log: memLog(t), peers: map[peer.ID]*spreadPeerLog{}, cursors: map[peer.ID]core.Cursor{},
		locks: map[peer.ID]*sync.Mutex{}, stored: map[peer.ID]int{}, invalid: map[peer.ID]uint64{}}
	for i := range n {
		cl.events = append(cl.events, signed(t, key, now, fmt.Sprint("event ", i)))
	}
	for i := range k {
		id := peer.ID(fmt.Sprintf("peer-%d", i))
		sp := &spreadPeerLog{id: id, log: memLog(t)}
		evs := slices.Clone(cl.events)
		rand.New(rand.NewPCG(uint64(i), 1)).Shuffle(len(evs), func(a, b int) { evs[a], evs[b] = evs[b], evs[a] })
		if _, err := sp.log.Append(evs); err != nil {
			t.Fatal(err)
		}
		cl.peers[id], cl.ids = sp, append(cl.ids, id)
		cl.locks[id] = new(sync.Mutex)
	}
	cl.Client = NewClient(ClientOptions{
		Log: cl.log,
		Call: func(ctx context.Context, p peer.ID, req proto.Message) (*proto.Response, error) {
			return cl.peers[p].serve(ctx, req.(*proto.SyncRequest))
		},
		Lock: func(p peer.ID) *sync.Mutex { return cl.locks[p] },
		Cursor: func(p peer.ID) core.Cursor {
			cl.mu.Lock()
			defer cl.mu.Unlock()
			return cl.cursors[p]
		},
		SaveCursor: func(p peer.ID, c core.Cursor, _ bool) error {
			cl.mu.Lock()
			defer cl.mu.Unlock()
			cl.cursors[p] = c
			return nil
		},
		Head: func(p peer.ID) (core.Cursor, bool) {
			if h := cl.peers[p].head; h != 0 {
				return h, true
			}
			return cl.peers[p].log.Head(), true
		},
		Pacer: func(peer.ID) *limits.Pacer { return limits.NewPacer(0) },
		Room:  func(int) error { return nil },
		Spawn: func(f func()) { cl.wg.Go(f) },
		Stored: func(p peer.ID, added []*eventlog.Event, rejected []error, _ int) {
			cl.mu.Lock()
			defer cl.mu.Unlock()
			cl.stored[p] += len(added)
			cl.invalid[p] += Invalid(rejected)
		},
		Serves: func(peer.ID, string) bool { return true },
	})
	t.Cleanup(cl.wg.Wait)
	return cl
}

// holdsAll fails the test unless the client's log holds every event of
// the cluster exactly once.
func (cl *cluster) holdsAll(t *testing.T) {
	t.Helper()
	if got := cl.log.Head(); got != core.Cursor(len(cl.events)) {
		t.Fatalf("the log holds %d events, want %d", got, len(cl.events))
	}
	for _, e := range cl.events {
		if ok, err := cl.log.Has(e.ID); !ok || err != nil {
			t.Fatalf("event %s missing (%v)", e.ID, err)
		}
	}
}

func (cl *cluster) syncAll(t *testing.T) ([]Progress, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return cl.SyncAll(ctx, cl.ids, nil)
}

// TestSpreadFetchesEveryEventOnce: four peers whose logs order the same
// events differently each serve a share of them; the log ends with every
// event once, every peer's cursor at its head, and each peer's share
// counted.
func TestSpreadFetchesEveryEventOnce(t *testing.T) {
	cl := newCluster(t, 4, 3000)
	sts, err := cl.syncAll(t)
	if err != nil {
		t.Fatal(err)
	}
	cl.holdsAll(t)
	total := 0
	for i, st := range sts {
		if !st.Done || st.Cursor != 3000 || cl.cursors[cl.ids[i]] != 3000 {
			t.Fatalf("peer %d: %+v, cursor %d", i, st, cl.cursors[cl.ids[i]])
		}
		if st.Stored == 0 || int(st.Stored) != cl.stored[cl.ids[i]] {
			t.Fatalf("peer %d stored %d (told %d): every peer has a share", i, st.Stored, cl.stored[cl.ids[i]])
		}
		total += int(st.Stored)
	}
	if total != 3000 {
		t.Fatalf("shares add up to %d, want 3000", total)
	}
	// A second catch-up finds every shard the same: fingerprints alone.
	before := cl.requests()
	if _, err := cl.syncAll(t); err != nil {
		t.Fatal(err)
	}
	if asked := cl.requests() - before; asked > int64(4*len(planShards(0))) {
		t.Fatalf("a catch-up with nothing to fetch made %d requests", asked)
	}
	cl.holdsAll(t)
}

func (cl *cluster) requests() int64 {
	var n int64
	for _, p := range cl.peers {
		n += p.requests.Load()
	}
	return n
}

// TestSpreadPlannedForTheFurthestPeer: a catch-up of every peer is
// planned for the peer furthest ahead, whichever joins first: with one
// that advertises 200,000 events, its shards (one page each here, the
// logs holding 500) are those of 200,000 events, more than the fewest a
// plan has.
func TestSpreadPlannedForTheFurthestPeer(t *testing.T) {
	cl := newCluster(t, 2, 500)
	cl.peers[cl.ids[1]].head = 200_000
	if _, err := cl.syncAll(t); err != nil {
		t.Fatal(err)
	}
	cl.holdsAll(t)
	want := len(planShards(200_000))
	if want <= MinShards {
		t.Fatalf("a plan of 200,000 events has %d shards, no more than a plan's fewest", want)
	}
	var pages int64
	for _, p := range cl.peers {
		pages += p.idPages.Load()
	}
	if pages < int64(want) {
		t.Fatalf("%d pages asked by id range: the catch-up was not planned for 200,000 events (%d shards)", pages, want)
	}
}

// TestSpreadFetchesWhatOnePeerAloneHolds: a peer that holds events the
// others lack has them fetched by the check of its shards.
func TestSpreadFetchesWhatOnePeerAloneHolds(t *testing.T) {
	cl := newCluster(t, 3, 1000)
	key, _, _ := crypto.GenerateEd25519Key(nil)
	var extra []*eventlog.Event
	for i := range 40 {
		extra = append(extra, signed(t, key, time.Now(), fmt.Sprint("only at peer 2: ", i)))
	}
	if _, err := cl.peers[cl.ids[2]].log.Append(extra); err != nil {
		t.Fatal(err)
	}
	cl.events = append(cl.events, extra...)
	if _, err := cl.syncAll(t); err != nil {
		t.Fatal(err)
	}
	cl.holdsAll(t)
}

// A lie is how a lying peer answers a request by ids (ok false: honestly).
type lie func(ctx context.Context, r *proto.SyncRequest) (*proto.Response, bool, error)

// syncPage is a sync response of events.
func syncPage(events []jsontext.Value, more bool) *proto.Response {
	return &proto.Response{Type: proto.TypeSync, Sync: &proto.SyncResponse{Events: events, More: more}}
}

// TestSpreadLiars: a peer that lies in any of these ways is dropped from
// the catch-up, its share taken over by the others; the log ends with
// every event once, the liar's cursor where it was and its error told.
func TestSpreadLiars(t *testing.T) {
	key, _, _ := crypto.GenerateEd25519Key(nil)
	outside := func(t *testing.T, cl *cluster) lie {
		// Events from the start of the id space, whatever was asked.
		return func(_ context.Context, r *proto.SyncRequest) (*proto.Response, bool, error) {
			if r.Fingerprint || r.IDs.From == zeroID {
				return nil, false, nil
			}
			evs, _, _ := cl.log.PageIDsInto(nil, zeroID, "", 1, 1<<20)
			if len(evs) == 0 {
				evs, _, _ = cl.peers[cl.ids[0]].log.PageIDsInto(nil, zeroID, "", 1, 1<<20)
			}
			return syncPage(evs, true), true, nil
		}
	}
	for _, tc := range []struct {
		name string
		lie  func(t *testing.T, cl *cluster) lie
		err  error
	}{
		{name: "events outside the range", lie: outside, err: ErrBadPage},
		{name: "events out of order", err: ErrBadPage, lie: func(t *testing.T, cl *cluster) lie {
			return func(_ context.Context, r *proto.SyncRequest) (*proto.Response, bool, error) {
				if r.Fingerprint {
					return nil, false, nil
				}
				evs, more, _ := cl.peers[cl.ids[0]].log.PageIDsInto(nil, r.IDs.From, r.IDs.To, 256, 1<<20)
				slices.Reverse(evs)
				return syncPage(evs, more), true, nil
			}
		}},
		{name: "more than MaxInvalidPerRun invalid events", err: ErrRunBound, lie: func(t *testing.T, cl *cluster) lie {
			return func(_ context.Context, r *proto.SyncRequest) (*proto.Response, bool, error) {
				if r.Fingerprint {
					return nil, false, nil
				}
				// A page of forged events whose claimed ids are in the range,
				// ascending; more, always.
				var evs []jsontext.Value
				from, _ := hex.DecodeString(r.IDs.From)
				for i := range 200 {
					e := signed(t, key, time.Now(), fmt.Sprint("forged ", i))
					id := [32]byte(from)
					eventlog.AddID(&id, [32]byte{31: byte(i)}) // the ranges asked for are wider than 200 ids
					e.ID = hex.EncodeToString(id[:])
					evs = append(evs, marshal(t, e))
				}
				return syncPage(evs, true), true, nil
			}
		}},
		{name: "an empty page with more", err: ErrBadPage, lie: func(t *testing.T, cl *cluster) lie {
			return func(_ context.Context, r *proto.SyncRequest) (*proto.Response, bool, error) {
				if r.Fingerprint {
					return nil, false, nil
				}
				return syncPage(nil, true), true, nil
			}
		}},
		{name: "a page past the events' bound", err: ErrBadPage, lie: func(t *testing.T, cl *cluster) lie {
			return func(_ context.Context, r *proto.SyncRequest) (*proto.Response, bool, error) {
				if r.Fingerprint {
					return nil, false, nil
				}
				evs, _, _ := cl.peers[cl.ids[0]].log.PageIDsInto(nil, zeroID, "", 257, 1<<20)
				return syncPage(evs, true), true, nil
			}
		}},
		{name: "an error", err: proto.ErrRefused, lie: func(t *testing.T, cl *cluster) lie {
			return func(context.Context, *proto.SyncRequest) (*proto.Response, bool, error) {
				return nil, true, &proto.RefusedError{Refused: proto.Refused{Reason: "no", RetryAfterMs: 1}}
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cl := newCluster(t, 4, 2000)
			liar := cl.peers[cl.ids[3]]
			liar.lie = tc.lie(t, cl)
			sts, err := cl.syncAll(t)
			if !errors.Is(err, tc.err) {
				t.Fatalf("SyncAll: %v, want %v", err, tc.err)
			}
			cl.holdsAll(t)
			for i, st := range sts {
				if want := i < 3; st.Done != want {
					t.Fatalf("peer %d done %v, want %v", i, st.Done, want)
				}
			}
			if c := cl.cursors[liar.id]; c != 0 {
				t.Fatalf("the liar's cursor moved to %d", c)
			}
		})
	}
}

// TestSpreadInvalidBound: a peer's invalid events are borne up to
// MaxInvalidPerRun and it is dropped one past it.
func TestSpreadInvalidBound(t *testing.T) {
	key, _, _ := crypto.GenerateEd25519Key(nil)
	for _, bad := range []int{MaxInvalidPerRun, MaxInvalidPerRun + 1} {
		t.Run(fmt.Sprint(bad), func(t *testing.T) {
			cl := newCluster(t, 2, 500)
			liar := cl.peers[cl.ids[1]]
			var sent atomic.Int64
			// Its first page by ids holds the forged events, claimed ids in
			// the range and ascending; then it serves its log.
			liar.lie = func(_ context.Context, r *proto.SyncRequest) (*proto.Response, bool, error) {
				if r.Fingerprint || !sent.CompareAndSwap(0, 1) {
					return nil, false, nil
				}
				from, _ := hex.DecodeString(r.IDs.From)
				var evs []jsontext.Value
				for i := range bad {
					e := signed(t, key, time.Now(), fmt.Sprint("forged ", i))
					id := [32]byte(from)
					eventlog.AddID(&id, [32]byte{30: byte(i >> 8), 31: byte(i)})
					e.ID = hex.EncodeToString(id[:])
					evs = append(evs, marshal(t, e))
				}
				// Served in pages of at most 256.
				first := evs[:min(len(evs), 256)]
				return syncPage(first, len(evs) > 256), true, nil
			}
			// Two pages: the rest of the forged events come next.
			if bad > 256 {
				inner := liar.lie
				var second atomic.Bool
				liar.lie = func(ctx context.Context, r *proto.SyncRequest) (*proto.Response, bool, error) {
					if sent.Load() == 1 && !r.Fingerprint && second.CompareAndSwap(false, true) {
						e := signed(t, key, time.Now(), "forged last")
						e.ID = r.IDs.From
						return syncPage([]jsontext.Value{marshal(t, e)}, false), true, nil
					}
					return inner(ctx, r)
				}
			}
			_, err := cl.syncAll(t)
			if dropped := errors.Is(err, ErrRunBound); dropped != (bad > MaxInvalidPerRun) {
				t.Fatalf("%d invalid events: %v", bad, err)
			}
			cl.holdsAll(t)
			if got := cl.invalid[liar.id]; got != uint64(bad) {
				t.Fatalf("counted %d invalid events from the liar, want %d", got, bad)
			}
		})
	}
}

// TestSpreadStalledPeer: a peer that never answers is dropped at the
// stall timeout, and the others serve its share.
func TestSpreadStalledPeer(t *testing.T) {
	cl := newCluster(t, 3, 1500)
	cl.StallTimeout = 2 * time.Second
	stalled := cl.peers[cl.ids[0]]
	stalled.lie = func(ctx context.Context, r *proto.SyncRequest) (*proto.Response, bool, error) {
		<-ctx.Done()
		return nil, true, ctx.Err()
	}
	_, err := cl.syncAll(t)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("SyncAll: %v, want the stalled peer's deadline", err)
	}
	cl.holdsAll(t)
	if cl.cursors[stalled.id] != 0 || cl.cursors[cl.ids[1]] != 1500 {
		t.Fatalf("cursors %v", cl.cursors)
	}
}

// TestSyncAllTellsNothingAfterItReturns: a SyncAll whose ctx ends while
// the catch-up goes on returns, and its progress is not called again as
// the catch-up writes the pages after (the daemon's writer of progress is
// an API response, gone once its client hung up).
func TestSyncAllTellsNothingAfterItReturns(t *testing.T) {
	cl := newCluster(t, 2, 3000)
	gate := make(chan struct{})
	var served atomic.Int64
	for _, sp := range cl.peers {
		sp.lie = func(ctx context.Context, _ *proto.SyncRequest) (*proto.Response, bool, error) {
			if served.Add(1) > 4 { // a few pages written, then held until the caller has gone
				select {
				case <-gate:
				case <-ctx.Done():
				}
			}
			return nil, false, nil
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	var returned atomic.Bool
	var before, after atomic.Int64
	_, err := cl.SyncAll(ctx, cl.ids, func([]Progress) {
		if returned.Load() {
			after.Add(1)
			return
		}
		if before.Add(1) == 1 {
			cancel()
		}
	})
	returned.Store(true)
	if !errors.Is(err, context.Canceled) || before.Load() == 0 {
		t.Fatalf("SyncAll: %v after %d lines of progress", err, before.Load())
	}
	close(gate)
	cl.wg.Wait() // the catch-up ends in the background
	cl.holdsAll(t)
	if n := after.Load(); n != 0 {
		t.Fatalf("progress called %d times after SyncAll returned", n)
	}
}

// TestTriggerJoinsPeersFarBehind: Trigger has a peer SpreadLag or more
// ahead join the catch-up running, and one less ahead synced by position.
func TestTriggerJoinsPeersFarBehind(t *testing.T) {
	cl := newCluster(t, 3, 1200)
	cl.SpreadLag = 1200
	for _, p := range cl.ids {
		cl.Trigger(context.Background(), p)
	}
	cl.wg.Wait()
	cl.holdsAll(t)
	for _, p := range cl.ids {
		if cl.stored[p] == 0 {
			t.Fatalf("peer %s served nothing: %v", p, cl.stored)
		}
	}
	// One event more at peer 0: 1 past its cursor, below SpreadLag; synced by position.
	key, _, _ := crypto.GenerateEd25519Key(nil)
	e := signed(t, key, time.Now(), "one more")
	if _, err := cl.peers[cl.ids[0]].log.Append([]*eventlog.Event{e}); err != nil {
		t.Fatal(err)
	}
	cl.events = append(cl.events, e)
	cl.SpreadLag = 2
	before := cl.peers[cl.ids[0]].requests.Load()
	cl.Trigger(context.Background(), cl.ids[0])
	cl.wg.Wait()
	cl.holdsAll(t)
	if asked := cl.peers[cl.ids[0]].requests.Load() - before; asked != 1 {
		t.Fatalf("%d requests for one event past the cursor, want 1 by position", asked)
	}
}

func TestPlanShards(t *testing.T) {
	for _, tc := range []struct {
		events uint64
		want   int
	}{
		{0, MinShards}, {MinShards * ShardEvents, MinShards}, {MinShards*ShardEvents + 1, MinShards + 1},
		{MaxShards * ShardEvents, MaxShards}, {MaxShards*ShardEvents + 1, MaxShards}, {1 << 62, MaxShards},
	} {
		shards := planShards(tc.events)
		if len(shards) != tc.want {
			t.Fatalf("%d events: %d shards, want %d", tc.events, len(shards), tc.want)
		}
		if shards[0].From != zeroID || shards[len(shards)-1].To != "" {
			t.Fatalf("%d events: the shards do not cover the space", tc.events)
		}
		for i := 1; i < len(shards); i++ {
			if shards[i].From != shards[i-1].To || shards[i].From <= shards[i-1].From {
				t.Fatalf("%d events: shard %d does not follow shard %d", tc.events, i, i-1)
			}
		}
	}
}

func TestNextID(t *testing.T) {
	if next, ok := nextID(strings.Repeat("0", 63) + "f"); !ok || next != strings.Repeat("0", 62)+"10" {
		t.Fatalf("next of 0…0f: %s", next)
	}
	if _, ok := nextID(strings.Repeat("f", 64)); ok {
		t.Fatal("an id after the last")
	}
	if _, ok := nextID("zz"); ok {
		t.Fatal("an id after a malformed one")
	}
}

// TestCheckIDPage: a page by ids holds ids in [from, to), ascending; at
// and just past each end.
func TestCheckIDPage(t *testing.T) {
	id := func(b byte) string { return strings.Repeat("0", 62) + hex.EncodeToString([]byte{b}) }
	ev := func(s string) jsontext.Value { return jsontext.Value(`{"id":"` + s + `","x":1}`) }
	r := proto.IDRange{From: id(0x10), To: id(0x20)}
	for _, tc := range []struct {
		ids []string
		ok  bool
	}{
		{ids: []string{id(0x10), id(0x1f)}, ok: true},
		{ids: []string{id(0x0f)}},
		{ids: []string{id(0x20)}},
		{ids: []string{id(0x12), id(0x12)}},
		{ids: []string{id(0x13), id(0x12)}},
		{ids: []string{"short"}},
	} {
		var evs []jsontext.Value
		for _, s := range tc.ids {
			evs = append(evs, ev(s))
		}
		last, err := checkIDPage(evs, r, r.From)
		if tc.ok != (err == nil) || (err != nil && !errors.Is(err, ErrBadPage)) {
			t.Fatalf("%v: %v", tc.ids, err)
		}
		if tc.ok && last != tc.ids[len(tc.ids)-1] {
			t.Fatalf("last %s", last)
		}
	}
	if _, err := checkIDPage([]jsontext.Value{jsontext.Value(`{"x":{"id":"` + id(0x11) + `"}}`)}, r, r.From); err == nil {
		t.Fatal("an id nested in another member taken for the event's")
	}
}

// TestSpreadPageBound: a peer serves at most Client.RunPages pages in a
// catch-up (MaxPagesPerRun by default); at the bound the catch-up ends
// well, one page past it the peer is dropped.
func TestSpreadPageBound(t *testing.T) {
	// 2,000 events in 16 shards: one page each (a shard of more than 256
	// of them is some 20 standard deviations away).
	for _, bound := range []int{16, 15} {
		t.Run(fmt.Sprint(bound), func(t *testing.T) {
			cl := newCluster(t, 1, 2000)
			cl.RunPages = bound
			_, err := cl.syncAll(t)
			if past := errors.Is(err, ErrRunBound); past != (bound < 16) {
				t.Fatalf("RunPages %d: %v", bound, err)
			}
			if bound == 16 {
				cl.holdsAll(t)
			}
		})
	}
}
