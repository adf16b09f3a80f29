package challenge

import (
	"errors"
	"github.com/wats-network/wats/core"
	"testing"
	"time"
)

// Tests of an Issuer whose wall clock steps back while its monotonic
// reading goes on, as NTP can do to a node's clock, and of calls that pass
// readings out of order (a caller that read the clock before the lock).

// TestReplayAfterClockStepBack: a used seed that the replay memory forgot
// because it expired is refused when a later call passes an earlier now,
// at which the seed looks unexpired: a replay is never accepted.
func TestReplayAfterClockStepBack(t *testing.T) {
	for _, back := range []time.Duration{time.Second, 30 * time.Second} {
		is := newTestIssuer(t, nil)
		req := id(1)
		sol := Solution{Alg, mintFor(is, req, t0.Unix()+60, 0, 1).String(), "0"}
		if err := is.Verify(sol, req, t0, 0); err != nil {
			t.Fatal(err)
		}
		// At t0+61 s the seed has expired; the memory forgets it.
		later := t0.Add(61 * time.Second)
		if n := is.UsedSeeds(later); n != 0 {
			t.Fatalf("UsedSeeds at %v = %d, want 0", later, n)
		}
		// The wall clock steps back to before the expiry.
		earlier := later.Add(-back - 2*time.Second)
		if err := is.Verify(sol, req, earlier, 62*time.Second); !errors.Is(err, ErrReplayed) {
			t.Errorf("step back %v: replay accepted (%v), want a replay error", back, err)
		}
		// A seed issued after the step is accepted: the step was shorter
		// than a seed's life, so the memory keeps its key.
		fresh := Solution{Alg, mintFor(is, req, earlier.Add(SeedLifetime).Unix(), 0, 2).String(), "0"}
		if err := is.Verify(fresh, req, earlier, 63*time.Second); err != nil {
			t.Errorf("step back %v: fresh seed: %v", back, err)
		}
	}
}

// TestLongStepBackRotatesKey: after the wall clock steps back an hour,
// past seeds the memory forgot as expired, new challenges are accepted at
// once (the Issuer draws a new key rather than refusing every seed until
// the clock catches up), and no seed issued before the step verifies.
func TestLongStepBackRotatesKey(t *testing.T) {
	is := newTestIssuer(t, nil)
	req := id(1)
	old := Solution{Alg, mintFor(is, req, t0.Unix()+60, 0, 1).String(), "0"}
	if err := is.Verify(old, req, t0, 0); err != nil {
		t.Fatal(err)
	}
	unused := Solution{Alg, mintFor(is, req, t0.Unix()+60, 0, 2).String(), "0"}
	is.UsedSeeds(t0.Add(2 * time.Minute)) // forgets old: expired

	back := t0.Add(-time.Hour)
	mono := 3 * time.Minute
	c := is.Issue(req, back, mono)
	seed, err := ParseSeed(c.Seed)
	if err != nil {
		t.Fatal(err)
	}
	nonce := smallest(t, seed, req, is.self, c.Effort, 1<<24)
	if err := is.Verify(Solution{Alg, c.Seed, nonce}, req, back.Add(time.Second), mono+time.Second); err != nil {
		t.Fatalf("new challenge after the step back: %v", err)
	}
	if err := is.Verify(Solution{Alg, c.Seed, nonce}, req, back.Add(2*time.Second), mono+2*time.Second); err != ErrReplayed {
		t.Errorf("replay of the new seed: %v, want ErrReplayed", err)
	}
	for name, s := range map[string]Solution{"used": old, "unused": unused} {
		if err := is.Verify(s, req, back.Add(3*time.Second), mono+3*time.Second); err != ErrBadMAC {
			t.Errorf("%s seed from before the step: %v, want ErrBadMAC", name, err)
		}
	}
}

// TestCeilingRunsOnMonotonicTime: a wall clock that steps back an hour
// does not keep the solved ceiling closed; the monotonic minute reopens it.
func TestCeilingRunsOnMonotonicTime(t *testing.T) {
	const n = 5
	is := newTestIssuer(t, func(c *Options) { c.SolvedPerMin = n })
	req := id(1)
	sol := func(i int) Solution {
		return Solution{Alg, mintFor(is, req, t0.Unix()+7200, 0, byte(i)).String(), "0"}
	}
	for i := range n {
		if err := is.Verify(sol(i), req, t0, time.Duration(i)*time.Second); err != nil {
			t.Fatalf("solution %d: %v", i, err)
		}
	}
	if err := is.Verify(sol(n), req, t0, 10*time.Second); err != ErrCeiling {
		t.Fatalf("solution %d within the minute: %v, want ErrCeiling", n, err)
	}
	// An hour back on the wall, a minute on: the first solved request left
	// the window.
	if err := is.Verify(sol(n), req, t0.Add(-time.Hour), 61*time.Second); err != nil {
		t.Errorf("after the monotonic minute, wall clock an hour back: %v", err)
	}
}

// TestEffortRunsOnMonotonicTime: the effort rises and falls with the
// monotonic intervals whatever the wall clock does.
func TestEffortRunsOnMonotonicTime(t *testing.T) {
	is := newTestIssuer(t, nil)
	req := id(1)
	for i := range 3 { // three pressured intervals: 8 -> 11
		is.Pressure(time.Duration(i) * EffortInterval)
	}
	wall := t0.Add(-time.Hour) // stepped back, and stays there
	if c := is.Issue(req, wall, 3*EffortInterval); c.Effort != core.DefaultChallengeBaseBits+3 {
		t.Fatalf("after 3 pressured intervals: effort %d, want %d", c.Effort, core.DefaultChallengeBaseBits+3)
	}
	if c := is.Issue(req, wall, 5*EffortInterval); c.Effort != core.DefaultChallengeBaseBits+1 {
		t.Errorf("after 2 quiet intervals: effort %d, want %d", c.Effort, core.DefaultChallengeBaseBits+1)
	}
}
