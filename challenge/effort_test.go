package challenge

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/wats-network/wats/core"
)

// TestEffortScript drives the controller with a script of steps at
// times given in seconds since t0: "p" reports pressure, "b" reads the
// bits and checks them.
func TestEffortScript(t *testing.T) {
	type step struct {
		at   float64 // seconds after t0
		op   string  // "p": Pressure; "b": Bits must equal want
		want int
	}
	for _, tc := range []struct {
		name      string
		base, max int
		steps     []step
	}{
		{"starts at base", 8, 24, []step{{0, "b", 8}, {9.9, "b", 8}, {100, "b", 8}}},
		{"one pressured interval", 8, 24, []step{
			{0, "p", 0}, {9.999, "b", 8}, {10, "b", 9}, {19.9, "b", 9}, {20, "b", 8}, {30, "b", 8},
		}},
		{"pressure counts once per interval", 8, 24, []step{
			{0, "p", 0}, {1, "p", 0}, {5, "p", 0}, {9, "p", 0}, {10, "b", 9},
		}},
		{"pressure late in an interval", 8, 24, []step{
			{0, "b", 8}, {19.5, "p", 0}, {19.9, "b", 8}, {20, "b", 9},
		}},
		{"sustained pressure climbs to max", 8, 12, []step{
			{0, "p", 0}, {10, "p", 0}, {20, "p", 0}, {30, "p", 0}, {40, "p", 0}, {50, "p", 0}, {60, "p", 0},
			{60, "b", 12}, {70, "b", 12}, {80, "b", 11}, {90, "b", 10},
		}},
		{"gap after pressure: one up then quiet down", 8, 24, []step{
			{0, "p", 0}, {10, "p", 0}, {20, "p", 0}, {30, "b", 11}, {31, "p", 0}, {65, "b", 10},
		}},
		{"long idle falls to base", 8, 24, []step{
			{0, "p", 0}, {10, "p", 0}, {20, "p", 0}, {25, "b", 10}, {86400 * 365, "b", 8},
		}},
		{"time going back stays in the interval", 8, 24, []step{
			{10, "p", 0}, {5, "b", 8}, {0, "p", 0}, {19.9, "b", 8}, {20, "b", 9},
		}},
		{"base equals max", 24, 24, []step{{0, "p", 0}, {10, "b", 24}, {30, "b", 24}}},
		{"base 1", 1, 3, []step{{0, "p", 0}, {10, "p", 0}, {20, "p", 0}, {30, "p", 0}, {40, "b", 3}, {60, "b", 1}, {70, "b", 1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := NewEffort(tc.base, tc.max)
			if err != nil {
				t.Fatal(err)
			}
			for i, s := range tc.steps {
				now := time.Duration(s.at * float64(time.Second)) // a monotonic reading
				switch s.op {
				case "p":
					e.Pressure(now)
				case "b":
					if got := e.Bits(now); got != s.want {
						t.Fatalf("step %d at %gs: bits %d, want %d", i, s.at, got, s.want)
					}
				}
			}
		})
	}
}

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
