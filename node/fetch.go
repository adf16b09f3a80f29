package node

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/wats-network/wats/blobs"
	"github.com/wats-network/wats/config"
	"github.com/wats-network/wats/eventlog"
	"github.com/wats-network/wats/gossip"
	"github.com/wats-network/wats/p2p"
	"github.com/wats-network/wats/peers"
	"github.com/wats-network/wats/proto"
)

// fetchState is the node's blob fetching: the exchange, the fetcher and
// the auto-fetch queue and its workers. Built by Start.
type fetchState struct {
	x       *blobs.Exchange
	fetcher *blobs.Fetcher
	auto    *blobs.AutoFetch
}

// startBlobs starts bitswap (serving and fetching) and the auto-fetch
// workers.
func (n *Node) startBlobs() {
	f := &fetchState{auto: n.newAutoFetch()}
	f.x = blobs.NewExchange(n.host, n.blobs, &blobs.ExchangeOptions{Node: (*blobsNode)(n), Dialer: n.dialHost()})
	fo := &blobs.FetcherOptions{Now: n.now}
	if r := n.routing.Load(); r != nil {
		fo.FindProviders = r.FindProviders
	}
	f.fetcher = blobs.NewFetcher(f.x, n.blobs, fo)
	n.fetch = f
	for range blobs.AutoFetchWorkers {
		n.go_(func() { f.auto.Work(n.ctx) })
	}
	if n.cfg.Blobs.AutoFetch {
		n.go_(n.scanMissingBlobs)
	}
}

// blobsNode is what the blob exchange asks of the node (blobs.Node).
type blobsNode Node

func (b *blobsNode) Serves(p peer.ID) bool { return (*Node)(b).mayFetchBlocks(p) }

func (b *blobsNode) AdmitStream(p peer.ID) (func(), bool) { return (*Node)(b).bitswapStream(p) }

func (b *blobsNode) Priority(p peer.ID) uint8 {
	return p2p.BitswapPriority[(*Node)(b).peerOf(p).Tier()]
}

func (b *blobsNode) Prepare(ctx context.Context, p peer.ID) error {
	return (*Node)(b).helloFirst(ctx, p)
}

// Observe counts what a peer did: a stream it held (a timeout), a block
// it wanted that no complete blob holds (unheldWant), a blob it served
// (value it gave).
func (b *blobsNode) Observe(e blobs.Event) {
	n := (*Node)(b)
	switch e.Kind {
	case blobs.Held:
		n.m.StreamTimeout("bitswap")
		n.abuse(e.Peer, peers.Timeouts)
	case blobs.Unheld:
		n.unheldWant(e.Peer, e.CID)
	case blobs.Served:
		n.gave(e.Peer, 0, e.Size)
	}
}

// scanMissingBlobs fetches, once at start, the blobs of the events in the
// log that are not complete here: fetches cut off by a restart, dropped
// from a full queue or out of retries, named by events stored while
// blobs.auto_fetch was off. It fetches them one at a time in its own
// goroutine, beside the auto-fetch workers, so that a log full of blobs
// nobody serves delays no new fetch; the only providers it knows are the
// events' authors (guesses), and it does not retry: the next start does.
func (n *Node) scanMissingBlobs() {
	// The providers are dialled first: the known peers, the bootstrap list.
	select {
	case <-n.dialed:
	case <-n.ctx.Done():
		return
	}
	fetched, failed := 0, 0
	for ev, err := range n.events.All(0) {
		if n.ctx.Err() != nil {
			break
		}
		if errors.Is(err, eventlog.ErrDamaged) {
			continue
		}
		if err != nil {
			n.log.Warn("scan for missing blobs", "err", err)
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
			if ok, _ := n.blobs.Has(c); ok {
				continue
			}
			err = n.FetchBlob(n.ctx, blobs.Request{CID: c, Size: b.Size, Sources: blobs.Sources{Named: n.hints.Get(c), Guesses: guesses}})
			n.logFetch("", c, b.Size, "scan", err)
			if err == nil {
				fetched++
			} else {
				failed++
			}
		}
	}
	if fetched+failed > 0 {
		n.log.Info("fetched the missing blobs of stored events", "fetched", fetched, "failed", failed)
	}
}

// mayFetchBlocks says whether p is served blocks over bitswap
// (blobs.serve): any peer with "all", else only peers that completed
// hello.
func (n *Node) mayFetchBlocks(p peer.ID) bool {
	if n.cfg.Blobs.Serve == config.ServeAll {
		return true
	}
	return n.helloed(p)
}

// unheldWant classifies a bitswap want of a block that no complete blob
// here holds (answered DONT_HAVE): a root that an event here names is an
// expected miss (a blob removed here, or not fetched yet); any other CID is
// a miss, counted in the peer's history (ADR 0030).
func (n *Node) unheldWant(p peer.ID, c cid.Cid) {
	if ok, err := n.events.NamesBlob(c.String()); err == nil && ok {
		return
	}
	n.m.BitswapMiss()
	n.abuse(p, peers.Misses)
}

// helloFirst completes hello with a provider before the first want: wats
// nodes serve blocks only to peers that did (blobs.serve = "peers"), and a
// want sent while hello is still in flight would get DONT_HAVE and back an
// honest provider off. The provider must hold this node's hello
// (peers.Peer.HeardUs), not only this node its: when the provider said
// hello first, this node's answer may not have reached it yet. A provider
// that does not speak /wats/1 (another IPFS implementation) is asked
// anyway: its failed hello is not an error.
func (n *Node) helloFirst(ctx context.Context, p peer.ID) error {
	if st := n.run.Get(p); st != nil && st.HeardUs() {
		return nil
	}
	if err := n.greet(ctx, p); err != nil {
		n.log.Debug("hello before a blob fetch failed; asking anyway", "peer", p, "err", err)
	}
	return ctx.Err()
}

// autoFetch queues the blobs of newly stored events for fetching, when
// blobs.auto_fetch is on. from is the peer the events came from; the
// event's author and from are the fetch's guesses (ADR 0029).
func (n *Node) autoFetch(evs []*eventlog.Event, from peer.ID, source string) {
	if !n.cfg.Blobs.AutoFetch || n.fetch == nil {
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
				n.log.Debug("not fetching a blob with a bad CID", "cid", b.CID, "err", err)
				continue
			}
			n.fetch.auto.Add(blobs.Job{CID: c, Size: b.Size, From: from, Guesses: guesses, Source: source})
		}
	}
}

// newAutoFetch returns the auto-fetch queue: a job whose blob is
// complete is not queued, each runs FetchBlob from the gossip hints of the
// moment and its guesses, and one that found no provider that served it
// is retried (blobs.Scheduler).
func (n *Node) newAutoFetch() *blobs.AutoFetch {
	return blobs.NewAutoFetch(blobs.AutoFetchOptions{
		Schedule: &blobs.ScheduleOptions{RetryDelay: retryDelay},
		Complete: func(j blobs.Job) bool {
			ok, _ := n.blobs.Has(j.CID)
			return ok
		},
		Fetch: func(ctx context.Context, j blobs.Job) bool {
			err := n.FetchBlob(ctx, blobs.Request{CID: j.CID, Size: j.Size, Sources: blobs.Sources{Named: n.hints.Get(j.CID), Guesses: j.Guesses}})
			n.logFetch(j.From, j.CID, j.Size, j.Source, err)
			return fetchOutcome(err) == "failed" && !errors.Is(err, context.Canceled)
		},
		Dropped: func(j blobs.Job, v blobs.Verdict) {
			if v == blobs.ShareFull {
				n.log.Debug("auto-fetch: the peer's share of the queue is full; blob not fetched now", "cid", j.CID, "peer", j.From)
			} else {
				n.log.Debug("auto-fetch queue full; blob not fetched", "cid", j.CID, "source", j.Source)
			}
			n.m.BlobFetch(j.Source, "dropped")
		},
		GaveUp: func(j blobs.Job) {
			n.plog.Info(j.From, "retries", "blob not fetched; no more retries until the next start", "cid", j.CID, "tries", j.Tries+1)
		},
	})
}

// fetchDumps fetches the blobs of a crash report from its submitter p
// first, each holding one of p's fetch slots (ADR 0014), outside the
// auto-fetch queue so that a submitter's dumps do not hold up other
// fetches; past p's slots a dump is skipped (others fetch it after gossip).
func (n *Node) fetchDumps(p peer.ID, refs []eventlog.BlobRef) {
	for _, b := range refs {
		c, err := cid.Decode(b.CID)
		if err != nil {
			continue
		}
		if ok, _ := n.blobs.Has(c); ok {
			continue
		}
		release, ok := n.fetchFor(p, b.Size)
		if !ok {
			n.m.BlobFetch("crash_report", "skipped")
			n.plog.Info(p, "dump", "crash dump not fetched: the submitter's fetch slots, or its tier's share of the quota, are in use", "cid", c, "peer", p)
			continue
		}
		n.go_(func() {
			defer release()
			err := n.FetchBlob(n.ctx, blobs.Request{CID: c, Size: b.Size, Sources: blobs.Sources{First: p, Named: n.hints.Get(c)}, Requester: p})
			n.logFetch(p, c, b.Size, "crash_report", err)
		})
	}
}

// fetchFor takes what a fetch that p asked for holds while it runs
// (peers.Table.Fetch).
func (n *Node) fetchFor(p peer.ID, size uint64) (release func(), ok bool) {
	now, mono := n.clock()
	return n.run.Fetch(p, size, now, mono)
}

// retryDelay is the wait before the tries-th retry of an auto-fetch
// (blobs.ScheduleOptions.RetryDelay); a variable so that tests can shorten
// it.
var retryDelay = blobs.BackoffDelay

// logFetch records the outcome of a background fetch that p caused (the
// peer whose event, request or report named the blob; "" for the node's own
// fetches, which are logged uncapped): a blob that does not fit its
// declared size or format is "logged and ignored" (ADR 0014), within the
// caps of peer-caused lines.
func (n *Node) logFetch(p peer.ID, c cid.Cid, size uint64, source string, err error) {
	n.m.BlobFetch(source, fetchOutcome(err))
	switch {
	case err == nil:
		n.log.Debug("blob fetched", "cid", c, "size", size, "source", source)
	case errors.Is(err, context.Canceled):
	case blobs.ContentFault(err):
		msg := "blob not used: its content does not fit the declared size or format"
		if p == "" {
			n.log.Warn(msg, "cid", c, "size", size, "source", source, "err", err)
		} else {
			n.plog.Warn(p, "blob content", msg, "cid", c, "size", size, "source", source, "err", err)
		}
	default:
		if p == "" {
			n.log.Info("blob not fetched", "cid", c, "size", size, "source", source, "err", err)
		} else {
			n.plog.Info(p, "blob fetch", "blob not fetched", "cid", c, "size", size, "source", source, "err", err)
		}
	}
}

// fetchOutcome names err for the fetch metrics.
func fetchOutcome(err error) string {
	switch {
	case err == nil:
		return "stored"
	case errors.Is(err, blobs.ErrTooLarge), errors.Is(err, blobs.ErrQuota):
		return "refused"
	case blobs.ContentFault(err):
		return "invalid"
	default:
		return "failed"
	}
}

// FetchBlob makes the blob r.CID of the declared size r.Size complete in
// the store, fetching it if needed by ADR 0014's rules
// (blobs.Fetcher.Fetch) from r.Sources as the caller built them: each
// caller names the gossip hints (n.hints.Get) among its Sources.Named
// itself, so that nothing between it and the plan changes them (ADR 0033,
// "One shape for a fetch").
func (n *Node) FetchBlob(ctx context.Context, r blobs.Request) error {
	if n.fetch == nil {
		return errors.New("node: not started")
	}
	return n.fetch.fetcher.Fetch(ctx, r)
}

// hintGossiped records the providers a gossip envelope names as the newest
// hints for each blob of its event (docs/design.md §6): what hands gossip's
// providers to the fetch path.
func (n *Node) hintGossiped(d gossip.Delivery) {
	if len(d.Event.Blobs) == 0 || len(d.Providers) == 0 {
		return
	}
	named := proto.AddrInfos(d.Providers)
	for _, b := range d.Event.Blobs {
		if c, err := cid.Decode(b.CID); err == nil {
			n.hints.Add(c, named)
		}
	}
}

// serveReplicate answers a replicate request (docs/design.md §4, §9; ADR 0014):
// each blob already complete is stored at no cost; the others are fetched,
// the requester first, while p has fetch slots free
// (limits.blob_fetches_per_peer) and its tier's share of the quota
// (peers.Table.Fetch), and skipped past them. It waits for the
// fetches, within proto.ReplicateTimeout, and says which blobs were
// stored, skipped and failed.
func (n *Node) serveReplicate(ctx context.Context, p peer.ID, r *proto.ReplicateRequest) proto.Message {
	if n.fetch == nil {
		return &proto.Error{Code: proto.CodeInternal, Message: "blob exchange not started"}
	}
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
		if have, ok := n.blobs.SizeOf(c); ok {
			if have != uint64(b.Size) {
				resp.Failed = append(resp.Failed, proto.FailedBlob{CID: b.CID,
					Reason: fmt.Sprintf("size mismatch: %d bytes here, %d declared", have, b.Size)})
			} else {
				resp.Stored = append(resp.Stored, b.CID) // at no cost (docs/design.md §9)
			}
			continue
		}
		release, ok := n.fetchFor(p, uint64(b.Size))
		if !ok {
			resp.Skipped = append(resp.Skipped, b.CID)
			continue
		}
		jobs = append(jobs, &job{ref: b, c: c, release: release})
	}
	ctx, cancel := context.WithTimeout(ctx, blobs.FetchTimeout+replicateMargin)
	defer cancel()
	var wg sync.WaitGroup
	for _, j := range jobs {
		wg.Go(func() {
			defer j.release()
			src := blobs.Sources{First: p, Named: append(n.hints.Get(j.c), named...)}
			j.err = n.FetchBlob(ctx, blobs.Request{CID: j.c, Size: uint64(j.ref.Size), Sources: src, Requester: p})
			n.logFetch(p, j.c, uint64(j.ref.Size), "replicate", j.err)
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

// replicateMargin is left of proto.ReplicateTimeout after the fetches'
// blobs.FetchTimeout, for the response to reach the requester.
const replicateMargin = 5 * time.Second

// Replicate asks peer to keep copies of refs, naming this node as their
// provider (it is tried first), and returns the peer's answer.
func (n *Node) Replicate(ctx context.Context, to peer.ID, refs []proto.BlobRef) (*proto.ReplicateResponse, error) {
	if len(refs) == 0 || len(refs) > proto.MaxReplicateBlobs {
		return nil, fmt.Errorf("node: replicate: %d blobs; allowed 1..%d", len(refs), proto.MaxReplicateBlobs)
	}
	req := &proto.ReplicateRequest{Blobs: refs, Providers: []proto.Provider{n.selfProvider()}}
	resp, err := n.call(ctx, to, req)
	if err != nil {
		return nil, fmt.Errorf("node: replicate to %s: %w", to, err)
	}
	if resp.Replicate == nil {
		return nil, errors.New("node: replicate answered with another type")
	}
	return resp.Replicate, nil
}
