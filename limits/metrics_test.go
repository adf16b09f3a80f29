package limits

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/wats-network/wats/core"
)

// trafficTable returns a Table after: peer 1 takes 17 hellos (15 allowed),
// peer 2 one sync, peer 3 three crash reports (2 allowed).
func trafficTable(t *testing.T) *Table {
	tb := newTestTable(t, nil)
	for range 17 {
		tb.Allow(testPeer(1), core.Hello, 0)
	}
	tb.Allow(testPeer(2), core.Sync, 0)
	for range 3 {
		tb.Allow(testPeer(3), core.CrashReport, 0)
	}
	return tb
}

func TestSnapshot(t *testing.T) {
	s := trafficTable(t).Snapshot()
	want := Snapshot{
		Hello:        Counts{Accepted: 15, Refused: 2},
		Sync:         Counts{Accepted: 1},
		CrashReport:  Counts{Accepted: 2, Refused: 1},
		TrackedPeers: 3,
	}
	if s != want {
		t.Fatalf("snapshot %+v, want %+v", s, want)
	}
	if s.Of(core.Hello) != want.Hello || s.Of(core.CrashReport) != want.CrashReport || s.Of(core.Request(7)) != (Counts{}) {
		t.Fatal("Of")
	}
	const line = "hello 15/2 sync 1/0 replicate 0/0 crash_report 2/1 (accepted/refused), 0 on the shared budget at cap, 3 peers tracked"
	if s.String() != line {
		t.Fatalf("String:\n got %s\nwant %s", s, line)
	}
	js, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	const wantJSON = `{"hello":{"accepted":15,"refused":2},"sync":{"accepted":1,"refused":0},` +
		`"replicate":{"accepted":0,"refused":0},"crash_report":{"accepted":2,"refused":1},` +
		`"shared_at_cap":0,"tracked_peers":3}`
	if string(js) != wantJSON {
		t.Fatalf("JSON:\n got %s\nwant %s", js, wantJSON)
	}
	// In a log line: ACCEPTED/REFUSED a type, shared_at_cap only when
	// not 0.
	var buf bytes.Buffer
	slog.New(slog.NewTextHandler(&buf, nil)).Info("rate limits", "counters", s)
	if want := " counters.hello=15/2 counters.sync=1/0 counters.replicate=0/0 counters.crash_report=2/1 counters.tracked_peers=3\n"; !strings.HasSuffix(buf.String(), want) {
		t.Errorf("log line %q, want it to end with %q", buf.String(), want)
	}
	buf.Reset()
	s.SharedAtCap = 4
	slog.New(slog.NewTextHandler(&buf, nil)).Info("rate limits", "counters", s)
	if want := " counters.crash_report=2/1 counters.shared_at_cap=4 counters.tracked_peers=3\n"; !strings.HasSuffix(buf.String(), want) {
		t.Errorf("log line %q, want it to end with %q", buf.String(), want)
	}
}

// TestCollector: the metrics, their values, and no peer label.
func TestCollector(t *testing.T) {
	c := trafficTable(t).Collector()
	const want = `
# HELP wats_limits_shared_at_cap_total Requests of untracked peers decided on the shared newcomer budget because the rate-limit table tracked as many peers as it may.
# TYPE wats_limits_shared_at_cap_total counter
wats_limits_shared_at_cap_total 0
# HELP wats_limits_tracked_peers Peers whose rate-limit state is kept (not all buckets full).
# TYPE wats_limits_tracked_peers gauge
wats_limits_tracked_peers 3
# HELP wats_requests_accepted_total /wats/1 requests within their per-peer rate limit (ADR 0014), by type.
# TYPE wats_requests_accepted_total counter
wats_requests_accepted_total{type="crash_report"} 2
wats_requests_accepted_total{type="hello"} 15
wats_requests_accepted_total{type="replicate"} 0
wats_requests_accepted_total{type="sync"} 1
# HELP wats_requests_refused_total /wats/1 requests over their per-peer rate limit (ADR 0014), by type.
# TYPE wats_requests_refused_total counter
wats_requests_refused_total{type="crash_report"} 1
wats_requests_refused_total{type="hello"} 2
wats_requests_refused_total{type="replicate"} 0
wats_requests_refused_total{type="sync"} 0
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want)); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(c); err != nil {
		t.Fatal(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() != "type" {
					t.Errorf("%s has label %s", mf.GetName(), l.GetName())
				}
			}
		}
	}
	if problems, err := testutil.CollectAndLint(c); err != nil || len(problems) > 0 {
		t.Fatalf("lint: %v %v", problems, err)
	}
}
