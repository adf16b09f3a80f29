package bench

import (
	"bytes"
	"strconv"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// TestSyncFigures runs a small bench sync of two rounds: every figure is
// reported once, in order, each round's under the JSON name of the round's
// field that holds the same value, the run's under the result's; the
// result's figures are the median round's; and the result encodes as JSON
// (a Duration with a format tag json v2 does not know once made `bench
// sync --json` fail after a whole run).
func TestSyncFigures(t *testing.T) {
	var figs []Figure
	res, err := Sync(t.Context(), 600, &SyncOptions{Dir: t.TempDir(), Rounds: 2, Figure: func(f Figure) { figs = append(figs, f) }})
	if err != nil {
		t.Fatal(err)
	}
	fieldsOf := func(v any) map[string]jsontext.Value {
		t.Helper()
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("%T does not encode: %v", v, err)
		}
		var fields map[string]jsontext.Value
		if err := json.Unmarshal(b, &fields); err != nil {
			t.Fatal(err)
		}
		return fields
	}
	perRound := []string{"single_verify_before_ns", "catch_up_ns", "single_verify_after_ns", "single_verify_ns",
		"catch_up_over_single_verify", "single_verify_cpu_ns", "catch_up_cpu_ns", "events_per_sec", "peak_rss_bytes", "dropped", "commits", "disk_bytes_per_event"}
	type named struct {
		name  string
		round int
	}
	want := []named{{"events", 0}, {"fill_ns", 0}}
	for r := 1; r <= 2; r++ {
		for _, name := range perRound {
			want = append(want, named{name, r})
		}
	}
	want = append(want, named{"rounds", 0}, named{"catch_up_over_single_verify", 0},
		named{"catch_up_over_single_verify_min", 0}, named{"catch_up_over_single_verify_max", 0})
	if len(figs) != len(want) || len(res.Rounds) != 2 {
		t.Fatalf("%d figures, %d rounds; want %d and 2: %+v", len(figs), len(res.Rounds), len(want), figs)
	}
	run := fieldsOf(res)
	for i, f := range figs {
		if f.Name != want[i].name || f.Round != want[i].round {
			t.Errorf("figure %d is %s of round %d, want %s of round %d", i, f.Name, f.Round, want[i].name, want[i].round)
			continue
		}
		fields := run
		if f.Round > 0 {
			fields = fieldsOf(res.Rounds[f.Round-1])
		}
		fb, err := json.Marshal(f.Value)
		if err != nil {
			t.Fatal(err)
		}
		if f.Name == "rounds" {
			fb = []byte("2")
			if f.Value != 2 {
				t.Errorf("rounds figure %v, want 2", f.Value)
			}
		} else if got := fields[f.Name]; !bytes.Equal(fb, got) {
			t.Errorf("figure %s of round %d = %s, the result says %s", f.Name, f.Round, fb, got)
		}
		prefix := `{"figure":"` + f.Name + `",`
		if f.Round > 0 {
			prefix += `"round":` + strconv.Itoa(f.Round) + `,`
		}
		if line, err := json.Marshal(f); err != nil || !strings.HasPrefix(string(line), prefix+`"value":`) {
			t.Errorf("figure line %s, %v; want it to start %s", line, err, prefix)
		}
	}
	lo, hi := res.Rounds[0], res.Rounds[1]
	if lo.CatchUpOverSingleVerify > hi.CatchUpOverSingleVerify {
		lo, hi = hi, lo
	}
	if res.SyncRound != hi || res.RatioMin != lo.CatchUpOverSingleVerify || res.RatioMax != hi.CatchUpOverSingleVerify {
		t.Errorf("the run's round %d (%v), min %v, max %v; want round %d, the higher of two, and %v to %v",
			res.Round, res.CatchUpOverSingleVerify, res.RatioMin, res.RatioMax, hi.Round, lo.CatchUpOverSingleVerify, hi.CatchUpOverSingleVerify)
	}
	for i, r := range res.Rounds {
		if r.Round != i+1 || r.Dropped != 0 || r.Commits == 0 || r.Commits > 600 || r.SingleVerify <= 0 || r.CatchUp <= 0 || r.CatchUpOverSingleVerify <= 0 {
			t.Fatalf("round %d: %+v", i+1, r)
		}
		if r.SingleVerifyBefore <= 0 || r.SingleVerifyAfter <= 0 || r.SingleVerify != (r.SingleVerifyBefore+r.SingleVerifyAfter)/2 {
			t.Fatalf("round %d, single checks: before %v, after %v, anchor %v", i+1, r.SingleVerifyBefore, r.SingleVerifyAfter, r.SingleVerify)
		}
	}
	if res.Rounds[1].SingleVerifyBefore != res.Rounds[0].SingleVerifyAfter {
		t.Errorf("round 2's anchor before is %v, round 1's after %v: the same timing", res.Rounds[1].SingleVerifyBefore, res.Rounds[0].SingleVerifyAfter)
	}
}
