package main

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
)

func TestBenchGossipUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", "gossip", "--scenario", "nope"}, `--scenario "nope": must be one of all, none, invalid-flood`},
		{[]string{"bench", "gossip", "--duration", "1s"}, "--duration 1s: at least 5s"},
		{[]string{"bench", "gossip", "--after", "-1s"}, "--after -1s"},
		{[]string{"bench", "gossip", "--ids", "-3"}, "--ids -3"},
		{[]string{"bench", "gossip-worker", "--attack", "valid-spam"}, "no target"},
	} {
		code, _, stderr := runCLI(t, "", tc.args...)
		if code != exitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want usage error with %q", tc.args, code, stderr, tc.want)
		}
	}
}

func TestBenchVsIPFSUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", "vs-ipfs", "--rounds", "0"}, "--rounds 0: must be at least 1"},
		{[]string{"bench", "vs-ipfs", "--transport", "udp"}, `--transport "udp": must be tcp or quic`},
		{[]string{"bench", "vs-ipfs", "--size", "0"}, "--size 0: must be 1..2^53 bytes"},
		{[]string{"bench", "vs-ipfs", "--size", "9007199254740993"}, "must be 1..2^53 bytes"},
	} {
		code, _, stderr := runCLI(t, "", tc.args...)
		if code != exitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want usage error with %q", tc.args, code, stderr, tc.want)
		}
	}
}

// TestBenchVsIPFSSkipsWithoutKubo: without --ipfs or $IPFS the bench says
// it is skipped, how to get a kubo binary, and succeeds (make test needs
// no kubo; `make bench-kubo` without IPFS= says so).
func TestBenchVsIPFSSkipsWithoutKubo(t *testing.T) {
	t.Setenv("IPFS", "")
	code, stdout, stderr := runCLI(t, "", "bench", "vs-ipfs")
	if code != 0 || stdout != "" || !strings.Contains(stderr, "skipped") || !strings.Contains(stderr, "go build -o /tmp/ipfs ./cmd/ipfs") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

// TestBenchSyncJSON: bench sync --json prints one JSON object a line, a
// figure each (12 a round, 2 before the rounds and 4 after them), and
// nothing else on stdout.
func TestBenchSyncJSON(t *testing.T) {
	code, stdout, stderr := runCLI(t, "", "bench", "sync", "-n", "300", "--rounds", "2", "--dir", t.TempDir(), "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
	if len(lines) != 2+2*12+4 {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), 2+2*12+4, stdout)
	}
	rounds := map[int]int{}
	for _, line := range lines {
		var f struct {
			Figure string  `json:"figure"`
			Round  int     `json:"round"`
			Value  float64 `json:"value"`
			Unit   string  `json:"unit"`
		}
		if err := json.Unmarshal([]byte(line), &f, json.RejectUnknownMembers(true)); err != nil || f.Figure == "" || f.Unit == "" {
			t.Errorf("line %q: %+v, %v", line, f, err)
		}
		rounds[f.Round]++
	}
	if rounds[0] != 6 || rounds[1] != 12 || rounds[2] != 12 {
		t.Errorf("figures by round %v, want 6 of the run and 12 of each round", rounds)
	}
	if !strings.HasPrefix(lines[0], `{"figure":"events","value":300,`) {
		t.Errorf("first line %q", lines[0])
	}
	if !strings.HasPrefix(lines[len(lines)-3], `{"figure":"catch_up_over_single_verify","value":`) {
		t.Errorf("the median ratio's line %q", lines[len(lines)-3])
	}
}

// TestBenchCatchupJSON: bench catchup, end to end with real daemons at the
// default limits (ADR 0052), prints a figure a line; the catch-up from
// every peer brings each event once, the shares adding up to the events.
func TestBenchCatchupJSON(t *testing.T) {
	if testing.Short() {
		t.Skip("starts five daemons and fills two logs of 20,000 events")
	}
	bin := watsBinary(t)
	const events = 20000 // past catchup.SpreadMinLag: a catch-up from both
	code, stdout, stderr := runBin(t, nil, bin, "bench", "catchup", "-n", strconv.Itoa(events), "--peers", "2", "--dir", t.TempDir(), "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
	// events, peers, fill_ns; one, many, ratio and 2 shares; rounds, ratio.
	if len(lines) != 3+5+2 {
		t.Fatalf("%d lines, want 10:\n%s", len(lines), stdout)
	}
	var from float64
	for _, line := range lines {
		var f struct {
			Figure string  `json:"figure"`
			Round  int     `json:"round"`
			Value  float64 `json:"value"`
			Unit   string  `json:"unit"`
		}
		if err := json.Unmarshal([]byte(line), &f, json.RejectUnknownMembers(true)); err != nil || f.Figure == "" || f.Unit == "" {
			t.Fatalf("line %q: %+v, %v", line, f, err)
		}
		if strings.HasPrefix(f.Figure, "events_from_") {
			from += f.Value
		}
	}
	if from != events {
		t.Fatalf("the peers' shares add up to %v events, want %d:\n%s", from, events, stdout)
	}
}

// TestBenchTransport: bench transport times one stream a transport and
// round between two processes (this binary's transport-worker), TCP
// first in odd rounds and QUIC first in even ones, each carrying exactly
// --size bytes; bench fetch --ceiling times the same stream in each round
// of the fetch and reports the fetch's ratio to it.
func TestBenchTransport(t *testing.T) {
	bin := watsBinary(t)
	env := e2eEnv(t.TempDir())
	code, stdout, stderr := runBin(t, env, bin, "bench", "transport", "--size", "1048577", "--rounds", "2", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var order []string
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
		var f struct {
			Figure struct {
				Transport string  `json:"transport"`
				Bytes     uint64  `json:"bytes"`
				MiBPerS   float64 `json:"mib_per_s"`
			} `json:"figure"`
		}
		if err := json.Unmarshal([]byte(line), &f); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		if f.Figure.Bytes != 1048577 || f.Figure.MiBPerS <= 0 {
			t.Errorf("figure %+v: want 1048577 bytes at a rate", f.Figure)
		}
		order = append(order, f.Figure.Transport)
	}
	if want := []string{"tcp", "quic", "quic", "tcp"}; !slices.Equal(order, want) {
		t.Errorf("transports in the order %v, want %v", order, want)
	}

	code, stdout, stderr = runBin(t, env, bin, "bench", "fetch", "--size", "2097153", "--transport", "quic", "--ceiling", "--rounds", "2", "--json")
	if code != 0 {
		t.Fatalf("bench fetch: exit %d: %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	type ceiling struct {
		Transport string  `json:"transport"`
		MiBPerS   float64 `json:"mib_per_s"`
	}
	var res struct {
		Result struct {
			Median           int     `json:"median_round"`
			FetchOverCeiling float64 `json:"fetch_over_ceiling"`
			Rounds           []struct {
				FetchMiBPerS     float64  `json:"fetch_mib_per_s"`
				Ceiling          *ceiling `json:"ceiling"`
				FetchOverCeiling float64  `json:"fetch_over_ceiling"`
			} `json:"rounds"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &res); err != nil {
		t.Fatal(err)
	}
	r := res.Result
	if len(r.Rounds) != 2 || r.FetchOverCeiling <= 0 || r.Median < 1 {
		t.Fatalf("result %+v: want 2 rounds and a ratio", r)
	}
	for _, round := range r.Rounds {
		if round.Ceiling == nil || round.Ceiling.Transport != "quic" || round.FetchOverCeiling != round.FetchMiBPerS/round.Ceiling.MiBPerS {
			t.Errorf("round %+v: want a QUIC ceiling and the fetch's ratio to it", round)
		}
	}
}
