package limits

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// responder is a fake peer: the same GCRA as a Table, on the bubble's
// clock, counting what it serves and refuses.
type responder struct {
	bucket            *Bucket
	base              time.Time
	served, refused   int
	firstRefusalAfter int
}

func newResponder(perMin int) *responder {
	r, _ := NewRate(perMin)
	return &responder{bucket: NewBucket(r), base: time.Now(), firstRefusalAfter: -1}
}

func (r *responder) handle() (bool, time.Duration) {
	ok, retry := r.bucket.Allow(int64(time.Since(r.base)))
	if ok {
		r.served++
	} else {
		if r.refused == 0 {
			r.firstRefusalAfter = r.served
		}
		r.refused++
	}
	return ok, retry
}

// TestPacerThroughput: a client pacing itself to 60,000 a minute against
// a peer enforcing that rate, over 10 simulated seconds: no request is
// refused and the throughput is within 5% of the limit (burst + rate·time).
func TestPacerThroughput(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const perMin, period = 60_000, 10 * time.Second
		peer := newResponder(perMin)
		p := NewPacer(perMin)
		ctx := context.Background()
		for time.Since(peer.base) < period {
			if err := p.Wait(ctx); err != nil {
				t.Fatal(err)
			}
			if time.Since(peer.base) >= period {
				break
			}
			peer.handle()
		}
		limit := 15_000 + int(period/time.Millisecond) // burst + 1,000 a second
		t.Logf("served %d of a limit of %d in %v, refused %d", peer.served, limit, period, peer.refused)
		if peer.refused != 0 {
			t.Fatalf("%d refused (first after %d served)", peer.refused, peer.firstRefusalAfter)
		}
		if peer.served < limit*95/100 || peer.served > limit {
			t.Fatalf("served %d, limit %d", peer.served, limit)
		}
	})
}

// TestPacerJitter: a client that does not wait for responses (pipelined
// requests) paces itself at 6,000 a minute, one every 10 ms. Its first
// burst meets a congested link (9 ms to reach the peer), then the latency
// varies anywhere from 0 to 9 ms. The peer's bucket took its phase from
// the slow burst, so a later request that travels faster arrives early by
// up to 9 ms; the Pacer's token of reserve absorbs that: no refusal.
// Without the reserve the same traffic is refused.
func TestPacerJitter(t *testing.T) {
	const perMin = 6_000
	run := func(p *Pacer) (served, refused int) {
		peer := newResponder(perMin)
		var mu sync.Mutex
		var wg sync.WaitGroup
		rng := rand.New(rand.NewPCG(11, 12))
		for i := 0; time.Since(peer.base) < 30*time.Second; i++ {
			if err := p.Wait(context.Background()); err != nil {
				t.Fatal(err)
			}
			latency := 9 * time.Millisecond
			if i >= 1500 {
				latency = time.Duration(rng.Int64N(int64(latency)))
			}
			wg.Go(func() {
				time.Sleep(latency)
				mu.Lock()
				peer.handle()
				mu.Unlock()
			})
		}
		wg.Wait()
		return peer.served, peer.refused
	}
	synctest.Test(t, func(t *testing.T) {
		served, refused := run(NewPacer(perMin))
		if refused != 0 || served < 1500+3000-10 {
			t.Fatalf("with the reserve: %d served, %d refused", served, refused)
		}
		exact := NewPacer(perMin)
		exact.rate = newRate(perMin, adrBurst(perMin)) // no reserve
		served, refused = run(exact)
		if refused == 0 {
			t.Fatal("without the reserve nothing was refused: the test shows nothing")
		}
		t.Logf("without the reserve: %d served, %d refused", served, refused)
	})
}

// TestPacerCatchUp: at the default sync rate of 600 a minute, 1,000,000
// events in pages of 256 (3,907 requests) take (3,907 − 149)/10 s =
// 375.8 s, about 6.3 minutes, with no refusal.
func TestPacerCatchUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		peer := newResponder(DefaultConfig().SyncPerMin)
		p := NewPacer(DefaultConfig().SyncPerMin)
		const pages = (1_000_000 + 255) / 256
		for range pages {
			if err := p.Wait(context.Background()); err != nil {
				t.Fatal(err)
			}
			peer.handle()
		}
		took := time.Since(peer.base)
		if want := (pages - 149) * 100 * time.Millisecond; took != want || peer.refused != 0 || peer.served != pages {
			t.Fatalf("%d pages took %v (want %v), %d refused", pages, took, want, peer.refused)
		}
		t.Logf("1,000,000 events at 600 pages a minute: %v", took)
	})
}

// TestPacerRefused: after a refusal the Pacer waits the retryAfter, then
// paces from an empty bucket.
func TestPacerRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		p := NewPacer(600) // one every 100 ms
		ctx := context.Background()
		p.Refused(5 * time.Second)
		for i, want := range []time.Duration{5 * time.Second, 5100 * time.Millisecond, 5200 * time.Millisecond} {
			if err := p.Wait(ctx); err != nil {
				t.Fatal(err)
			}
			if got := time.Since(start); got != want {
				t.Fatalf("request %d at %v, want %v", i, got, want)
			}
		}
		// Without a retry_after_ms: one interval.
		p.Refused(0)
		if err := p.Wait(ctx); err != nil {
			t.Fatal(err)
		}
		if got := time.Since(start); got != 5300*time.Millisecond {
			t.Fatalf("after Refused(0): %v", got)
		}
		// A refusal never makes the Pacer less patient.
		p.Refused(time.Minute)
		p.Refused(time.Second)
		if err := p.Wait(ctx); err != nil {
			t.Fatal(err)
		}
		if got := time.Since(start); got != 5300*time.Millisecond+time.Minute {
			t.Fatalf("after Refused(1m), Refused(1s): %v", got)
		}
	})
}

// TestPacerUnlimited: rate 0 never waits, until a refusal says otherwise.
func TestPacerUnlimited(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		for _, perMin := range []int{0, -5, math.MinInt} {
			p := NewPacer(perMin)
			if !p.Rate().Unlimited() {
				t.Fatalf("NewPacer(%d): %v", perMin, p.Rate())
			}
			for range 100_000 {
				if err := p.Wait(context.Background()); err != nil {
					t.Fatal(err)
				}
			}
			if time.Since(start) != 0 {
				t.Fatal("waited")
			}
		}
		p := NewPacer(0)
		p.Refused(3 * time.Second)
		p.Wait(context.Background())
		if got := time.Since(start); got != 3*time.Second {
			t.Fatalf("after Refused(3s): %v", got)
		}
		p.Refused(0)
		p.Wait(context.Background())
		if got := time.Since(start); got != 3*time.Second+DefaultRetryAfter {
			t.Fatalf("after Refused(0): %v", got)
		}
	})
}

// TestPacerBounds: peer input out of range is clamped; a retryAfter of
// centuries does not overflow, and the context still ends the wait.
func TestPacerBounds(t *testing.T) {
	if r := NewPacer(math.MaxInt).Rate(); r.PerMin() != MaxPerMin || r.Burst() != 14_999 {
		t.Fatalf("NewPacer(MaxInt): %v", r)
	}
	for perMin, burst := range map[int]int{1: 1, 7: 1, 8: 1, 12: 2, 600: 149} {
		if r := NewPacer(perMin).Rate(); r.Burst() != burst || r.PerMin() != perMin {
			t.Errorf("NewPacer(%d): %v, want burst %d", perMin, r, burst)
		}
	}
	synctest.Test(t, func(t *testing.T) {
		for _, perMin := range []int{0, 1, 600, MaxPerMin} {
			p := NewPacer(perMin)
			p.Refused(math.MaxInt64)
			ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
			err := p.Wait(ctx)
			cancel()
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("%d/min: %v", perMin, err)
			}
		}
	})
}

// TestPacerContext: a cancelled context ends Wait without taking a token.
func TestPacerContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := NewPacer(1) // one a minute
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := p.Wait(ctx); !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled: %v", err)
		}
		if err := p.Wait(context.Background()); err != nil { // the token is still there
			t.Fatal(err)
		}
		start := time.Now()
		ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := p.Wait(ctx); !errors.Is(err, context.DeadlineExceeded) || time.Since(start) != 10*time.Second {
			t.Fatalf("timeout: %v after %v", err, time.Since(start))
		}
		if err := p.Wait(context.Background()); err != nil || time.Since(start) != time.Minute {
			t.Fatalf("next token at %v: %v", time.Since(start), err)
		}
	})
}

// TestPacerConcurrent: waiters in several goroutines share the budget: in
// all, exactly the burst and then the rate.
func TestPacerConcurrent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		p := NewPacer(600) // 149 at once, then 10 a second
		done := make(chan time.Duration, 400)
		for range 4 {
			go func() {
				for range 100 {
					if err := p.Wait(context.Background()); err != nil {
						t.Error(err)
					}
					done <- time.Since(start)
				}
			}()
		}
		var last time.Duration
		for range 400 {
			last = max(last, <-done)
		}
		if want := (400 - 149) * 100 * time.Millisecond; last != want {
			t.Fatalf("400 requests took %v, want %v", last, want)
		}
	})
}
