package heads

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/wats-network/wats/core"
	"github.com/wats-network/wats/proto"
)

// Defaults of Options (docs/adr/0041).
const (
	// DefaultGrace is how long a reader waits after an announcement
	// before it looks at what it holds: gossip of the same events leaves
	// the announcer at the same moment and is usually stored within a
	// few milliseconds (tens under load); what is missing after this is
	// pulled.
	DefaultGrace = 100 * time.Millisecond
	// DefaultRetryAfter is the first wait after a pull that failed,
	// doubled after each failure in a row up to MaxRetryAfter.
	DefaultRetryAfter = time.Second
	// MaxRetryAfter bounds the wait between a peer's failed pulls.
	MaxRetryAfter = 30 * time.Second
)

// Options wire a Tracker to the node. Every function is called from the
// Tracker's goroutines, never with a lock of the caller's held; each must
// be safe for concurrent use.
type Options struct {
	// Grace is the wait between an announcement and the check of it
	// (0: DefaultGrace).
	Grace time.Duration
	// Cursor returns the node's sync cursor into p's log.
	Cursor func(p peer.ID) core.Cursor
	// Advance moves that cursor forward to c: the node holds every event
	// of p's log up to it (it never moves it back).
	Advance func(p peer.ID, c core.Cursor)
	// Has reports whether the node holds the event with short id id; an
	// error counts as not held.
	Has func(id core.ShortID) (bool, error)
	// Allow takes a token of p's pull budget; without one, it says how
	// long until the next (at least 1 ms is waited).
	Allow func(p peer.ID) (ok bool, retry time.Duration)
	// Pull syncs one page of p's log after the cursor and stores it; busy
	// reports that a sync from p was running already, so nothing was
	// asked (that sync moves the cursor).
	Pull func(ctx context.Context, p peer.ID) (busy bool, err error)
	// Pulled, if set, is told of each pull's outcome (for metrics):
	// "stored" (the cursor moved), "busy" (a sync from p was running),
	// "empty" (the peer had nothing after the cursor) or "failed".
	Pulled func(p peer.ID, outcome string)
}

// Tracker follows the announcements of the node's peers (docs/adr/0041):
// per peer a Window, a check Grace after each announcement, and the pulls
// of what the node lacks, one page at a time within Options.Allow, until
// the cursor reaches the head announced. Create it with NewTracker; Close
// stops it.
type Tracker struct {
	opts   Options
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	peers  map[peer.ID]*peerHeads
	closed bool
}

// peerHeads is a Tracker's state of one peer.
type peerHeads struct {
	mu     sync.Mutex
	window Window
	// timer is the check to come, nil when none is; running is set while
	// a check (and its pull) runs, again when an announcement came
	// meanwhile; gone once the peer is forgotten.
	timer   *time.Timer
	running bool
	again   bool
	gone    bool
	// retry is the wait after the next failed pull.
	retry time.Duration
}

// NewTracker returns a Tracker of opts. Cursor, Advance, Has, Allow and
// Pull are required.
func NewTracker(opts Options) (*Tracker, error) {
	if opts.Cursor == nil || opts.Advance == nil || opts.Has == nil || opts.Allow == nil || opts.Pull == nil {
		return nil, errors.New("heads: a Tracker needs Cursor, Advance, Has, Allow and Pull")
	}
	if opts.Grace <= 0 {
		opts.Grace = DefaultGrace
	}
	t := &Tracker{opts: opts, peers: make(map[peer.ID]*peerHeads)}
	t.ctx, t.cancel = context.WithCancel(context.Background())
	return t, nil
}

// Announced takes in announcement h of peer p and schedules a check of it,
// Grace from now, unless one is scheduled or running (a running one looks
// again when it ends).
func (t *Tracker) Announced(p peer.ID, h *proto.Heads) {
	ph := t.peer(p)
	if ph == nil {
		return
	}
	ph.mu.Lock()
	defer ph.mu.Unlock()
	ph.window.Add(h)
	switch {
	case ph.running:
		ph.again = true
	case ph.timer == nil:
		t.schedule(p, ph, t.opts.Grace)
	}
}

// Head returns the highest head p announced, and whether p announced any.
func (t *Tracker) Head(p peer.ID) (core.Cursor, bool) {
	t.mu.Lock()
	ph := t.peers[p]
	t.mu.Unlock()
	if ph == nil {
		return 0, false
	}
	ph.mu.Lock()
	defer ph.mu.Unlock()
	return ph.window.Head(), true
}

// peer returns p's state, made if new; nil once the Tracker is closed.
func (t *Tracker) peer(p peer.ID) *peerHeads {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil
	}
	ph := t.peers[p]
	if ph == nil {
		ph = &peerHeads{retry: DefaultRetryAfter}
		t.peers[p] = ph
	}
	return ph
}

// Forget drops what the Tracker knows of p (p disconnected): its check to
// come is cancelled, and one running ends with its pull.
func (t *Tracker) Forget(p peer.ID) {
	t.mu.Lock()
	ph := t.peers[p]
	delete(t.peers, p)
	t.mu.Unlock()
	if ph == nil {
		return
	}
	ph.mu.Lock()
	defer ph.mu.Unlock()
	ph.gone = true
	if ph.timer != nil && ph.timer.Stop() {
		t.wg.Done() // the check it held will not run
	}
	ph.timer = nil
}

// Close stops every check to come and waits for those running.
func (t *Tracker) Close() {
	t.mu.Lock()
	t.closed = true
	peers := t.peers
	t.peers = nil
	t.mu.Unlock()
	t.cancel()
	for _, ph := range peers {
		ph.mu.Lock()
		ph.gone = true
		if ph.timer != nil && ph.timer.Stop() {
			t.wg.Done()
		}
		ph.timer = nil
		ph.mu.Unlock()
	}
	t.wg.Wait()
}

// schedule runs a check of p after d. REQUIRES: ph.mu held, no timer.
func (t *Tracker) schedule(p peer.ID, ph *peerHeads, d time.Duration) {
	if ph.gone {
		return
	}
	t.wg.Add(1)
	ph.timer = time.AfterFunc(max(d, 0), func() {
		defer t.wg.Done()
		t.check(p, ph)
	})
}

// check decides what to do about p's announcements (Decide), moves the
// cursor, and pulls a page when something is missing and the budget
// allows. It schedules the next check while something is missing: at once
// after a pull that moved the cursor, Grace after a busy sync, when the
// budget has a token again, or after the retry wait (doubling) when the
// pull failed or brought nothing; and Grace after an announcement that
// came while it ran.
func (t *Tracker) check(p peer.ID, ph *peerHeads) {
	ph.mu.Lock()
	ph.timer = nil
	if ph.gone || t.ctx.Err() != nil {
		ph.mu.Unlock()
		return
	}
	ph.running, ph.again = true, false
	cursor := t.opts.Cursor(p)
	d := Decide(cursor, &ph.window, t.has)
	ph.mu.Unlock()

	if d.Advance > cursor {
		t.opts.Advance(p, d.Advance)
	}
	next := time.Duration(-1) // none
	if d.Pull {
		if ok, wait := t.opts.Allow(p); !ok {
			next = max(wait, time.Millisecond)
		} else {
			busy, err := t.opts.Pull(t.ctx, p)
			outcome := "stored"
			switch {
			case t.ctx.Err() != nil:
				return
			case busy:
				outcome, next = "busy", t.opts.Grace
			case err == nil && t.opts.Cursor(p) > d.Advance:
				next = 0 // moved: look again at once
				ph.mu.Lock()
				ph.retry = DefaultRetryAfter
				ph.mu.Unlock()
			default:
				// Failed, or the peer had nothing after the cursor though
				// it announced more: back off, so that a peer whose
				// announcements its pages do not bear out costs a pull
				// per retry wait at most.
				outcome = "failed"
				if err == nil {
					outcome = "empty"
				}
				ph.mu.Lock()
				next, ph.retry = ph.retry, min(2*ph.retry, MaxRetryAfter)
				ph.mu.Unlock()
			}
			if t.opts.Pulled != nil {
				t.opts.Pulled(p, outcome)
			}
		}
	}
	ph.mu.Lock()
	defer ph.mu.Unlock()
	ph.running = false
	if next < 0 && ph.again {
		next = t.opts.Grace // announced while this check ran
	}
	if next >= 0 && ph.timer == nil {
		t.schedule(p, ph, next)
	}
}

// has is Options.Has with an error counted as not held.
func (t *Tracker) has(id core.ShortID) bool {
	ok, err := t.opts.Has(id)
	return ok && err == nil
}
