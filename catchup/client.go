package catchup

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/wats-network/wats/core"
	"github.com/wats-network/wats/eventlog"
	"github.com/wats-network/wats/limits"
	"github.com/wats-network/wats/proto"
)

// ErrRunning is Client.Sync's answer, with Run.SkipIfBusy, when a sync
// from the peer is running already.
var ErrRunning = errors.New("catchup: a sync from the peer is running")

// ClientOptions are what a Client runs on: the log it fills, and what it
// asks of the node about each peer (its cursor, its lock, its pacing and
// share), each a function so that the peer's state stays the node's
// (package peers).
type ClientOptions struct {
	// Log is the event log the runs append to.
	Log *eventlog.Log
	// Call sends a sync request to p (the node's request, which solves
	// the challenges p answers with).
	Call func(ctx context.Context, p peer.ID, req proto.Message) (*proto.Response, error)
	// Lock returns the mutex that serializes the runs from p (and the
	// moves of its cursor).
	Lock func(p peer.ID) *sync.Mutex
	// Cursor returns the cursor into p's log; SaveCursor stores it,
	// durably when asked.
	Cursor     func(p peer.ID) core.Cursor
	SaveCursor func(p peer.ID, c core.Cursor, durable bool) error
	// Head returns p's head from its hello; ok is false before hello.
	Head func(p peer.ID) (head core.Cursor, ok bool)
	// Pacer paces the requests to p (Options.Pacer); Share, if set,
	// returns the share of new authors' events a run from p is held to
	// (Options.Share), nil for none.
	Pacer func(p peer.ID) *limits.Pacer
	Share func(p peer.ID) Share
	// Room says whether the disk has room for a write of n bytes (ADR
	// 0044): a run asks none before it has.
	Room func(n int) error
	// Now is the clock of the events' 10-minute rule; nil means time.Now.
	Now func() time.Time
	// Stored is told, after each write, what came from p: the events it
	// added, the rejections (invalid events: Invalid counts those that are
	// abuse signals).
	Stored func(p peer.ID, added []*eventlog.Event, rejected []error, overQuota int)
	// Refused, if set, is told of each refusal a run waited out.
	Refused func()
	// Synced, if set, is told of each run that ended well and stored or
	// dropped anything.
	Synced func(p peer.ID, st Progress)
	// Spawn runs a function in a goroutine the node waits for at Close.
	Spawn func(func())
	// Serves, if set, reports whether p advertised feature in its hello:
	// a peer that serves sync by id range (proto.FeatureSyncIDs) takes
	// part in the catch-ups from several peers (ADR 0052), and is asked
	// for the lists of ids of the ranges that differ if it serves them
	// (proto.FeatureSyncIDLists, ADR 0057). nil: none does.
	Serves func(p peer.ID, feature string) bool
	// Context bounds the catch-ups from several peers, which outlive the
	// call that starts one (SyncAll); nil is context.Background().
	Context context.Context
	// Logger gets the debug lines of failed runs; nil means slog.Default().
	Logger *slog.Logger
}

// Client is the node's sync client: it runs Run from each peer's cursor
// (one run a peer at a time), stores what the runs verified, and moves
// and persists the cursor (docs/design.md §10). It is safe for concurrent
// use.
type Client struct {
	o ClientOptions
	// RunPages bounds the pages of a run that does not set its own, and
	// those of each peer in a catch-up from several; MaxPagesPerRun
	// unless a test shrinks it before the first run.
	RunPages int
	// SpreadLag is how far past its cursor a peer's head is when Trigger
	// has it join a catch-up from several peers: SpreadMinLag unless a
	// test shrinks it before the first sync.
	SpreadLag core.Cursor
	// StallTimeout bounds each request of a catch-up from several peers,
	// beyond the call's own bound (proto.ResponseTimeout): a peer that
	// does not answer within it is dropped from the catch-up and its
	// shard goes to the others. 0 (the default) leaves the call's alone;
	// a test shrinks it before the first sync.
	StallTimeout time.Duration
	// spread guards run, the catch-up from several peers running (nil
	// for none), and the workers and closed of every spreadRun.
	spread struct {
		sync.Mutex
		run *spreadRun
	}
}

// NewClient returns the Client of o.
func NewClient(o ClientOptions) *Client {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Context == nil {
		o.Context = context.Background()
	}
	return &Client{o: o, RunPages: MaxPagesPerRun, SpreadLag: SpreadMinLag}
}

// Progress is how far a sync from one peer has come, reported after every
// write and at its end.
type Progress struct {
	// Peer is the peer synced from.
	Peer peer.ID
	// Received counts the events received from the peer; Stored those of
	// them that were new and valid; Dropped those that were invalid;
	// OverQuota those valid and new that the log's quota refused.
	Received, Stored, Dropped, OverQuota uint64
	// Cursor is how far the peer's log has been synced: the next sync asks
	// for the events after it.
	Cursor core.Cursor
	// PeerHead is the peer's head as last known; Cursor reaches it when the
	// sync is done (the peer may have grown since).
	PeerHead core.Cursor
	// Done is set at the end of a sync that ended without an error.
	Done bool
}

// SyncRun shapes one run of Client.Sync.
type SyncRun struct {
	// SkipIfBusy: return ErrRunning at once if a sync from the peer is
	// running, rather than wait for it to end.
	SkipIfBusy bool
	// MaxPages bounds the pages of the run (0: Client.RunPages); past it
	// the run ends with ErrRunBound.
	MaxPages int
	// Progress, if not nil, is called after every write.
	Progress func(Progress)
}

// Sync pages through p's log from its cursor until the peer says there
// is no more (package Run), storing the valid events and dropping (and
// counting) the invalid ones, within the bounds of run. The cursor is saved
// after every write (a page, or the pages that waited for it) and synced
// to disk at the end, so a restarted node resumes where it stopped. On a
// full disk no page is asked for.
func (c *Client) Sync(ctx context.Context, p peer.ID, run SyncRun) (Progress, error) {
	mu := c.o.Lock(p)
	if run.SkipIfBusy {
		if !mu.TryLock() {
			return Progress{Peer: p}, ErrRunning
		}
	} else {
		mu.Lock()
	}
	defer mu.Unlock()
	maxPages := run.MaxPages
	if maxPages <= 0 {
		maxPages = c.RunPages
	}
	start := c.o.Cursor(p)
	st := Progress{Peer: p, Cursor: start}
	if err := c.o.Room(0); err != nil {
		return st, fmt.Errorf("catchup: sync from %s: %w", p, err)
	}
	st.PeerHead, _ = c.o.Head(p)
	opts := Options{
		Peer: p,
		Call: func(ctx context.Context, req *proto.SyncRequest) (*proto.Response, error) {
			return c.o.Call(ctx, p, req)
		},
		Pacer: c.o.Pacer(p), Now: c.o.Now, Known: c.has, MaxPages: maxPages,
		Store: func(group []Page) error {
			if err := c.store(p, group, &st); err != nil {
				return err
			}
			// A group that takes the run past its invalid events' bound
			// ends it (Run): no progress is told of it.
			if run.Progress != nil && st.Dropped <= MaxInvalidPerRun {
				run.Progress(st)
			}
			return nil
		},
		Refused: c.o.Refused,
	}
	if c.o.Share != nil {
		opts.Share = c.o.Share(p)
	}
	err := Run(ctx, start, opts)
	// Make the cursor durable (docs/design.md §10) whatever happened.
	if derr := c.o.SaveCursor(p, st.Cursor, true); derr != nil && err == nil {
		err = derr
	}
	if err != nil {
		return st, err
	}
	st.Done = true
	if st.Cursor > st.PeerHead {
		st.PeerHead = st.Cursor
	}
	if (st.Stored > 0 || st.Dropped > 0) && c.o.Synced != nil {
		c.o.Synced(p, st)
	}
	return st, nil
}

// serves reports whether p advertised feature (ClientOptions.Serves).
func (c *Client) serves(p peer.ID, feature string) bool {
	return c.o.Serves != nil && c.o.Serves(p, feature)
}

// spreads reports whether a sync from p joins a catch-up from several
// peers (Trigger).
func (c *Client) spreads(p peer.ID) bool {
	if !c.serves(p, proto.FeatureSyncIDs) {
		return false
	}
	head, ok := c.o.Head(p)
	return ok && head >= c.o.Cursor(p)+c.SpreadLag
}

// ErrNoPeers is SyncAll's error for no peers to sync from (none has
// completed hello): nothing was done.
var ErrNoPeers = errors.New("catchup: no peer to sync from: none is connected and greeted; " +
	"connect one first (wats peers connect ADDR)")

// SyncAll syncs from every peer of ps now, and reports each one's
// progress after every write: those that serve sync by id range in one
// catch-up spread across them (joining the one running; ADR 0052), the
// others by position, each as Sync does, all at once. It returns when
// every sync ended, or with ctx's error (the syncs go on, and progress is
// not called once SyncAll has returned: the caller's writer of progress
// may be gone, as an API request's is once its client hung up). With no
// peer in ps, ErrNoPeers at once.
func (c *Client) SyncAll(ctx context.Context, ps []peer.ID, progress func([]Progress)) ([]Progress, error) {
	if len(ps) == 0 {
		return nil, ErrNoPeers
	}
	var mu sync.Mutex
	all := make([]Progress, len(ps))
	errs := make([]error, len(ps))
	runs := make(map[*spreadRun][]int) // the run each peer is in, with the peers' indexes
	returned := false                  // under mu: progress is not called any more
	tell := func() {
		if progress != nil && !returned {
			progress(slices.Clone(all))
		}
	}
	// A catch-up started here is planned for the peer furthest ahead,
	// not the first to join it.
	var plan uint64
	for _, p := range ps {
		if c.serves(p, proto.FeatureSyncIDs) {
			plan = max(plan, c.lag(p))
		}
	}
	var wg sync.WaitGroup
	for i, p := range ps {
		all[i] = Progress{Peer: p, Cursor: c.o.Cursor(p)}
		all[i].PeerHead, _ = c.o.Head(p)
		if c.serves(p, proto.FeatureSyncIDs) {
			r := c.spreadRunning(p)
			if r == nil {
				r, _ = c.join(c.o.Context, p, plan)
			}
			if r != nil {
				runs[r] = append(runs[r], i)
				continue
			}
		}
		wg.Go(func() {
			st, err := c.Sync(ctx, p, SyncRun{Progress: func(st Progress) {
				mu.Lock()
				defer mu.Unlock()
				all[i] = st
				tell()
			}})
			mu.Lock()
			all[i], errs[i] = st, err
			mu.Unlock()
		})
	}
	for r, idx := range runs {
		show := func(sts []Progress) {
			mu.Lock()
			defer mu.Unlock()
			for _, i := range idx {
				for _, st := range sts {
					if st.Peer == ps[i] {
						all[i] = st
					}
				}
			}
			tell()
		}
		unwatch := r.watch(show)
		wg.Go(func() {
			defer unwatch()
			select {
			case <-r.done:
			case <-ctx.Done():
				return
			}
			show(r.final)
			mu.Lock()
			defer mu.Unlock()
			for _, i := range idx {
				if errs[i] = r.peerError(ps[i]); errs[i] == nil && !all[i].Done {
					errs[i] = cmp.Or(r.err, ErrSpreadIncomplete)
				}
			}
		})
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	returned = true
	if err := ctx.Err(); err != nil {
		return slices.Clone(all), err
	}
	return slices.Clone(all), errors.Join(errs...)
}

// has reports whether the log holds the event with this id.
func (c *Client) has(id string) bool {
	ok, err := c.o.Log.Has(id)
	return err == nil && ok
}

// Trigger starts a background sync from p unless one is running. Runs
// that end at the page bound with progress are continued at once. A peer
// that serves sync by id range and whose head is SpreadMinLag or more
// past its cursor joins the catch-up from several peers instead (ADR
// 0052), which starts with it if none runs.
func (c *Client) Trigger(ctx context.Context, p peer.ID) {
	if c.spreads(p) {
		c.join(ctx, p, 0)
		return
	}
	c.o.Spawn(func() {
		for {
			st, err := c.Sync(ctx, p, SyncRun{SkipIfBusy: true})
			if errors.Is(err, ErrRunBound) && st.Stored > 0 && st.Dropped <= MaxInvalidPerRun {
				continue
			}
			if err != nil && !errors.Is(err, ErrRunning) && ctx.Err() == nil {
				c.o.Logger.Debug("sync failed", "peer", p, "err", err)
			}
			return
		}
	})
}

// Again runs a sync from p now, or, when gap's runs are going on already,
// one more after them: the running one may have passed what the gap is
// about (an event gossip dropped, ADR 0031). Calls while a run goes on
// add one run between them, not one each; a call once the runs ended
// starts them again.
func (c *Client) Again(ctx context.Context, p peer.ID, gap *Gap) {
	if !gap.ask() {
		return // a run is coming that will see it
	}
	c.o.Spawn(func() {
		for {
			if _, err := c.Sync(ctx, p, SyncRun{}); err != nil && ctx.Err() == nil {
				c.o.Logger.Debug("gap sync failed", "peer", p, "err", err)
			}
			if !gap.again() {
				return
			}
		}
	})
}

// Gap is the state of a peer's gap syncs (Client.Again); its zero value
// is idle.
type Gap struct {
	state atomic.Int32
}

// The states of a Gap.
const (
	gapIdle    = iota // no run
	gapRunning        // a run goes on
	gapAsked          // a run goes on, and one more is due after it
)

// ask marks one more run due; it reports whether none was running, so
// that the caller starts them.
func (g *Gap) ask() (start bool) {
	for {
		switch s := g.state.Load(); s {
		case gapIdle:
			if g.state.CompareAndSwap(gapIdle, gapRunning) {
				return true
			}
		case gapRunning:
			if g.state.CompareAndSwap(gapRunning, gapAsked) {
				return false
			}
		default:
			return false
		}
	}
}

// again is called when a run ended: it reports whether another is due,
// and marks the runs ended when not.
func (g *Gap) again() bool {
	if g.state.CompareAndSwap(gapRunning, gapIdle) {
		return false
	}
	g.state.Store(gapRunning) // was gapAsked: one more, and calls from now on ask again
	return true
}

// Pull syncs one page of p's log after its cursor (heads.Options.Pull):
// busy when a run from p is going on already.
func (c *Client) Pull(ctx context.Context, p peer.ID) (busy bool, err error) {
	_, err = c.Sync(ctx, p, SyncRun{SkipIfBusy: true, MaxPages: 1})
	switch {
	case errors.Is(err, ErrRunning):
		return true, nil
	case errors.Is(err, ErrRunBound):
		return false, nil // one page, and the peer has more: the next check pulls it
	}
	return false, err
}

// Advance moves the cursor into p's log forward to to
// (heads.Options.Advance): every event up to it is held here. It does so
// under p's lock, so that it never races a run's own cursor; while a run
// holds it, the run moves the cursor and this does nothing.
func (c *Client) Advance(p peer.ID, to core.Cursor) {
	mu := c.o.Lock(p)
	if !mu.TryLock() {
		return
	}
	defer mu.Unlock()
	if to > c.o.Cursor(p) {
		if err := c.o.SaveCursor(p, to, false); err != nil {
			c.o.Logger.Debug("heads: cursor not saved", "peer", p, "err", err)
		}
	}
}

// store appends the valid events of group, verified pages in the order
// they came, in one durable batch, counts the rest as dropped, and
// advances the cursor to the last page's.
func (c *Client) store(p peer.ID, group []Page, st *Progress) error {
	ok, raws := group[0].OK, group[0].Raws
	if len(group) > 1 {
		ok, raws = nil, nil
		for _, vp := range group {
			ok = append(ok, vp.OK...)
			raws = append(raws, vp.Raws...)
		}
	}
	added, overQuota, err := c.o.Log.AppendEncoded(ok, raws)
	if err != nil {
		return fmt.Errorf("catchup: store synced events: %w", err)
	}
	var rejected []error
	for _, vp := range group {
		st.Received += uint64(len(vp.Events))
		rejected = append(rejected, vp.Rejected...)
	}
	next := group[len(group)-1].Next
	st.Stored += uint64(len(added))
	st.Dropped += uint64(len(rejected))
	st.OverQuota += uint64(overQuota)
	st.Cursor = next
	if next > st.PeerHead {
		st.PeerHead = next
	}
	if c.o.Stored != nil {
		c.o.Stored(p, added, rejected, overQuota)
	}
	for _, r := range rejected {
		c.o.Logger.Debug("dropped an invalid synced event", "peer", p, "err", r)
	}
	// Not synced on its own: the next durable Append or the final update
	// carries it to disk (pebble syncs its WAL in order).
	return c.o.SaveCursor(p, next, false)
}

// Invalid counts the rejections that are abuse signals: all but
// eventlog.ErrFuture (the peer's clock, or the author's, may be right).
func Invalid(rejected []error) uint64 {
	var k uint64
	for _, err := range rejected {
		if !errors.Is(err, eventlog.ErrFuture) {
			k++
		}
	}
	return k
}
