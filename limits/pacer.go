package limits

import (
	"context"
	"sync"
	"time"
)

// DefaultRetryAfter is how long a Pacer waits after a refusal that came
// without a retry_after_ms (an older peer) when it has no rate to reckon
// with (an unlimited or unknown one).
const DefaultRetryAfter = time.Second

// Pacer is the client side of a peer's bucket: a node's own sync client
// (or any requester) waits on it before each request so that the request
// fits the peer's bucket as the peer's GCRA sees it, and no round trip is
// wasted on a refusal (ADR 0024). It runs the same exact GCRA as the peer,
// on time.Now, starting from a full burst.
//
// One token of reserve: when the peer's burst is at least 2, the Pacer
// models a burst one smaller. Requests reach the peer after a latency that
// varies, and the peer's bucket runs on arrival times: it is as far behind
// the Pacer's as the latency was when it last took its phase (when it was
// full, e.g. at the first burst). A later request that travels faster
// arrives early by the difference. With one token in hand, arriving up to
// one emission interval early still finds a token, and this does not add
// up over requests (TestPacerJitter: no refusal with the reserve, some
// without). The long-run rate is the peer's exactly; only the first burst
// is one request shorter. With a burst of 1 (rates below 8 a minute) there
// is no token to spare, and a refusal is handled by Refused.
//
// Throughput: requests go out at the burst, then one every 60/perMin s. At
// the default sync rate of 600 a minute (burst 150, 149 with the reserve,
// then 10 a second), catching up on 1,000,000 events in pages of 256 takes
// 3,907 requests: about (3,907 − 149)/10 s ≈ 376 s ≈ 6.3 minutes, the
// "about 7 minutes" of ADR 0014.
//
// A Pacer is safe for concurrent use; waiters are served in no particular
// order. The zero value is not usable; build one with NewPacer.
type Pacer struct {
	rate Rate // the peer's rate, with the reserve
	base time.Time
	mu   struct {
		sync.Mutex
		ns        uint64 // GCRA state of the modelled bucket
		rem       uint16
		notBefore uint64 // tick before which no request goes (unlimited rates)
	}
}

// NewPacer returns a Pacer for a peer that allows perMin requests a minute
// (as it advertises in hello; ADR 0014's burst of max(1, perMin/4)), with a
// full bucket. 0 means unlimited: Wait returns at once until a refusal.
// perMin is peer input: a value above MaxPerMin is paced at MaxPerMin
// (never faster than this package would allow), a negative one counts as 0.
func NewPacer(perMin int) *Pacer {
	perMin = min(max(perMin, 0), MaxPerMin)
	burst := adrBurst(perMin)
	if burst >= 2 {
		burst-- // the reserve
	}
	return &Pacer{rate: newRate(perMin, burst), base: time.Now()}
}

// Rate returns the rate the Pacer keeps to: the peer's rate, with a burst
// one smaller when the peer's is at least 2.
func (p *Pacer) Rate() Rate { return p.rate }

// now returns the Pacer's tick for the current time (monotonic).
func (p *Pacer) now() uint64 { return tick(int64(time.Since(p.base))) }

// Wait blocks until the next request fits the peer's bucket, takes that
// token and returns nil; or returns ctx.Err() when ctx is done first
// (without taking a token). It waits on a timer, so it works with
// testing/synctest.
func (p *Pacer) Wait(ctx context.Context) error {
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		wait := p.take()
		if wait <= 0 {
			return nil
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return ctx.Err()
		case <-timer.C:
		}
	}
}

// take takes a token if one is due now and returns 0, or returns how long
// to wait for one.
func (p *Pacer) take() time.Duration {
	t := p.now()
	p.mu.Lock()
	defer p.mu.Unlock()
	if t < p.mu.notBefore {
		return duration(p.mu.notBefore - t)
	}
	if p.rate.perMin == 0 {
		return 0
	}
	if ok, wait := p.rate.allow(&p.mu.ns, &p.mu.rem, t); !ok {
		return max(wait, 1)
	}
	return 0
}

// Refused tells the Pacer that the peer refused a request anyway (its clock
// or its limits differ, or another client of the same node spends the same
// budget), with the refusal's retry_after_ms as retryAfter, or 0 if it had
// none. The Pacer then counts the peer's bucket as empty: the next Wait
// returns no sooner than retryAfter from now (one emission interval when
// retryAfter is 0; DefaultRetryAfter for an unlimited rate), and the ones
// after it at the peer's rate.
func (p *Pacer) Refused(retryAfter time.Duration) {
	t := p.now()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.rate.perMin == 0 {
		if retryAfter <= 0 {
			retryAfter = DefaultRetryAfter
		}
		p.mu.notBefore = max(p.mu.notBefore, later(t, retryAfter))
		return
	}
	if retryAfter <= 0 {
		retryAfter = p.rate.Interval()
	}
	// An empty bucket whose next token is due at t + retryAfter has
	// TAT = t + retryAfter + τ; with t + retryAfter <= maxTick, TAT stays
	// within the bounds allow relies on.
	ns, rem := later(t, retryAfter)+p.rate.tauQ, uint16(p.rate.tauR)
	if ns > p.mu.ns || ns == p.mu.ns && rem > p.mu.rem {
		p.mu.ns, p.mu.rem = ns, rem
	}
}

// later returns the tick d after t, saturating at maxTick (d is peer input
// and may be anything). REQUIRES: t <= maxTick; d > 0.
func later(t uint64, d time.Duration) uint64 { return t + min(uint64(d), maxTick-t) }
