package challenge

import (
	"errors"
	"github.com/wats-network/wats/core"
	"testing"
	"time"
)

func TestCeilingWindow(t *testing.T) {
	const n = 5
	c := newCeiling(n)
	sec := int64(time.Second)
	// n at 0..4 s, then nothing until the first leaves the window.
	for i := range int64(n) {
		if !c.allow(i * sec) {
			t.Fatalf("event %d refused", i)
		}
	}
	for _, at := range []int64{5 * sec, 59 * sec, 60*sec - 1} {
		if c.allow(at) {
			t.Errorf("event %d at %v admitted", n+1, time.Duration(at))
		}
	}
	if !c.allow(60 * sec) { // the one at 0 s left the window
		t.Error("event at 60 s refused")
	}
	if c.allow(60 * sec) {
		t.Error("second event at 60 s admitted")
	}
	if !c.allow(61 * sec) {
		t.Error("event at 61 s refused")
	}
	// Time going backwards admits nothing.
	if c.allow(0) {
		t.Error("event at 0 s admitted after 61 s")
	}
	// Zero means unlimited.
	u := newCeiling(0)
	for i := range 10_000 {
		if !u.allow(0) {
			t.Fatalf("unlimited ceiling refused event %d", i)
		}
	}
}

// TestCeilingFlood: a flood of valid solutions from many peers gets at
// most core.DefaultSolvedPerMin through in a minute; the refused ones are not
// consumed.
func TestCeilingFlood(t *testing.T) {
	is := newTestIssuer(t, nil)
	const flood = core.DefaultSolvedPerMin + 300
	type try struct {
		req [IDLen]byte
		sol Solution
	}
	tries := make([]try, flood)
	for i := range tries {
		req := id(byte(i))
		req[31] = byte(i >> 8)
		s := is.key.Load().mac.mint(&req, t0.Unix()+60, 0, [RandomLen]byte{byte(i)})
		tries[i] = try{req, Solution{Alg, s.String(), "1"}}
	}
	ok, ceil := 0, 0
	for i, tr := range tries {
		now := t0.Add(time.Duration(i) * 30 * time.Millisecond) // 45 s in all
		switch err := is.Verify(tr.sol, tr.req, now, monoAt(now)); {
		case err == nil:
			ok++
		case errors.Is(err, ErrCeiling):
			ceil++
		default:
			t.Fatalf("solution %d: %v", i, err)
		}
	}
	if ok != core.DefaultSolvedPerMin || ceil != flood-core.DefaultSolvedPerMin {
		t.Errorf("admitted %d, ceiling %d; want %d, %d", ok, ceil, core.DefaultSolvedPerMin, flood-core.DefaultSolvedPerMin)
	}
	// A minute after the first, room again; the refused seed was not
	// consumed and is still valid at its expiry.
	last := tries[flood-1]
	if err := is.Verify(last.sol, last.req, t0.Add(time.Minute), monoAt(t0.Add(time.Minute))); err != nil {
		t.Errorf("refused solution a minute later: %v", err)
	}
}
