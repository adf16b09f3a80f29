package challenge

import (
	"errors"
	"testing"
	"time"
)

// TestReplayMemoryBound is the 4,097th-seed rule of ADR 0014 through
// Verify: 4,096 used seeds are remembered; the 4,097th makes the memory
// forget the one that expires first, and from then on every seed
// expiring no later than it is refused, so its replay is never accepted.
func TestReplayMemoryBound(t *testing.T) {
	is := newTestIssuer(t, func(c *Options) { c.SolvedPerMin = NoCeiling })
	req := id(1)
	base := t0.Unix()
	sol := func(i int, random byte) Solution { // expires base+i, effort 0
		s := is.key.Load().mac.mint(&req, base+int64(i), 0, [RandomLen]byte{byte(i), byte(i >> 8), random})
		return Solution{Alg, s.String(), "0"}
	}
	for i := 1; i <= MaxUsedSeeds; i++ {
		if err := is.Verify(sol(i, 0), req, t0, monoAt(t0)); err != nil {
			t.Fatalf("seed %d: %v", i, err)
		}
	}
	if n := is.UsedSeeds(t0); n != MaxUsedSeeds {
		t.Fatalf("UsedSeeds = %d, want %d", n, MaxUsedSeeds)
	}
	// Every one of them is a replay now.
	for _, i := range []int{1, 2, MaxUsedSeeds} {
		if err := is.Verify(sol(i, 0), req, t0, monoAt(t0)); err != ErrReplayed {
			t.Errorf("replay of seed %d: %v, want ErrReplayed", i, err)
		}
	}
	// The 4,097th is accepted and the first (expires base+1) forgotten.
	if err := is.Verify(sol(MaxUsedSeeds+1, 0), req, t0, monoAt(t0)); err != nil {
		t.Fatalf("seed %d: %v", MaxUsedSeeds+1, err)
	}
	if n := is.UsedSeeds(t0); n != MaxUsedSeeds {
		t.Errorf("UsedSeeds = %d, want %d", n, MaxUsedSeeds)
	}
	if err := is.Verify(sol(1, 0), req, t0, monoAt(t0)); err != ErrForgotten || !errors.Is(err, ErrReplayed) {
		t.Errorf("replay of the forgotten seed: %v, want ErrForgotten (is ErrReplayed)", err)
	}
	// A fresh seed expiring no later than the forgotten one is refused...
	if err := is.Verify(sol(1, 1), req, t0, monoAt(t0)); err != ErrForgotten {
		t.Errorf("fresh seed at the watermark: %v, want ErrForgotten", err)
	}
	if err := is.Verify(sol(0, 1), req, t0, monoAt(t0)); err != ErrForgotten {
		t.Errorf("fresh seed below the watermark: %v, want ErrForgotten", err)
	}
	// ...one expiring later is not. It ties with seed 2 for the earliest
	// expiry, so one of the two is forgotten: both replays stay refused.
	if err := is.Verify(sol(2, 1), req, t0, monoAt(t0)); err != nil {
		t.Errorf("fresh seed above the watermark: %v", err)
	}
	for _, r := range []byte{0, 1} {
		if err := is.Verify(sol(2, r), req, t0, monoAt(t0)); !errors.Is(err, ErrReplayed) {
			t.Errorf("replay of seed 2/%d: %v, want a replay error", r, err)
		}
	}
	for _, i := range []int{3, MaxUsedSeeds + 1} {
		if err := is.Verify(sol(i, 0), req, t0, monoAt(t0)); err != ErrReplayed {
			t.Errorf("replay of seed %d: %v, want ErrReplayed", i, err)
		}
	}
	// Once they expire the memory empties; no replay can pass the expiry.
	later := t0.Add(time.Duration(MaxUsedSeeds+2) * time.Second)
	if n := is.UsedSeeds(later); n != 0 {
		t.Errorf("UsedSeeds after all expired = %d", n)
	}
	if err := is.Verify(sol(MaxUsedSeeds+1, 0), req, later, monoAt(later)); err != ErrExpired {
		t.Errorf("replay after expiry: %v, want ErrExpired", err)
	}
}

// TestReplayMemorySameExpiry: seeds issued in the same second share an
// expiry; once 4,096 of them are used, the next one is accepted and
// forgotten at once, and every seed of that second is refused.
func TestReplayMemorySameExpiry(t *testing.T) {
	m := newReplayMemory(4)
	seeds := make([]Seed, 6)
	for i := range seeds {
		seeds[i][0] = byte(i)
	}
	for i := range 4 {
		if err := m.check(&seeds[i], 100); err != nil {
			t.Fatal(err)
		}
		m.add(&seeds[i], 100)
	}
	if err := m.check(&seeds[4], 100); err != nil {
		t.Fatalf("5th: %v", err)
	}
	m.add(&seeds[4], 100)
	if m.len() != 4 {
		t.Errorf("len %d, want 4", m.len())
	}
	for i := range 5 {
		if err := m.check(&seeds[i], 100); !errors.Is(err, ErrReplayed) {
			t.Errorf("seed %d: %v, want a replay error", i, err)
		}
	}
	if err := m.check(&seeds[5], 100); err != ErrForgotten {
		t.Errorf("fresh seed of the same second: %v, want ErrForgotten", err)
	}
	if err := m.check(&seeds[5], 101); err != nil {
		t.Errorf("fresh seed of the next second: %v", err)
	}
}

// TestReplayMemoryOrder: the memory forgets the seed expiring first, not
// the one used first.
func TestReplayMemoryOrder(t *testing.T) {
	m := newReplayMemory(3)
	exp := []int64{30, 10, 20, 40}
	seeds := make([]Seed, len(exp))
	for i := range seeds {
		seeds[i][0] = byte(i + 1)
		m.add(&seeds[i], exp[i])
	}
	if m.watermark != 10 {
		t.Errorf("watermark %d, want 10", m.watermark)
	}
	for i, want := range []error{ErrReplayed, ErrForgotten, ErrReplayed, ErrReplayed} {
		if err := m.check(&seeds[i], exp[i]); err != want {
			t.Errorf("seed %d (expires %d): %v, want %v", i, exp[i], err, want)
		}
	}
	m.prune(time.Unix(25, 0))
	if m.len() != 2 {
		t.Errorf("after prune at 25: len %d, want 2", m.len())
	}
}
