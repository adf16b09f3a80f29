package node

import (
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/wats-network/wats/limits"
	"github.com/wats-network/wats/peercache"
)

// Value history and tiers (ADR 0030): every peer's requests
// and what it gave are counted in its run state (peers.go), its tier is
// worked out from them, and a peer earns a peer-cache record only by
// showing value; what a hello alone earns is forgotten with the connection.

const (
	// valueAfterConnected is how long a peer must stay connected after
	// hello, without becoming suspect, to have shown value: a Sybil flood
	// must hold each of its ids that long to get them records.
	valueAfterConnected = 5 * time.Minute
	// foldInterval is how often the node adds the counts of its peers
	// with records to the peer cache (in memory: the cache's own flusher
	// writes them), checks valueAfterConnected, and updates the
	// connection manager's tags. The peer cache flushes every 5 s too, so
	// a kill -9 loses at most the last ten seconds of counts.
	foldInterval = 5 * time.Second
	// newRecordsPerMin is the budget of new peer-cache records, for all
	// peers together: 60 a minute (a burst of 15, ADR 0014's rule for a
	// bucket). Events, blobs and solutions are cheap to make for a flood
	// of fresh ids; the budget bounds how fast such a flood writes
	// records and how much of the cache it can take before eviction
	// catches up (ADR 0030). A peer put off stays a stranger until its
	// record is made, and is tried again every foldInterval.
	newRecordsPerMin = 60
)

// newRecordBudget is the shared bucket of newRecordsPerMin.
func newRecordBudget() *limits.Shared {
	r, _ := limits.NewRate(newRecordsPerMin) // a valid rate: fails never
	return limits.NewShared(r)
}

// recordAged reports whether a record made at firstSeen is at least
// limits.ValuedAge old at now (wall clock: a record's age outlives the
// run). A first_seen in the future (the clock stepped back) is not aged.
func recordAged(firstSeen, now time.Time) bool {
	return !firstSeen.IsZero() && now.Sub(firstSeen) >= limits.ValuedAge
}

// connTag is the connection manager's tag of the node's peers, by tier:
// the manager trims the connections of the lowest sums first, so suspects
// go before strangers, and strangers before the peers that showed value.
const connTag = "wats-tier"

var tierTagValue = [limits.NumTiers]int{
	limits.TierSuspect: -100,
	limits.TierNew:     0,
	limits.TierNormal:  20,
	limits.TierValued:  50,
}

// mono is the node's monotonic reading at now: nanoseconds since New, from
// now's monotonic clock (time.Now has one, so a step of the wall clock does
// not move it), or from Options.Mono when set.
func (n *Node) mono(now time.Time) time.Duration {
	if n.monoClock != nil {
		return n.monoClock()
	}
	return now.Sub(n.epoch)
}

// peerState returns p's run state, creating it (from p's record, or from
// what the node remembers of a recent stay) on its first connection or
// stream. dir is the direction of the connection that brought it.
//
// Creating and dropping p's state hold p's stripe lock (runPeers.stripe),
// so that a reconnection racing the disconnection before it reads what
// that disconnection remembered, never the history of before it: a peer
// cannot shed its history by reconnecting at the right moment.
func (n *Node) peerState(p peer.ID, dir network.Direction) *peerState {
	if st := n.run.get(p); st != nil {
		return st
	}
	st, created := n.newPeerState(p, dir)
	if !created {
		return st
	}
	if dir == network.DirInbound && !st.reputed(n.mono(n.now())) {
		n.takeStrangerSlot(st)
	}
	n.tagTier(st, st.Tier())
	if !n.linked(p) {
		// A stream's handler ran after the peer's last connection closed
		// (and its notice went by): the state would never be dropped.
		// dropGonePeerState checks again under the stripe lock.
		n.dropGonePeerState(p)
	}
	return st
}

// newPeerState builds and publishes p's state under p's stripe lock, or
// returns the one another goroutine published first (created false).
func (n *Node) newPeerState(p peer.ID, dir network.Direction) (st *peerState, created bool) {
	mu := n.run.stripe(p)
	mu.Lock()
	defer mu.Unlock()
	if st := n.run.get(p); st != nil {
		return st, false
	}
	// Built before it is published: st.mu needs no lock until Store.
	st = &peerState{id: p, gone: make(chan struct{})}
	st.raw, st.rawOK = rawID(p)
	mono := n.mono(n.now())
	st.connectedAt = int64(mono)
	st.lastActive.Store(int64(mono))
	st.mu.dir = dir
	st.outbound.Store(dir == network.DirOutbound)
	if conns := n.host.Network().ConnsToPeer(p); len(conns) > 0 {
		st.mu.remote = conns[0].RemoteMultiaddr().String()
	}
	if r, ok := n.peers.Get(p); ok {
		st.persisted.Store(true)
		st.recordMade.Store(r.FirstSeen.UnixNano())
		st.aged.Store(recordAged(r.FirstSeen, n.now()))
		st.metEarlier.Store(n.peers.MetInEarlierRun(p))
		c := r.Counts
		st.hist.store(c)
		st.mu.folded = c
	}
	if rp, ok := n.run.recent.Peek(p); ok && rp.until > mono {
		st.firstHello.Store(rp.firstHello)
		if !st.persisted.Load() {
			st.hist.store(rp.hist)
			st.mu.cursor = rp.cursor
		}
	}
	st.retier()
	n.run.live.Store(p, st)
	n.run.recent.Remove(p) // live again: the state holds what was remembered
	return st, true
}

// dropPeerState forgets p's run state: the counts of a peer with a record
// go to the cache, what is known of one without is kept in runPeers.recent
// for recentFor. It drops the state whether or not p is connected (at
// Close, or when p is dropped for good); a disconnection is
// dropGonePeerState.
func (n *Node) dropPeerState(p peer.ID) {
	if st := n.forgetPeerState(p, false); st != nil {
		n.run.slots.Gone(st)
		n.stopHeads(st)
	}
}

// dropGonePeerState is dropPeerState at p's last disconnection: it does
// nothing while p is connected. That is checked under p's stripe lock, the
// lock a hello is recorded under (recordHello), so a reconnection racing
// a late disconnection notice never loses its hello: either the hello
// comes first, over a connection the check then sees, or the state is
// dropped first and the hello goes to the state of the new connection.
func (n *Node) dropGonePeerState(p peer.ID) {
	if st := n.forgetPeerState(p, true); st != nil {
		n.run.slots.Gone(st)
		n.stopHeads(st)
	}
}

// forgetPeerState is dropPeerState's part under p's stripe lock: it
// unpublishes p's state and keeps what is to be kept of it; it returns the
// state, nil if p had none, or, when ifGone, if p is connected.
func (n *Node) forgetPeerState(p peer.ID, ifGone bool) *peerState {
	mu := n.run.stripe(p)
	mu.Lock()
	defer mu.Unlock()
	if ifGone && n.linked(p) {
		return nil
	}
	v, ok := n.run.live.LoadAndDelete(p)
	if !ok {
		return nil
	}
	st := v.(*peerState)
	now := n.now()
	cursor, remote := st.leaving()
	if st.persisted.Load() {
		n.fold(st, now)
		_ = n.peers.Update(p, false, func(r *peercache.Record) {
			r.LastSeen = now.UTC()
			if remote != "" {
				r.RemoteAddr = remote
			}
		})
	} else {
		n.run.recent.Add(p, recentPeer{hist: st.hist.load(), firstHello: st.firstHello.Load(), cursor: cursor,
			until: n.mono(now) + recentFor})
	}
	if st.firstHello.Load() != 0 && st.persisted.Load() {
		// Keep its first hello for ADR 0014's ten minutes across
		// reconnects; its history is in its record.
		n.run.recent.Add(p, recentPeer{firstHello: st.firstHello.Load(), until: n.mono(now) + recentFor})
	}
	return st
}

// fold adds the counts st gathered since the last fold to its record.
func (n *Node) fold(st *peerState, now time.Time) {
	n.peers.Add(st.id, st.unfolded(), now)
}

// foldLoop runs every foldInterval: it adds the counts of the connected
// peers with records to the peer cache (and marks the records that became
// a day old), and gives a record to the peers that showed value while the
// budget of new records was spent, and to those that stayed connected
// valueAfterConnected after hello.
func (n *Node) foldLoop() { n.every(foldInterval, n.foldAll) }

// every runs f every d until the node closes.
func (n *Node) every(d time.Duration, f func()) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-n.ctx.Done():
			return
		case <-t.C:
			f()
		}
	}
}

// foldAll is one round of foldLoop.
func (n *Node) foldAll() {
	now := n.now()
	mono := n.mono(now)
	n.run.each(func(st *peerState) {
		decaySpam(st)
		if st.persisted.Load() {
			n.fold(st, now)
			if made := st.recordMade.Load(); !st.aged.Load() && made != 0 && recordAged(time.Unix(0, made), now) {
				st.aged.Store(true)
				if t, changed := st.retier(); changed {
					n.tierChanged(st, t)
				}
			}
			return
		}
		if pending := st.pendingValue(); pending != "" {
			n.showedValue(st, pending)
			return
		}
		if st.helloed() && mono-time.Duration(st.connectedAt) >= valueAfterConnected && st.Tier() != limits.TierSuspect {
			n.showedValue(st, peercache.ValueConnected)
		}
	})
}

// count adds to one of st's counts and works out its tier again; a change
// of tier retags the peer. It is the request path's bookkeeping: atomics
// only, unless the tier changes.
func (n *Node) count(st *peerState, c *atomic.Uint64, k uint64) {
	c.Add(k)
	if t, changed := st.retier(); changed {
		n.tierChanged(st, t)
	}
}

// tierChanged reacts to st's new tier t: the connection manager's tag, and
// the stranger slots' order (a suspect is the first evicted).
func (n *Node) tierChanged(st *peerState, t limits.Tier) {
	n.tagTier(st, t)
	n.m.tierChange(t)
}

// tagTier sets the connection manager's tag of st's tier.
func (n *Node) tagTier(st *peerState, t limits.Tier) {
	if cm := n.host.ConnManager(); cm != nil && t.Valid() {
		cm.TagPeer(st.id, connTag, tierTagValue[t])
	}
}

// gave records that p gave this node events (valid events it lacked) or
// blob bytes: value, which earns p a record if it has none (ADR 0030).
func (n *Node) gave(p peer.ID, events, bytes uint64) {
	if p == "" || p == n.host.ID() || events == 0 && bytes == 0 {
		return
	}
	st := n.run.get(p)
	if st == nil {
		return // gone: what it gave is not credited to a stranger's next stay
	}
	if events > 0 {
		n.count(st, &st.hist.events, events)
	}
	if bytes > 0 {
		n.count(st, &st.hist.bytes, bytes)
	}
	value := peercache.ValueEvents
	if events == 0 {
		value = peercache.ValueBlobs
	}
	n.showedValue(st, value)
}

// showedValue gives st a peer-cache record if it has none: it showed value
// (how: one of peercache's Value constants). The record is synced at once,
// with what the peer's hello said, its counts and its sync cursor: that
// the node met it is what gives it a reputation after a restart (ADR
// 0014), and it happens once per peer that showed value, not per hello. A
// suspect earns no record. When the budget of new records
// (newRecordsPerMin) is spent, the record is put off: foldAll tries again.
func (n *Node) showedValue(st *peerState, value string) {
	if st.persisted.Load() || st.Tier() == limits.TierSuspect {
		return
	}
	now := n.now()
	made := now.UTC()
	rec, ok, deferred := st.takeRecord(value, made, func() bool {
		ok, _ := n.records.Allow(int64(n.mono(now)))
		return ok
	})
	if deferred {
		n.m.recordDeferred()
	}
	if !ok {
		return
	}
	value, h, cursor, remote, total := rec.value, rec.hello, rec.cursor, rec.remote, rec.total
	err := n.peers.Update(st.id, true, func(r *peercache.Record) {
		if r.FirstSeen.IsZero() {
			r.FirstSeen = now.UTC()
		}
		made = r.FirstSeen
		r.LastSeen = now.UTC()
		if remote != "" {
			r.RemoteAddr = remote
		}
		if h != nil {
			r.LastHello = now.UTC()
			r.Agent, r.Features = h.Agent, cacheableFeatures(h.Features)
			r.MergeAddrs(cacheableAddrs(h.Listen))
		}
		r.Cursor = max(r.Cursor, cursor)
		r.Value = value
		r.Counts = total
		if total.Events > 0 || total.Bytes > 0 {
			r.LastUseful = now.UTC()
		}
	})
	if err != nil {
		n.log.Warn("peer cache write failed", "peer", st.id, "err", err)
		st.putOff(value)
		st.persisted.Store(false)
		return
	}
	st.recordMade.Store(made.UnixNano())
	// Aged only ever turns true (a record only gets older), and with the
	// clock read now: a foldAll meanwhile, with a later clock, may have
	// found the record aged already.
	if recordAged(made, n.now()) {
		st.aged.Store(true)
	}
	// It keeps its stranger slot, if it holds one, until it is reputed
	// (peers.Slots.Take): a record is earned in seconds (ADR 0031).
	if t, changed := st.retier(); changed {
		n.tierChanged(st, t)
	}
	n.m.peerPersisted(value)
	n.plog.Info(st.id, "value", "peer showed value; remembered in the peer cache", "peer", st.id, "value", value)
}

// abuse counts an abuse signal of p (an invalid message, a stream held past
// its deadline) in its history.
func (n *Node) abuse(p peer.ID, field func(*counts) *atomic.Uint64) {
	if st := n.run.get(p); st != nil {
		n.count(st, field(&st.hist), 1)
	}
}

// historyOf returns the value history of p, connected or not: its run
// state's, else its record's, else what runPeers.recent remembers.
func (n *Node) historyOf(p peer.ID) (limits.History, bool) {
	if st := n.run.get(p); st != nil {
		return st.History(), true
	}
	if r, ok := n.peers.Get(p); ok {
		return history(r.Counts, true, recordAged(r.FirstSeen, n.now())), true
	}
	if rp, ok := n.run.recent.Peek(p); ok {
		return history(rp.hist, false, false), true
	}
	return limits.History{}, false
}
