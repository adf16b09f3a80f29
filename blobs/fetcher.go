package blobs

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"
)

// ProviderAddrTTL is how long the addresses of a provider hint stay in
// the peerstore for the fetcher's dials.
const ProviderAddrTTL = 10 * time.Minute

// Fetcher fetches blobs into the Store over the Exchange, by the rules of
// ADR 0014: the declared size and the quota checked (and the room
// reserved) before any request, then a Plan over the providers with the
// node's shared Backoff, each attempt a FetchFrom held to one provider,
// and the blob pinned only when complete and exactly of the declared size.
// Two fetches of one CID and declared size at once share one run, and
// the second starts its own if the first ends without a provider that
// served it. Safe for concurrent use.
type Fetcher struct {
	x       *Exchange
	st      *Store
	backoff *Backoff
	now     func() time.Time
	// find is FetcherOptions.FindProviders; nil for none.
	find func(ctx context.Context, c cid.Cid) []peer.AddrInfo
	// connected is FetcherOptions.Connected; nil for none.
	connected func() []peer.ID

	mu struct {
		sync.Mutex
		// calls are the fetches in progress, by CID and declared size.
		calls map[callKey]*call
	}
}

// callKey names a fetch that later ones of the same blob share: the CID
// and the declared size, so that a fetch declaring another size is never
// answered by this one's outcome.
type callKey struct {
	c    cid.Cid
	size uint64
}

// call is a fetch in progress, which later fetches of the CID wait for.
type call struct {
	done chan struct{}
	err  error

	// What InFlight shows of it: when it started, the bytes held so far,
	// and what it waits for (guarded by mu).
	started time.Time
	held    atomic.Uint64
	mu      sync.Mutex
	waiting Waiting
}

// InFlight is a fetch running now (Fetcher.InFlight).
type InFlight struct {
	// CID is the blob's root and Size its declared size, in bytes.
	CID  cid.Cid
	Size uint64
	// Held is the blob's bytes held so far (verified and stored).
	Held uint64
	// Started is when the fetch began, by the Fetcher's clock.
	Started time.Time
	// Waiting is what it waits for: providers being found, or a
	// provider's attempt.
	Waiting
}

// InFlight returns the fetches running now (a fetch that callers share
// is one), oldest first.
func (f *Fetcher) InFlight() []InFlight {
	f.mu.Lock()
	out := make([]InFlight, 0, len(f.mu.calls))
	for k, c := range f.mu.calls {
		c.mu.Lock()
		w := c.waiting
		c.mu.Unlock()
		out = append(out, InFlight{CID: k.c, Size: k.size, Held: c.held.Load(), Started: c.started, Waiting: w})
	}
	f.mu.Unlock()
	slices.SortFunc(out, func(a, b InFlight) int { return a.Started.Compare(b.Started) })
	return out
}

// track makes r tell c what it holds and waits for, as well as r's own
// Progress and Wait.
func (c *call) track(r Request) Request {
	progress, wait := r.Progress, r.Wait
	r.Progress = func(done, total uint64) {
		c.held.Store(done)
		if progress != nil {
			progress(done, total)
		}
	}
	r.Wait = func(w Waiting) {
		c.mu.Lock()
		c.waiting = w
		c.mu.Unlock()
		if wait != nil {
			wait(w)
		}
	}
	return r
}

// FetcherOptions configure a Fetcher (NewFetcher). The zero value, or nil,
// is the defaults, which EnsureDefaults fills in.
type FetcherOptions struct {
	// Backoff is the node's provider backoff, shared by its fetches; nil
	// means a new one.
	Backoff *Backoff
	// Now is the clock of the plans; nil means time.Now.
	Now func() time.Time
	// FindProviders, if set, asks content routing (the node's DHT) for
	// providers of a blob: once per fetch, when its plan has tried or
	// skipped every provider but the guesses, with attempts and time left
	// (Plan.Routable; Plan.Route keeps at most 16 of them and tries them
	// before the guesses, docs/adr/0040). It returns what it found by the
	// time ctx ends (RouteWithGuesses, or the fetch's FetchTimeout), nil
	// for nothing.
	FindProviders func(ctx context.Context, c cid.Cid) []peer.AddrInfo
	// Connected, if set, returns the connected peers a fetch asks whether
	// they hold its blob, at the same time as it asks content routing
	// (the peers that completed hello; at most MaxAsked are asked).
	Connected func() []peer.ID
}

// EnsureDefaults sets each nil field of o to its default and returns o; on
// a nil o it returns new FetcherOptions of the defaults.
func (o *FetcherOptions) EnsureDefaults() *FetcherOptions {
	if o == nil {
		o = &FetcherOptions{}
	}
	if o.Backoff == nil {
		o.Backoff = NewBackoff()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// NewFetcher returns a fetcher over x into st, configured by opts (nil:
// the defaults; opts itself is not changed).
func NewFetcher(x *Exchange, st *Store, opts *FetcherOptions) *Fetcher {
	var o FetcherOptions
	if opts != nil {
		o = *opts
	}
	o.EnsureDefaults()
	f := &Fetcher{x: x, st: st, backoff: o.Backoff, now: o.Now, find: o.FindProviders, connected: o.Connected}
	f.mu.calls = make(map[callKey]*call)
	return f
}

// Backoff returns the fetcher's provider backoff.
func (f *Fetcher) Backoff() *Backoff { return f.backoff }

// Request is one blob to fetch: what Fetch takes, from the caller as it
// built it.
type Request struct {
	// CID is the blob's root; Size its declared size in bytes (at most
	// core.MaxSafeInt; CheckBeforeFetch refuses more than max_blob_bytes or
	// the quota before any request).
	CID  cid.Cid
	Size uint64
	// Sources are the providers to try, passed unchanged to NewPlan (see
	// Sources for the order, the bounds and the backoff).
	Sources Sources
	// Requester is the peer whose request made this fetch (a replicate
	// request's, a crash report's submitter); "" for none. A blob fetched
	// from it is not told to the Node as Served: a peer that asks
	// this node to fetch from it asks a service, it gives none. (Callers
	// fetching the same blob at once share one fetch, and the first
	// caller's Requester.)
	Requester peer.ID
	// Progress, if set, is told the file bytes held so far and Size, from
	// the fetch's goroutine.
	Progress func(done, total uint64)
	// Resumed, if set, is told once, before any request, the bytes of
	// the blob's leaves held already from an earlier fetch that did not
	// complete (ADR 0054) and Size, when there are any: the fetch goes
	// on from them.
	Resumed func(held, total uint64)
	// Wait, if set, is told what the fetch waits for each time that
	// changes, from the fetch's goroutine: providers being found, or a
	// provider's attempt (the one that served, on success).
	Wait func(Waiting)
}

// Waiting is what a fetch waits for (Request.Wait).
type Waiting struct {
	// Finding: providers being found (connected peers asked, content
	// routing).
	Finding bool
	// Provider is the provider whose attempt runs.
	Provider peer.ID
}

// wait tells r.Wait of w.
func (r *Request) wait(w Waiting) {
	if r.Wait != nil {
		r.Wait(w)
	}
}

// Fetch makes the blob complete in the store, or says why it could not.
// A blob already complete and of the declared size costs nothing.
//
// Errors: ErrTooLarge or ErrQuota before any request; ErrSizeMismatch,
// ErrCollection or ErrBadBlob when the content does not fit (ADR 0014:
// the blob is logged and ignored, never used); otherwise the Plan's
// ErrNoProvider, ErrAttempts or ErrFetchTimeout with the last provider's
// error; or ctx's error. On failure what it verified and stored is kept
// as a partial blob, never served (ADR 0054), for the next fetch of the
// blob to go on from, from any provider; after a content fault it is
// deleted.
func (f *Fetcher) Fetch(ctx context.Context, r Request) error {
	if done, err := f.complete(r); done {
		return err
	}
	key := callKey{r.CID, r.Size}
	f.mu.Lock()
	for {
		c, ok := f.mu.calls[key]
		if !ok {
			break
		}
		f.mu.Unlock()
		select {
		case <-c.done:
		case <-ctx.Done():
			return ctx.Err()
		}
		if c.err == nil || ContentFault(c.err) {
			// Stored, or the content does not fit: the same for anyone.
			return c.err
		}
		// It found no provider that served it (its own plan: another
		// requester, other hints), or its caller gave up: run one for
		// this caller.
		f.mu.Lock()
	}
	c := &call{done: make(chan struct{}), started: f.now()}
	f.mu.calls[key] = c
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		delete(f.mu.calls, key)
		f.mu.Unlock()
		close(c.done)
	}()
	c.err = f.run(ctx, c.track(r))
	return c.err
}

// complete reports whether r's blob is already pinned, and if so whether
// its size is the declared one.
func (f *Fetcher) complete(r Request) (done bool, err error) {
	if ok, _ := f.st.Has(r.CID); !ok {
		return false, nil
	}
	return true, f.st.Complete(context.Background(), r.CID, r.Size, nil)
}

func (f *Fetcher) run(ctx context.Context, r Request) error {
	res, err := f.st.Reserve(r.CID, r.Size)
	if err != nil {
		return err // before any request (ADR 0014)
	}
	defer res.Release()
	if held := res.Resumed(); held > 0 && r.Resumed != nil {
		r.Resumed(held, r.Size)
	}
	pl := NewPlan(r.Sources, f.x.Host().ID(), f.backoff, f.now())
	f.learn(pl)
	var progress func(uint64)
	if r.Progress != nil {
		progress = func(done uint64) { r.Progress(done, r.Size) }
	}
	var s *search
	defer func() {
		if s != nil {
			s.cancel()
		}
	}()
	for {
		if s == nil && (f.find != nil || f.connected != nil) && ctx.Err() == nil {
			pl.SkipBackedOff(f.now())
			if pl.Routable(f.now()) {
				r.wait(Waiting{Finding: true})
				s = f.search(ctx, pl, r.CID)
				s.take(pl, true)
			}
		}
		s.take(pl, false)
		p, deadline, ok := pl.Next(f.now())
		if !ok && pl.Waiting() && s.running() {
			r.wait(Waiting{Finding: true})
			if s.take(pl, true) {
				continue
			}
		}
		if !ok {
			break
		}
		r.wait(Waiting{Provider: p})
		err := f.attempt(ctx, p, deadline, r, res, progress)
		pl.Report(p, err, f.now())
		if pl.Done() || ctx.Err() != nil {
			break
		}
	}
	err = pl.Err()
	if err == nil && !pl.Done() {
		err = ctx.Err()
	}
	if err != nil {
		if ContentFault(err) {
			// What it stored is of no use: not kept (ADR 0054).
			res.Drop()
		}
		return fmt.Errorf("blobs: fetch %s (%d bytes): %w", r.CID, r.Size, err)
	}
	return nil
}

// learn puts the addresses of pl's providers in the peerstore for
// ProviderAddrTTL, for the attempts' dials.
func (f *Fetcher) learn(pl *Plan) {
	ps := f.x.Host().Peerstore()
	for _, c := range pl.cands {
		if c.named >= 0 && len(pl.named[c.named].Addrs) > 0 {
			ps.AddAddrs(c.id, pl.named[c.named].Addrs, ProviderAddrTTL)
		}
	}
}

// attempt runs one provider's attempt until deadline and pins the blob on
// success. A block deleted under it by a concurrent Remove is fetched once
// more from the same provider.
func (f *Fetcher) attempt(ctx context.Context, p peer.ID, deadline time.Time, r Request, res *Reservation, progress func(uint64)) error {
	actx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	var err error
	for range 2 {
		_, err = f.x.FetchFrom(actx, p, r.CID, r.Size, progress)
		if err != nil {
			return err
		}
		if err = f.st.Complete(actx, r.CID, r.Size, res); !errors.Is(err, ErrIncomplete) {
			if err == nil && p != r.Requester {
				f.x.node.Observe(Event{Kind: Served, Peer: p, Size: r.Size})
			}
			return err
		}
	}
	return err
}
