package peers

import (
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/wats-network/wats/limits"
	"github.com/wats-network/wats/peercache"
)

// Value history and records (ADR 0030): every peer's requests and what it
// gave are counted in its Peer, its tier is worked out from them, and a
// peer earns a peer-cache record only by showing value; what a hello alone
// earns is forgotten with the connection.
const (
	// ValueAfterConnected is how long a peer must stay connected after
	// hello, without becoming suspect, to have shown value: a Sybil flood
	// must hold each of its ids that long to get them records.
	ValueAfterConnected = 5 * time.Minute
	// FoldInterval is how often the node calls Fold: it adds the counts
	// of its peers with records to the peer cache (in memory: the cache's
	// own flusher writes them), checks ValueAfterConnected, and retags.
	// The peer cache flushes every 5 s too, so a kill -9 loses at most
	// the last ten seconds of counts.
	FoldInterval = 5 * time.Second
	// NewRecordsPerMin is the budget of new peer-cache records, for all
	// peers together: 60 a minute (a burst of 15, ADR 0014's rule for a
	// bucket). Events, blobs and solutions are cheap to make for a flood
	// of fresh ids; the budget bounds how fast such a flood writes
	// records and how much of the cache it can take before eviction
	// catches up. A peer put off stays a stranger until its record is
	// made, and is tried again by every Fold.
	NewRecordsPerMin = 60
)

// recordAged reports whether a record made at firstSeen is at least
// limits.ValuedAge old at now (wall clock: a record's age outlives the
// run). A first_seen in the future (the clock stepped back) is not aged.
func recordAged(firstSeen, now time.Time) bool {
	return !firstSeen.IsZero() && now.Sub(firstSeen) >= limits.ValuedAge
}

// Change is a verdict of the value decisions about one peer, which the node
// carries out: a new tier to tag, a record made or put off to count and
// log.
type Change[L any] struct {
	Peer *Peer[L]
	// Tier is the peer's tier; Retiered reports that it moved there.
	Tier     limits.Tier
	Retiered bool
	// Persisted is the value (one of peercache's Value constants) by
	// which the peer earned its record now; "" for none.
	Persisted string
	// Deferred: the budget of new records put its record off (the first
	// time only); Fold tries again.
	Deferred bool
	// Err is a failed write of its record; the record is put off.
	Err error
}

// retiered returns c with st's tier worked out again.
func (c Change[L]) retiered() Change[L] {
	t, changed := c.Peer.retier()
	c.Tier, c.Retiered = t, c.Retiered || changed
	return c
}

// Gave records at now that p gave this node events (valid events it lacked)
// or blob bytes: value, which earns p a record if it has none. A peer no
// longer connected is not credited (what it gave is not carried to a
// stranger's next stay); ok is then false.
func (t *Table[L]) Gave(p peer.ID, events, bytes uint64, now time.Time, mono time.Duration) (c Change[L], ok bool) {
	st := t.Get(p)
	if st == nil || events == 0 && bytes == 0 {
		return c, false
	}
	st.hist[Events].Add(events)
	st.hist[Bytes].Add(bytes)
	// The tier first: what it gave may lift it out of suspect, and a
	// suspect earns no record.
	_, retiered := st.retier()
	value := peercache.ValueEvents
	if events == 0 {
		value = peercache.ValueBlobs
	}
	c = t.ShowedValue(st, value, now, mono).retiered()
	c.Retiered = c.Retiered || retiered
	return c, true
}

// ShowedValue gives st a peer-cache record if it has none: it showed value
// (how: one of peercache's Value constants) at now. The record is synced at
// once, with what the peer's hello said, its counts and its sync cursor:
// that the node met it is what gives it a reputation after a restart (ADR
// 0014), and it happens once per peer that showed value, not per hello. A
// suspect earns no record. When the budget of new records
// (NewRecordsPerMin) is spent, the record is put off: Fold tries again.
// A peer that earned a record keeps its stranger slot, if it holds one,
// until it is reputed (ADR 0031: a record is earned in seconds).
func (t *Table[L]) ShowedValue(st *Peer[L], value string, now time.Time, mono time.Duration) Change[L] {
	c := Change[L]{Peer: st, Tier: st.Tier()}
	if st.persisted.Load() || st.Tier() == limits.TierSuspect {
		return c
	}
	made := now.UTC()
	rec, ok, deferred := st.takeRecord(value, made, func() bool {
		ok, _ := t.records.Allow(int64(mono))
		return ok
	})
	c.Deferred = deferred
	if !ok {
		return c
	}
	err := t.cache.Update(st.id, true, func(r *peercache.Record) {
		if r.FirstSeen.IsZero() {
			r.FirstSeen = made
		}
		made = r.FirstSeen
		r.LastSeen = now.UTC()
		if rec.remote != "" {
			r.RemoteAddr = rec.remote
		}
		if h := rec.hello; h != nil {
			r.LastHello = now.UTC()
			r.Agent, r.Features = h.Agent, cacheableFeatures(h.Features)
			r.MergeAddrs(cacheableAddrs(h.Listen))
		}
		// The state's cursor as the record is written, not as it was
		// taken: a SaveCursor meanwhile set it there, and found no
		// record yet to write it to (SaveCursor).
		r.Cursor = max(r.Cursor, st.runCursor())
		r.Value = rec.value
		r.Counts = rec.total
		if rec.total.Events > 0 || rec.total.Bytes > 0 {
			r.LastUseful = now.UTC()
		}
	})
	if err != nil {
		st.putOff(rec.value)
		st.persisted.Store(false)
		c.Err = err
		return c
	}
	st.recordMade.Store(made.UnixNano())
	// Aged only ever turns true (a record only gets older): a Fold
	// meanwhile, with a later clock, may have found it aged already.
	if recordAged(made, now) {
		st.aged.Store(true)
	}
	c.Persisted = rec.value
	return c.retiered()
}

// Fold is the round the node runs every FoldInterval at now: it adds the
// counts of the connected peers with records to the peer cache (and marks
// the records that became a day old), halves the peers' spam counts, and
// gives a record to the peers that showed value while the budget of new
// records was spent, and to those that stayed connected
// ValueAfterConnected after hello. It returns the changes the node
// carries out.
func (t *Table[L]) Fold(now time.Time, mono time.Duration) []Change[L] {
	var out []Change[L]
	keep := func(c Change[L]) {
		if c.Retiered || c.Persisted != "" || c.Deferred || c.Err != nil {
			out = append(out, c)
		}
	}
	t.Each(func(st *Peer[L]) {
		st.decaySpam()
		if st.persisted.Load() {
			t.fold(st, now)
			if made := st.recordMade.Load(); !st.aged.Load() && made != 0 && recordAged(time.Unix(0, made), now) {
				st.aged.Store(true)
				keep(Change[L]{Peer: st}.retiered())
			}
			return
		}
		if pending := st.pendingValue(); pending != "" {
			keep(t.ShowedValue(st, pending, now, mono))
			return
		}
		if st.Helloed() && mono-time.Duration(st.connectedAt) >= ValueAfterConnected && st.Tier() != limits.TierSuspect {
			keep(t.ShowedValue(st, peercache.ValueConnected, now, mono))
		}
	})
	return out
}

// fold adds the counts st gathered since the last fold to its record.
func (t *Table[L]) fold(st *Peer[L], now time.Time) {
	t.cache.Add(st.id, st.unfolded(), now)
}

// RecordHistory returns the value history a record r holds at now.
func RecordHistory(r peercache.Record, now time.Time) limits.History {
	return history(r.Counts, true, recordAged(r.FirstSeen, now))
}
