package limits

import (
	"errors"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wats-network/wats/core"
)

// TestDefaultRates ties DefaultConfig to ADR 0014's numbers: the burst
// (a quarter of a minute's worth) and the refill interval of each type.
func TestDefaultRates(t *testing.T) {
	c := DefaultConfig()
	want := map[core.Request]struct {
		perMin, burst int
		interval      time.Duration
	}{
		core.Hello:       {60, 15, time.Second},
		core.Sync:        {600, 150, 100 * time.Millisecond},
		core.Replicate:   {120, 30, 500 * time.Millisecond},
		core.CrashReport: {10, 2, 6 * time.Second},
	}
	for _, k := range core.Requests() {
		r, err := c.Rate(k)
		if err != nil {
			t.Fatal(err)
		}
		w := want[k]
		if r.PerMin() != w.perMin || r.Burst() != w.burst || r.Interval() != w.interval || r.Unlimited() {
			t.Errorf("%s: %v, want %d/min burst %d every %v", k, r, w.perMin, w.burst, w.interval)
		}
		// From a full bucket: exactly the burst at once, then exactly one
		// token per interval.
		b := NewBucket(r)
		n := 0
		for ; n <= w.burst; n++ {
			if ok, retry := b.Allow(0); !ok {
				if retry != w.interval {
					t.Errorf("%s: retry after %v, want %v", k, retry, w.interval)
				}
				break
			}
		}
		if n != w.burst {
			t.Errorf("%s: %d at once, want %d", k, n, w.burst)
		}
		for i := 1; i <= 100; i++ {
			now := int64(i) * int64(w.interval)
			if ok, _ := b.Allow(now - 1); ok {
				t.Fatalf("%s: token %d allowed 1 ns early", k, i)
			}
			if ok, _ := b.Allow(now); !ok {
				t.Fatalf("%s: token %d refused at %v", k, i, time.Duration(now))
			}
		}
	}
}

// TestNewRateBounds: 0..MaxPerMin, and the burst of the small rates.
func TestNewRateBounds(t *testing.T) {
	for _, tc := range []struct {
		perMin, burst int
		interval      time.Duration
		ok            bool
	}{
		{-1, 0, 0, false},
		{0, 0, 0, true},
		{1, 1, time.Minute, true},
		{2, 1, 30 * time.Second, true},
		{3, 1, 20 * time.Second, true},
		{4, 1, 15 * time.Second, true},
		{7, 1, 8571428572, true},
		{8, 2, 7500 * time.Millisecond, true},
		{MaxPerMin, 15_000, time.Millisecond, true},
		{MaxPerMin + 1, 0, 0, false},
		{math.MaxInt, 0, 0, false},
		{math.MinInt, 0, 0, false},
	} {
		r, err := NewRate(tc.perMin)
		if (err == nil) != tc.ok {
			t.Errorf("NewRate(%d): err %v, want ok=%v", tc.perMin, err, tc.ok)
			continue
		}
		if !tc.ok {
			if !errors.Is(err, ErrBadRate) {
				t.Errorf("NewRate(%d): %v is not ErrBadRate", tc.perMin, err)
			}
			continue
		}
		if r.PerMin() != tc.perMin || r.Burst() != tc.burst || r.Interval() != tc.interval {
			t.Errorf("NewRate(%d) = %v, want burst %d every %v", tc.perMin, r, tc.burst, tc.interval)
		}
	}
}

// TestNoDrift: a client that asks again exactly when told (retryAfter)
// gets, at every request up to 1,000,000, exactly as many tokens as the
// ideal limiter allows by then: burst + floor(t·perMin/60 s). Rates with a
// non-integer interval; for 28/min and above the time of every token is
// also checked exactly: ceil((n+1-burst)·60e9/perMin) ns.
func TestNoDrift(t *testing.T) {
	for _, perMin := range []int{7, 28, 700, 59_999} {
		r, _ := NewRate(perMin)
		b := NewBucket(r)
		burst := int64(r.Burst())
		now := int64(0)
		for n := int64(0); n < 1_000_000; n++ {
			ok, retry := b.Allow(now)
			if !ok {
				if ok2, _ := b.Allow(now + int64(retry) - 1); ok2 {
					t.Fatalf("%d/min: request %d allowed before retryAfter", perMin, n)
				}
				now += int64(retry)
				if ok, _ = b.Allow(now); !ok {
					t.Fatalf("%d/min: request %d refused after retryAfter %v", perMin, n, retry)
				}
			}
			ideal := burst + now*int64(perMin)/int64(time.Minute)
			if n+1 > ideal || n+1 >= burst && n+1 != ideal {
				t.Fatalf("%d/min: %d tokens by %v, the ideal limiter allows %d", perMin, n+1, time.Duration(now), ideal)
			}
			if burst > 1 && n >= burst {
				k := (n + 1 - burst) * int64(time.Minute)
				want := (k + int64(perMin) - 1) / int64(perMin)
				if now != want {
					t.Fatalf("%d/min: token %d at %d ns, want %d", perMin, n, now, want)
				}
			}
		}
		t.Logf("%d/min: 1,000,000 requests took %v", perMin, time.Duration(now))
	}
}

// TestRetryAfterIsExact: for random rates, states and times, retryAfter is
// the smallest wait after which the request is allowed.
func TestRetryAfterIsExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	checked := 0
	for range 20_000 {
		r, _ := NewRate(1 + rng.IntN(MaxPerMin))
		// A state near the edge of refusal: TAT around now + τ, give or
		// take an interval, and a little beyond (a clock that stepped
		// back); any remainder.
		now := rng.Int64N(1 << 50)
		b := NewBucket(r)
		off := int64(r.tauQ) - int64(r.Interval()) + rng.Int64N(4*int64(r.Interval()))
		b.ns = tick(now) + uint64(max(off, 0))
		b.rem = uint16(rng.IntN(r.PerMin()))
		ok, retry := b.Allow(now)
		if ok {
			continue
		}
		checked++
		if retry <= 0 {
			t.Fatalf("%v: refused with retryAfter %v", r, retry)
		}
		early, late := *b, *b
		if ok, _ := early.Allow(now + int64(retry) - 1); ok {
			t.Fatalf("%v: allowed 1 ns before retryAfter %v", r, retry)
		}
		if ok, _ := late.Allow(now + int64(retry)); !ok {
			t.Fatalf("%v: refused at retryAfter %v", r, retry)
		}
	}
	if checked < 5000 {
		t.Fatalf("only %d refusals checked", checked)
	}
}

// TestRefusedChangesNothing: a refused attempt leaves the bucket exactly as
// it was, whatever the time of the attempt.
func TestRefusedChangesNothing(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, perMin := range []int{1, 7, 10, 60, 600, 60_000} {
		r, _ := NewRate(perMin)
		b := NewBucket(r)
		for {
			if ok, _ := b.Allow(0); !ok {
				break
			}
		}
		before := *b
		for range 10_000 {
			now := rng.Int64N(int64(r.Interval())+1<<40) - 1<<40 // before the next token
			if ok, _ := b.Allow(now); ok {
				t.Fatalf("%d/min: allowed at %d", perMin, now)
			}
			if *b != before {
				t.Fatalf("%d/min: refused attempt changed the bucket", perMin)
			}
		}
	}
}

// TestBackwardsNeverCredits: whatever order the clock readings come in,
// the bucket never allows more than a monotonic clock spanning the same
// readings would: burst + (latest − earliest)/interval. A naive bucket that
// refills by |now − last| would credit each step back twice.
func TestBackwardsNeverCredits(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, perMin := range []int{1, 7, 60, 600, 60_000} {
		r, _ := NewRate(perMin)
		for trial := range 50 {
			b := NewBucket(r)
			span := int64(trial+1) * int64(r.Interval()) * 3
			lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
			allowed := int64(0)
			for range 5_000 {
				now := rng.Int64N(span)
				lo, hi = min(lo, now), max(hi, now)
				if ok, _ := b.Allow(now); ok {
					allowed++
				}
			}
			// Tokens are due at multiples of the exact interval after lo.
			most := int64(r.Burst()) + (hi-lo)*int64(perMin)/int64(time.Minute)
			if allowed > most {
				t.Fatalf("%d/min: %d allowed with readings in [%d, %d], at most %d", perMin, allowed, lo, hi, most)
			}
			if allowed == 0 {
				t.Fatalf("%d/min: nothing allowed", perMin)
			}
		}
	}
}

// TestExtremeTimes: idle for any time, including the whole int64 range,
// never overflows: the bucket is full, no fuller, and retryAfter is sane.
func TestExtremeTimes(t *testing.T) {
	times := []int64{math.MinInt64, math.MinInt64 + 1, -1, 0, 1, int64(30 * 24 * time.Hour),
		math.MaxInt64 - int64(2*time.Minute), math.MaxInt64 - 1, math.MaxInt64}
	for _, perMin := range []int{1, 7, 60, 600, 60_000} {
		r, _ := NewRate(perMin)
		for _, from := range times {
			for _, to := range times {
				b := NewBucket(r)
				for {
					if ok, _ := b.Allow(from); !ok {
						break
					}
				}
				n := 0
				for ; n <= r.Burst(); n++ {
					ok, retry := b.Allow(to)
					if ok {
						continue
					}
					if retry <= 0 {
						t.Fatalf("%d/min %d→%d: retryAfter %v", perMin, from, to, retry)
					}
					break
				}
				if n > r.Burst() {
					t.Fatalf("%d/min %d→%d: %d allowed, more than the burst %d", perMin, from, to, n, r.Burst())
				}
				if tick(to) > tick(from) && tick(to)-tick(from) > uint64(time.Hour) && n != r.Burst() {
					t.Fatalf("%d/min %d→%d: %d allowed after an hour idle, want the burst %d", perMin, from, to, n, r.Burst())
				}
			}
		}
	}
}

// TestRetryAfterMs rounds up to whole milliseconds.
func TestRetryAfterMs(t *testing.T) {
	for d, want := range map[time.Duration]int64{
		-time.Second: 0, 0: 0, 1: 1, time.Millisecond - 1: 1, time.Millisecond: 1,
		time.Millisecond + 1: 2, 100 * time.Millisecond: 100, 8571428572: 8572,
		math.MaxInt64: math.MaxInt64/int64(time.Millisecond) + 1,
	} {
		if got := RetryAfterMs(d); got != want {
			t.Errorf("RetryAfterMs(%v) = %d, want %d", d, got, want)
		}
	}
}

// TestUnlimitedBucket: the zero Bucket and a Bucket of rate 0 allow all.
func TestUnlimitedBucket(t *testing.T) {
	for _, b := range []*Bucket{{}, NewBucket(Rate{})} {
		for i := range 1000 {
			if ok, retry := b.Allow(int64(i % 3)); !ok || retry != 0 {
				t.Fatalf("unlimited bucket refused: %v", retry)
			}
		}
		if !b.Full(0) || !b.Rate().Unlimited() || b.Rate().String() != "unlimited" {
			t.Fatal("unlimited bucket not full")
		}
	}
}

// TestSharedCharge: a charge takes the bucket past empty; Allow refuses
// until the tokens taken past empty are earned back, and says exactly how
// long; the debt stops a minute past empty; an unlimited bucket is never
// charged.
func TestSharedCharge(t *testing.T) {
	r, err := NewRate(600) // a burst of 150, one every 100 ms
	if err != nil {
		t.Fatal(err)
	}
	s := NewShared(r)
	s.Charge(160, 0) // the burst and 10 more
	if ok, w := s.Allow(0); ok || w != 1100*time.Millisecond {
		t.Errorf("10 past empty: %v, wait %v; want refused for 1.1 s (the 11th interval brings the next token)", ok, w)
	}
	if ok, w := s.Allow(int64(1099 * time.Millisecond)); ok || w != time.Millisecond {
		t.Errorf("a ms before the debt is paid: %v, wait %v", ok, w)
	}
	if ok, _ := s.Allow(int64(1100 * time.Millisecond)); !ok {
		t.Error("no token once the debt was paid")
	}
	s.Charge(1_000_000, int64(1100*time.Millisecond)) // far past a minute
	if ok, w := s.Allow(int64(1100 * time.Millisecond)); ok || w != time.Minute {
		t.Errorf("a huge charge: %v, wait %v; want a minute past the burst", ok, w)
	}
	s.Charge(0, 0)
	s.Charge(-5, 0) // nothing
	if ok, _ := s.Allow(int64(time.Minute + 1100*time.Millisecond)); !ok {
		t.Error("no token a minute later")
	}
	u := NewShared(Rate{})
	u.Charge(100, 0)
	if ok, _ := u.Allow(0); !ok {
		t.Error("an unlimited bucket refused")
	}
}

// TestSharedConcurrent: goroutines racing for a shared bucket at one
// moment get exactly its burst, however they interleave; a charge into
// debt is kept.
func TestSharedConcurrent(t *testing.T) {
	r, err := NewRate(60)
	if err != nil {
		t.Fatal(err)
	}
	for range 50 {
		s := NewShared(r)
		var wg sync.WaitGroup
		var got atomic.Int64
		for range 64 {
			wg.Go(func() {
				if ok, _ := s.Allow(0); ok {
					got.Add(1)
				}
			})
		}
		wg.Wait()
		if got.Load() != int64(r.Burst()) {
			t.Fatalf("%d tokens taken at once, want the burst %d", got.Load(), r.Burst())
		}
	}
	s := NewShared(r)
	s.Charge(r.Burst()+10, 0)
	if ok, retry := s.Allow(0); ok || retry <= 10*r.Interval() {
		t.Fatalf("after a charge 10 past the burst: allowed %v, retry after %v; want a wait past 10 intervals", ok, retry)
	}
}
