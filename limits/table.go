package limits

import (
	"errors"
	"fmt"
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/wats-network/wats/core"
)

// Bounds and schedule of a Table.
const (
	// DefaultMaxPeers is the default cap on the peers a Table tracks at
	// once (TableOptions.MaxPeers changes it). A peer not held (Hold) is
	// tracked only while one of its buckets is not full, at most 60 s after
	// its last request (15 s at the defaults) plus SweepInterval, so the cap
	// is reached only when more than about 2,500 new peer ids a second make
	// requests: a Sybil flood, since every id needs its own libp2p
	// connection. A held peer is tracked for as long as it is held. At about 100 bytes a
	// peer (BenchmarkTableMemory), plus the 48 bytes of the peer id the map
	// keeps alive, the cap holds a Table below 10 MiB.
	DefaultMaxPeers = 65_536

	// MaxMaxPeers bounds TableOptions.MaxPeers: 16 Mi peers, about 2.5 GiB of state,
	// is more than any node of this design can have talked to within a
	// minute.
	MaxMaxPeers = 1 << 24

	// SweepInterval is how often each shard of a Table drops the state of
	// idle peers (whose buckets are all full again), as part of Allow. A
	// sweep visits the shard's entries under its lock: at most a 64th of
	// the cap, 1,024 by default, about 15 µs (BenchmarkSweep).
	SweepInterval = 10 * time.Second

	// fullSweepGap is the least time between two sweeps of one shard when
	// a new peer finds it at its cap: a flood of new ids then costs one
	// sweep a second per shard, not one per request.
	fullSweepGap = time.Second

	// numShards is the number of shards of a Table, each with its own lock
	// and map; a power of two.
	numShards = 64

	// minShrinkPeak: a sweep rebuilds a shard's map when it holds a quarter
	// or less of its peak, and the peak was at least this many entries, so
	// that the memory of a flood is given back (Go maps never shrink).
	minShrinkPeak = 64

	// cacheLine is the size shards are padded to, so that two shards never
	// share a cache line (128 covers adjacent-line prefetching).
	cacheLine = 128
)

// Table holds the admission state of every peer (a token bucket for each of
// the four request types and one for its misses), decides its requests by
// a Policy (Admit), and counts accepted and refused requests. It is safe
// for concurrent use. Build one with NewTable.
//
// Peers are spread over 64 shards by a hash of their id (maphash, with a
// random seed per Table, so nobody can aim at one shard); each shard has a
// mutex, a map from peer id to its State (five buckets, 56 bytes), and its
// own counters.
//
// Bounded memory: a full bucket is the same as no state, so the state of a
// peer whose buckets are all full is dropped by a sweep, which Admit, Hold
// and Return run on each shard every SweepInterval (or Sweep on demand); a
// held state (Hold: a connected peer's) is kept while it is held and
// counts against the cap. Dropping changes no
// answer while the clock moves forward (TestTableMatchesBuckets). Should
// the clock step back to before a dropped bucket was full, dropping must
// not hand out its tokens again: each shard remembers the latest TAT it
// dropped per type, and an entry created while that is still ahead of now
// starts from it (TestTableBackwardsAfterSweep; this may withhold tokens
// from a peer new to the shard after such a step back, never give any).
// On top, a hard cap
// (DefaultMaxPeers, TableOptions.MaxPeers) bounds the peers tracked at once; it is
// enforced per shard, a 64th of the cap each. When a new peer finds its
// shard at the cap, the shard is swept first (at most once a second); if it
// is still full, the new peer's request is decided on a state all the
// shard's untracked peers share, NewcomerShare peers' worth of budget (ADR
// 0030), and no tracked peer is evicted. Evicting would reset the evicted
// peer's buckets to full: a flooder with many ids could evict its own
// busiest ids and win their burst again, or push out an honest peer's
// state and hand it tokens it should not have. The shared state never
// gives anyone more than its budget; the cost is that, while more than the
// cap of ids are active at once (an attack), a newcomer competes with the
// flood for that budget, and the load challenge (ADR 0014) is its way
// past it.
type Table struct {
	policy *Policy
	// shared is policy with every rate NewcomerShare times higher: the
	// budget of a shard's untracked peers.
	shared   *Policy
	seed     maphash.Seed
	maxPeers int
	perShard int
	shards   [numShards]shard
}

// shard is one 64th of a Table.
type shard struct {
	shardFields
	_ [(cacheLine - unsafe.Sizeof(shardFields{})%cacheLine) % cacheLine]byte
}

type shardFields struct {
	mu struct {
		sync.Mutex
		// peers maps a peer to its admission state (but for the states
		// held: Hold).
		peers map[peer.ID]*State
		// lastSweep is the tick of the last sweep, or of a clock step
		// backwards seen since: the sweep schedule restarts there.
		lastSweep uint64
		// peak is the largest len(peers) since the map was (re)built.
		peak int
		// floor holds, for each kind, the latest TAT of the buckets this
		// shard dropped (zero: none). A new entry starts from it when it is
		// still ahead of now, which happens only after the clock stepped
		// back past a sweep: the dropped state is not known any more, but it
		// was no later than floor, so starting there never credits a token
		// (it may withhold some from a peer new to the shard). With a clock
		// that never steps back, floor is always behind now and a new entry
		// is full, as if its state had never been dropped.
		floor State
		// shared is the state of the peers this shard could not track (at
		// its cap): they share NewcomerShare peers' worth of budget.
		shared State
	}
	accepted [core.NumRequests]atomic.Uint64
	refused  [core.NumRequests]atomic.Uint64
	atCap    atomic.Uint64 // decided on the shared budget: the shard was at its cap
	// held counts the states taken out of the map by Hold and not yet
	// returned; they count against the cap as the map's do.
	// INVARIANT: len(mu.peers) + held <= Table.perShard.
	held atomic.Int64
}

// TableOptions configure a Table (NewTable). The zero value, or nil, is
// the defaults; EnsureDefaults fills them in and Validate checks the
// ranges, as pebble's Options do.
type TableOptions struct {
	// MaxPeers is the cap on tracked peers, 1..MaxMaxPeers; 0 means
	// DefaultMaxPeers. Each of the 64 shards holds up to MaxPeers/64 peers,
	// rounded up, so the Table may hold up to 63 more than MaxPeers.
	MaxPeers int
}

// EnsureDefaults sets each zero field of o to its default and returns o; on
// a nil o it returns new TableOptions of the defaults.
func (o *TableOptions) EnsureDefaults() *TableOptions {
	if o == nil {
		o = &TableOptions{}
	}
	if o.MaxPeers == 0 {
		o.MaxPeers = DefaultMaxPeers
	}
	return o
}

// Validate reports a field out of its range, wrapping ErrInvalid. A nil o
// is valid.
func (o *TableOptions) Validate() error {
	if o != nil && (o.MaxPeers < 0 || o.MaxPeers > MaxMaxPeers) {
		return fmt.Errorf("%w: max peers %d out of range 1..%d (0 for the default %d)", ErrInvalid, o.MaxPeers, MaxMaxPeers, DefaultMaxPeers)
	}
	return nil
}

// NewcomerShare is how many peers' worth of budget the untracked peers of
// one shard share when the shard is at its cap: 64 shards give the
// newcomers of a flood 256 peers' worth in all, at ADR 0014's rates for a
// new peer, instead of a refusal (ADR 0030).
const NewcomerShare = 4

// NewTable returns an empty Table deciding by the Policy of c (NewPolicy).
// A value out of range is an error naming its key.
func NewTable(c Config, opts *TableOptions) (*Table, error) {
	var o TableOptions
	if opts != nil {
		o = *opts
	}
	t := &Table{seed: maphash.MakeSeed(), maxPeers: o.EnsureDefaults().MaxPeers}
	errs := []error{opts.Validate()}
	var err error
	t.policy, err = NewPolicy(c)
	errs = append(errs, err)
	if err == nil {
		shared := c
		for _, f := range []*int{&shared.HelloPerMin, &shared.SyncPerMin, &shared.ReplicatePerMin, &shared.ReportPerMin, &shared.MissPerMin} {
			*f = min(*f*NewcomerShare, MaxPerMin)
		}
		t.shared, err = NewPolicy(shared)
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	t.perShard = (t.maxPeers + numShards - 1) / numShards
	for i := range t.shards {
		t.shards[i].mu.peers = make(map[peer.ID]*State)
	}
	return t, nil
}

// Policy returns the Policy the Table decides by.
func (t *Table) Policy() *Policy { return t.policy }

// Rate returns the rate of k for a new peer (ADR 0014's); the zero
// (unlimited) Rate for an invalid k.
func (t *Table) Rate(k core.Request) Rate { return t.policy.Rate(TierNew, k) }

// MaxPeers returns the cap on tracked peers (TableOptions.MaxPeers).
func (t *Table) MaxPeers() int { return t.maxPeers }

func (t *Table) shardOf(p peer.ID) *shard {
	return &t.shards[maphash.String(t.seed, string(p))&(numShards-1)]
}

// Allow takes one token from p's bucket for k at now, nanoseconds from a
// monotonic base the caller picks (e.g. time.Since(start) for a start taken
// once); any int64 is accepted, and a clock that steps backwards never
// credits a token twice (see Bucket). It is Admit for a new peer that
// cannot solve, asking for what exists, with nothing else in flight:
// true if the request fits; otherwise false and retryAfter, the exact time
// until p's next token of kind k, with p's buckets unchanged. An invalid
// request type is refused with retryAfter 0 and not counted.
func (t *Table) Allow(p peer.ID, k core.Request, now int64) (ok bool, retryAfter time.Duration) {
	d := t.Admit(p, Facts{}, Request{Type: k}, now)
	return d.Verdict == Serve, d.RetryAfter
}

// Admit decides request r of p at now (Policy.Decide) on p's state, which
// the Table creates, keeps while one of its buckets is not full and drops
// when all are (see Table). When p is new and its shard is at its cap
// (after a sweep, at most once a second), the request is decided on the
// state the shard's untracked peers share, NewcomerShare peers' worth of
// budget (ADR 0030): a newcomer in a flood of ids competes with the flood
// for that budget, and can pass it with a solution, but is never refused
// for the table's sake alone, and no tracked peer is evicted. An invalid
// request type is refused and not counted; every other decision is counted
// (accepted: served; refused: refused or challenged).
//
// Admit takes one shard lock and does not allocate, except to track a new
// peer (one 56-byte State and the map's growth).
func (t *Table) Admit(p peer.ID, f Facts, r Request, now int64) Decision {
	k := r.Type
	if !k.Valid() {
		return Decision{Verdict: Refuse, Reason: ReasonInvalid}
	}
	sh := t.shardOf(p)
	if r.Solved || t.policy.unlimited(f.Tier, r) {
		// No bucket to look at: keep no state.
		d := t.policy.Decide(&State{}, f, r, now)
		sh.count(k, d)
		return d
	}
	tk := tick(now)
	sh.mu.Lock()
	sh.sweepIfDue(tk)
	st := sh.mu.peers[p]
	pl := t.policy
	if st == nil {
		if len(sh.mu.peers)+int(sh.held.Load()) >= t.perShard && !sh.makeRoom(tk, t.perShard) {
			d := t.shared.Decide(&sh.mu.shared, f, r, now)
			sh.mu.Unlock()
			sh.atCap.Add(1)
			sh.count(k, d)
			return d
		}
		st = new(State)
		for j := range st.ns {
			if f := &sh.mu.floor; !full(f.ns[j], f.rem[j], tk) {
				st.ns[j], st.rem[j] = f.ns[j], f.rem[j]
			}
		}
		sh.mu.peers[p] = st
		sh.mu.peak = max(sh.mu.peak, len(sh.mu.peers))
	}
	d := pl.Decide(st, f, r, now)
	sh.mu.Unlock()
	sh.count(k, d)
	return d
}

// unlimited reports whether every bucket r would take from is unlimited
// for tier t.
func (pl *Policy) unlimited(t Tier, r Request) bool {
	if !t.Valid() {
		return false
	}
	return pl.rates[t][r.Type].perMin == 0 && (r.Class != ClassMiss || pl.rates[t][missIndex].perMin == 0)
}

func (sh *shard) count(k core.Request, d Decision) {
	if d.Verdict == Serve {
		sh.accepted[k].Add(1)
	} else {
		sh.refused[k].Add(1)
	}
}

// sweepIfDue sweeps the shard when SweepInterval has passed since the last
// sweep; a clock seen stepping back restarts the schedule there.
// REQUIRES: sh.mu held.
func (sh *shard) sweepIfDue(tk uint64) {
	if tk < sh.mu.lastSweep {
		sh.mu.lastSweep = tk
	} else if tk-sh.mu.lastSweep >= uint64(SweepInterval) {
		sh.sweep(tk)
	}
}

// makeRoom sweeps a shard at its cap, unless it was swept less than
// fullSweepGap ago, and reports whether there is room for one more peer.
// REQUIRES: sh.mu held; tk >= sh.mu.lastSweep.
func (sh *shard) makeRoom(tk uint64, perShard int) bool {
	if tk-sh.mu.lastSweep >= uint64(fullSweepGap) {
		sh.sweep(tk)
	}
	return len(sh.mu.peers)+int(sh.held.Load()) < perShard
}

// sweep drops the peers whose buckets are all full at tk and returns how
// many it dropped; it rebuilds the map when it shrank to a quarter of its
// peak. REQUIRES: sh.mu held.
func (sh *shard) sweep(tk uint64) int {
	n := len(sh.mu.peers)
	f := &sh.mu.floor
	for p, e := range sh.mu.peers {
		if !e.full(tk) {
			continue
		}
		f.raise(e)
		delete(sh.mu.peers, p)
	}
	sh.mu.lastSweep = tk
	if sh.mu.peak >= minShrinkPeak && len(sh.mu.peers) <= sh.mu.peak/4 {
		m := make(map[peer.ID]*State, len(sh.mu.peers))
		for p, e := range sh.mu.peers {
			m[p] = e
		}
		sh.mu.peers = m
		sh.mu.peak = len(m)
	}
	return n - len(sh.mu.peers)
}

// raise sets each of f's TATs to e's where e's is later: f is then a
// floor no dropped state was past.
func (f *State) raise(e *State) {
	for k := range e.ns {
		if e.ns[k] > f.ns[k] || e.ns[k] == f.ns[k] && e.rem[k] > f.rem[k] {
			f.ns[k], f.rem[k] = e.ns[k], e.rem[k]
		}
	}
}

// Sweep drops, in every shard, the state of the peers whose buckets are all
// full at now (it changes no answer of Allow), and returns how many peers
// it dropped. Allow sweeps each shard every SweepInterval on its own;
// Sweep is for callers that want the memory back at once, and for tests.
func (t *Table) Sweep(now int64) int {
	tk := tick(now)
	dropped := 0
	for i := range t.shards {
		sh := &t.shards[i]
		sh.mu.Lock()
		dropped += sh.sweep(tk)
		sh.mu.Unlock()
	}
	return dropped
}

// Len returns the number of peers tracked: those with state kept (held
// ones too), which includes idle peers not yet swept.
func (t *Table) Len() int {
	n := 0
	for i := range t.shards {
		sh := &t.shards[i]
		sh.mu.Lock()
		n += len(sh.mu.peers) + int(sh.held.Load())
		sh.mu.Unlock()
	}
	return n
}
