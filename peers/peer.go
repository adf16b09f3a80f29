package peers

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/wats-network/wats/challenge"
	"github.com/wats-network/wats/core"
	"github.com/wats-network/wats/limits"
	"github.com/wats-network/wats/proto"
)

// Peer is all a node knows of one peer in this run, from its first
// connection (or first stream) to its last disconnection: its connection's
// facts, its hello, its tier and value history, its standing, its sync
// cursor while it has no record, and the counts of its floods. Its Table
// creates it and drops it. What the request path reads is in atomics, so
// that admission takes no lock of the node's; the rest is guarded by mu.
//
// Link is the node's own plumbing for the peer (its streams, its hello in
// flight, its announcer): it lives exactly as long as the Peer, and the
// Table never reads it.
type Peer[L any] struct {
	id peer.ID
	// raw is the peer's raw Ed25519 public key: the requester id of the
	// puzzles this node issues it. rawOK is false for other key types,
	// which the gater refuses anyway.
	raw   [challenge.IDLen]byte
	rawOK bool

	// canSolve: its last hello advertised "challenge" (ADR 0014: never
	// challenge a peer that did not).
	canSolve atomic.Bool
	// helloDone: it completed hello on this stay (Helloed).
	helloDone atomic.Bool
	// heardUs: this node's own hello to it was answered on this
	// connection (HeardUs).
	heardUs atomic.Bool
	// notWats: an explicit connect found that it does not speak /wats/1.
	notWats atomic.Bool
	// firstHello is the monotonic reading (ns since the node's epoch,
	// plus one, so that 0 means never) of its first completed hello in
	// this run: ADR 0014's ten minutes count from it.
	firstHello atomic.Int64
	// metEarlier: it was in the peer cache when the node started (ADR
	// 0014: "met in an earlier run").
	metEarlier atomic.Bool
	// chosen: this node chose to dial it (Table.Choose, Table.ChooseAlways),
	// which gives it standing (ADR 0041); the direction of its
	// connections does not.
	chosen atomic.Bool
	// persisted: it has a peer-cache record, which a peer earns by
	// showing value (ADR 0030).
	persisted atomic.Bool
	// aged: its record is at least limits.ValuedAge old (by recordMade),
	// which being valued takes; Fold sets it when the day is up.
	aged atomic.Bool
	// recordMade is its record's first_seen (Unix ns, wall clock); 0
	// while it has none.
	recordMade atomic.Int64
	// tier is its limits.Tier, worked out again whenever hist changes.
	tier atomic.Uint32
	// lastActive is the monotonic reading of its connection or its last
	// served request: the stranger slots evict the least recently active.
	lastActive atomic.Int64
	// servedHere counts its requests served on this stay: the stranger
	// slots spare the strangers served the most.
	servedHere atomic.Uint32
	// paidAt is the monotonic reading, plus one (0: never), of its last
	// request served on this stay by a verified solution: the stranger
	// slots spare a stranger that paid (ADR 0060).
	paidAt atomic.Int64
	// greeted is what is left of its greeted allowance of DHT requests
	// (ADR 0059): GreetedRequests from a hello served while it is a
	// stranger, taken by TakeGreeted.
	greeted atomic.Int32
	// challengedHere and refusedHere count its requests answered with a
	// challenge, and refused, on this stay (what the peers list shows).
	challengedHere, refusedHere atomic.Uint32
	// connectedAt is the monotonic reading of its first connection of
	// this stay: a peer that stays connected ValueAfterConnected after
	// hello has shown value.
	connectedAt int64
	// capRefusals counts its streams reset over a cap in the second
	// capWindow (monotonic seconds): past MaxCapRefusals it is banned.
	capRefusals atomic.Int32
	capWindow   atomic.Int64
	// spam counts the envelopes of its own it forwarded over its own
	// author budget; Fold halves it.
	spam atomic.Uint64
	// pages counts the sync pages being served to it (Table.Page).
	pages atomic.Int32
	// streams counts the inbound streams it holds, by kind (Hold).
	streams [numStreamKinds]atomic.Int32
	// syncMu serializes this node's syncs from it (Table.SyncLock).
	syncMu sync.Mutex

	// hist is its value history: the record's counts when the state was
	// built, plus this run's.
	hist counts
	// adm is its admission state, held out of the admission Table while
	// it is connected, so that its requests take its lock alone
	// (limits.Held).
	adm *limits.Held

	mu struct {
		sync.Mutex
		// hello is its last hello; nil before hello completes.
		hello *proto.Hello
		// pacer paces this node's sync requests to the peer's advertised
		// sync_per_min (nil before hello); it lives as long as the
		// connection, as the peer's bucket for us does.
		pacer *limits.Pacer
		// cursor is the sync cursor into its log while it has no record
		// (with one, the record keeps it, and this is the last one saved,
		// which a record being written reads: SaveCursor).
		cursor core.Cursor
		// pending is the value it showed (a peercache Value constant)
		// while the budget of new records put its record off; "" for
		// none. Fold tries again.
		pending string
		// folded is the part of hist already added to its record.
		folded core.Counts
		dir    network.Direction
		// remote is the remote multiaddr of the connection that brought
		// it ("" if it was gone): its record's remote_addr.
		remote string
	}

	// Link is the node's plumbing for the peer; see Peer.
	Link L
}

// Counter names one count of a peer's value history (core.Counts).
type Counter int

// The counts of a value history, as core.Counts names them.
const (
	Served Counter = iota
	Refused
	Challenged
	Solved
	Misses
	Invalid
	Failed
	Timeouts
	Events
	Bytes
	numCounters
)

// counts is a value history as atomics, indexed by Counter.
type counts [numCounters]atomic.Uint64

// load returns the counts as core.Counts.
func (c *counts) load() core.Counts {
	return core.Counts{
		Served: c[Served].Load(), Refused: c[Refused].Load(), Challenged: c[Challenged].Load(),
		Solved: c[Solved].Load(), Misses: c[Misses].Load(), Invalid: c[Invalid].Load(),
		Failed: c[Failed].Load(), Timeouts: c[Timeouts].Load(), Events: c[Events].Load(), Bytes: c[Bytes].Load(),
	}
}

// store sets the counts from d.
func (c *counts) store(d core.Counts) {
	for k, v := range [numCounters]uint64{d.Served, d.Refused, d.Challenged, d.Solved, d.Misses,
		d.Invalid, d.Failed, d.Timeouts, d.Events, d.Bytes} {
		c[k].Store(v)
	}
}

// newPeer returns the state of p, connected at mono over a connection of
// direction dir from the multiaddr remote ("" for none).
func newPeer[L any](p peer.ID, dir network.Direction, remote string, mono time.Duration) *Peer[L] {
	st := &Peer[L]{id: p, connectedAt: int64(mono)}
	st.raw, st.rawOK = RawID(p)
	st.lastActive.Store(int64(mono))
	st.mu.dir, st.mu.remote = dir, remote
	return st
}

// unserve takes back the Served that admission counted for a request the
// node then refused (Table.Page: no page to give), never below zero (a
// sync request of the miss class was not counted).
func (st *Peer[L]) unserve() {
	for {
		n := st.hist[Served].Load()
		if n == 0 || st.hist[Served].CompareAndSwap(n, n-1) {
			return
		}
	}
}

// BlocksMoved records blocks of a blob sent to p or received from it at
// mono (a bitswap message, an answer of the block transfer): p is active
// as by a request served, counted in its requests served on this stay, so
// that the stranger slots spare a peer in the middle of a blob as they
// spare one being served syncs (docs/adr/0056).
func (st *Peer[L]) BlocksMoved(mono time.Duration) {
	st.lastActive.Store(int64(mono))
	st.servedHere.Add(1)
}

// RawID returns the raw 32-byte Ed25519 public key of p: the "endpoint id"
// of ADR 0014's puzzle (docs/design.md §3). ok is false for other key
// types, which the gater refuses anyway.
func RawID(p peer.ID) (id [challenge.IDLen]byte, ok bool) {
	pk, err := p.ExtractPublicKey()
	if err != nil || pk.Type() != crypto.Ed25519 {
		return id, false
	}
	raw, err := pk.Raw()
	if err != nil || len(raw) != challenge.IDLen {
		return id, false
	}
	copy(id[:], raw)
	return id, true
}

// ID is the peer's ID.
func (st *Peer[L]) ID() peer.ID { return st.id }

// Raw returns the peer's raw Ed25519 public key (RawID).
func (st *Peer[L]) Raw() ([challenge.IDLen]byte, bool) { return st.raw, st.rawOK }

// History returns the peer's value history.
func (st *Peer[L]) History() limits.History {
	return history(st.hist.load(), st.persisted.Load(), st.aged.Load())
}

// history returns the value history d of a peer, persisted or not (and if
// persisted, with a record aged or not: limits.History.Aged).
func history(d core.Counts, persisted, aged bool) limits.History {
	return limits.History{Counts: d, Persisted: persisted, Aged: persisted && aged}
}

// Count returns one count of the peer's value history.
func (st *Peer[L]) Count(c Counter) uint64 { return st.hist[c].Load() }

// Tier returns the peer's tier.
func (st *Peer[L]) Tier() limits.Tier { return limits.Tier(st.tier.Load()) }

// Add adds k to count c of the peer's value history and works out its tier
// again: changed reports that it moved to t, which the node carries out
// (the connection manager's tag). Atomics only: the request path's
// bookkeeping.
func (st *Peer[L]) Add(c Counter, k uint64) (t limits.Tier, changed bool) {
	st.hist[c].Add(k)
	return st.retier()
}

// retier works out the peer's tier again from its history; it reports
// whether it changed.
func (st *Peer[L]) retier() (limits.Tier, bool) {
	t := limits.TierOf(st.History())
	return t, limits.Tier(st.tier.Swap(uint32(t))) != t
}

// Reputed reports ADR 0014's established reputation at the monotonic
// reading mono (the package's Reputed).
func (st *Peer[L]) Reputed(mono time.Duration) bool {
	return Reputed(st.metEarlier.Load(), st.firstHello.Load(), mono)
}

// Persisted reports whether the peer has a peer-cache record.
func (st *Peer[L]) Persisted() bool { return st.persisted.Load() }

// Chosen reports whether this node chose to dial the peer on this stay
// (Table.Choose, Table.ChooseAlways): not whether its connection is outbound, which
// a DHT query's dial is too.
func (st *Peer[L]) Chosen() bool { return st.chosen.Load() }

// stranger is what the stranger slots read of the peer at mono.
func (st *Peer[L]) stranger(mono time.Duration) Stranger {
	paid := st.paidAt.Load()
	return Stranger{
		Suspect: st.Tier() == limits.TierSuspect, Reputed: st.Reputed(mono), Served: st.servedHere.Load(),
		ConnectedAt: st.connectedAt, LastActive: st.lastActive.Load(), Paid: paid != 0, PaidAt: paid - 1,
	}
}

// facts are what admission knows of the peer at mono.
func (st *Peer[L]) facts(mono time.Duration) limits.Facts {
	return limits.Facts{Tier: st.Tier(), CanSolve: st.canSolve.Load(), Reputed: st.Reputed(mono)}
}

// Hello returns the peer's last hello, nil before one completed.
func (st *Peer[L]) Hello() *proto.Hello {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.mu.hello
}

// HelloAndDirection returns the peer's last hello (nil before one) and the
// direction of the connection that brought it.
func (st *Peer[L]) HelloAndDirection() (*proto.Hello, network.Direction) {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.mu.hello, st.mu.dir
}

// Helloed reports whether the peer completed hello on this stay: the one
// rule of "hello done" (blobs.serve = "peers" serves only such peers; the
// sync loop syncs only from them; gossip gaps are synced only from them).
func (st *Peer[L]) Helloed() bool { return st.helloDone.Load() }

// HeardUs reports whether this node's own hello to the peer was answered
// on this connection, so that it holds this node's hello (a peer records a
// hello before it answers). Its hello to this node alone does not say so:
// this node's answer may still be on its way, and a want sent then is
// answered DONT_HAVE.
func (st *Peer[L]) HeardUs() bool { return st.heardUs.Load() }

// SetHeardUs records whether this node's hello to the peer was answered.
func (st *Peer[L]) SetHeardUs(heard bool) { st.heardUs.Store(heard) }

// NotWats reports whether an explicit connect found that the peer does not
// speak /wats/1 (an IPFS node, say): a blob provider over bitswap and
// nothing more.
func (st *Peer[L]) NotWats() bool { return st.notWats.Load() }

// SetNotWats records that the peer does not speak /wats/1.
func (st *Peer[L]) SetNotWats() { st.notWats.Store(true) }

// setHello records a completed hello at the monotonic reading mono: the
// hello, the pacer of the peer's advertised sync rate (kept while the rate
// is the same), whether it solves challenges, and its first hello of this
// run. first reports whether it is the first hello of this stay.
func (st *Peer[L]) setHello(h *proto.Hello, mono time.Duration) (first bool) {
	syncPerMin := SyncRate(h)
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

// SyncRate is the sync rate a peer advertised in hello, in requests a
// minute, clamped to what the limits package handles; 0 (unlimited, or not
// said by an older peer) when absent.
func SyncRate(h *proto.Hello) int {
	if h.Limits == nil || h.Limits.SyncPerMin <= 0 {
		return 0
	}
	return int(min(h.Limits.SyncPerMin, limits.MaxPerMin))
}

// Pacer returns the pacer of this node's sync requests to the peer, nil
// before hello.
func (st *Peer[L]) Pacer() *limits.Pacer {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.mu.pacer
}

// MaxCapRefusals is how many of a peer's streams may be reset over its
// caps within one second (ADR 0030's stream floods): a peer that keeps
// opening streams past its caps (each reset at once, so each costs the
// node little, but it can open tens of thousands a second) is past it
// disconnected, banned and counted as abusive. An honest peer stays within
// its caps.
const MaxCapRefusals = 64

// StreamKind is a kind of inbound stream a peer holds against a cap of
// its tier (ADR 0030; the caps are package p2p's).
type StreamKind uint8

const (
	// Unnegotiated: a stream that has not named its protocol yet.
	Unnegotiated StreamKind = iota
	// WatsStream: a /wats/1 stream being handled.
	WatsStream
	// BitswapStream: an inbound bitswap stream.
	BitswapStream
	numStreamKinds
)

// Hold takes one inbound stream of kind k for the peer while it holds
// fewer than limit; false when it holds as many (the caller resets the
// stream and counts it, OverCap). Release gives it back.
func (st *Peer[L]) Hold(k StreamKind, limit int32) bool {
	if st.streams[k].Add(1) > limit {
		st.streams[k].Add(-1)
		return false
	}
	return true
}

// Release gives back a stream of kind k that Hold took.
func (st *Peer[L]) Release(k StreamKind) { st.streams[k].Add(-1) }

// StreamFloodBan is how long a peer past MaxCapRefusals is refused.
const StreamFloodBan = time.Minute

// OverCap counts a stream of the peer reset over one of its caps at the
// monotonic reading mono; flood reports the one refusal that takes it past
// MaxCapRefusals in a second, which the node answers with a ban. The
// abuse is counted in its history here (limits.SuspectMinBad invalid
// messages: a suspect at once).
func (st *Peer[L]) OverCap(mono time.Duration) (flood bool, t limits.Tier, changed bool) {
	sec := int64(mono / time.Second)
	if w := st.capWindow.Load(); w != sec && st.capWindow.CompareAndSwap(w, sec) {
		st.capRefusals.Store(0)
	}
	if st.capRefusals.Add(1) != MaxCapRefusals+1 {
		return false, st.Tier(), false
	}
	t, changed = st.Add(Invalid, limits.SuspectMinBad)
	return true, t, changed
}

// Spam counts k envelopes of its own the peer forwarded over its own
// author budget and returns the count before and after.
func (st *Peer[L]) Spam(k uint64) (before, after uint64) {
	after = st.spam.Add(k)
	return after - k, after
}

// Spammed is the count of Spam, halved by each Fold.
func (st *Peer[L]) Spammed() uint64 { return st.spam.Load() }

// decaySpam halves the peer's spam count.
func (st *Peer[L]) decaySpam() {
	for {
		v := st.spam.Load()
		if v == 0 || st.spam.CompareAndSwap(v, v/2) {
			return
		}
	}
}

// unfolded returns the counts gathered since the last call, which the
// caller adds to the peer's record.
func (st *Peer[L]) unfolded() core.Counts {
	st.mu.Lock()
	defer st.mu.Unlock()
	total := st.hist.load()
	d := total.Minus(st.mu.folded)
	st.mu.folded = total
	return d
}

// pendingValue returns the value the peer showed while the budget of new
// records put its record off, "" for none.
func (st *Peer[L]) pendingValue() string {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.mu.pending
}

// putOff keeps value as the peer's pending value, unless one is pending
// already (what it showed first counts).
func (st *Peer[L]) putOff(value string) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.mu.pending == "" {
		st.mu.pending = value
	}
}

// recordTaken is what a new record of the peer is written from (takeRecord).
type recordTaken struct {
	value  string // what it showed first
	hello  *proto.Hello
	remote string
	total  core.Counts
}

// takeRecord marks the peer persisted, made at the wall-clock time made,
// if it is not yet and allow (the budget of new records) says yes; it
// returns what the record is written from, its history then counted as
// folded. With allow's no, value is kept pending and deferred reports
// whether it was the first to be. The caller undoes a failed write with
// putOff and persisted.Store(false).
func (st *Peer[L]) takeRecord(value string, made time.Time, allow func() bool) (rec recordTaken, ok, deferred bool) {
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
	rec = recordTaken{value: value, hello: st.mu.hello, remote: st.mu.remote, total: st.hist.load()}
	st.mu.folded = rec.total
	st.recordMade.Store(made.UnixNano()) // before persisted: Fold reads it then
	st.persisted.Store(true)
	return rec, true, false
}

// runCursor and setRunCursor are the sync cursor into the peer's log while
// it has no record (with one, the record keeps it). setRunCursor reports
// whether the peer had no record when it was set: read under the lock
// takeRecord marks it persisted under, so that a cursor set as the record
// is taken is either in the state the record is written from or known to
// need writing to the record.
func (st *Peer[L]) runCursor() core.Cursor {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.mu.cursor
}

func (st *Peer[L]) setRunCursor(c core.Cursor) (kept bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.mu.cursor = c
	return !st.persisted.Load()
}

// leaving returns what its record or the recent peers keep of a peer that
// disconnects: its run cursor and the remote address that brought it.
func (st *Peer[L]) leaving() (cursor core.Cursor, remote string) {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.mu.cursor, st.mu.remote
}
