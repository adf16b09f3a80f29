package limits

import (
	"fmt"
	"hash/maphash"
	"sync"
)

// Budget is a token bucket per key for what peers send without being asked
// (ADR 0031): the gossip envelopes a peer forwards (keyed by its peer ID)
// and the new events of an author stored (keyed by the author's). Rates
// follow the tiers as admission's do: suspects get limits.suspect_percent
// of the rate, valued keys limits.valued_percent. Keys of the stranger
// tiers (new, suspect) also take from one bucket they all share, so that
// fresh ids, which cost nothing, buy no more than that one budget
// together. It is safe for concurrent use; build one with NewBudget.
//
// Bounded memory, as Table's: a full bucket is the same as no state, so a
// sweep (each shard every SweepInterval, on use) drops it; at most maxKeys
// keys are tracked, and a new key that finds its shard full after a sweep
// takes from the shard's overflow bucket, NewcomerShare keys' worth, with
// the strangers' shared bucket on top for a stranger. No key is evicted
// (evicting would hand its burst back). A clock that steps backwards never
// credits a token: a bucket's theoretical arrival time only grows, and a
// sweep forgets only buckets that are full at the time it runs, which a
// backwards step cannot make fuller (the cost: a key swept just before the
// step may take its burst again, at most once per sweep).
type Budget struct {
	rates    [NumTiers]Rate
	overflow Rate
	// strangers is the bucket new and suspect keys share; unlimited when
	// its rate is 0.
	strangers Shared
	seed      maphash.Seed
	perShard  int
	shards    [numShards]budgetShard
}

type budgetShard struct {
	mu        sync.Mutex
	keys      map[string]*gcra
	lastSweep uint64
	overflow  gcra
}

// gcra is one bucket's state (see Rate.allow); the rate comes from the
// key's tier at each use.
type gcra struct {
	ns  uint64
	rem uint16
}

// fit returns the state as valid for r: a remainder is in units of
// 1/perMin ns and must stay below perMin, so after a change of rate (a
// key whose tier changed) it is rounded up to the next whole ns, which
// never credits a token.
func (g *gcra) fit(r *Rate) {
	if uint64(g.rem) >= r.perMin {
		g.ns++
		g.rem = 0
	}
}

// BudgetRate describes a Budget: per key, a minute, for the tiers new and
// normal; suspects and valued keys get their percentages of it (ADR
// 0030). Strangers is what all keys of the stranger tiers share a minute.
// 0 is unlimited; each is 0..MaxPerMin.
type BudgetRate struct {
	PerMin          int
	StrangersPerMin int
	SuspectPercent  int
	ValuedPercent   int
	// MaxKeys bounds the keys tracked at once: 1..MaxMaxPeers; 0 means
	// DefaultMaxPeers.
	MaxKeys int
}

// NewBudget returns a Budget of the rates br. A value out of range is an
// error.
func NewBudget(br BudgetRate) (*Budget, error) {
	switch {
	case br.PerMin < 0 || br.PerMin > MaxPerMin:
		return nil, fmt.Errorf("limits: budget %d a minute out of range 0..%d", br.PerMin, MaxPerMin)
	case br.StrangersPerMin < 0 || br.StrangersPerMin > MaxPerMin:
		return nil, fmt.Errorf("limits: strangers' budget %d a minute out of range 0..%d", br.StrangersPerMin, MaxPerMin)
	case br.SuspectPercent < MinSuspectPercent || br.SuspectPercent > MaxSuspectPercent:
		return nil, fmt.Errorf("limits: suspect percent %d out of range %d..%d", br.SuspectPercent, MinSuspectPercent, MaxSuspectPercent)
	case br.ValuedPercent < MinValuedPercent || br.ValuedPercent > MaxValuedPercent:
		return nil, fmt.Errorf("limits: valued percent %d out of range %d..%d", br.ValuedPercent, MinValuedPercent, MaxValuedPercent)
	case br.MaxKeys < 0 || br.MaxKeys > MaxMaxPeers:
		return nil, fmt.Errorf("limits: budget keys %d out of range 1..%d", br.MaxKeys, MaxMaxPeers)
	}
	b := &Budget{seed: maphash.MakeSeed()}
	for t := range Tier(NumTiers) {
		b.rates[t] = tierRate(br.PerMin, t.percent(br.SuspectPercent, br.ValuedPercent))
	}
	b.overflow = tierRate(br.PerMin, 100*NewcomerShare)
	b.strangers.rate = tierRate(br.StrangersPerMin, 100)
	maxKeys := br.MaxKeys
	if maxKeys == 0 {
		maxKeys = DefaultMaxPeers
	}
	b.perShard = (maxKeys + numShards - 1) / numShards
	for i := range b.shards {
		b.shards[i].keys = make(map[string]*gcra)
	}
	return b, nil
}

// Rate returns the rate of one key of tier t (the zero, unlimited Rate for
// an invalid t).
func (b *Budget) Rate(t Tier) Rate {
	if !t.Valid() {
		return Rate{}
	}
	return b.rates[t]
}

// StrangersRate returns the rate the keys of the stranger tiers share.
func (b *Budget) StrangersRate() Rate { return b.strangers.rate }

// Allow takes one token for key k of tier t at now (ns from the caller's
// monotonic base, as for Table.Allow): from k's bucket and, for a
// stranger, from the shared one. It reports whether both had one; when
// either has none, it takes nothing. An invalid tier is refused.
func (b *Budget) Allow(k string, t Tier, now int64) bool { return b.decide(k, t, now, true, true) }

// AllowOwn is Allow from k's own bucket only, even for a stranger: for
// what the strangers' share is not meant to bound (ADR 0031: a stranger
// forwarding the events of established authors).
func (b *Budget) AllowOwn(k string, t Tier, now int64) bool { return b.decide(k, t, now, true, false) }

// Has reports whether Allow would take a token for k now, taking none: a
// cheap check before expensive work whose outcome decides whether the
// token is taken at all (ADR 0031: an author's budget is looked at before
// its event's signature is checked and taken after, so that forgeries in
// an author's name cannot spend its budget).
func (b *Budget) Has(k string, t Tier, now int64) bool { return b.decide(k, t, now, false, true) }

// HasOwn is Has from k's own bucket only, even for a stranger: whether k
// itself is within its rate, whatever the strangers' shared bucket holds
// (ADR 0041: the events of a new author forwarded by a peer with standing
// take from the author's own bucket, not from the share a flood spends).
func (b *Budget) HasOwn(k string, t Tier, now int64) bool { return b.decide(k, t, now, false, false) }

// ChargeStrangers takes k more tokens from the strangers' shared bucket at
// now, whether or not it holds them (Shared.Charge: at most a minute into
// debt): the rest of the cost of an event larger than one token
// (EventTokens) whose first token Allow took. Nothing when the share is
// unlimited or k <= 0.
func (b *Budget) ChargeStrangers(k int, now int64) { b.strangers.Charge(k, now) }

// TakeStrangers takes k tokens from the strangers' shared bucket at now
// if it holds them all (Shared.AllowN), and reports whether it did: a
// cost paid up front for what a stranger may then draw without it (ADR
// 0059: the DHT requests a greeted stranger draws from its allowance).
// True when the share is unlimited; false for k <= 0 or k above its burst.
func (b *Budget) TakeStrangers(k int, now int64) bool { return b.strangers.AllowN(k, now) }

// EventTokenBytes is the size of event one token of the strangers' shares
// pays for (ADR 0041): limits.stranger_author_per_min and
// limits.stranger_sync_per_min count events of up to 4 KiB, and a larger
// one as one per 4 KiB started, so that what strangers make a node store
// is bounded in bytes as well as in events.
const EventTokenBytes = 4 << 10

// EventTokens is the tokens of the strangers' shares an event of size
// bytes (its encoded form) costs: one per EventTokenBytes started, at
// least one. A 1 KiB note costs 1; the largest event (eventlog's 32 KiB
// cap) 8.
func EventTokens(size int) int { return max(1, (size+EventTokenBytes-1)/EventTokenBytes) }

func (b *Budget) decide(k string, t Tier, now int64, take, share bool) bool {
	if !t.Valid() {
		return false
	}
	r := &b.rates[t]
	stranger := share && t.Stranger() && b.strangers.rate.perMin != 0
	if r.perMin == 0 && !stranger {
		return true
	}
	tk := tick(now)
	sh := &b.shards[maphash.String(b.seed, k)&(numShards-1)]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if tk < sh.lastSweep {
		sh.lastSweep = tk
	} else if tk-sh.lastSweep >= uint64(SweepInterval) {
		sh.sweep(b, tk)
	}
	var st *gcra
	if r.perMin != 0 {
		st = sh.keys[k]
		if st == nil {
			if len(sh.keys) >= b.perShard && tk-sh.lastSweep >= uint64(fullSweepGap) {
				sh.sweep(b, tk)
			}
			if len(sh.keys) < b.perShard {
				if !take {
					st = &gcra{} // a new key's bucket is full
				} else {
					st = new(gcra)
					sh.keys[k] = st
				}
			} else {
				st, r = &sh.overflow, &b.overflow
			}
		}
		st.fit(r)
		if !r.has(st.ns, st.rem, tk) {
			return false
		}
	}
	if stranger && !b.strangers.has(tk, take) {
		return false
	}
	if st != nil && take {
		r.allow(&st.ns, &st.rem, tk)
	}
	return true
}

// sweep drops the full buckets of sh. REQUIRES: sh.mu held.
func (sh *budgetShard) sweep(b *Budget, tk uint64) {
	for k, st := range sh.keys {
		if full(st.ns, st.rem, tk) {
			delete(sh.keys, k)
		}
	}
	sh.lastSweep = tk
}

// Len returns the number of keys tracked.
func (b *Budget) Len() int {
	n := 0
	for i := range b.shards {
		sh := &b.shards[i]
		sh.mu.Lock()
		n += len(sh.keys)
		sh.mu.Unlock()
	}
	return n
}
