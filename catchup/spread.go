package catchup

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/wats-network/wats/core"
	"github.com/wats-network/wats/eventlog"
	"github.com/wats-network/wats/limits"
	"github.com/wats-network/wats/proto"
)

// A catch-up from several peers (ADR 0052). A node far behind peers that
// serve sync by id range (proto.FeatureSyncIDs) splits the id space into
// shards (planShards) and hands them out to those peers as a work queue:
// each peer's workers take the next shard, page through its ids at that
// peer, paced to its own advertised rate (its limits.Pacer), and deliver
// the pages to one verify stage and one store stage shared by all, as a
// run from one peer does (ADR 0038, ADR 0039). N peers then give about N
// times the pages a minute of one. A faster peer takes more shards; a
// peer that stalls, breaks the protocol or sends more than
// MaxInvalidPerRun invalid events is dropped from the catch-up and the
// shard it held goes back to the queue, from where it stopped.
//
// Once every shard is fetched and stored, each peer checks the shards it
// did not serve: a fingerprint request (count and sum of the ids) over
// groupShards shards at a time, compared with the same over this node's
// log; a range that differs is halved until it is one shard, of which
// that peer lists its ids, and only those this node lacks are fetched
// (idlists.go, ADR 0057: when this node holds at least half as many ids
// there as the peer; otherwise, or from a peer that does not serve the
// lists, the shard is fetched whole). When every shard of a peer was
// served by it or matches, every event at a position up to the head it
// advertised when it joined is held here, and its position cursor is set
// to that head: position-paged sync, gossip and heads pulls carry on from
// there as before. A peer dropped from the catch-up keeps its cursor, and
// is synced by position at the next sync.interval.
//
// Peers join the catch-up running (Client.Trigger, Client.SyncAll) while
// it runs; one that joins once the shards are all fetched checks them all
// by fingerprint. The catch-up holds each joined peer's sync lock (no
// sync by position from it meanwhile) until it ends, when the last of its
// workers is done.

// SpreadMinLag is how far past its cursor a peer's head is when a sync from
// it (Client.Trigger) joins a catch-up from several peers rather than page
// through its log by position: four shards' worth, 16,384 events, 64
// pages.
const SpreadMinLag = 4 * ShardEvents

// spreadWorkers is how many requests a catch-up from several peers has in
// flight to one peer: a responder serves peers.MaxPagesPerPeer (2) pages
// to one peer at once. A peer held to a share of new authors' events gets
// one (Options.Share).
const spreadWorkers = 2

// ErrSpreadIncomplete is SyncAll's error when a catch-up from several
// peers ended with shards that no peer served: every peer that had them
// was dropped.
var ErrSpreadIncomplete = errors.New("catchup: no peer left to serve the catch-up's shards")

// spreadRun is one catch-up from several peers.
type spreadRun struct {
	c      *Client
	ctx    context.Context
	cancel context.CancelFunc
	stage  *verifyStage
	// done is closed once the run ended, its cursors saved and its peers'
	// locks released; err is then its error, final each peer's progress.
	done  chan struct{}
	err   error
	final []Progress

	mu struct {
		sync.Mutex
		// cond is signalled when a shard is queued or done, a page is
		// stored, a peer is dropped or the run's context ends.
		cond *sync.Cond
		// shards is the plan; from (where a shard's next page starts)
		// and servedBy (the index of the peer that fetched it or found
		// it the same, -1 until then) are by shard. INVARIANT: every
		// shard is in queue (pending), taken by a worker, or served.
		shards   []proto.IDRange
		from     []string
		servedBy []int
		queue    []int
		// taken counts the shards taken; delivered and stored count the
		// pages given to the verify stage and the pages written.
		taken             int
		delivered, stored int
		peers             []*spreadPeer
		watchers          []*func([]Progress)
	}
	// workers counts the workers running; closed is set once it fell to
	// zero, after which no peer joins. Both are guarded by the Client's
	// spread mutex.
	workers int
	closed  bool
}

// spreadPeer is a peer's part in a spreadRun.
type spreadPeer struct {
	id  peer.ID
	src int
	// head is the peer's head when it joined, the cursor it gets when
	// all of its shards are served or match; start its cursor then.
	head, start core.Cursor
	pacer       *limits.Pacer
	share       Share
	// lists: the peer serves the lists of a range's ids (ADR 0057).
	lists  bool
	ctx    context.Context
	cancel context.CancelFunc
	unlock func()
	// Guarded by the run's mu: the counts of Progress, the error that
	// dropped the peer, and whether its shards were all checked.
	st      Progress
	err     error
	checked bool
	pages   int
}

// join adds p to the catch-up from several peers running, or starts one
// planned for the larger of p's lag and events (the most events another
// peer about to join is ahead by): false when a sync from p is running
// already (its lock is taken). REQUIRES: p serves sync by id range.
func (c *Client) join(ctx context.Context, p peer.ID, events uint64) (*spreadRun, bool) {
	mu := c.o.Lock(p)
	if !mu.TryLock() {
		return nil, false
	}
	c.spread.Lock()
	defer c.spread.Unlock()
	r := c.spread.run
	if r == nil {
		r = c.newSpreadRun(ctx, max(events, c.lag(p)))
		c.spread.run = r
	}
	r.add(p, mu.Unlock)
	return r, true
}

// lag is how many events p's head is past its cursor here.
func (c *Client) lag(p peer.ID) uint64 {
	head, _ := c.o.Head(p)
	return uint64(head - min(head, c.o.Cursor(p)))
}

// spreadRunning returns the catch-up from several peers running that p
// takes part in, or nil.
func (c *Client) spreadRunning(p peer.ID) *spreadRun {
	c.spread.Lock()
	defer c.spread.Unlock()
	if r := c.spread.run; r != nil && r.has(p) {
		return r
	}
	return nil
}

// newSpreadRun starts a catch-up of about events events, with no peer
// yet: its verify and store stages run until its last worker is done.
// REQUIRES: c.spread is held.
func (c *Client) newSpreadRun(ctx context.Context, events uint64) *spreadRun {
	r := &spreadRun{c: c, done: make(chan struct{})}
	r.ctx, r.cancel = context.WithCancel(ctx)
	r.mu.cond = sync.NewCond(&r.mu.Mutex)
	r.mu.shards = planShards(events)
	n := len(r.mu.shards)
	r.mu.from, r.mu.servedBy = make([]string, n), make([]int, n)
	r.mu.queue = make([]int, n)
	for i, s := range r.mu.shards {
		r.mu.from[i], r.mu.servedBy[i], r.mu.queue[i] = s.From, -1, i
	}
	r.stage = newVerifyStage(c.o.Now, c.has, r.cancel)
	r.stage.over = func(src int) {
		r.drop(src, fmt.Errorf("%w: more than %d invalid events", ErrRunBound, MaxInvalidPerRun))
	}
	context.AfterFunc(r.ctx, r.signal)
	c.o.Spawn(r.store)
	return r
}

// signal wakes the workers that wait on the run.
func (r *spreadRun) signal() {
	r.mu.Lock()
	r.mu.cond.Broadcast()
	r.mu.Unlock()
}

// has reports whether p takes part in r.
func (r *spreadRun) has(p peer.ID) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, sp := range r.mu.peers {
		if sp.id == p {
			return true
		}
	}
	return false
}

// add makes p a peer of r and starts its workers; unlock releases p's sync
// lock, which the caller holds. REQUIRES: r.c.spread is held.
func (r *spreadRun) add(p peer.ID, unlock func()) {
	c := r.c
	sp := &spreadPeer{id: p, unlock: unlock, pacer: c.o.Pacer(p), start: c.o.Cursor(p),
		lists: c.serves(p, proto.FeatureSyncIDLists)}
	sp.head, _ = c.o.Head(p)
	sp.st = Progress{Peer: p, Cursor: sp.start, PeerHead: sp.head}
	if c.o.Share != nil {
		sp.share = c.o.Share(p)
	}
	sp.ctx, sp.cancel = context.WithCancel(r.ctx)
	r.mu.Lock()
	sp.src = len(r.mu.peers)
	r.mu.peers = append(r.mu.peers, sp)
	r.mu.Unlock()
	workers := spreadWorkers
	if sp.share != nil {
		workers = 1 // Share's Wait and Charge take turns (Options.Share)
	}
	r.workers += workers
	for w := range workers {
		c.o.Spawn(func() {
			defer r.workerDone()
			r.work(sp, w == 0)
		})
	}
}

// workerDone ends a worker; the last one closes the verify stage's input,
// after which the store stage ends the run.
func (r *spreadRun) workerDone() {
	r.c.spread.Lock()
	r.workers--
	last := r.workers == 0
	if last {
		r.closed = true
		if r.c.spread.run == r {
			r.c.spread.run = nil
		}
	}
	r.c.spread.Unlock()
	if last {
		close(r.stage.pages)
	}
}

// drop ends peer src's part in r with err: its workers stop and the
// shard they held goes back to the queue from where it stopped.
func (r *spreadRun) drop(src int, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	sp := r.mu.peers[src]
	if sp.err == nil {
		sp.err = err
		r.c.o.Logger.Debug("catch-up: peer dropped", "peer", sp.id, "err", err)
	}
	sp.cancel()
	r.mu.cond.Broadcast()
}

// work is one worker of sp: it fetches shards from the queue until none is
// left and every page is stored, then, for the first worker of a peer,
// checks the peer's other shards (check).
func (r *spreadRun) work(sp *spreadPeer, first bool) {
	for {
		i, ok := r.take(sp)
		if !ok {
			break
		}
		err := r.fetchShard(sp, i)
		r.mu.Lock()
		r.mu.taken--
		if err == nil {
			r.mu.servedBy[i] = sp.src
		} else {
			r.mu.queue = append(r.mu.queue, i)
		}
		r.mu.cond.Broadcast()
		r.mu.Unlock()
		if err != nil {
			if r.ctx.Err() == nil {
				r.drop(sp.src, err)
			}
			return
		}
	}
	if !first || sp.ctx.Err() != nil {
		return
	}
	if err := r.check(sp); err != nil {
		r.drop(sp.src, err)
		return
	}
	r.mu.Lock()
	sp.checked = true
	r.mu.Unlock()
}

// take returns the next shard of the queue for sp, waiting while the queue
// is empty and shards are being fetched or pages stored; ok is false once
// every shard is done and stored, or when sp was dropped or the run ended.
func (r *spreadRun) take(sp *spreadPeer) (shard int, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for {
		switch {
		case sp.ctx.Err() != nil:
			return 0, false
		case len(r.mu.queue) > 0:
			shard, r.mu.queue = r.mu.queue[0], r.mu.queue[1:]
			r.mu.taken++
			return shard, true
		case r.mu.taken == 0 && r.mu.delivered == r.mu.stored:
			return 0, false
		}
		r.mu.cond.Wait()
	}
}

// fetchShard fetches shard i from sp, from where it stopped: first, if
// this node holds events in it, by comparing fingerprints (a match
// fetches nothing), then page by page in id order.
func (r *spreadRun) fetchShard(sp *spreadPeer, i int) error {
	r.mu.Lock()
	rng, from := r.mu.shards[i], r.mu.from[i]
	r.mu.Unlock()
	moved := func(next string) {
		r.mu.Lock()
		r.mu.from[i] = next
		r.mu.Unlock()
	}
	if from == rng.From {
		same, list, err := r.same(sp, rng)
		switch {
		case err != nil || same:
			return err
		case list:
			return r.fetchMissing(sp, rng, moved)
		}
	}
	return r.fetch(sp, proto.IDRange{From: from, To: rng.To}, moved)
}

// same reports whether sp's ids in rng are this node's (their fingerprints
// match), or sp holds none in it (nothing to fetch); false without asking
// when this node holds none in it. When they differ, list reports whether
// the range is to be reconciled by sp's list of its ids (ADR 0057: sp
// serves them, and this node holds at least half as many ids in it,
// listPays) rather than fetched whole.
func (r *spreadRun) same(sp *spreadPeer, rng proto.IDRange) (same, list bool, err error) {
	n, sum, more, err := r.c.o.Log.Fingerprint(rng.From, rng.To, proto.MaxFingerprintIDs)
	if err != nil || n == 0 || more {
		return false, false, err
	}
	resp, err := r.ask(sp, &proto.SyncRequest{Limit: core.MaxPageEvents, IDs: &rng, Fingerprint: true})
	if err != nil {
		return false, false, err
	}
	s := resp.Sync
	switch {
	case s == nil:
		return false, false, fmt.Errorf("%w: answered %q to a fingerprint", ErrBadPage, resp.Type)
	case !s.More && (s.Count == 0 || s.Count == int64(n) && s.Fingerprint == hex.EncodeToString(sum[:])):
		return true, false, nil
	}
	return false, sp.lists && listPays(int(s.Count), n), nil
}

// countPage counts a request about to be sent to sp toward its bound,
// Client.RunPages a catch-up (ADR 0052 §4): past it, ErrRunBound.
func (r *spreadRun) countPage(sp *spreadPeer) error {
	r.mu.Lock()
	sp.pages++
	pages := sp.pages
	r.mu.Unlock()
	if pages > r.c.RunPages {
		return fmt.Errorf("%w: %d pages from %s", ErrRunBound, r.c.RunPages, sp.id)
	}
	return nil
}

// fetch pages through rng at sp in id order and delivers the pages to the
// verify stage; moved, if set, is told where the next page starts after
// each page delivered.
func (r *spreadRun) fetch(sp *spreadPeer, rng proto.IDRange, moved func(next string)) error {
	for from := rng.From; ; {
		if err := r.countPage(sp); err != nil {
			return err
		}
		resp, err := r.ask(sp, &proto.SyncRequest{Limit: core.MaxPageEvents, IDs: &proto.IDRange{From: from, To: rng.To}})
		if err != nil {
			return err
		}
		s := resp.Sync
		switch {
		case s == nil:
			return fmt.Errorf("%w: answered %q to sync", ErrBadPage, resp.Type)
		case len(s.Events) > core.MaxPageEvents:
			return fmt.Errorf("%w: %d events", ErrBadPage, len(s.Events))
		case len(s.Events) == 0 && s.More:
			return fmt.Errorf("%w: empty page with more", ErrBadPage)
		}
		last, err := checkIDPage(s.Events, rng, from)
		if err != nil {
			return err
		}
		if sp.share != nil {
			sp.share.Charge(s.Events)
		}
		if len(s.Events) > 0 {
			r.mu.Lock()
			r.mu.delivered++
			r.mu.Unlock()
			if err := r.stage.deliver(r.ctx, page{events: s.Events, more: s.More, src: sp.src}); err != nil {
				return err
			}
		}
		next, ok := nextID(last)
		if !s.More || !ok {
			return nil
		}
		if moved != nil {
			moved(next)
		}
		from = next
	}
}

// ask sends req to sp, paced to its rate and share, and waits out its
// refusals as fetchPages does (at most maxRefusalsInARow in a row).
func (r *spreadRun) ask(sp *spreadPeer, req *proto.SyncRequest) (*proto.Response, error) {
	for refusals := 0; ; refusals++ {
		if sp.share != nil {
			if err := sp.share.Wait(sp.ctx); err != nil {
				return nil, err
			}
		}
		if err := sp.pacer.Wait(sp.ctx); err != nil {
			return nil, err
		}
		ctx, cancel := sp.ctx, context.CancelFunc(func() {})
		if r.c.StallTimeout > 0 {
			ctx, cancel = context.WithTimeout(ctx, r.c.StallTimeout)
		}
		resp, err := r.c.o.Call(ctx, sp.id, req)
		cancel()
		var refused *proto.RefusedError
		if !errors.As(err, &refused) || refusals == maxRefusalsInARow {
			if err != nil {
				return nil, fmt.Errorf("catchup: sync by ids from %s: %w", sp.id, err)
			}
			return resp, nil
		}
		if r.c.o.Refused != nil {
			r.c.o.Refused()
		}
		sp.pacer.Refused(time.Duration(refused.RetryAfterMs) * time.Millisecond)
	}
}

// check compares sp's ids with this node's, groupShards shards at a
// time, and fetches from sp what differs (reconcile); a group whose
// shards sp served all is skipped. The shards sp served in a group
// match too, unless sp stored events in them since: those are fetched.
func (r *spreadRun) check(sp *spreadPeer) error {
	r.mu.Lock()
	shards, served := r.mu.shards, slices.Clone(r.mu.servedBy)
	r.mu.Unlock()
	for a := 0; a < len(shards); a += groupShards {
		b := min(a+groupShards, len(shards))
		if !slices.ContainsFunc(served[a:b], func(src int) bool { return src != sp.src }) {
			continue
		}
		if err := r.reconcile(sp, shards[a:b]); err != nil {
			return err
		}
	}
	return nil
}

// reconcile makes this node hold every id sp holds in the shards of
// group: nothing to do when their fingerprints match (or sp holds none);
// otherwise each half is reconciled, and of a single shard sp's ids are
// listed and those this node lacks fetched (ADR 0057), or, when the list
// does not pay or sp does not serve it, the shard is fetched whole.
func (r *spreadRun) reconcile(sp *spreadPeer, group []proto.IDRange) error {
	rng := proto.IDRange{From: group[0].From, To: group[len(group)-1].To}
	same, list, err := r.same(sp, rng)
	switch {
	case err != nil:
		return err
	case same:
		return nil
	case len(group) == 1 && list:
		return r.fetchMissing(sp, rng, nil)
	case len(group) == 1:
		return r.fetch(sp, rng, nil)
	}
	if err := r.reconcile(sp, group[:len(group)/2]); err != nil {
		return err
	}
	return r.reconcile(sp, group[len(group)/2:])
}

// store is the run's store stage: it writes the verified pages, counts
// what each peer brought, and once the verify stage is done (every worker
// ended), saves the cursors of the peers whose shards were all served or
// matched and releases the peers' locks.
func (r *spreadRun) store() {
	defer close(r.done)
	verified := r.stage.verify(r.ctx, r.stage.pages)
	group := make([]Page, 0, storeGroupPages)
	var err error
	for vp := range verified {
		group = r.stage.gather(append(group[:0], vp), verified)
		err = r.write(group)
		r.stage.ahead.Release(groupBytes(group))
		if err != nil {
			r.cancel()
			break
		}
	}
	for range verified {
	}
	r.finish(err)
}

// write appends the valid events of group in one durable batch and counts
// them to the peers they came from. The events over the log's quota are
// counted to the peer whose valid events were least often added.
func (r *spreadRun) write(group []Page) error {
	var ok []*eventlog.Event
	var raws [][]byte
	from := make(map[*eventlog.Event]int)
	for _, vp := range group {
		ok = append(ok, vp.OK...)
		raws = append(raws, vp.Raws...)
		for _, e := range vp.OK {
			from[e] = vp.src
		}
	}
	if err := r.c.o.Room(0); err != nil {
		return err
	}
	added, overQuota, err := r.c.o.Log.AppendEncoded(ok, raws)
	if err != nil {
		return fmt.Errorf("catchup: store synced events: %w", err)
	}
	r.mu.Lock()
	peers := r.mu.peers
	r.mu.stored += len(group)
	r.mu.Unlock()
	addedBy := make(map[int][]*eventlog.Event)
	for _, e := range added {
		addedBy[from[e]] = append(addedBy[from[e]], e)
	}
	rejectedBy := make(map[int][]error)
	valid := make(map[int]int)
	for _, vp := range group {
		rejectedBy[vp.src] = append(rejectedBy[vp.src], vp.Rejected...)
		valid[vp.src] += len(vp.OK)
	}
	quotaTo, most := -1, -1
	for src, n := range valid {
		if lost := n - len(addedBy[src]); overQuota > 0 && lost > most {
			quotaTo, most = src, lost
		}
	}
	r.mu.Lock()
	for _, vp := range group {
		peers[vp.src].st.Received += uint64(len(vp.Events))
	}
	for src, sp := range peers {
		sp.st.Stored += uint64(len(addedBy[src]))
		sp.st.Dropped += uint64(len(rejectedBy[src]))
		if src == quotaTo {
			sp.st.OverQuota += uint64(overQuota)
		}
	}
	progress, watchers := r.progressLocked(), r.mu.watchers
	r.mu.cond.Broadcast()
	r.mu.Unlock()
	if r.c.o.Stored != nil {
		for src, sp := range peers {
			q := 0
			if src == quotaTo {
				q = overQuota
			}
			if len(addedBy[src]) > 0 || len(rejectedBy[src]) > 0 || q > 0 {
				r.c.o.Stored(sp.id, addedBy[src], rejectedBy[src], q)
			}
		}
	}
	for _, w := range watchers {
		(*w)(progress)
	}
	return nil
}

// progressLocked returns each peer's progress. REQUIRES: r.mu is held.
func (r *spreadRun) progressLocked() []Progress {
	out := make([]Progress, len(r.mu.peers))
	for i, sp := range r.mu.peers {
		out[i] = sp.st
	}
	return out
}

// finish ends the run after its stages ended with err: the cursors of the
// peers that completed are set to their heads at joining (durably), the
// peers' locks are released, and the final progress is kept and told.
func (r *spreadRun) finish(err error) {
	r.cancel()
	r.mu.Lock()
	peers := r.mu.peers
	incomplete := len(r.mu.queue) > 0 || r.mu.taken > 0
	r.mu.Unlock()
	for _, sp := range peers {
		r.mu.Lock()
		complete := err == nil && sp.checked && sp.err == nil && !incomplete
		r.mu.Unlock()
		if complete {
			cursor := max(sp.start, sp.head)
			if serr := r.c.o.SaveCursor(sp.id, cursor, true); serr != nil {
				complete = false
				r.c.o.Logger.Debug("catch-up: cursor not saved", "peer", sp.id, "err", serr)
			}
			r.mu.Lock()
			sp.st.Cursor, sp.st.Done = cursor, complete
			r.mu.Unlock()
		}
		sp.unlock()
	}
	r.mu.Lock()
	r.final, r.err = r.progressLocked(), err
	if r.err == nil && incomplete {
		r.err = ErrSpreadIncomplete
	}
	watchers := r.mu.watchers
	r.mu.Unlock()
	for _, st := range r.final {
		if st.Done && (st.Stored > 0 || st.Dropped > 0) && r.c.o.Synced != nil {
			r.c.o.Synced(st.Peer, st)
		}
	}
	for _, w := range watchers {
		(*w)(r.final)
	}
}

// watch calls f with each peer's progress after every write, and at the
// end, until unwatch is called (a call in progress then may still end
// after it).
func (r *spreadRun) watch(f func([]Progress)) (unwatch func()) {
	w := &f
	r.mu.Lock()
	r.mu.watchers = append(r.mu.watchers, w)
	r.mu.Unlock()
	return func() {
		r.mu.Lock()
		r.mu.watchers = slices.DeleteFunc(r.mu.watchers, func(x *func([]Progress)) bool { return x == w })
		r.mu.Unlock()
	}
}

// peerError returns the error that dropped p from r, or nil.
func (r *spreadRun) peerError(p peer.ID) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, sp := range r.mu.peers {
		if sp.id == p {
			return sp.err
		}
	}
	return nil
}
