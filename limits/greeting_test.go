package limits

import (
	"testing"
	"time"
)

// TestSolvedGreetingsPerMin: the bound on allowances solutions pay for, at
// and just past each edge of the division, worked out by hand.
func TestSolvedGreetingsPerMin(t *testing.T) {
	for _, c := range []struct{ strangers, allowance, want int }{
		{0, 64, 0},           // an unlimited budget pays for every allowance
		{1, 64, 1},           // at least one
		{63, 64, 1},          // just under one allowance's worth
		{64, 64, 1},          // one allowance's worth
		{127, 64, 1},         // just under two
		{128, 64, 2},         // two
		{256, 64, 4},         // the scripts' budget: a burst of 1
		{1_200, 64, 18},      // the attack test's victim: 1,152 requests a minute
		{6_000, 64, 93},      // the server profile
		{12_000, 64, 187},    // the default: 11,968 requests a minute
		{MaxPerMin, 64, 937}, // the largest budget
		{100, 0, 100},        // an allowance below 1 counts as 1
	} {
		if got := SolvedGreetingsPerMin(c.strangers, c.allowance); got != c.want {
			t.Errorf("SolvedGreetingsPerMin(%d, %d) = %d, want %d", c.strangers, c.allowance, got, c.want)
		}
		if got := SolvedGreetingsPerMin(c.strangers, c.allowance); c.strangers > 0 && c.allowance > 0 &&
			got > 1 && got*c.allowance > c.strangers {
			t.Errorf("SolvedGreetingsPerMin(%d, %d) = %d allowances: past the strangers' budget", c.strangers, c.allowance, got)
		}
	}
}

// TestSolvedGreetingsFarm: a farm that solves as fast as ADR 0014's
// ceiling lets it (1,200 solutions a minute) buys, through the default
// bound's bucket, at most the strangers' budget of requests a minute after
// its burst: 10 minutes of 20 solved hellos a second.
func TestSolvedGreetingsFarm(t *testing.T) {
	const strangers, allowance = 12_000, 64
	r, err := NewRate(SolvedGreetingsPerMin(strangers, allowance))
	if err != nil {
		t.Fatal(err)
	}
	s := NewShared(r)
	paid := 0
	for at := time.Duration(0); at < 10*time.Minute; at += 50 * time.Millisecond {
		if ok, _ := s.Allow(int64(at)); ok {
			paid++
		}
	}
	// 187 a minute for 10 minutes, plus the burst of 46 (the first
	// minute's tokens come on top of it).
	if want := 46 + 187*10; paid < want-1 || paid > want {
		t.Errorf("a farm solving 1,200 hellos a minute was paid %d allowances in 10 minutes, want %d", paid, want)
	}
	if got, most := paid*allowance, 10*strangers+46*allowance; got > most {
		t.Errorf("the farm bought %d requests in 10 minutes: past %d", got, most)
	}
}
