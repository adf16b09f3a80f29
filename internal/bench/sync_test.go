package bench

import (
	"bytes"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// TestSyncFigures runs a small bench sync: every figure is reported once,
// in order, under the JSON name of the result field that holds the same
// value, and the result encodes as JSON (a Duration with a format tag json
// v2 does not know once made `bench sync --json` fail after a whole run).
func TestSyncFigures(t *testing.T) {
	var figs []Figure
	res, err := Sync(t.Context(), 600, &SyncOptions{Dir: t.TempDir(), Figure: func(f Figure) { figs = append(figs, f) }})
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatalf("the result does not encode: %v", err)
	}
	var fields map[string]jsontext.Value
	if err := json.Unmarshal(b, &fields); err != nil {
		t.Fatal(err)
	}
	want := []string{"events", "fill_ns", "single_verify_before_ns", "catch_up_ns", "single_verify_after_ns",
		"single_verify_ns", "catch_up_over_single_verify", "single_verify_cpu_ns", "catch_up_cpu_ns", "events_per_sec", "peak_rss_bytes", "dropped", "disk_bytes_per_event"}
	if len(figs) != len(want) || len(fields) != len(want) {
		t.Fatalf("%d figures, %d result fields, want %d: %+v", len(figs), len(fields), len(want), figs)
	}
	for i, f := range figs {
		if f.Name != want[i] {
			t.Errorf("figure %d is %s, want %s", i, f.Name, want[i])
		}
		fb, err := json.Marshal(f.Value)
		if err != nil {
			t.Fatal(err)
		}
		if got := fields[f.Name]; !bytes.Equal(fb, got) {
			t.Errorf("figure %s = %s, the result says %s", f.Name, fb, got)
		}
		if line, err := json.Marshal(f); err != nil || !strings.HasPrefix(string(line), `{"figure":"`+f.Name+`","value":`) {
			t.Errorf("figure line %s, %v", line, err)
		}
	}
	if res.Events != 600 || res.Dropped != 0 || res.SingleVerify <= 0 || res.CatchUp <= 0 || res.CatchUpOverSingleVerify <= 0 {
		t.Fatalf("%+v", res)
	}
	if res.SingleVerifyBefore <= 0 || res.SingleVerifyAfter <= 0 || res.SingleVerify != (res.SingleVerifyBefore+res.SingleVerifyAfter)/2 {
		t.Fatalf("single checks: before %v, after %v, anchor %v", res.SingleVerifyBefore, res.SingleVerifyAfter, res.SingleVerify)
	}
}
