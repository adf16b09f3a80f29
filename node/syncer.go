package node

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/libp2p/go-libp2p/core/peer"
	"golang.org/x/sync/semaphore"

	"github.com/wats-network/wats/eventlog"
	"github.com/wats-network/wats/proto"

	"github.com/wats-network/wats/core"
)

// pipelineDepth is the number of fetched pages that may wait for
// verification while the next one is being fetched: the network round trip
// of page k+1 overlaps the signature checks and the write of page k.
const pipelineDepth = 4

// Bounds of one sync run, so that a peer that lies (a head far ahead, pages
// that always say "more", events that never verify) cannot keep the node
// fetching and checking signatures: the run ends and the next one starts
// from the persisted cursor at the next sync.interval.
const (
	// maxInvalidPerRun is the most invalid events one run accepts before it
	// ends: one page's worth. An honest peer serves only events it verified,
	// so invalid ones come from clock skew (events from the future) or a
	// peer that lies.
	maxInvalidPerRun = core.MaxPageEvents
)

// maxPagesPerRun is the most pages one run fetches: 4,096 pages of 256
// events, a million events. A run that ends there having stored new events
// is followed at once by the next; one that stored nothing (a peer replaying
// what the node has) waits for the next sync.interval. Node.runPages holds
// it, so that tests can make it small.
const maxPagesPerRun = 4096

// errSyncRunning is syncFrom's answer, with skipIfBusy, when a sync from
// the peer is running already.
var errSyncRunning = errors.New("node: a sync from the peer is running")

// maxRefusalsInARow is how many refusals in a row the sync client waits
// out before it ends the run.
const maxRefusalsInARow = 8

// errBadPage is wrapped by the sync client's errors for a page that breaks
// the protocol (a cursor that goes backwards, too many events).
var errBadPage = errors.New("node: peer sent a bad sync page")

// errRunBound is wrapped when a sync run ends at one of its bounds.
var errRunBound = errors.New("node: sync run stopped at its bound")

// page is one fetched sync response.
type page struct {
	events []jsontext.Value
	next   core.Cursor
	more   bool
}

// triggerSync starts a background sync from p unless one is running. Runs
// that end at the page bound with progress are continued at once.
func (n *Node) triggerSync(p peer.ID) {
	n.go_(func() {
		for {
			st, err := n.syncFrom(n.ctx, p, syncRun{skipIfBusy: true})
			if errors.Is(err, errRunBound) && st.Stored > 0 && st.Dropped <= maxInvalidPerRun {
				continue
			}
			if err != nil && !errors.Is(err, errSyncRunning) && n.ctx.Err() == nil {
				n.log.Debug("sync failed", "peer", p, "err", err)
			}
			return
		}
	})
}

// syncLoop syncs from every peer that completed hello, every sync.interval.
func (n *Node) syncLoop() {
	n.every(n.cfg.Sync.Interval.Duration, func() {
		for p := range n.helloPeers() {
			n.triggerSync(p)
		}
	})
}

// syncRun shapes one run of syncFrom.
type syncRun struct {
	// skipIfBusy: return errSyncRunning at once if a sync from the peer
	// is running, rather than wait for it to end.
	skipIfBusy bool
	// maxPages bounds the pages of the run (0: Node.runPages); past it
	// the run ends with errRunBound.
	maxPages int
	// progress, if not nil, is called after every write.
	progress func(SyncProgress)
}

// syncFrom pages through p's log from the persisted cursor until the peer
// says there is no more, storing the valid events and dropping (and
// counting) the invalid ones, within the bounds of run. The cursor is
// saved after every write (a page, or the pages that waited for it,
// storePages) and synced to disk at the end, so a restarted node resumes
// where it stopped.
func (n *Node) syncFrom(ctx context.Context, p peer.ID, run syncRun) (SyncProgress, error) {
	mu := n.syncLock(p)
	if run.skipIfBusy {
		if !mu.TryLock() {
			return SyncProgress{Peer: p}, errSyncRunning
		}
	} else {
		mu.Lock()
	}
	defer mu.Unlock()
	maxPages := run.maxPages
	if maxPages <= 0 {
		maxPages = n.runPages
	}
	progress := run.progress
	// A peer without standing brings the events of new authors within the
	// share they all have (ADR 0041): its pages wait for the share, and
	// each one is charged what it brought as it comes.
	var share *newAuthorShare
	if ps := n.run.get(p); ps != nil && !n.standing(ps) {
		share = &newAuthorShare{n: n, p: p}
	}

	start := n.cursorOf(p)
	st := SyncProgress{Peer: p, Cursor: start}
	// On a full disk no page could be stored: none is asked for, and the
	// cursor stays where it is until the disk has room (ADR 0044).
	if err := n.room(0); err != nil {
		return st, fmt.Errorf("node: sync from %s: %w", p, err)
	}
	if h, ok := n.helloPeers()[p]; ok {
		st.PeerHead = h.Head
	}
	// Three stages, so that the network, the signature checks (on all
	// cores) and the durable writes of consecutive pages overlap: fetch ->
	// verify -> store.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stage := newVerifyStage(n.now, n.has, cancel)
	fetched := make(chan error, 1) // fetchPages' outcome, once it returned
	go func() {
		defer close(stage.pages)
		fetched <- n.fetchPages(ctx, p, start, maxPages, share, func(pg page) error { return stage.deliver(ctx, pg) })
	}()
	verified := stage.verify(ctx, stage.pages)

	var err error
	group := make([]verifiedPage, 0, storeGroupPages)
	for vp := range verified {
		// Write the page with the pages verified behind it and those on
		// their way: one fsync for up to storeGroupPages pages.
		group = stage.gather(append(group[:0], vp), verified)
		err = n.storePages(p, group, &st)
		stage.ahead.Release(groupBytes(group))
		if err == nil && st.Dropped > maxInvalidPerRun {
			err = fmt.Errorf("%w: %d invalid events from %s", errRunBound, st.Dropped, p)
		}
		if err != nil {
			cancel()
			break
		}
		if progress != nil {
			progress(st)
		}
	}
	for range verified { // drain, so every stage has ended when syncFrom returns
	}
	// Received, not read from a variable: the verify stage may end on the
	// cancel before the fetch does.
	if ferr := <-fetched; err == nil {
		err = ferr
	}
	// Make the cursor durable (docs/design.md §10) whatever happened.
	if derr := n.saveCursor(p, st.Cursor, true); derr != nil && err == nil {
		err = derr
	}
	if err != nil {
		return st, err
	}
	st.Done = true
	if st.Cursor > st.PeerHead {
		st.PeerHead = st.Cursor
	}
	if st.Stored > 0 || st.Dropped > 0 {
		n.plog.Info(p, "synced", "synced", "peer", p, "stored", st.Stored, "dropped", st.Dropped, "cursor", st.Cursor)
	}
	return st, nil
}

// syncLock returns the mutex that serializes syncs from p: the one of its
// run state while it is connected (forgotten with it at disconnect, so a
// flood of identities leaves nothing behind), else a fresh one.
func (n *Node) syncLock(p peer.ID) *sync.Mutex {
	if st := n.run.get(p); st != nil {
		return &st.syncMu
	}
	return new(sync.Mutex)
}

// fetchPages requests pages of p's log after cursor and sends them to out,
// until the peer has no more or ctx ends. It checks what the protocol
// promises: at most core.MaxPageEvents events, and a next cursor that moves
// forward exactly when events came.
//
// Requests are paced to the peer's advertised sync rate (limits.Pacer), so
// that a catch-up at the peer's limit wastes no round trip on refusals; a
// refusal that comes anyway (a peer that did not advertise, or clocks that
// disagree) is waited out and the page asked again, at most
// maxRefusalsInARow times in a row.
//
// Two requests are in flight while the peer's pages are dense (ADR 0038):
// when a full page says more and its next cursor is its after plus its
// events, as a wats log's positions are, the page after the next one is
// asked for at once with the cursor it will start at if the next page is
// dense too. When the next page ends elsewhere the guess is dropped
// unread, asked again with the right cursor, and no more guesses are made
// in this run: a peer whose positions are not dense pays at most one
// request for them.
func (n *Node) fetchPages(ctx context.Context, p peer.ID, cursor core.Cursor, maxPages int, share *newAuthorShare, deliver func(page) error) error {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait() // after cancel: no request outlives the run
	defer cancel()
	pacer := n.pacerFor(p)
	ask := func(after core.Cursor) (*syncCall, error) {
		if share != nil {
			if err := share.wait(ctx); err != nil {
				return nil, err
			}
		}
		if err := pacer.Wait(ctx); err != nil {
			return nil, err
		}
		c := &syncCall{after: after, done: make(chan struct{})}
		wg.Go(func() {
			defer close(c.done)
			c.resp, c.err = n.call(ctx, p, &proto.SyncRequest{After: after, Limit: core.MaxPageEvents})
		})
		return c, nil
	}
	next, err := ask(cursor)
	if err != nil {
		return err
	}
	var ahead *syncCall // the guessed request after next, or nil
	// The peer's pages have been dense so far; a peer held to the new
	// authors' share gets one request at a time, each after the share
	// was charged for the page before.
	guess := fetchAhead && share == nil
	refusals := 0
	for pages := 0; ; pages++ {
		select {
		case <-next.done:
		case <-ctx.Done():
			return ctx.Err()
		}
		resp, err := next.resp, next.err
		var refused *proto.RefusedError
		if errors.As(err, &refused) && refusals < maxRefusalsInARow {
			refusals++
			n.m.syncRefused()
			pacer.Refused(time.Duration(refused.RetryAfterMs) * time.Millisecond)
			ahead = nil // refused too, most likely: asked again when it is its turn
			if next, err = ask(cursor); err != nil {
				return err
			}
			pages--
			continue
		}
		refusals = 0
		if err != nil {
			return fmt.Errorf("node: sync from %s after %d: %w", p, cursor, err)
		}
		r := resp.Sync
		if r == nil {
			return fmt.Errorf("%w: answered %q to sync", errBadPage, resp.Type)
		}
		switch {
		case len(r.Events) > core.MaxPageEvents:
			return fmt.Errorf("%w: %d events", errBadPage, len(r.Events))
		case len(r.Events) > 0 && r.Next <= cursor:
			return fmt.Errorf("%w: next cursor %d not after %d", errBadPage, r.Next, cursor)
		case len(r.Events) == 0 && r.More:
			return fmt.Errorf("%w: empty page with more", errBadPage)
		}
		dense := len(r.Events) == core.MaxPageEvents && r.More && r.Next-cursor == core.Cursor(len(r.Events))
		if share != nil {
			share.charge(r.Events)
		}
		if len(r.Events) > 0 {
			if err := deliver(page{events: r.Events, next: r.Next, more: r.More}); err != nil {
				return err
			}
			cursor = r.Next
		}
		if !r.More {
			return nil
		}
		if pages+1 == maxPages {
			return fmt.Errorf("%w: %d pages from %s", errRunBound, pages+1, p)
		}
		switch {
		case ahead != nil && ahead.after == cursor:
			next, ahead = ahead, nil
		default:
			if ahead != nil {
				guess, ahead = false, nil // the guess was wrong: its answer is never read
			}
			if next, err = ask(cursor); err != nil {
				return err
			}
		}
		if guess && dense && pages+2 < maxPages {
			if ahead, err = ask(cursor + core.MaxPageEvents); err != nil {
				return err
			}
		}
	}
}

// fetchAhead turns fetchPages' guessed requests on; a variable so that
// BenchmarkFetchPagesRoundTrip can compare with one request at a time.
var fetchAhead = true

// syncCall is one sync request of fetchPages in flight: resp and err are
// set once done is closed.
type syncCall struct {
	after core.Cursor
	done  chan struct{}
	resp  *proto.Response
	err   error
}

// verifyStage is the sync client's verify stage (verify): it verifies the
// pages of a run, GOMAXPROCS at once, each on a goroutine of its own as one
// batch (eventlog.VerifyPage), and hands them on to the store stage in the
// order they came. Whole pages on separate goroutines keep every core busy
// where a page split across the cores made each wait, at the end of every
// page, for the slower share (ADR 0038).
type verifyStage struct {
	now   func() time.Time  // the clock of the 10-minute rule
	known func(string) bool // ids the node holds, skipped (ADR 0031)
	// ahead bounds the pages verified and not yet stored: a page waits
	// for its bytes (pageBytes) before it is handed on, and the store
	// stage gives them back once it wrote the page.
	ahead *semaphore.Weighted
	// stop ends the run (the cancel of verify's ctx): called once the
	// pages handed on hold more than maxInvalidPerRun rejected events,
	// after which no more are handed on and the store stage ends the run
	// at that page.
	stop context.CancelFunc

	// pages takes the fetched pages (deliver), up to pipelineDepth
	// waiting for a verifier; the fetch closes it.
	pages chan page
	// onTheWay counts the pages delivered and not yet handed on to the
	// store stage: counted before they enter pages, and until they are in
	// verify's output.
	onTheWay atomic.Int64
	// moved holds a value once onTheWay went down; full once a verified
	// page found ahead full, gather then writing what it holds rather
	// than wait for that page.
	moved, full chan struct{}
}

// newVerifyStage returns a verify stage with the ahead budget
// verifiedAheadBytes.
func newVerifyStage(now func() time.Time, known func(string) bool, stop context.CancelFunc) *verifyStage {
	return &verifyStage{now: now, known: known, ahead: semaphore.NewWeighted(verifiedAheadBytes), stop: stop,
		pages: make(chan page, pipelineDepth), moved: make(chan struct{}, 1), full: make(chan struct{}, 1)}
}

// deliver queues a fetched page for verification (on pages), counted on
// its way; ctx.Err() if the run ends first.
func (v *verifyStage) deliver(ctx context.Context, pg page) error {
	v.onTheWay.Add(1)
	select {
	case v.pages <- pg:
		return nil
	case <-ctx.Done():
		v.onTheWay.Add(-1)
		return ctx.Err()
	}
}

// verify runs the stage on the pages of in (pages, for those that come
// through deliver). The returned channel is closed once in is closed, ctx
// ends or stop was called, and every verifier has returned.
func (v *verifyStage) verify(ctx context.Context, in <-chan page) <-chan verifiedPage {
	workers := runtime.GOMAXPROCS(0)
	results := make(chan chan verifiedPage, workers)
	busy := make(chan struct{}, workers)
	go func() {
		defer close(results)
		for pg := range in {
			res := make(chan verifiedPage, 1)
			select {
			case results <- res:
			case <-ctx.Done():
				return
			}
			busy <- struct{}{}
			go func() {
				defer func() { <-busy }()
				// A new goroutine takes its parent's runnext slot, which
				// pushes whatever the network made ready just before it
				// (the yamux send loop of the next sync request, most
				// often) behind the verifier on the same core's run
				// queue: one page's verification, milliseconds, for
				// each request. Yielding first lets it go ahead, so
				// the next page is in flight while this one verifies.
				runtime.Gosched()
				ok, raws, _, rejected := eventlog.VerifyPage(pg.events, v.now(), v.known)
				res <- verifiedPage{page: pg, ok: ok, raws: raws, rejected: rejected}
			}()
		}
	}()
	out := make(chan verifiedPage, storeGroupPages)
	go func() {
		defer close(out)
		dropped := 0
		for res := range results {
			vp := <-res
			vp.weight = pageBytes(vp.page)
			if !v.ahead.TryAcquire(vp.weight) {
				select { // the store stage is not to wait for this page
				case v.full <- struct{}{}:
				default:
				}
				if v.ahead.Acquire(ctx, vp.weight) != nil {
					break
				}
			}
			select {
			case out <- vp:
				// In out, where gather finds it: no longer on its way.
				v.onTheWay.Add(-1)
				select {
				case v.moved <- struct{}{}:
				default:
				}
			case <-ctx.Done():
			}
			// The store stage ends the run at this page (maxInvalidPerRun);
			// verify no more of the peer's pages meanwhile.
			if dropped += len(vp.rejected); dropped > maxInvalidPerRun {
				v.stop()
				break
			}
		}
		for res := range results { // ctx ended: wait for the verifiers
			<-res
		}
	}()
	return out
}

// gather returns group, which holds the first page of the store stage's
// next write, with the verified pages that follow it on verified, up to
// storeGroupPages pages (ADR 0039). It takes the pages already verified,
// and waits for the next one while a page is on its way (delivered and
// not yet handed on), the verifiers being faster than the disk; it stops
// once none is (a peer's next page is a round trip away, or the run is
// over) and when a verified page found the ahead budget full (the group
// holds the bytes it waits for), so that it never waits on a page that
// cannot come. Every fsync then writes up to 16 pages, where one a page
// or two held a core in the syscall (docs/performance.md).
func (v *verifyStage) gather(group []verifiedPage, verified <-chan verifiedPage) []verifiedPage {
	for len(group) < storeGroupPages {
		// Read before the pages are taken: a page no longer on its way is
		// already in verified.
		none := v.onTheWay.Load() <= 0
		var closed bool
		group, closed = takeVerified(group, verified)
		if closed || none || len(group) == storeGroupPages {
			return group
		}
		select {
		case vp, ok := <-verified:
			if !ok {
				return group
			}
			group = append(group, vp)
		case <-v.moved: // look again
		case <-v.full:
			group, _ = takeVerified(group, verified) // those handed on before the full one
			return group
		}
	}
	return group
}

// takeVerified appends to group the pages waiting in verified, up to
// storeGroupPages; closed reports that verified is closed.
func takeVerified(group []verifiedPage, verified <-chan verifiedPage) (_ []verifiedPage, closed bool) {
	for len(group) < storeGroupPages {
		select {
		case vp, ok := <-verified:
			if !ok {
				return group, true
			}
			group = append(group, vp)
		default:
			return group, false
		}
	}
	return group, false
}

// verifiedAheadBytes bounds the pages verified and not yet stored, in bytes
// of their events as they came: 8 MiB, about a hundred pages of honest
// events (~300 bytes each), a third of a second of verification on two
// cores. A slow fsync (tens of milliseconds at p99 on this project's disk,
// docs/performance.md) then stops the store stage alone: verification runs
// on, and the store stage writes what waits in one batch after it (ADR
// 0038). A page is at most proto.MaxPageBytes (4 MiB), so it always fits.
const verifiedAheadBytes = 8 << 20

// storeGroupPages caps the verified pages written in one batch: 16 pages,
// 4,096 events.
const storeGroupPages = 16

// pageBytes is a page's weight against verifiedAheadBytes: the sum of its
// events' lengths as they came, at most verifiedAheadBytes.
func pageBytes(pg page) int64 {
	var size int64
	for _, e := range pg.events {
		size += int64(len(e))
	}
	return min(size, verifiedAheadBytes)
}

// groupBytes is the weight the pages of group hold against
// verifiedAheadBytes.
func groupBytes(group []verifiedPage) int64 {
	var size int64
	for _, vp := range group {
		size += vp.weight
	}
	return size
}

// verifiedPage is a page whose events were checked: ok are the valid ones,
// in order; rejected says why each other one was dropped.
type verifiedPage struct {
	page
	ok       []*eventlog.Event
	raws     [][]byte // ok's stored forms (Event.Marshal)
	rejected []error
	weight   int64 // pageBytes, held from the verify stage's ahead until stored
}

// storePages appends the valid events of group, verified pages in the
// order they came, in one durable batch, counts the rest as dropped, and
// advances the cursor to the last page's.
func (n *Node) storePages(p peer.ID, group []verifiedPage, st *SyncProgress) error {
	ok, raws := group[0].ok, group[0].raws
	if len(group) > 1 {
		ok, raws = nil, nil
		for _, vp := range group {
			ok = append(ok, vp.ok...)
			raws = append(raws, vp.raws...)
		}
	}
	added, err := n.events.AppendEncoded(ok, raws)
	if err != nil {
		return fmt.Errorf("node: store synced events: %w", err)
	}
	var rejected []error
	for _, vp := range group {
		st.Received += uint64(len(vp.events))
		rejected = append(rejected, vp.rejected...)
	}
	next := group[len(group)-1].next
	st.Stored += uint64(len(added))
	st.Dropped += uint64(len(rejected))
	st.Cursor = next
	if next > st.PeerHead {
		st.PeerHead = next
	}
	n.m.eventsStored("sync", len(added))
	n.m.eventsDropped("sync", len(rejected))
	// What the peer gave (ADR 0030): events this node lacked are value,
	// events that do not verify are invalid messages; events from the
	// future are not (the peer's clock, or the author's, may be right).
	n.gave(p, uint64(len(added)), 0)
	if bad := invalidEvents(rejected); bad > 0 {
		if ps := n.run.get(p); ps != nil {
			n.count(ps, &ps.hist.invalid, bad)
		}
	}
	n.autoFetch(added, p, "sync")
	for _, r := range rejected {
		n.log.Debug("dropped an invalid synced event", "peer", p, "err", r)
	}
	// Not synced on its own: the next durable Append or the final update
	// carries it to disk (pebble syncs its WAL in order).
	return n.saveCursor(p, next, false)
}

// invalidEvents counts the rejections that are abuse signals: all but
// eventlog.ErrFuture.
func invalidEvents(rejected []error) uint64 {
	var k uint64
	for _, err := range rejected {
		if !errors.Is(err, eventlog.ErrFuture) {
			k++
		}
	}
	return k
}

// SyncProgress is how far a sync from one peer has come, reported after
// every page and at its end (SyncPeer).
type SyncProgress struct {
	// Peer is the peer synced from.
	Peer peer.ID
	// Received counts the events received from the peer; Stored those of
	// them that were new and valid; Dropped those that were invalid.
	Received, Stored, Dropped uint64
	// Cursor is how far the peer's log has been synced: the next sync asks
	// for the events after it.
	Cursor core.Cursor
	// PeerHead is the peer's head as last known; Cursor reaches it when the
	// sync is done (the peer may have grown since).
	PeerHead core.Cursor
	// Done is set at the end of a sync that ended without an error.
	Done bool
}

// SyncPeer syncs from p now (waiting for a running sync from p to end
// first) and reports progress after every write of pages.
func (n *Node) SyncPeer(ctx context.Context, p peer.ID, progress func(SyncProgress)) (SyncProgress, error) {
	if !n.linked(p) {
		return SyncProgress{Peer: p}, fmt.Errorf("node: not connected to %s; connect first (wats peers connect ADDR)", p)
	}
	if _, ok := n.helloPeers()[p]; !ok {
		if err := n.greet(ctx, p); err != nil {
			return SyncProgress{Peer: p}, err
		}
	}
	return n.syncFrom(ctx, p, syncRun{progress: progress})
}
