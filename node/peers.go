package node

import (
	"hash/maphash"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/wats-network/wats/challenge"
	"github.com/wats-network/wats/limits"
	"github.com/wats-network/wats/peers"
	"github.com/wats-network/wats/proto"

	"github.com/wats-network/wats/core"
)

// Bounds of the run state of peers (ADR 0030).
const (
	// maxRecentPeers is how many disconnected peers without a peer-cache
	// record the node remembers (their value history, first hello and
	// sync cursor), so that an id that reconnects neither clears its
	// suspicion nor restarts ADR 0014's ten minutes. About 200 bytes
	// each: 3 MiB. Past it the least recently disconnected is forgotten.
	maxRecentPeers = 16_384
	// recentFor is how long such a peer is remembered.
	recentFor = time.Hour
)

// counts is a value history as atomics: each field the same as in
// core.Counts.
type counts struct {
	served, refused, challenged, solved, misses atomic.Uint64
	invalid, failed, timeouts                   atomic.Uint64
	events, bytes                               atomic.Uint64
}

// load returns the counts as core.Counts.
func (c *counts) load() core.Counts {
	return core.Counts{
		Served: c.served.Load(), Refused: c.refused.Load(), Challenged: c.challenged.Load(),
		Solved: c.solved.Load(), Misses: c.misses.Load(), Invalid: c.invalid.Load(),
		Failed: c.failed.Load(), Timeouts: c.timeouts.Load(), Events: c.events.Load(), Bytes: c.bytes.Load(),
	}
}

// store sets the counts from d.
func (c *counts) store(d core.Counts) {
	c.served.Store(d.Served)
	c.refused.Store(d.Refused)
	c.challenged.Store(d.Challenged)
	c.solved.Store(d.Solved)
	c.misses.Store(d.Misses)
	c.invalid.Store(d.Invalid)
	c.failed.Store(d.Failed)
	c.timeouts.Store(d.Timeouts)
	c.events.Store(d.Events)
	c.bytes.Store(d.Bytes)
}

// history returns the value history d of a peer, persisted or not (and if
// persisted, with a record aged or not: limits.History.Aged), as
// limits.History.
func history(d core.Counts, persisted, aged bool) limits.History {
	return limits.History{Counts: d, Persisted: persisted, Aged: persisted && aged}
}

// peerState is what this node knows of one peer in this run, from its first
// connection (or first stream) to its last disconnection; runPeers owns it.
// What the request path reads is in atomics, so that admission takes no
// lock of the node's; the rest is guarded by mu.
type peerState struct {
	id peer.ID
	// raw is the peer's raw Ed25519 public key: the requester id of the
	// puzzles this node issues it. rawOK is false for other key types,
	// which the gater refuses anyway.
	raw   [challenge.IDLen]byte
	rawOK bool

	// canSolve: its last hello advertised "challenge" (ADR 0014: never
	// challenge a peer that did not).
	canSolve atomic.Bool
	// helloDone: it completed hello on this connection; read it with
	// helloed, the one rule of "hello done" (blobs.serve =
	// "peers" serves only such peers; the sync loop syncs only from them).
	helloDone atomic.Bool
	// heardUs: this node's own hello to it was answered on this
	// connection, so it holds this node's hello (a peer records a hello
	// before it answers). Its hello to this node alone does not say so:
	// this node's answer may still be on its way, and a want sent then
	// is answered DONT_HAVE (helloFirst).
	heardUs atomic.Bool
	// notWats: an explicit connect found that it does not speak /wats/1
	// (an IPFS node, say): a blob provider over bitswap and nothing more.
	notWats atomic.Bool
	// firstHello is the monotonic reading (ns since the node's epoch,
	// plus one, so that 0 means never) of its first completed hello in
	// this run: ADR 0014's ten minutes count from it.
	firstHello atomic.Int64
	// metEarlier: it was in the peer cache when the node started (ADR
	// 0014: "met in an earlier run").
	metEarlier atomic.Bool
	// outbound: this node dialled it (its first connection was outbound),
	// which gives it standing (heads.go: standing, ADR 0041).
	outbound atomic.Bool
	// persisted: it has a peer-cache record, which a peer earns by
	// showing value (ADR 0030).
	persisted atomic.Bool
	// aged: its record is at least limits.ValuedAge old (by recordMade),
	// which being valued takes; foldAll sets it when the day is up.
	aged atomic.Bool
	// recordMade is its record's first_seen (Unix ns, wall clock); 0
	// while it has none.
	recordMade atomic.Int64
	// tier is its limits.Tier, worked out again whenever hist changes.
	tier atomic.Uint32
	// lastActive is the monotonic reading of its connection or its last
	// served request: the stranger slots evict the least recently active.
	lastActive atomic.Int64
	// pages counts the sync pages being served to it (handler.go).
	pages atomic.Int32
	// servedHere counts its requests served on this stay: the stranger
	// slots spare the strangers served the most.
	servedHere atomic.Uint32
	// connectedAt is the monotonic reading of its first connection of
	// this stay: a peer that stays connected valueAfterConnected after
	// hello has shown value.
	connectedAt int64
	// The streams it holds now, by kind, against the caps of its tier
	// (streams.go).
	unnegotiated, watsStreams, bitswapStreams atomic.Int32
	// capRefusals counts its streams reset over a cap in the second
	// capWindow (monotonic seconds): past maxCapRefusals it is banned.
	capRefusals atomic.Int32
	capWindow   atomic.Int64
	// throttleLogged holds, per request type, the monotonic reading plus
	// one of its last "peer throttled" line: within limits.LogInterval the
	// line is suppressed here, without the LogCap's lock.
	throttleLogged [core.NumRequests]atomic.Int64

	// hist is its value history: the record's counts when the state was
	// built, plus this run's.
	hist counts

	mu struct {
		sync.Mutex
		// hello is its last hello; nil before hello completes.
		hello *proto.Hello
		// greeting is set while this node's own hello to the peer is in
		// flight.
		greeting *greeting
		// pacer paces this node's sync requests to the peer's advertised
		// sync_per_min (nil before hello); it lives as long as the
		// connection, as the peer's bucket for us does.
		pacer *limits.Pacer
		// cursor is the sync cursor into its log while it has no record
		// (with one, the record keeps it).
		cursor core.Cursor
		// pending is the value it showed (a peercache Value constant)
		// while the budget of new records put its record off; "" for
		// none. foldAll tries again.
		pending string
		// folded is the part of hist already added to its record.
		folded core.Counts
		dir    network.Direction
		// remote is the remote multiaddr of the connection that brought
		// it ("" if it was gone): its record's remote_addr.
		remote string
	}
	// syncMu serializes the syncs from the peer (syncer.go).
	syncMu sync.Mutex
	// gap is set when gossip may have missed an event the peer forwarded
	// and a sync from it is due at once (syncGap).
	gap atomic.Bool
	// announcing: this node's announcer of its heads to the peer runs;
	// headsIn is the peer's Heads stream being read, nil for none; gone is
	// closed (once, goneOnce) when the state is dropped, which ends the
	// announcer (heads.go).
	announcing atomic.Bool
	headsIn    atomic.Pointer[network.Stream]
	gone       chan struct{}
	goneOnce   sync.Once
	// spam counts the envelopes of its own the peer forwarded over its own
	// author budget (gossip.go: spammed); it lowers its gossipsub score.
	spam atomic.Uint64
}

// History returns the peer's value history.
func (st *peerState) History() limits.History {
	return history(st.hist.load(), st.persisted.Load(), st.aged.Load())
}

// Tier returns the peer's tier.
func (st *peerState) Tier() limits.Tier { return limits.Tier(st.tier.Load()) }

// retier works out the peer's tier again from its history; it reports
// whether it changed.
func (st *peerState) retier() (limits.Tier, bool) {
	t := limits.TierOf(st.History())
	return t, limits.Tier(st.tier.Swap(uint32(t))) != t
}

// reputed reports ADR 0014's established reputation at the monotonic
// reading mono: in the peer cache from an earlier run, or first completed
// hello with this node at least core.ReputationAge ago.
func (st *peerState) reputed(mono time.Duration) bool {
	return peers.Reputed(st.metEarlier.Load(), st.firstHello.Load(), mono)
}

// stranger is what the stranger slots read of the peer at mono.
func (st *peerState) stranger(mono time.Duration) peers.Stranger {
	return peers.Stranger{
		Suspect: st.Tier() == limits.TierSuspect, Reputed: st.reputed(mono), Served: st.servedHere.Load(),
		ConnectedAt: st.connectedAt, LastActive: st.lastActive.Load(),
	}
}

// facts are what admission knows of the peer at mono.
func (st *peerState) facts(mono time.Duration) limits.Facts {
	return limits.Facts{Tier: st.Tier(), CanSolve: st.canSolve.Load(), Reputed: st.reputed(mono)}
}

// The fields under st.mu are read and written only by the methods below,
// so that each lock of it is here, beside the fields it guards.

// hello returns the peer's last hello, nil before one completed.
func (st *peerState) hello() *proto.Hello {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.mu.hello
}

// helloed reports whether the peer completed hello on this stay: the one
// rule of "hello done" (blobs.serve = "peers" serves only such peers; the
// sync loop syncs only from them; gossip gaps are synced only from them).
func (st *peerState) helloed() bool { return st.helloDone.Load() }

// helloed reports whether p is connected and completed hello on this stay
// (peerState.helloed).
func (n *Node) helloed(p peer.ID) bool {
	st := n.run.get(p)
	return st != nil && st.helloed()
}

// helloAndDirection returns the peer's last hello (nil before one) and the
// direction of the connection that brought it.
func (st *peerState) helloAndDirection() (*proto.Hello, network.Direction) {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.mu.hello, st.mu.dir
}

// setHello records a completed hello at the monotonic reading mono: the
// hello, the pacer of the peer's advertised sync rate (kept while the rate
// is the same), whether it solves challenges, and its first hello of this
// run (ADR 0014's ten minutes count from it). first reports whether it is
// the first hello of this stay.
func (st *peerState) setHello(h *proto.Hello, syncPerMin int, mono time.Duration) (first bool) {
	st.mu.Lock()
	st.mu.hello = h
	if st.mu.pacer == nil || st.mu.pacer.Rate().PerMin() != syncPerMin {
		st.mu.pacer = limits.NewPacer(syncPerMin)
	}
	st.mu.Unlock()
	st.canSolve.Store(slices.Contains(h.Features, proto.FeatureChallenge))
	first = !st.helloDone.Swap(true)
	st.firstHello.CompareAndSwap(0, int64(mono)+1)
	return first
}

// pacer returns the pacer of this node's sync requests to the peer, nil
// before hello.
func (st *peerState) pacer() *limits.Pacer {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.mu.pacer
}

// greet returns the hello to the peer in flight, or, when none is, starts
// one: g is then new and mine is true, and the caller ends it with
// endGreeting.
func (st *peerState) greet() (g *greeting, mine bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if g := st.mu.greeting; g != nil {
		return g, false
	}
	st.mu.greeting = &greeting{done: make(chan struct{})}
	return st.mu.greeting, true
}

// endGreeting ends the hello in flight g with its outcome err.
func (st *peerState) endGreeting(g *greeting, err error) {
	st.mu.Lock()
	st.mu.greeting = nil
	st.mu.Unlock()
	g.err = err
	close(g.done)
}

// runCursor and setRunCursor are the sync cursor into the peer's log while
// it has no record (with one, the record keeps it).
func (st *peerState) runCursor() core.Cursor {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.mu.cursor
}

func (st *peerState) setRunCursor(c core.Cursor) {
	st.mu.Lock()
	st.mu.cursor = c
	st.mu.Unlock()
}

// leaving returns what its record or the recent peers keep of a peer that
// disconnects: its run cursor and the remote address that brought it.
func (st *peerState) leaving() (cursor core.Cursor, remote string) {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.mu.cursor, st.mu.remote
}

// unfolded returns the counts gathered since the last call, which the
// caller adds to the peer's record.
func (st *peerState) unfolded() core.Counts {
	st.mu.Lock()
	defer st.mu.Unlock()
	total := st.hist.load()
	d := total.Minus(st.mu.folded)
	st.mu.folded = total
	return d
}

// pendingValue returns the value the peer showed while the budget of new
// records put its record off, "" for none.
func (st *peerState) pendingValue() string {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.mu.pending
}

// putOff keeps value as the peer's pending value, unless one is pending
// already (what it showed first counts); it reports whether it was the
// first.
func (st *peerState) putOff(value string) (first bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.mu.pending != "" {
		return false
	}
	st.mu.pending = value
	return true
}

// recordTaken is what a new record of the peer is written from (takeRecord).
type recordTaken struct {
	value  string // what it showed first
	hello  *proto.Hello
	cursor core.Cursor
	remote string
	total  core.Counts
}

// takeRecord marks the peer persisted, made at the wall-clock time made,
// if it is not yet and allow (the budget of new records) says yes; it
// returns what the record is written from, its history then counted as
// folded. With allow's no, value is kept pending (putOff) and deferred
// reports whether it was the first to be. The caller undoes a failed write
// with putOff and persisted.Store(false).
func (st *peerState) takeRecord(value string, made time.Time, allow func() bool) (rec recordTaken, ok, deferred bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.persisted.Load() {
		return recordTaken{}, false, false
	}
	if !allow() {
		if st.mu.pending == "" {
			st.mu.pending = value
			return recordTaken{}, false, true
		}
		return recordTaken{}, false, false
	}
	if st.mu.pending != "" {
		value = st.mu.pending
	}
	st.mu.pending = ""
	rec = recordTaken{value: value, hello: st.mu.hello, cursor: st.mu.cursor, remote: st.mu.remote, total: st.hist.load()}
	st.mu.folded = rec.total
	st.recordMade.Store(made.UnixNano()) // before persisted: foldAll reads it then
	st.persisted.Store(true)
	return rec, true, false
}

// recentPeer is what runPeers remembers of a disconnected peer.
type recentPeer struct {
	hist       core.Counts   // its history, when it had no record
	firstHello int64         // as peerState.firstHello
	cursor     core.Cursor   // its sync cursor, when it had no record
	until      time.Duration // monotonic reading at which it is forgotten
}

// runPeers owns the peerStates of the peers of this run: the connected
// ones in a sync.Map (read without a lock on the request path), the
// disconnected ones without a record in a bounded LRU, and the stranger
// connection slots (peers.Slots, ADR 0030).
type runPeers struct {
	// live maps a peer.ID to its *peerState while it is connected.
	live sync.Map
	// recent holds the disconnected peers of this run.
	recent *lru.Cache[peer.ID, recentPeer]
	// stripes serialize the creation and the dropping of each peer's
	// state (Node.peerState): a peer's stripe is its id's hash modulo
	// numStripes, so unrelated peers rarely wait on each other.
	stripes [numStripes]sync.Mutex
	seed    maphash.Seed

	// slots are the stranger connection slots.
	slots *peers.Slots[*peerState]
}

// numStripes is the number of runPeers.stripes.
const numStripes = 64

// stripe returns p's stripe lock.
func (r *runPeers) stripe(p peer.ID) *sync.Mutex {
	return &r.stripes[maphash.String(r.seed, string(p))%numStripes]
}

// newRunPeers returns the run state of no peers, with slots stranger
// connection slots.
func newRunPeers(slots int) *runPeers {
	r := &runPeers{seed: maphash.MakeSeed()}
	r.recent, _ = lru.New[peer.ID, recentPeer](maxRecentPeers) // fails only for a size <= 0
	r.slots = peers.NewSlots(slots, (*peerState).stranger)
	return r
}

// get returns p's state while it is connected, else nil.
func (r *runPeers) get(p peer.ID) *peerState {
	if v, ok := r.live.Load(p); ok {
		return v.(*peerState)
	}
	return nil
}

// each calls f for every connected peer's state.
func (r *runPeers) each(f func(*peerState)) {
	r.live.Range(func(_, v any) bool {
		f(v.(*peerState))
		return true
	})
}
