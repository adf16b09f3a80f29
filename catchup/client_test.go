package catchup

import (
	"context"
	"fmt"
	"runtime"
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

// testClient is a Client on an in-memory log, with the cursors in a map.
type testClient struct {
	*Client
	log     *eventlog.Log
	mu      sync.Mutex
	cursors map[peer.ID]core.Cursor
	added   int
	invalid uint64
	// call, if set, answers the sync requests (else an empty last page).
	call func(ctx context.Context) (*proto.Response, error)
	wg   sync.WaitGroup
}

func newTestClient(t *testing.T) *testClient {
	t.Helper()
	db, err := pebble.Open("", &pebble.Options{FS: vfs.NewMem()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	l, err := eventlog.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	tc := &testClient{log: l, cursors: map[peer.ID]core.Cursor{}}
	var lock sync.Mutex
	tc.Client = NewClient(ClientOptions{
		Log:    l,
		Lock:   func(peer.ID) *sync.Mutex { return &lock },
		Cursor: func(p peer.ID) core.Cursor { tc.mu.Lock(); defer tc.mu.Unlock(); return tc.cursors[p] },
		SaveCursor: func(p peer.ID, c core.Cursor, _ bool) error {
			tc.mu.Lock()
			defer tc.mu.Unlock()
			tc.cursors[p] = c
			return nil
		},
		Head:  func(peer.ID) (core.Cursor, bool) { return 0, false },
		Pacer: func(peer.ID) *limits.Pacer { return nil },
		Room:  func(int) error { return nil },
		Call: func(ctx context.Context, _ peer.ID, _ proto.Message) (*proto.Response, error) {
			if tc.call != nil {
				return tc.call(ctx)
			}
			return &proto.Response{Type: proto.TypeSync, Sync: &proto.SyncResponse{}}, nil
		},
		Spawn: func(f func()) { tc.wg.Go(f) },
		Stored: func(_ peer.ID, added []*eventlog.Event, rejected []error, _ int) {
			tc.added += len(added)
			tc.invalid += Invalid(rejected)
		},
	})
	return tc
}

// TestStoreWritesAGroup: pages written together land in the log in page
// order, with the counts of all and the cursor of the last, and what was
// stored and rejected is told.
func TestStoreWritesAGroup(t *testing.T) {
	c := newTestClient(t)
	key, _, _ := crypto.GenerateEd25519Key(nil)
	now := time.Now()
	// Three pages of five events; one event of the middle page is forged:
	// dropped, the rest kept.
	var group []Page
	var want [][]byte
	for i := range 3 {
		var events []jsontext.Value
		for j := range 5 {
			ev := signed(t, key, now, fmt.Sprintf("event %d", 5*i+j))
			if i == 1 && j == 2 {
				ev.Sig = signed(t, key, now, "another").Sig
			}
			events = append(events, marshal(t, ev))
		}
		ok, raws, _, rejected := eventlog.VerifyPage(events, now, nil)
		group = append(group, Page{Events: events, Next: core.Cursor(5 * (i + 1)), More: i < 2, OK: ok, Raws: raws, Rejected: rejected})
		want = append(want, raws...)
	}
	last := group[2].Next
	st := Progress{}
	if err := c.store("a peer", group, &st); err != nil {
		t.Fatal(err)
	}
	if st.Received != 15 || st.Stored != 14 || st.Dropped != 1 || st.Cursor != last || st.PeerHead != last {
		t.Fatalf("progress %+v; want 15 received, 14 stored, 1 dropped, cursor and head %d", st, last)
	}
	if c.added != 14 || c.invalid != 1 || c.cursors["a peer"] != last {
		t.Fatalf("told %d added, %d invalid, cursor %d; want 14, 1, %d", c.added, c.invalid, c.cursors["a peer"], last)
	}
	stored, _, _, err := c.log.Page(0, 100, 1<<20)
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

// TestAdvance: a cursor moves forward only, and not while a run holds the
// peer's lock.
func TestAdvance(t *testing.T) {
	c := newTestClient(t)
	c.Advance("p", 10)
	c.Advance("p", 4) // backwards: ignored
	if got := c.cursors["p"]; got != 10 {
		t.Fatalf("cursor %d, want 10", got)
	}
	mu := c.o.Lock("p")
	mu.Lock()
	c.Advance("p", 20) // a run holds the lock: it moves the cursor itself
	mu.Unlock()
	if got := c.cursors["p"]; got != 10 {
		t.Fatalf("cursor %d after an advance during a run, want 10", got)
	}
}

// TestInvalid: events from the future are no abuse signal.
func TestInvalid(t *testing.T) {
	rejected := []error{eventlog.ErrFuture, fmt.Errorf("wrapped: %w", eventlog.ErrFuture), eventlog.ErrBadSignature, fmt.Errorf("other")}
	if got := Invalid(rejected); got != 2 {
		t.Fatalf("Invalid = %d, want 2", got)
	}
}

// TestAgain: a gap while a gap's run goes on adds one run, not one per
// gap; a gap once the runs ended starts another.
func TestAgain(t *testing.T) {
	c := newTestClient(t)
	var runs atomic.Int32
	started, release := make(chan struct{}, 10), make(chan struct{})
	c.call = func(context.Context) (*proto.Response, error) {
		runs.Add(1)
		started <- struct{}{}
		<-release
		return &proto.Response{Type: proto.TypeSync, Sync: &proto.SyncResponse{}}, nil
	}
	var gap Gap
	ctx := context.Background()
	c.Again(ctx, "p", &gap)
	<-started // the first run asks its page
	for range 5 {
		c.Again(ctx, "p", &gap)
		runtime.Gosched() // a spawned run, were there one, may go first
	}
	close(release)
	c.wg.Wait()
	if got := runs.Load(); got != 2 {
		t.Fatalf("%d runs for six gaps, five during the first run; want 2", got)
	}
	c.Again(ctx, "p", &gap)
	c.wg.Wait()
	if got := runs.Load(); got != 3 {
		t.Fatalf("%d runs after a gap once they ended; want 3", got)
	}
}

// TestGap: the states of a peer's gap syncs, call by call.
func TestGap(t *testing.T) {
	var g Gap
	if !g.ask() {
		t.Fatal("the first ask started no run")
	}
	for i := range 3 {
		if g.ask() {
			t.Fatalf("ask %d during a run started another", i+2)
		}
	}
	if !g.again() {
		t.Fatal("asks during a run: no run after it")
	}
	if g.again() {
		t.Fatal("a second run after one with no asks")
	}
	if !g.ask() {
		t.Fatal("an ask once the runs ended started none")
	}
	if g.again() {
		t.Fatal("a run with no asks during it was followed by another")
	}
}
