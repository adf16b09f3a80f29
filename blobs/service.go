package blobs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/wats-network/wats/eventlog"
	"github.com/wats-network/wats/proto"
)

// PeerLogger writes the log lines a peer's input causes, within caps
// (limits.PeerLog, ADR 0030).
type PeerLogger interface {
	Info(p peer.ID, topic, msg string, args ...any)
	Warn(p peer.ID, topic, msg string, args ...any)
}

// ServiceOptions configure a Service: the node's parts it runs on and
// what it asks of the node, each a function so that the node's state stays
// the node's.
type ServiceOptions struct {
	// Host serves and fetches bitswap; Dialer, if set, dials providers
	// (ExchangeOptions.Dialer); Node is what the exchange asks of the node.
	Host   host.Host
	Dialer host.Host
	Node   Node
	// Store holds the blobs; Hints the providers gossip named.
	Store *Store
	Hints *Hints
	// FindProviders is content routing (FetcherOptions.FindProviders);
	// nil for none.
	FindProviders func(ctx context.Context, c cid.Cid) []peer.AddrInfo
	// Now is the wall clock; nil means time.Now.
	Now func() time.Time
	// AutoFetch: the blobs of new events are fetched (blobs.auto_fetch).
	AutoFetch bool
	// RetryDelay is the wait before an auto-fetch's tries-th retry; nil
	// means BackoffDelay.
	RetryDelay func(tries int) time.Duration
	// Slots takes what a fetch that p asked for holds while it runs: one
	// of p's fetch slots and its tier's share of the quota (ADR 0014,
	// limits.blob_fetches_per_peer); ok is false past them.
	Slots func(p peer.ID, size uint64) (release func(), ok bool)
	// Guesses returns at most max connected peers (those that completed
	// hello): every fetch asks them whether they hold its blob, and a
	// fetch an operator asks for tries them last.
	Guesses func(max int) []peer.ID
	// Counted is told each fetch's source and outcome (Outcome, or
	// "dropped" and "skipped"), for the metrics; nil for none.
	Counted func(source, outcome string)
	// Log gets the node's own lines; PeerLog those a peer caused.
	Log     *slog.Logger
	PeerLog PeerLogger
}

// Service is a node's blob fetching: the exchange (bitswap, serving and
// fetching), the fetcher of ADR 0014's rules, the auto-fetch queue and its
// workers, and what the node fetches for whom: the blobs of new events
// (ADR 0029), a crash report's dump, a replicate request's blobs, the
// blobs an operator asks for. Build it with NewService; Start runs its
// workers.
type Service struct {
	o       ServiceOptions
	x       *Exchange
	fetcher *Fetcher
	auto    *AutoFetch
}

// NewService returns the Service of o; nothing runs before Start.
func NewService(o ServiceOptions) *Service {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.RetryDelay == nil {
		o.RetryDelay = BackoffDelay
	}
	if o.Counted == nil {
		o.Counted = func(string, string) {}
	}
	s := &Service{o: o}
	s.x = NewExchange(o.Host, o.Store, &ExchangeOptions{Node: o.Node, Dialer: o.Dialer})
	fo := &FetcherOptions{Now: o.Now, FindProviders: o.FindProviders}
	if o.Guesses != nil {
		fo.Connected = func() []peer.ID { return o.Guesses(MaxAsked) }
	}
	s.fetcher = NewFetcher(s.x, o.Store, fo)
	s.auto = s.newAutoFetch()
	return s
}

// Start runs the auto-fetch workers until ctx ends, each in a goroutine
// that spawn starts (the node's, which Close waits for).
func (s *Service) Start(ctx context.Context, spawn func(func())) {
	for range AutoFetchWorkers {
		spawn(func() { s.auto.Work(ctx) })
	}
}

// Close stops the exchange.
func (s *Service) Close() { s.x.Close() }

// Exchange returns the exchange (for its figures).
func (s *Service) Exchange() *Exchange { return s.x }

// Fetcher returns the fetcher (for its backoff).
func (s *Service) Fetcher() *Fetcher { return s.fetcher }

// AutoFetch returns the auto-fetch queue.
func (s *Service) AutoFetch() *AutoFetch { return s.auto }

// Fetch makes the blob r.CID of the declared size r.Size complete in the
// store, fetching it if needed by ADR 0014's rules (Fetcher.Fetch) from
// r.Sources as the caller built them: each caller names the gossip hints
// among its Sources.Named itself, so that nothing between it and the plan
// changes them (ADR 0033, "One shape for a fetch").
func (s *Service) Fetch(ctx context.Context, r Request) error { return s.fetcher.Fetch(ctx, r) }

// Asked is a fetch an operator asks for (`wats blob get`).
type Asked struct {
	// CID and Size are the blob and its declared size.
	CID  cid.Cid
	Size uint64
	// From is a peer to try first, even under backoff ("" for none).
	From peer.ID
	// Progress, if set, is told the bytes held and the size; Wait what
	// the fetch waits for (Request.Wait).
	Progress func(done, total uint64)
	Wait     func(Waiting)
	// Resumed, if set, is told the bytes held already from an earlier
	// fetch that did not complete (Request.Resumed, ADR 0054).
	Resumed func(held, total uint64)
}

// FetchAsked is the fetch an operator asks for: a.CID of the declared
// size, from a.From first when given (tried even under backoff: the
// operator named it), then the providers gossip named, then those a
// search finds (the connected peers that hold it, the DHT's), then the
// connected peers that completed hello, as guesses (tried last, never
// backed off), since an event that came by sync names no provider.
func (s *Service) FetchAsked(ctx context.Context, a Asked) error {
	err := s.Fetch(ctx, s.asked(a))
	s.Logged("", a.CID, a.Size, "api", err)
	return err
}

// StreamAsked is FetchAsked writing the blob's bytes to w in order
// meanwhile, as they arrive and are verified (Fetcher.Stream, ADR 0035):
// it returns the bytes written, and nil only when the blob is complete
// here and exactly a.Size bytes were written.
func (s *Service) StreamAsked(ctx context.Context, a Asked, w io.Writer) (uint64, error) {
	written, err := s.fetcher.Stream(ctx, s.asked(a), w)
	s.Logged("", a.CID, a.Size, "api", err)
	return written, err
}

// asked is the Request of a (see FetchAsked).
func (s *Service) asked(a Asked) Request {
	var guesses []peer.ID
	if s.o.Guesses != nil {
		guesses = s.o.Guesses(MaxAttempts)
	}
	src := Sources{First: a.From, FirstExempt: a.From != "", Named: s.o.Hints.Get(a.CID), Guesses: guesses}
	return Request{CID: a.CID, Size: a.Size, Sources: src, Progress: a.Progress, Wait: a.Wait, Resumed: a.Resumed}
}

// Hint records providers, which a gossip envelope named, as the newest
// hints for each of refs, its event's blobs (docs/design.md §6): what
// hands gossip's providers to the fetch path.
func (s *Service) Hint(refs []eventlog.BlobRef, providers []proto.Provider) {
	if len(refs) == 0 || len(providers) == 0 {
		return
	}
	named := proto.AddrInfos(providers)
	for _, b := range refs {
		if c, err := cid.Decode(b.CID); err == nil {
			s.o.Hints.Add(c, named)
		}
	}
}

// Queue queues the blobs of newly stored events for fetching, when
// auto-fetch is on. from is the peer the events came from; the event's
// author and from are the fetch's guesses (ADR 0029).
func (s *Service) Queue(evs []*eventlog.Event, from peer.ID, source string) {
	if !s.o.AutoFetch {
		return
	}
	for _, ev := range evs {
		if len(ev.Blobs) == 0 {
			continue // most events: no author to decode (peer.Decode was 2% of a catch-up's CPU)
		}
		var guesses []peer.ID
		if a, err := peer.Decode(ev.Author); err == nil {
			guesses = append(guesses, a)
		}
		if from != "" {
			guesses = append(guesses, from)
		}
		for _, b := range ev.Blobs {
			c, err := cid.Decode(b.CID)
			if err != nil {
				s.o.Log.Debug("not fetching a blob with a bad CID", "cid", b.CID, "err", err)
				continue
			}
			s.auto.Add(Job{CID: c, Size: b.Size, From: from, Guesses: guesses, Source: source})
		}
	}
}

// newAutoFetch returns the auto-fetch queue: a job whose blob is complete
// is not queued, each runs Fetch from the gossip hints of the moment and
// its guesses, and one that found no provider that served it is retried
// (Scheduler).
func (s *Service) newAutoFetch() *AutoFetch {
	return NewAutoFetch(AutoFetchOptions{
		Schedule: &ScheduleOptions{RetryDelay: s.o.RetryDelay},
		Complete: func(j Job) bool {
			ok, _ := s.o.Store.Has(j.CID)
			return ok
		},
		Fetch: func(ctx context.Context, j Job) bool {
			err := s.Fetch(ctx, Request{CID: j.CID, Size: j.Size, Sources: Sources{Named: s.o.Hints.Get(j.CID), Guesses: j.Guesses}})
			s.Logged(j.From, j.CID, j.Size, j.Source, err)
			return Outcome(err) == "failed" && !errors.Is(err, context.Canceled)
		},
		Dropped: func(j Job, v Verdict) {
			if v == ShareFull {
				s.o.Log.Debug("auto-fetch: the peer's share of the queue is full; blob not fetched now", "cid", j.CID, "peer", j.From)
			} else {
				s.o.Log.Debug("auto-fetch queue full; blob not fetched", "cid", j.CID, "source", j.Source)
			}
			s.o.Counted(j.Source, "dropped")
		},
		GaveUp: func(j Job) {
			s.o.PeerLog.Info(j.From, "retries", "blob not fetched; no more retries until the next start", "cid", j.CID, "tries", j.Tries+1)
		},
	})
}

// ScanMissing fetches, once dialed is closed (the providers dialled
// first: the known peers, the bootstrap list), the blobs of the events in
// log that are not complete here: fetches cut off by a restart, dropped
// from a full queue or out of retries, named by events stored while
// auto-fetch was off. It fetches them one at a time, beside the auto-fetch
// workers, so that a log full of blobs nobody serves delays no new fetch;
// the only providers it knows are the events' authors (guesses), and it
// does not retry: the next start does.
func (s *Service) ScanMissing(ctx context.Context, log *eventlog.Log, dialed <-chan struct{}) {
	select {
	case <-dialed:
	case <-ctx.Done():
		return
	}
	fetched, failed := 0, 0
	for ev, err := range log.All(0) {
		if ctx.Err() != nil {
			break
		}
		if errors.Is(err, eventlog.ErrDamaged) {
			continue
		}
		if err != nil {
			s.o.Log.Warn("scan for missing blobs", "err", err)
			return
		}
		if len(ev.Blobs) == 0 {
			continue
		}
		var guesses []peer.ID
		if a, err := peer.Decode(ev.Author); err == nil {
			guesses = []peer.ID{a}
		}
		for _, b := range ev.Blobs {
			c, err := cid.Decode(b.CID)
			if err != nil {
				continue
			}
			if ok, _ := s.o.Store.Has(c); ok {
				continue
			}
			err = s.Fetch(ctx, Request{CID: c, Size: b.Size, Sources: Sources{Named: s.o.Hints.Get(c), Guesses: guesses}})
			s.Logged("", c, b.Size, "scan", err)
			if err == nil {
				fetched++
			} else {
				failed++
			}
		}
	}
	if fetched+failed > 0 {
		s.o.Log.Info("fetched the missing blobs of stored events", "fetched", fetched, "failed", failed)
	}
}

// FetchDumps fetches the blobs of a crash report from its submitter p
// first, each holding one of p's fetch slots (ADR 0014), outside the
// auto-fetch queue so that a submitter's dumps do not hold up other
// fetches, each in a goroutine of spawn's; past p's slots a dump is
// skipped (others fetch it after gossip).
func (s *Service) FetchDumps(ctx context.Context, p peer.ID, refs []eventlog.BlobRef, spawn func(func())) {
	for _, b := range refs {
		c, err := cid.Decode(b.CID)
		if err != nil {
			continue
		}
		if ok, _ := s.o.Store.Has(c); ok {
			continue
		}
		release, ok := s.o.Slots(p, b.Size)
		if !ok {
			s.o.Counted("crash_report", "skipped")
			s.o.PeerLog.Info(p, "dump", "crash dump not fetched: the submitter's fetch slots, or its tier's share of the quota, are in use", "cid", c, "peer", p)
			continue
		}
		spawn(func() {
			defer release()
			err := s.Fetch(ctx, Request{CID: c, Size: b.Size, Sources: Sources{First: p, Named: s.o.Hints.Get(c)}, Requester: p})
			s.Logged(p, c, b.Size, "crash_report", err)
		})
	}
}

// ReplicateMargin is left of proto.ReplicateTimeout after the fetches'
// FetchTimeout, for the response to reach the requester.
const ReplicateMargin = 5 * time.Second

// ServeReplicate answers p's replicate request (docs/design.md §4, §9; ADR
// 0014): each blob already complete is stored at no cost; the others are
// fetched, the requester first, while p has fetch slots free and its
// tier's share of the quota (ServiceOptions.Slots), and skipped past them.
// It waits for the fetches, within FetchTimeout + ReplicateMargin, and
// says which blobs were stored, skipped and failed.
func (s *Service) ServeReplicate(ctx context.Context, p peer.ID, r *proto.ReplicateRequest) *proto.ReplicateResponse {
	resp := &proto.ReplicateResponse{}
	named := proto.AddrInfos(r.Providers)
	type job struct {
		ref     proto.BlobRef
		c       cid.Cid
		release func()
		err     error
	}
	var jobs []*job
	seen := map[string]bool{}
	for _, b := range r.Blobs {
		if seen[b.CID] {
			continue // a blob named twice is answered once
		}
		seen[b.CID] = true
		c, err := cid.Decode(b.CID)
		if err != nil {
			resp.Failed = append(resp.Failed, proto.FailedBlob{CID: b.CID, Reason: "not a CID"})
			continue
		}
		if have, ok := s.o.Store.SizeOf(c); ok {
			if have != uint64(b.Size) {
				resp.Failed = append(resp.Failed, proto.FailedBlob{CID: b.CID,
					Reason: fmt.Sprintf("size mismatch: %d bytes here, %d declared", have, b.Size)})
			} else {
				resp.Stored = append(resp.Stored, b.CID) // at no cost (docs/design.md §9)
			}
			continue
		}
		release, ok := s.o.Slots(p, uint64(b.Size))
		if !ok {
			resp.Skipped = append(resp.Skipped, b.CID)
			continue
		}
		jobs = append(jobs, &job{ref: b, c: c, release: release})
	}
	ctx, cancel := context.WithTimeout(ctx, FetchTimeout+ReplicateMargin)
	defer cancel()
	var wg sync.WaitGroup
	for _, j := range jobs {
		wg.Go(func() {
			defer j.release()
			src := Sources{First: p, Named: append(s.o.Hints.Get(j.c), named...)}
			j.err = s.Fetch(ctx, Request{CID: j.c, Size: uint64(j.ref.Size), Sources: src, Requester: p})
			s.Logged(p, j.c, uint64(j.ref.Size), "replicate", j.err)
		})
	}
	wg.Wait()
	for _, j := range jobs {
		if j.err == nil {
			resp.Stored = append(resp.Stored, j.ref.CID)
		} else {
			resp.Failed = append(resp.Failed, proto.FailedBlob{CID: j.ref.CID, Reason: proto.TruncateText(j.err.Error())})
		}
	}
	return resp
}

// Logged records the outcome of a fetch that p caused (the peer whose
// event, request or report named the blob; "" for the node's own fetches,
// which are logged uncapped): a blob that does not fit its declared size
// or format is "logged and ignored" (ADR 0014), within the caps of
// peer-caused lines.
func (s *Service) Logged(p peer.ID, c cid.Cid, size uint64, source string, err error) {
	s.o.Counted(source, Outcome(err))
	switch {
	case err == nil:
		s.o.Log.Debug("blob fetched", "cid", c, "size", size, "source", source)
	case errors.Is(err, context.Canceled):
	case ContentFault(err):
		msg := "blob not used: its content does not fit the declared size or format"
		if p == "" {
			s.o.Log.Warn(msg, "cid", c, "size", size, "source", source, "err", err)
		} else {
			s.o.PeerLog.Warn(p, "blob content", msg, "cid", c, "size", size, "source", source, "err", err)
		}
	default:
		if p == "" {
			s.o.Log.Info("blob not fetched", "cid", c, "size", size, "source", source, "err", err)
		} else {
			s.o.PeerLog.Info(p, "blob fetch", "blob not fetched", "cid", c, "size", size, "source", source, "err", err)
		}
	}
}

// Outcome names err, a fetch's or an import's, for the metrics: stored,
// refused (over a bound), invalid (a content fault) or failed.
func Outcome(err error) string {
	switch {
	case err == nil:
		return "stored"
	case errors.Is(err, ErrTooLarge), errors.Is(err, ErrQuota):
		return "refused"
	case ContentFault(err):
		return "invalid"
	default:
		return "failed"
	}
}
