package limits

import (
	"errors"
	"fmt"
	"math"
	"sync/atomic"
	"time"
)

// nsPerMin is one minute in nanoseconds: the numerator of every emission
// interval (60e9 / perMin ns).
const nsPerMin = uint64(time.Minute)

// ErrBadRate is returned by NewRate for a rate outside 0..MaxPerMin.
var ErrBadRate = errors.New("limits: bad rate")

// Rate is a request rate and its burst, in the exact integer form the GCRA
// of Bucket, Table and Pacer uses. Build one with NewRate. The zero Rate is
// unlimited: every request is allowed.
//
// A Rate of perMin > 0 requests a minute (ADR 0014) refills perMin/60
// tokens a second up to a burst of max(1, perMin/4) tokens ("a quarter of a
// minute's worth, at least one"). Its emission interval T = 60e9/perMin ns
// is generally not a whole number of nanoseconds, so it is kept as
// q + r/perMin ns (q = 60e9 div perMin, r = 60e9 mod perMin), and the
// tolerance τ = (burst-1)·T likewise; see Bucket for the arithmetic.
//
// A Rate is a small value; copy it freely.
type Rate struct {
	perMin uint64 // 0: unlimited; else 1..MaxPerMin
	burst  uint64 // 1..perMin
	q, r   uint64 // T = q + r/perMin ns
	tauQ   uint64 // τ = (burst-1)·T = tauQ + tauR/perMin ns
	tauR   uint64
}

// NewRate returns the Rate of perMin requests a minute with ADR 0014's
// burst of max(1, perMin/4); 0 is unlimited. perMin outside 0..MaxPerMin
// is an error wrapping ErrBadRate.
func NewRate(perMin int) (Rate, error) {
	if perMin < 0 || perMin > MaxPerMin {
		return Rate{}, fmt.Errorf("%w: %d requests a minute; allowed: 0..%d (0 means unlimited)",
			ErrBadRate, perMin, MaxPerMin)
	}
	return newRate(perMin, adrBurst(perMin)), nil
}

// adrBurst is ADR 0014's burst for perMin: a quarter of a minute's worth,
// at least one.
func adrBurst(perMin int) int { return max(1, perMin/4) }

// newRate builds a Rate with the given burst.
// REQUIRES: 0 <= perMin <= MaxPerMin; 1 <= burst <= max(1, perMin) when
// perMin > 0. These keep burst·T <= 60 s, which tickMargin relies on, and
// (burst-1)·60e9 below 2^64.
func newRate(perMin, burst int) Rate {
	if perMin == 0 {
		return Rate{}
	}
	pm := uint64(perMin)
	tau := uint64(burst-1) * nsPerMin // in units of 1/perMin ns: ≤ 3.6e15
	return Rate{
		perMin: pm,
		burst:  uint64(burst),
		q:      nsPerMin / pm,
		r:      nsPerMin % pm,
		tauQ:   tau / pm,
		tauR:   tau % pm,
	}
}

// PerMin returns the rate in requests a minute; 0 means unlimited.
func (r Rate) PerMin() int { return int(r.perMin) }

// Burst returns how many requests a full bucket allows at once; 0 for an
// unlimited Rate.
func (r Rate) Burst() int { return int(r.burst) }

// Unlimited reports whether every request is allowed (perMin 0).
func (r Rate) Unlimited() bool { return r.perMin == 0 }

// Interval returns the emission interval, the time one token takes to
// refill: 60e9/perMin ns rounded up to a whole nanosecond (the buckets keep
// the exact fraction); 0 for an unlimited Rate.
func (r Rate) Interval() time.Duration {
	if r.perMin == 0 {
		return 0
	}
	d := r.q
	if r.r > 0 {
		d++
	}
	return time.Duration(d)
}

// String describes r for people: "600/min (burst 150, one every 100ms)",
// "7/min (burst 1, one every 8.571428572s)", or "unlimited".
func (r Rate) String() string {
	if r.perMin == 0 {
		return "unlimited"
	}
	return fmt.Sprintf("%d/min (burst %d, one every %v)", r.perMin, r.burst, r.Interval())
}

// Time inside the package is a "tick": the caller's int64 nanoseconds
// mapped, order kept, onto uint64 (MinInt64 → 0, 0 → 2^63, MaxInt64 →
// 2^64-1), so that every difference the GCRA takes is non-negative and fits.
// Ticks above maxTick count as maxTick: a theoretical arrival time is at
// most now + burst·T <= now + 60 s, and the margin keeps it, plus one, below
// 2^64. The clamp only touches the last 2^40 ns (18 minutes) before
// math.MaxInt64, 292 years after the caller's base, and freezes time there,
// which never credits a token.
const (
	tickMargin = 1 << 40
	maxTick    = math.MaxUint64 - tickMargin
)

// Compile-time checks of the bounds the arithmetic relies on: a remainder
// (below perMin) fits in a uint16, and burst·T <= 60 s fits in the margin.
const (
	_ uint16 = MaxPerMin
	_ uint64 = tickMargin - 2*nsPerMin - maxDebt
)

// tick maps the caller's now (ns from a base of its choice) to a tick.
func tick(now int64) uint64 { return min(uint64(now)^(1<<63), maxTick) }

// duration converts a wait in ns to a time.Duration, saturating at the
// largest Duration (after a clock jump of centuries backwards).
func duration(ns uint64) time.Duration {
	return time.Duration(min(ns, math.MaxInt64))
}

// allow is the GCRA (generic cell rate algorithm) on one bucket's state:
// the theoretical arrival time TAT = *ns + *rem/perMin ticks, the time at
// which the bucket would be full again. A request at tick t is allowed iff
// max(TAT, t) - t <= τ, and then TAT becomes max(TAT, t) + T; a refused
// request changes nothing, and the wait until it would be allowed is
// max(TAT, t) - τ - t, rounded up to a whole ns.
//
// Exactness: TAT, T and τ are kept as whole ns plus a remainder in units of
// 1/perMin ns, so after any number of requests TAT is exactly the sum of
// their intervals: no drift. TAT only ever grows, so a clock that steps
// backwards finds the bucket emptier, never fuller: a token is never
// credited twice. Bounds: TAT <= t + burst·T <= maxTick + 60 s, so nothing
// overflows (see tickMargin).
//
// The zero state (TAT 0) is a full bucket at every tick.
//
// REQUIRES: r.perMin > 0; t <= maxTick; *rem < r.perMin.
func (r *Rate) allow(ns *uint64, rem *uint16, t uint64) (bool, time.Duration) {
	tat, tr := *ns, uint64(*rem)
	if tat < t {
		tat, tr = t, 0 // the bucket is full: idle time beyond it is lost
	}
	d := tat - t
	if d < r.tauQ || d == r.tauQ && tr <= r.tauR {
		tr += r.r
		tat += r.q
		if tr >= r.perMin {
			tr -= r.perMin
			tat++
		}
		*ns, *rem = tat, uint16(tr)
		return true, 0
	}
	w := d - r.tauQ
	if tr > r.tauR {
		w++
	}
	return false, duration(w)
}

// maxDebt bounds how far charge takes a bucket past empty: a minute of
// ticks beyond its burst, within tickMargin with room (see the checks
// below), so that a bucket in debt is refusing for at most a minute more
// than a full burst takes to earn.
const maxDebt = nsPerMin

// charge takes k tokens at tick t whether or not the bucket holds them:
// TAT becomes max(TAT, t) + k·T, at most t + τ + maxDebt. For a cost known
// only once the work is done (the events of new authors a sync page
// brought): the bucket then refuses, and wait reports the time, until the
// tokens taken past empty are earned back. k <= 0 changes nothing.
// REQUIRES: as allow.
func (r *Rate) charge(ns *uint64, rem *uint16, t uint64, k int) {
	if k <= 0 {
		return
	}
	tat, tr := *ns, uint64(*rem)
	if tat < t {
		tat, tr = t, 0
	}
	tr += uint64(k) * r.r
	tat += uint64(k)*r.q + tr/r.perMin
	tr %= r.perMin
	if limit := t + r.tauQ + maxDebt; tat > limit {
		tat, tr = limit, 0
	}
	*ns, *rem = tat, uint16(tr)
}

// allowN takes k tokens at tick t if the bucket holds them all: the k-th
// would be allowed after the first k-1, i.e. max(TAT, t) + (k-1)·T - t
// <= τ. Otherwise it takes nothing. k above the burst is never held; k
// <= 0 takes nothing and fails. REQUIRES: as allow.
func (r *Rate) allowN(ns *uint64, rem *uint16, t uint64, k int) bool {
	if k <= 0 || uint64(k) > r.burst {
		return false
	}
	n, m := *ns, *rem
	r.charge(&n, &m, t, k-1) // within the burst: never clamped
	if ok, _ := r.allow(&n, &m, t); !ok {
		return false
	}
	*ns, *rem = n, m
	return true
}

// has reports whether allow would allow a request at tick t, changing
// nothing. REQUIRES: as allow.
func (r *Rate) has(ns uint64, rem uint16, t uint64) bool {
	tat, tr := ns, uint64(rem)
	if tat < t {
		tat, tr = t, 0
	}
	d := tat - t
	return d < r.tauQ || d == r.tauQ && tr <= r.tauR
}

// full reports whether the state TAT = ns + rem/perMin is a full bucket at
// tick t, i.e. TAT <= t: then it is the same as no state at all.
func full(ns uint64, rem uint16, t uint64) bool {
	return ns < t || ns == t && rem == 0
}

// Bucket is one token bucket: a Rate and its GCRA state. Its zero value is
// an unlimited bucket; NewBucket gives a full one. A Bucket is not safe for
// concurrent use (Table is); it is the building block of this package made
// public for tests, tools and single-owner callers.
type Bucket struct {
	rate Rate
	ns   uint64
	rem  uint16
}

// NewBucket returns a full bucket of rate r.
func NewBucket(r Rate) *Bucket { return &Bucket{rate: r} }

// Rate returns the bucket's rate.
func (b *Bucket) Rate() Rate { return b.rate }

// Allow takes one token at now, a time in nanoseconds from a monotonic base
// the caller picks (e.g. time.Since(start)); any int64 is accepted. It
// returns true if the request fits the bucket. Otherwise it returns false
// and retryAfter, the exact time until the next token (the smallest wait w,
// in whole ns, such that Allow(now+w) succeeds), and the bucket is left
// unchanged. An unlimited bucket always allows.
func (b *Bucket) Allow(now int64) (ok bool, retryAfter time.Duration) {
	if b.rate.perMin == 0 {
		return true, 0
	}
	return b.rate.allow(&b.ns, &b.rem, tick(now))
}

// AllowN takes k tokens at now if the bucket holds them all, and reports
// whether it did; otherwise it takes nothing. k above the burst is never
// held, and k <= 0 fails. An unlimited bucket always allows.
func (b *Bucket) AllowN(k int, now int64) bool {
	if b.rate.perMin == 0 {
		return true
	}
	return b.rate.allowN(&b.ns, &b.rem, tick(now), k)
}

// Full reports whether the bucket holds its whole burst at now, i.e. it is
// in the same state as a new bucket (and a Table may forget it).
func (b *Bucket) Full(now int64) bool { return full(b.ns, b.rem, tick(now)) }

// Shared is a token bucket many goroutines take from: one budget for a
// whole node (ADR 0030: the peer-cache records made a minute, the crash
// reports of strangers, the strangers' share of gossip). It takes no lock:
// each take swaps in the bucket's next state if no other came first, else
// tries again. The zero value is unlimited; NewShared gives a full one.
type Shared struct {
	rate Rate
	// st is the bucket's state; nil is a full bucket.
	st atomic.Pointer[sharedState]
}

// sharedState is a Shared bucket's state, as a Bucket's.
type sharedState struct {
	ns  uint64
	rem uint16
}

// NewShared returns a full shared bucket of rate r.
func NewShared(r Rate) *Shared { return &Shared{rate: r} }

// Rate returns the bucket's rate.
func (s *Shared) Rate() Rate { return s.rate }

// update applies f to a copy of the bucket's state and swaps it in,
// unless f says not to (false); it tries again while other updates come
// first.
func (s *Shared) update(f func(st *sharedState) bool) {
	for {
		old := s.st.Load()
		var next sharedState
		if old != nil {
			next = *old
		}
		if !f(&next) || s.st.CompareAndSwap(old, &next) {
			return
		}
	}
}

// Charge takes k tokens at now whether or not the bucket holds them, into
// debt when it holds fewer (at most a minute past empty): for a cost known
// only once the work is done, as the events of new authors a sync page
// brought (ADR 0041). Nothing for an unlimited bucket or k <= 0.
func (s *Shared) Charge(k int, now int64) {
	if s.rate.perMin == 0 {
		return
	}
	s.update(func(st *sharedState) bool {
		s.rate.charge(&st.ns, &st.rem, tick(now), k)
		return true
	})
}

// Allow is Bucket.Allow, safe for concurrent use.
func (s *Shared) Allow(now int64) (ok bool, retryAfter time.Duration) {
	if s.rate.perMin == 0 {
		return true, 0
	}
	s.update(func(st *sharedState) bool {
		ok, retryAfter = s.rate.allow(&st.ns, &st.rem, tick(now))
		return ok
	})
	return ok, retryAfter
}

// AllowN is Bucket.AllowN, safe for concurrent use: k tokens at now if
// the bucket holds them all, else none.
func (s *Shared) AllowN(k int, now int64) (ok bool) {
	if s.rate.perMin == 0 {
		return true
	}
	s.update(func(st *sharedState) bool {
		ok = s.rate.allowN(&st.ns, &st.rem, tick(now), k)
		return ok
	})
	return ok
}

// has reports whether the bucket holds a token at tick tk and, with take,
// takes it.
func (s *Shared) has(tk uint64, take bool) (ok bool) {
	s.update(func(st *sharedState) bool {
		if ok = s.rate.has(st.ns, st.rem, tk); ok && take {
			s.rate.allow(&st.ns, &st.rem, tk)
			return true
		}
		return false
	})
	return ok
}
