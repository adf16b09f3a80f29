package peers

import (
	"errors"
	"fmt"
	"hash/maphash"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/wats-network/wats/core"
	"github.com/wats-network/wats/limits"
	"github.com/wats-network/wats/peercache"
)

// Bounds of what a Table remembers of disconnected peers (ADR 0030).
const (
	// MaxRecent is how many disconnected peers without a peer-cache
	// record a Table remembers (their value history, first hello, sync
	// cursor and whether this node chose to dial them), so that an id
	// that reconnects neither clears its suspicion nor restarts ADR
	// 0014's ten minutes, and one this node chose keeps its standing. About 200 bytes
	// each: 3 MiB. Past it the least recently disconnected is forgotten.
	MaxRecent = 16_384
	// RecentFor is how long such a peer is remembered.
	RecentFor = time.Hour
)

// Options configure a Table.
type Options struct {
	// Cache is the peer cache: the records peers earn by showing value,
	// their counts and sync cursors. Required.
	Cache *peercache.Cache
	// Slots is the number of stranger connection slots (at least 1).
	Slots int
	// Limits are the admission limits (ADR 0014, ADR 0030).
	Limits limits.Config
	// Admission holds the per-peer buckets; nil makes one from Limits
	// (limits.NewTable).
	Admission *limits.Table
	// PagePoolBytes is the memory of the sync pages being served (Page):
	// at least 1.
	PagePoolBytes int64
	// MaxBlobBytes and QuotaBytes are blobs.max_blob_bytes and
	// blobs.quota_bytes: the fetches peers ask for hold their declared
	// bytes of FetchPoolBytes of them (Fetch).
	MaxBlobBytes, QuotaBytes int64
	// AuthorFirst returns when this node stored the first event of
	// author (a peer ID string), by the wall clock as the log records it;
	// ok is false for an author it holds no event of. An author is
	// established limits.new_author_minutes after (AuthorStanding). Nil:
	// no author is established by time.
	AuthorFirst func(author string) (first time.Time, ok bool)
	// Greeting pays for the greeted allowance of DHT requests a stranger
	// gets with a served hello (ADR 0059); nil: no allowance, no
	// challenge for one.
	Greeting Greeting
}

// Table is everything a node knows of its peers in a run, and the
// decisions it takes about them (ADR 0030, docs/design.md §7): the state
// of each connected peer (Peer), what it remembers of the disconnected
// ones, the stranger connection slots, the budget of new peer-cache
// records, admission with its shared budgets, and the sync cursor of each
// peer, one owner, persisted through the peer cache once the peer has a
// record. Its methods take the moment as values (the wall clock now, for
// what outlives the run, and the node's monotonic reading mono) and return
// verdicts the node carries out: a tier to tag, a stranger to ban and
// close, a challenge to issue, a record made or put off. They are stepped
// through by the scripts in testdata/. Safe for concurrent use.
type Table[L any] struct {
	cache *peercache.Cache
	adm   *limits.Table
	// strangerReports is the strangers' shared crash-report budget
	// (limits.stranger_report_per_min, ADR 0030).
	strangerReports *limits.Shared
	// records is the budget of new peer-cache records (NewRecordsPerMin).
	records *limits.Shared
	// b are the budgets of what peers bring outside requests
	// (standing.go).
	b *budgets
	// f are what the fetches peers ask for hold (fetch.go).
	f fetches
	// pages is the memory of the sync pages being served (pages.go).
	pages *limits.Pool
	// ch are the peers this node chose to dial (chosen.go).
	ch choices
	// unread are the strangers' pages being written, which a stranger
	// holding none may take back (Table.Page).
	unread unreadPages

	// live maps a peer.ID to its *Peer[L] while it is connected, read
	// without a lock on the request path.
	live sync.Map
	// recent holds the disconnected peers of this run.
	recent *lru.Cache[peer.ID, recentPeer]
	// stripes serialize the creation and the dropping of each peer's
	// state: a peer's stripe is its id's hash modulo numStripes, so
	// unrelated peers rarely wait on each other.
	stripes [numStripes]sync.Mutex
	seed    maphash.Seed

	slots *Slots[*Peer[L]]
	// lim are the admission limits (Options.Limits).
	lim limits.Config
	// greeting is Options.Greeting.
	greeting Greeting
	// greetings are the greeted allowances given and what paid for them
	// (greeted.go).
	greetings greetings
}

// recentPeer is what a Table remembers of a disconnected peer.
type recentPeer struct {
	hist       core.Counts   // its history, when it had no record
	firstHello int64         // as Peer.firstHello
	chosen     bool          // as Peer.chosen: a reconnection keeps it
	cursor     core.Cursor   // its sync cursor, when it had no record
	until      time.Duration // monotonic reading at which it is forgotten
}

// numStripes is the number of Table.stripes.
const numStripes = 64

// NewTable returns the Table of no peers.
func NewTable[L any](o Options) (*Table[L], error) {
	if o.Cache == nil {
		return nil, errors.New("peers: Options.Cache is required")
	}
	adm := o.Admission
	if adm == nil {
		var err error
		if adm, err = limits.NewTable(o.Limits, nil); err != nil {
			return nil, err
		}
	}
	reports, err := limits.NewRate(o.Limits.StrangerReportPerMin)
	if err != nil {
		return nil, fmt.Errorf("peers: limits.stranger_report_per_min: %w", err)
	}
	b, err := newBudgets(o.Limits, o.AuthorFirst)
	if err != nil {
		return nil, fmt.Errorf("peers: %w", err)
	}
	f := fetches{maxBlob: uint64(max(o.MaxBlobBytes, 0))}
	if f.slots, err = limits.NewSlots(o.Limits.BlobFetchesPerPeer); err != nil {
		return nil, fmt.Errorf("peers: limits.blob_fetches_per_peer: %w", err)
	}
	if f.bytes, err = limits.NewPool(FetchPoolBytes(o.QuotaBytes, o.MaxBlobBytes)); err != nil {
		return nil, fmt.Errorf("peers: %w", err)
	}
	pages, err := limits.NewPool(o.PagePoolBytes)
	if err != nil {
		return nil, fmt.Errorf("peers: the page pool: %w", err)
	}
	solved, err := limits.NewRate(limits.SolvedGreetingsPerMin(o.Limits.StrangerDHTPerMin, GreetedRequests))
	if err != nil {
		return nil, fmt.Errorf("peers: limits.stranger_dht_per_min: %w", err)
	}
	r, _ := limits.NewRate(NewRecordsPerMin) // a valid rate: fails never
	t := &Table[L]{cache: o.Cache, adm: adm, strangerReports: limits.NewShared(reports), records: limits.NewShared(r),
		b: b, f: f, pages: pages, seed: maphash.MakeSeed(), lim: o.Limits, greeting: o.Greeting,
		greetings: greetings{solvedBound: limits.NewShared(solved)}}
	t.recent, _ = lru.New[peer.ID, recentPeer](MaxRecent) // fails only for a size <= 0
	t.ch.dialling, t.ch.kept = make(map[peer.ID]int), make(map[peer.ID]struct{})
	t.slots = NewSlots(o.Slots, (*Peer[L]).stranger)
	return t, nil
}

// Admission returns the per-peer buckets (for the control API's limits and
// the metrics).
func (t *Table[L]) Admission() *limits.Table { return t.adm }

// Slots returns the stranger connection slots.
func (t *Table[L]) Slots() *Slots[*Peer[L]] { return t.slots }

// Recent is how many disconnected peers the Table remembers (at most
// MaxRecent).
func (t *Table[L]) Recent() int { return t.recent.Len() }

// stripe returns p's stripe lock.
func (t *Table[L]) stripe(p peer.ID) *sync.Mutex {
	return &t.stripes[maphash.String(t.seed, string(p))%numStripes]
}

// Get returns p's state while it is connected, else nil.
func (t *Table[L]) Get(p peer.ID) *Peer[L] {
	if v, ok := t.live.Load(p); ok {
		return v.(*Peer[L])
	}
	return nil
}

// SyncLock returns the mutex that serializes this node's syncs from p:
// the one of its state while it is connected (forgotten with it at
// disconnect, so a flood of identities leaves nothing behind), else a
// fresh one.
func (t *Table[L]) SyncLock(p peer.ID) *sync.Mutex {
	if st := t.Get(p); st != nil {
		return &st.syncMu
	}
	return new(sync.Mutex)
}

// Head is the head p's hello named, while it is connected; ok is false
// before a hello.
func (t *Table[L]) Head(p peer.ID) (head core.Cursor, ok bool) {
	if st := t.Get(p); st != nil {
		if h := st.Hello(); h != nil {
			return h.Head, true
		}
	}
	return 0, false
}

// Live returns what the table holds of connected peer id at the
// monotonic reading mono: its history, with this run's counts not folded
// into its record yet, and whether it is reputed; ok is false for a peer
// not connected.
func (t *Table[L]) Live(id peer.ID, mono time.Duration) (h limits.History, reputed, ok bool) {
	if st := t.Get(id); st != nil {
		return st.History(), st.Reputed(mono), true
	}
	return limits.History{}, false, false
}

// TierOf is p's tier while connected (limits.TierNew otherwise): an
// atomic read, cheap enough for gossipsub's RPC loop and the DHT's
// request budget.
func (t *Table[L]) TierOf(p peer.ID) limits.Tier {
	if st := t.Get(p); st != nil {
		return st.Tier()
	}
	return limits.TierNew
}

// Each calls f for every connected peer's state.
func (t *Table[L]) Each(f func(*Peer[L])) {
	t.live.Range(func(_, v any) bool {
		f(v.(*Peer[L]))
		return true
	})
}

// Helloed returns at most max of the connected peers that completed hello
// on this stay, in no particular order (max < 0: all of them).
func (t *Table[L]) Helloed(max int) []peer.ID {
	var out []peer.ID
	t.live.Range(func(_, v any) bool {
		if st := v.(*Peer[L]); st.Helloed() {
			out = append(out, st.ID())
		}
		return max < 0 || len(out) < max
	})
	return out
}

// Connected is the verdict of Connect.
type Connected[L any] struct {
	// Peer is p's state, Created whether this call made it.
	Peer    *Peer[L]
	Created bool
	// Evicted is the stranger evicted to make room for p (nil for none):
	// the node bans it for Ban and closes its connections.
	Evicted *Peer[L]
	Ban     time.Duration
}

// WrongNetworkBan is how long a peer of another network is refused after
// it was told wrong_network, so that a misconfigured bootstrap list does
// not make two nodes redial each other in a loop.
const WrongNetworkBan = 10 * time.Minute

// Bans of evicted strangers: an evicted stranger that dialled again at once
// would come back before its old connection closed, outside the slots; the
// gater refuses it for a while instead (a suspect for longer).
const (
	EvictedBan        = 10 * time.Second
	EvictedSuspectBan = time.Minute
)

// Connect returns p's state, creating it on p's first connection or stream
// from its record, or from what the Table remembers of a recent stay. dir
// is the direction of the connection that brought it, remote its remote
// multiaddr ("" for none). A new inbound peer that is not reputed takes a
// stranger slot, which may evict another (Connected.Evicted).
//
// Creating and dropping p's state hold p's stripe lock, so that a
// reconnection racing the disconnection before it reads what that
// disconnection remembered, never the history of before it: a peer cannot
// shed its history by reconnecting at the right moment.
func (t *Table[L]) Connect(p peer.ID, dir network.Direction, remote string, now time.Time, mono time.Duration) Connected[L] {
	if st := t.Get(p); st != nil {
		return Connected[L]{Peer: st}
	}
	return t.create(p, dir, remote, now, mono)
}

// create builds and publishes p's state under p's stripe lock, with its
// stranger slot (taken under the same lock as Leave frees it, so that a
// disconnection racing the connection never leaves a slot to a state
// dropped), or returns the one another goroutine published first.
func (t *Table[L]) create(p peer.ID, dir network.Direction, remote string, now time.Time, mono time.Duration) (c Connected[L]) {
	mu := t.stripe(p)
	mu.Lock()
	defer mu.Unlock()
	if st := t.Get(p); st != nil {
		return Connected[L]{Peer: st}
	}
	// Built before it is published: st.mu needs no lock until Store.
	st := newPeer[L](p, dir, remote, mono)
	st.chosen.Store(t.ch.chosen(p))
	if r, ok := t.cache.Get(p); ok {
		st.persisted.Store(true)
		st.recordMade.Store(r.FirstSeen.UnixNano())
		st.aged.Store(recordAged(r.FirstSeen, now))
		st.metEarlier.Store(t.cache.MetInEarlierRun(p))
		st.hist.store(r.Counts)
		st.mu.folded = r.Counts
	}
	if rp, ok := t.recent.Peek(p); ok && rp.until > mono {
		st.firstHello.Store(rp.firstHello)
		if rp.chosen {
			st.chosen.Store(true)
		}
		if !st.persisted.Load() {
			st.hist.store(rp.hist)
			st.mu.cursor = rp.cursor
		}
	}
	st.retier()
	st.adm = t.adm.Hold(p, int64(mono))
	c = Connected[L]{Peer: st, Created: true}
	if dir == network.DirInbound && !st.Reputed(mono) {
		if victim, evicted := t.slots.Take(st, mono); evicted {
			c.Evicted, c.Ban = victim, EvictedBan
			if victim.Tier() == limits.TierSuspect {
				c.Ban = EvictedSuspectBan
			}
		}
	}
	t.live.Store(p, st)
	t.recent.Remove(p) // live again: the state holds what was remembered
	return c
}

// Leave forgets p's state at its disconnection (or at the node's Close):
// the counts of a peer with a record go to the cache, what is known of
// one without is remembered for RecentFor; its stranger slot is freed. If
// linked is not nil and reports p connected, Leave does nothing: it is
// checked under p's stripe lock, the lock a hello is recorded under
// (SetHello), so a reconnection racing a late disconnection notice never
// loses its hello. It returns the state dropped, nil for none.
func (t *Table[L]) Leave(p peer.ID, linked func(peer.ID) bool, now time.Time, mono time.Duration) *Peer[L] {
	mu := t.stripe(p)
	mu.Lock()
	defer mu.Unlock()
	if linked != nil && linked(p) {
		return nil
	}
	v, ok := t.live.LoadAndDelete(p)
	if !ok {
		return nil
	}
	st := v.(*Peer[L])
	st.adm.Return(int64(mono))
	t.slots.Gone(st)
	cursor, remote := st.leaving()
	if st.persisted.Load() {
		t.fold(st, now)
		_ = t.cache.Update(p, false, func(r *peercache.Record) {
			r.LastSeen = now.UTC()
			if remote != "" {
				r.RemoteAddr = remote
			}
		})
		if fh := st.firstHello.Load(); fh != 0 || st.Chosen() {
			// Keep its first hello for ADR 0014's ten minutes, and its
			// being chosen, across reconnects; its history is in its
			// record.
			t.recent.Add(p, recentPeer{firstHello: fh, chosen: st.Chosen(), until: mono + RecentFor})
		}
		return st
	}
	t.recent.Add(p, recentPeer{hist: st.hist.load(), firstHello: st.firstHello.Load(), chosen: st.Chosen(), cursor: cursor, until: mono + RecentFor})
	return st
}

// AdmitStranger is the gater's check of a secured inbound connection from
// p at mono: false, to refuse it before any stream, when p is a stranger
// (not connected, not reputed: ReputedAway) and the slots refuse one
// (Slots.Admit).
func (t *Table[L]) AdmitStranger(p peer.ID, mono time.Duration) bool {
	return t.Get(p) != nil || t.ReputedAway(p, mono) || t.slots.Admit()
}

// ReputedAway reports whether p, not connected, is reputed at mono (ADR
// 0014: met in an earlier run, or first hello here at least
// core.ReputationAge ago, as remembered of its last stay).
func (t *Table[L]) ReputedAway(p peer.ID, mono time.Duration) bool {
	if t.cache.MetInEarlierRun(p) {
		return true
	}
	rp, ok := t.recent.Peek(p)
	return ok && rp.until > mono && Reputed(false, rp.firstHello, mono)
}

// History returns the value history of p at now (mono), connected or not:
// its state's, else its record's, else what the Table remembers of it.
func (t *Table[L]) History(p peer.ID, now time.Time, mono time.Duration) (limits.History, bool) {
	if st := t.Get(p); st != nil {
		return st.History(), true
	}
	if r, ok := t.cache.Get(p); ok {
		return RecordHistory(r, now), true
	}
	if rp, ok := t.recent.Peek(p); ok && rp.until > mono {
		return history(rp.hist, false, false), true
	}
	return limits.History{}, false
}
