package heads

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/wats-network/wats/core"
	"github.com/wats-network/wats/proto"
)

// fakeNode is what a Tracker is wired to in these tests: a cursor per
// peer, the events held, a pull that brings the peer's log up to a
// position, and a budget that says yes or no.
type fakeNode struct {
	mu      sync.Mutex
	cursor  map[peer.ID]core.Cursor
	held    map[core.ShortID]bool
	log     map[peer.ID][]core.ShortID // each peer's log, position i+1 at i
	pulls   []time.Duration            // when each pull ran, from the start
	refuse  int                        // budget refusals still to give
	fail    int                        // pulls still to fail
	start   time.Time
	outcome []string
}

func newFakeNode() *fakeNode {
	return &fakeNode{cursor: map[peer.ID]core.Cursor{}, held: map[core.ShortID]bool{}, log: map[peer.ID][]core.ShortID{}, start: time.Now()}
}

func (f *fakeNode) options() Options {
	return Options{
		Cursor: func(p peer.ID) core.Cursor { f.mu.Lock(); defer f.mu.Unlock(); return f.cursor[p] },
		Advance: func(p peer.ID, c core.Cursor) {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.cursor[p] = max(f.cursor[p], c)
		},
		Has: func(id core.ShortID) (bool, error) { f.mu.Lock(); defer f.mu.Unlock(); return f.held[id], nil },
		Allow: func(peer.ID) (bool, time.Duration) {
			f.mu.Lock()
			defer f.mu.Unlock()
			if f.refuse > 0 {
				f.refuse--
				return false, 250 * time.Millisecond
			}
			return true, 0
		},
		Pull: func(_ context.Context, p peer.ID) (bool, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.pulls = append(f.pulls, time.Since(f.start))
			if f.fail > 0 {
				f.fail--
				return false, errors.New("refused")
			}
			c := f.cursor[p]
			for i := c; i < core.Cursor(len(f.log[p])) && i < c+2; i++ { // pages of 2
				f.held[f.log[p][i]] = true
				f.cursor[p] = i + 1
			}
			return false, nil
		},
		Pulled: func(_ peer.ID, o string) { f.mu.Lock(); f.outcome = append(f.outcome, o); f.mu.Unlock() },
	}
}

// grow appends events to p's log and returns the announcement of the new
// ones.
func (f *fakeNode) grow(p peer.ID, names ...string) *proto.Heads {
	f.mu.Lock()
	defer f.mu.Unlock()
	h := &proto.Heads{}
	for _, n := range names {
		f.log[p] = append(f.log[p], named(n))
		h.IDs = append(h.IDs, named(n))
	}
	h.Head = core.Cursor(len(f.log[p]))
	return h
}

func (f *fakeNode) state(p peer.ID) (core.Cursor, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.cursor[p], len(f.pulls)
}

// atEdge, in a synctest bubble, runs before a millisecond short of d from
// now and at at d, each once every goroutine is blocked.
func atEdge(d time.Duration, before, at func()) {
	time.Sleep(d - time.Millisecond)
	synctest.Wait()
	before()
	time.Sleep(time.Millisecond)
	synctest.Wait()
	at()
}

func newTestTracker(t *testing.T, f *fakeNode) *Tracker {
	tr, err := NewTracker(f.options())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.Close)
	return tr
}

// TestTrackerHeldNoPull: what gossip delivered is passed over: the cursor
// moves to the head, Grace after the announcement, with no pull.
func TestTrackerHeldNoPull(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeNode()
		tr := newTestTracker(t, f)
		h := f.grow("a", "e1", "e2", "e3")
		for _, id := range h.IDs {
			f.held[id] = true
		}
		tr.Announced("a", h)
		atEdge(DefaultGrace, func() {
			if c, _ := f.state("a"); c != 0 {
				t.Fatalf("the cursor moved before the grace: %d", c)
			}
		}, func() {
			if c, pulls := f.state("a"); c != 3 || pulls != 0 {
				t.Errorf("cursor %d after %d pulls, want 3 after none", c, pulls)
			}
		})
	})
}

// TestTrackerPullsWhatIsMissing: an event gossip dropped is pulled Grace
// after its announcement, page after page until the cursor is at the
// head; no check is left running after.
func TestTrackerPullsWhatIsMissing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeNode()
		tr := newTestTracker(t, f)
		h := f.grow("a", "e1", "e2", "e3", "e4", "e5")
		f.held[named("e1")] = true // only the first came by gossip
		tr.Announced("a", h)
		time.Sleep(DefaultGrace)
		synctest.Wait()
		c, pulls := f.state("a")
		if c != 5 || pulls != 2 {
			t.Errorf("cursor %d after %d pulls, want 5 after 2 (pages of 2 from 1)", c, pulls)
		}
		if f.pulls[0] != DefaultGrace || f.pulls[1] != DefaultGrace {
			t.Errorf("pulls at %v, want both at the grace", f.pulls)
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		if _, again := f.state("a"); again != 2 {
			t.Errorf("%d pulls a minute later, want no more", again)
		}
	})
}

// TestTrackerBudget: without a token the pull waits for the one the
// budget names, then runs.
func TestTrackerBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeNode()
		f.refuse = 2
		tr := newTestTracker(t, f)
		tr.Announced("a", f.grow("a", "e1"))
		atEdge(DefaultGrace+500*time.Millisecond, func() {
			if _, pulls := f.state("a"); pulls != 0 {
				t.Fatalf("%d pulls before the budget's second token", pulls)
			}
		}, func() {
			if c, pulls := f.state("a"); c != 1 || pulls != 1 {
				t.Errorf("cursor %d after %d pulls, want 1 after 1", c, pulls)
			}
		})
	})
}

// TestTrackerBackoff: a pull that fails is retried after DefaultRetryAfter,
// then twice as long each time; a success resets the wait.
func TestTrackerBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeNode()
		f.fail = 3
		tr := newTestTracker(t, f)
		tr.Announced("a", f.grow("a", "e1"))
		time.Sleep(time.Minute)
		synctest.Wait()
		g := DefaultGrace
		want := []time.Duration{g, g + time.Second, g + 3*time.Second, g + 7*time.Second}
		if len(f.pulls) != len(want) {
			t.Fatalf("pulls at %v, want %v", f.pulls, want)
		}
		for i := range want {
			if f.pulls[i] != want[i] {
				t.Errorf("pull %d at %v, want %v", i, f.pulls[i], want[i])
			}
		}
		if c, _ := f.state("a"); c != 1 {
			t.Errorf("cursor %d, want 1", c)
		}
		if got := f.outcome; len(got) != 4 || got[0] != "failed" || got[3] != "stored" {
			t.Errorf("outcomes %v", got)
		}
	})
}

// TestTrackerEmptyBacksOff: a peer that announces events its pages never
// bring costs a pull per retry wait, no more.
func TestTrackerEmptyBacksOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeNode()
		tr := newTestTracker(t, f)
		tr.Announced("liar", &proto.Heads{Head: 3, IDs: []core.ShortID{named("x"), named("y"), named("z")}})
		time.Sleep(70 * time.Second)
		synctest.Wait()
		// At the grace, then 1, 2, 4, 8, 16 and (the cap) 30 s after the
		// one before: the seventh at 61.1 s.
		if _, pulls := f.state("liar"); pulls != 7 || f.pulls[6]-f.pulls[5] != MaxRetryAfter {
			t.Errorf("pulls at %v of a peer whose pages are empty, want 7, the last two %v apart", f.pulls, MaxRetryAfter)
		}
		if f.outcome[0] != "empty" {
			t.Errorf("outcome %q, want empty", f.outcome[0])
		}
	})
}

// TestTrackerForgetAndClose: a forgotten peer's check to come never runs,
// and Close returns with no check left.
func TestTrackerForgetAndClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeNode()
		tr, err := NewTracker(f.options())
		if err != nil {
			t.Fatal(err)
		}
		tr.Announced("a", f.grow("a", "e1"))
		tr.Announced("b", f.grow("b", "e2"))
		tr.Forget("a")
		tr.Close()
		time.Sleep(time.Second)
		synctest.Wait()
		if _, pulls := f.state("a"); pulls != 0 {
			t.Errorf("%d pulls after Forget and Close", pulls)
		}
		tr.Announced("b", f.grow("b", "e3")) // after Close: ignored
		time.Sleep(time.Second)
		synctest.Wait()
		if _, ok := tr.Head("b"); ok {
			t.Error("a closed Tracker kept an announcement")
		}
		if _, err := NewTracker(Options{}); err == nil {
			t.Error("NewTracker without its functions")
		}
	})
}

// TestTrackerAnnouncedWhileRunning: an announcement that comes while a
// pull runs is looked at once the pull ends.
func TestTrackerAnnouncedWhileRunning(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeNode()
		release := make(chan struct{})
		opts := f.options()
		pull := opts.Pull
		first := true
		opts.Pull = func(ctx context.Context, p peer.ID) (bool, error) {
			if first {
				first = false
				<-release
			}
			return pull(ctx, p)
		}
		tr, err := NewTracker(opts)
		if err != nil {
			t.Fatal(err)
		}
		defer tr.Close()
		tr.Announced("a", f.grow("a", "e1"))
		time.Sleep(DefaultGrace)
		synctest.Wait() // the first pull waits
		tr.Announced("a", f.grow("a", "e2", "e3", "e4"))
		close(release)
		time.Sleep(DefaultGrace)
		synctest.Wait()
		if c, _ := f.state("a"); c != 4 {
			t.Errorf("cursor %d, want 4", c)
		}
	})
}
