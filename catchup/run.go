package catchup

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

	"github.com/wats-network/wats/core"
	"github.com/wats-network/wats/eventlog"
	"github.com/wats-network/wats/limits"
	"github.com/wats-network/wats/proto"
)

// PipelineDepth is the number of fetched pages that may wait for
// verification while the next one is being fetched: the network round trip
// of page k+1 overlaps the signature checks and the write of page k.
const PipelineDepth = 4

// Bounds of one sync run, so that a peer that lies (a head far ahead, pages
// that always say "more", events that never verify) cannot keep the node
// fetching and checking signatures: the run ends and the next one starts
// from the persisted cursor at the next sync.interval.
const (
	// MaxInvalidPerRun is the most invalid events one run accepts before it
	// ends: one page's worth. An honest peer serves only events it verified,
	// so invalid ones come from clock skew (events from the future) or a
	// peer that lies.
	MaxInvalidPerRun = core.MaxPageEvents
)

// MaxPagesPerRun is the most pages one run fetches by default: 4,096 pages
// of 256 events, a million events. A run that ends there having stored new
// events is followed at once by the next; one that stored nothing (a peer
// replaying what the node has) waits for the next sync.interval.
const MaxPagesPerRun = 4096

// maxRefusalsInARow is how many refusals in a row the sync client waits
// out before it ends the run.
const maxRefusalsInARow = 8

// ErrBadPage is wrapped by a run's error for a page that breaks the
// protocol (a cursor that goes backwards, too many events).
var ErrBadPage = errors.New("catchup: peer sent a bad sync page")

// ErrRunBound is wrapped by a run's error when it ends at one of its
// bounds: Options.MaxPages, or more than MaxInvalidPerRun invalid events.
var ErrRunBound = errors.New("catchup: sync run stopped at its bound")

// page is one fetched sync response.
type page struct {
	events []jsontext.Value
	next   core.Cursor
	more   bool
	// src is the index of the peer the page came from in a catch-up from
	// several peers (spreadRun.peers); 0 in a run from one.
	src int
}

// Options shape a run (Run).
type Options struct {
	// Peer is the peer synced from, as errors name it.
	Peer peer.ID
	// Call sends a sync request to the peer and returns its response: the
	// node's request, which solves the challenges the peer answers with.
	Call func(ctx context.Context, req *proto.SyncRequest) (*proto.Response, error)
	// Pacer paces the requests to the peer's advertised sync rate
	// (limits.Pacer, ADR 0024); nil does not pace.
	Pacer *limits.Pacer
	// Share, if set, holds the run to a share of the events of new
	// authors (ADR 0041): each page waits for it before it is asked for,
	// and is charged what it brought as it comes; one request is then in
	// flight at a time.
	Share Share
	// Now is the clock of the events' 10-minute rule; Known reports the
	// event ids the node holds, which are not verified again (ADR 0031).
	Now   func() time.Time
	Known func(id string) bool
	// Store writes a group of verified pages, in the order they came, in
	// one durable batch (ADR 0039), and moves the cursor to the last
	// page's. An error ends the run with it.
	Store func(group []Page) error
	// MaxPages bounds the pages of the run; past it the run ends with
	// ErrRunBound. 0 means MaxPagesPerRun.
	MaxPages int
	// Refused, if set, is told of each refusal of the peer's that the run
	// waited out.
	Refused func()
}

// Share is a budget a run's pages wait for and are charged (Options.Share).
type Share interface {
	// Wait returns once a page may be asked for, or with ctx's error or
	// a reason to end the run.
	Wait(ctx context.Context) error
	// Charge charges the events of a page that came.
	Charge(events []jsontext.Value)
}

// Run pages through the peer's log from the cursor from until the peer
// says it has no more, storing the valid events and dropping the invalid
// ones, within the bounds of o. Three stages overlap, so that the
// network, the signature checks (on all cores) and the durable writes of
// consecutive pages run at once: fetch (two requests in flight while the
// pages are dense, paced to the peer's rate), verify (each page on a
// goroutine of its own, handed on in order) and store (up to
// storeGroupPages pages a write). Every stage has ended when Run returns:
// nil when the peer had no more; an error wrapping ErrRunBound at
// MaxPages or past MaxInvalidPerRun invalid events, ErrBadPage for a page
// that breaks the protocol; else the first error of a stage (ctx's, the
// peer's, Store's). Call and Store are required; a nil Pacer does not
// pace, a nil Now is time.Now, a nil Known holds nothing.
func Run(ctx context.Context, from core.Cursor, o Options) error {
	if o.Call == nil || o.Store == nil {
		return errors.New("catchup: Options need Call and Store")
	}
	if o.MaxPages <= 0 {
		o.MaxPages = MaxPagesPerRun
	}
	if o.Pacer == nil {
		o.Pacer = limits.NewPacer(0)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Known == nil {
		o.Known = func(string) bool { return false }
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stage := newVerifyStage(o.Now, o.Known, cancel)
	fetched := make(chan error, 1) // fetchPages' outcome, once it returned
	go func() {
		defer close(stage.pages)
		fetched <- fetchPages(ctx, &o, from, func(pg page) error { return stage.deliver(ctx, pg) })
	}()
	verified := stage.verify(ctx, stage.pages)

	var err error
	dropped := 0
	group := make([]Page, 0, storeGroupPages)
	for vp := range verified {
		// Write the page with the pages verified behind it and those on
		// their way: one fsync for up to storeGroupPages pages.
		group = stage.gather(append(group[:0], vp), verified)
		err = o.Store(group)
		stage.ahead.Release(groupBytes(group))
		for _, p := range group {
			dropped += len(p.Rejected)
		}
		if err == nil && dropped > MaxInvalidPerRun {
			err = fmt.Errorf("%w: %d invalid events from %s", ErrRunBound, dropped, o.Peer)
		}
		if err != nil {
			cancel()
			break
		}
	}
	for range verified { // drain, so every stage has ended when Run returns
	}
	// Received, not read from a variable: the verify stage may end on the
	// cancel before the fetch does.
	if ferr := <-fetched; err == nil {
		err = ferr
	}
	return err
}

// fetchPages requests pages of the peer's log after cursor and gives them to deliver,
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
func fetchPages(ctx context.Context, o *Options, cursor core.Cursor, deliver func(page) error) error {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait() // after cancel: no request outlives the run
	defer cancel()
	pacer, share, maxPages := o.Pacer, o.Share, o.MaxPages
	ask := func(after core.Cursor) (*syncCall, error) {
		if share != nil {
			if err := share.Wait(ctx); err != nil {
				return nil, err
			}
		}
		if err := pacer.Wait(ctx); err != nil {
			return nil, err
		}
		c := &syncCall{after: after, done: make(chan struct{})}
		wg.Go(func() {
			defer close(c.done)
			c.resp, c.err = o.Call(ctx, &proto.SyncRequest{After: after, Limit: core.MaxPageEvents})
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
			if o.Refused != nil {
				o.Refused()
			}
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
			return fmt.Errorf("catchup: sync from %s after %d: %w", o.Peer, cursor, err)
		}
		r := resp.Sync
		if r == nil {
			return fmt.Errorf("%w: answered %q to sync", ErrBadPage, resp.Type)
		}
		switch {
		case len(r.Events) > core.MaxPageEvents:
			return fmt.Errorf("%w: %d events", ErrBadPage, len(r.Events))
		case len(r.Events) > 0 && r.Next <= cursor:
			return fmt.Errorf("%w: next cursor %d not after %d", ErrBadPage, r.Next, cursor)
		case len(r.Events) == 0 && r.More:
			return fmt.Errorf("%w: empty page with more", ErrBadPage)
		}
		dense := len(r.Events) == core.MaxPageEvents && r.More && r.Next-cursor == core.Cursor(len(r.Events))
		if share != nil {
			share.Charge(r.Events)
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
			return fmt.Errorf("%w: %d pages from %s", ErrRunBound, pages+1, o.Peer)
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
	// pages handed on hold more than MaxInvalidPerRun rejected events,
	// after which no more are handed on and the store stage ends the run
	// at that page.
	stop context.CancelFunc
	// over, if set, is called in stop's place, once for each source
	// (page.src) whose pages handed on hold more than MaxInvalidPerRun
	// rejected events: a catch-up from several peers drops that peer and
	// goes on with the others (ADR 0052).
	over func(src int)

	// pages takes the fetched pages (deliver), up to PipelineDepth
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
		pages: make(chan page, PipelineDepth), moved: make(chan struct{}, 1), full: make(chan struct{}, 1)}
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
func (v *verifyStage) verify(ctx context.Context, in <-chan page) <-chan Page {
	workers := runtime.GOMAXPROCS(0)
	results := make(chan chan Page, workers)
	busy := make(chan struct{}, workers)
	go func() {
		defer close(results)
		for pg := range in {
			res := make(chan Page, 1)
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
				res <- Page{Events: pg.events, Next: pg.next, More: pg.more, OK: ok, Raws: raws, Rejected: rejected, src: pg.src}
			}()
		}
	}()
	out := make(chan Page, storeGroupPages)
	go func() {
		defer close(out)
		dropped := make(map[int]int) // rejected events by source
		for res := range results {
			vp := <-res
			vp.weight = pageBytes(vp.Events)
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
			// The store stage ends the run at this page (MaxInvalidPerRun);
			// verify no more of the peer's pages meanwhile. In a catch-up
			// from several peers, the peer alone is dropped.
			before := dropped[vp.src]
			if dropped[vp.src] += len(vp.Rejected); dropped[vp.src] > MaxInvalidPerRun {
				if v.over == nil {
					v.stop()
					break
				}
				if before <= MaxInvalidPerRun {
					v.over(vp.src)
				}
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
func (v *verifyStage) gather(group []Page, verified <-chan Page) []Page {
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
func takeVerified(group []Page, verified <-chan Page) (_ []Page, closed bool) {
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
func pageBytes(events []jsontext.Value) int64 {
	var size int64
	for _, e := range events {
		size += int64(len(e))
	}
	return min(size, verifiedAheadBytes)
}

// groupBytes is the weight the pages of group hold against
// verifiedAheadBytes.
func groupBytes(group []Page) int64 {
	var size int64
	for _, vp := range group {
		size += vp.weight
	}
	return size
}

// A Page is a fetched sync page whose events were verified, as a run
// hands it to Options.Store.
type Page struct {
	// Events are the page's events as they came, Next its next cursor and
	// More whether the peer said it has more.
	Events []jsontext.Value
	Next   core.Cursor
	More   bool
	// OK are the valid events, in order, and Raws their stored forms
	// (Event.Marshal); Rejected says why each other event was dropped.
	OK       []*eventlog.Event
	Raws     [][]byte
	Rejected []error
	// weight is pageBytes, held from the verify stage's ahead budget
	// until the page is stored.
	weight int64
	// src is page.src: the peer the page came from.
	src int
}
