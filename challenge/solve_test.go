package challenge

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/wats-network/wats/core"
)

func TestSolveEndToEnd(t *testing.T) {
	is := newTestIssuer(t, func(c *Options) { c.BaseBits = 12 })
	req := id(1)
	for i := range 4 {
		c := is.Issue(req, t0, monoAt(t0))
		if c.Alg != Alg || c.Effort != 12 || c.Expires != t0.Unix()+60 || len(c.Seed) != SeedHexLen {
			t.Fatalf("Issue = %+v", c)
		}
		sol, err := SolveChallenge(context.Background(), c, req, is.self, t0)
		if err != nil {
			t.Fatal(err)
		}
		if sol.Seed != c.Seed || sol.Alg != Alg || CheckNonce(sol.Nonce) != nil {
			t.Fatalf("solution %d: %+v", i, sol)
		}
		if err := is.Verify(sol, req, t0.Add(time.Second), monoAt(t0.Add(time.Second))); err != nil {
			t.Fatalf("solution %d: %v", i, err)
		}
		if err := is.Verify(sol, req, t0.Add(time.Second), monoAt(t0.Add(time.Second))); err != ErrReplayed {
			t.Fatalf("replayed solution %d: %v", i, err)
		}
	}
}

func TestSolveMeetsEffort(t *testing.T) {
	for _, effort := range []int{0, 1, 5, 10, 14} {
		seed, req, resp := Seed{byte(effort), 1}, id(1), id(2)
		n, err := Solve(context.Background(), seed, req, resp, effort)
		if err != nil {
			t.Fatal(err)
		}
		d := referenceDigest(seed, req, resp, n)
		if LeadingZeroBits(d) < effort || CheckNonce(n) != nil || (len(n) > 1 && n[0] == '0') {
			t.Errorf("effort %d: nonce %q, digest %x", effort, n, d)
		}
	}
}

func TestSolveRefusesEffort(t *testing.T) {
	for _, effort := range []int{-1, core.MaxChallengeEffort + 1, 255} {
		if _, err := Solve(context.Background(), Seed{}, id(1), id(2), effort); err != ErrEffortTooHigh {
			t.Errorf("effort %d: %v, want ErrEffortTooHigh", effort, err)
		}
	}
}

func TestSolveCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Solve(ctx, Seed{}, id(1), id(2), 8); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled before: %v", err)
	}
	// At core.MaxChallengeEffort a solve takes about a second; a deadline ends it.
	ctx, cancel = context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	start := time.Now()
	// Finishing within the deadline is possible but rare; accept either,
	// and check the nonce if there is one.
	n, err := Solve(ctx, Seed{0xcc}, id(1), id(2), core.MaxChallengeEffort)
	if err == nil {
		if !meetsEffort(referenceDigest(Seed{0xcc}, id(1), id(2), n), core.MaxChallengeEffort) {
			t.Fatalf("nonce %q does not meet the effort", n)
		}
	} else if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("deadline: %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("cancelled solve took %v", d)
	}
}

func TestShouldGiveUp(t *testing.T) {
	good := Challenge{Alg: Alg, Seed: Seed{1}.String(), Effort: 8, Expires: t0.Unix() + 60}
	at := t0.Add(time.Minute)
	for _, tc := range []struct {
		name string
		edit func(*Challenge)
		now  time.Time
		want bool
	}{
		{"good", func(*Challenge) {}, t0, false},
		{"at expiry", func(*Challenge) {}, at, false},
		{"expired", func(*Challenge) {}, at.Add(time.Nanosecond), true},
		{"unknown alg", func(c *Challenge) { c.Alg = "equix" }, t0, true},
		{"effort 24", func(c *Challenge) { c.Effort = core.MaxChallengeEffort }, t0, false},
		{"effort 25", func(c *Challenge) { c.Effort = core.MaxChallengeEffort + 1 }, t0, true},
		{"effort negative", func(c *Challenge) { c.Effort = -1 }, t0, true},
		{"bad seed", func(c *Challenge) { c.Seed = "zz" }, t0, true},
		{"huge expiry", func(c *Challenge) { c.Expires = 1<<63 - 1 }, t0, false},
		{"negative expiry", func(c *Challenge) { c.Expires = -1 << 63 }, t0, true},
	} {
		c := good
		tc.edit(&c)
		if got := ShouldGiveUp(c, tc.now); got != tc.want {
			t.Errorf("%s: ShouldGiveUp = %v, want %v", tc.name, got, tc.want)
		}
		if tc.want {
			if _, err := SolveChallenge(context.Background(), c, id(1), id(2), tc.now); err != ErrGiveUp {
				t.Errorf("%s: SolveChallenge = %v, want ErrGiveUp", tc.name, err)
			}
		}
	}
}
