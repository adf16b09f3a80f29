package challenge

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/wats-network/wats/core"
)

// TestEffortSynctest runs the controller on the fake clock of a synctest
// bubble, as the node does with time.Now: sustained pressure for 3
// minutes climbs from 8 to 24 bits (16 intervals), then quiet lowers it a
// bit every 10 s back to 8.
func TestEffortSynctest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		is := newTestIssuer(t, nil)
		req := id(1)
		start := time.Now()
		var rose []int
		for time.Since(start) < 3*time.Minute {
			is.Pressure(time.Since(start))
			time.Sleep(time.Second)
			if c := is.Issue(req, time.Now(), time.Since(start)); len(rose) == 0 || rose[len(rose)-1] != c.Effort {
				rose = append(rose, c.Effort)
			}
		}
		if want := core.DefaultChallengeMaxBits - core.DefaultChallengeBaseBits + 1; len(rose) != want || rose[0] != core.DefaultChallengeBaseBits || rose[len(rose)-1] != core.DefaultChallengeMaxBits {
			t.Fatalf("efforts under pressure %v, want %d..%d one bit at a time", rose, core.DefaultChallengeBaseBits, core.DefaultChallengeMaxBits)
		}
		for i := 1; i < len(rose); i++ {
			if rose[i] != rose[i-1]+1 {
				t.Fatalf("efforts under pressure %v: not one bit at a time", rose)
			}
		}
		// Quiet: one bit down per interval.
		prev := is.Effort(time.Since(start))
		for prev > core.DefaultChallengeBaseBits {
			time.Sleep(EffortInterval)
			got := is.Effort(time.Since(start))
			if got != prev-1 {
				t.Fatalf("quiet interval: %d after %d", got, prev)
			}
			prev = got
		}
		time.Sleep(time.Hour)
		if got := is.Effort(time.Since(start)); got != core.DefaultChallengeBaseBits {
			t.Fatalf("after an hour of quiet: %d", got)
		}
	})
}

// TestOptionsValidate: each field at and past its bounds, 0 for its
// default (a base of 0 takes the default 8, so a max below it is out);
// Validate and NewIssuer leave the Options as they were.
func TestOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		base, max, solved int
		ok                bool
	}{
		{8, 24, 1200, true},
		{1, 1, 1, true},
		{24, 24, core.MaxPerMin, true},
		{0, 0, 0, true},
		{0, 24, 1200, true},
		{0, 7, 1200, false},
		{1, 0, 0, true},
		{8, 24, NoCeiling, true},
		{-1, 24, 1200, false},
		{8, 25, 1200, false},
		{9, 8, 1200, false},
		{8, 24, -2, false},
		{8, 24, core.MaxPerMin + 1, false},
	} {
		opts := Options{BaseBits: tc.base, MaxBits: tc.max, SolvedPerMin: tc.solved}
		err := opts.Validate()
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrConfig)) {
			t.Errorf("Validate(%d, %d, %d) = %v, want ok %v", tc.base, tc.max, tc.solved, err, tc.ok)
		}
		if _, err := NewIssuer(id(0), &opts); (err == nil) != tc.ok {
			t.Errorf("NewIssuer(%d, %d, %d) = %v, want ok %v", tc.base, tc.max, tc.solved, err, tc.ok)
		}
		if opts.BaseBits != tc.base || opts.MaxBits != tc.max || opts.SolvedPerMin != tc.solved {
			t.Errorf("Validate or NewIssuer changed the options: %+v", opts)
		}
	}
	var none *Options
	if err := none.Validate(); err != nil {
		t.Errorf("nil Options: %v", err)
	}
	if d := none.EnsureDefaults(); d.BaseBits != core.DefaultChallengeBaseBits || d.MaxBits != core.DefaultChallengeMaxBits || d.SolvedPerMin != core.DefaultSolvedPerMin {
		t.Errorf("defaults %+v", d)
	}
}
