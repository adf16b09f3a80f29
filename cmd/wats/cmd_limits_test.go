package main

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/wats-network/wats/api"
	"github.com/wats-network/wats/core"
)

// TestLimitsAndDiag: `wats limits` and `wats diag` print what the daemon
// answers, as a table and as JSON.
func TestLimitsAndDiag(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+api.PathLimits, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, api.Limits{
			Requests: []api.RequestLimit{
				{Type: "sync", Key: "limits.sync_per_min", PerMin: 600, Burst: 150, IntervalNs: 100e6},
				{Type: "crash_report", Key: "limits.report_per_min"},
			},
			BlobFetchesPerPeer: 4, MaxTrackedPeers: 65536, MissPerMin: 30, SuspectPercent: 10, ValuedPercent: 200,
			Gossip: api.GossipLimits{PerPeer: 6000, Strangers: 1200, PerAuthor: 0, NewAuthors: 600, NewAuthorMinutes: 10},
			Tiers:  []api.TierLimits{{Tier: "suspect", PerMin: map[string]int{"hello": 6, "sync": 60, "replicate": 12, "crash_report": 0, "miss": 3}}},
		})
	})
	mux.HandleFunc("GET "+api.PathDiag, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, api.Diag{
			Requests:     []api.RequestCounts{{Type: "sync", Accepted: 150, Refused: 25}},
			TrackedPeers: 3, PeerLinesLogged: 1,
		})
	})
	dir := fakeDaemon(t, mux)
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"limits"}, []string{"sync", "600", "150", "100ms", "limits.sync_per_min", "crash_report", "unlimited", "blob fetches per peer: 4",
			"suspects 10% and valued peers 200% of the rates", "suspect  6      60    12         unlimited     3",
			"envelopes per forwarding peer: 6000 a minute (limits.gossip_per_min)\n",
			"of new authors, from all strangers: 1200 a minute (limits.stranger_gossip_per_min)\n",
			"new events per author: unlimited (limits.author_per_min)\n",
			"of all new authors together: 600 a minute (limits.stranger_author_per_min)\n", "new for 10 minutes"}},
		{[]string{"limits", "--json"}, []string{`"per_min": 600`, `"burst": 150`, `"max_tracked_peers": 65536`, `"stranger_author_per_min": 600`}},
		{[]string{"diag"}, []string{"REQUEST  ACCEPTED  REFUSED (the peer asked too often)\n", "sync     150       25\n",
			"peers with a rate budget of their own: 3\n", "log lines written about what peers did: 1\n",
			"requests judged on the budget all other newcomers share, as too many peers were tracked: 0\n"}},
		{[]string{"diag", "--json"}, []string{`"refused": 25`, `"peer_lines_logged": 1`}},
	} {
		code, stdout, stderr := runCLI(t, "", append(tc.args, "--repo", dir)...)
		if code != exitOK {
			t.Fatalf("%v: exit %d: %s", tc.args, code, stderr)
		}
		for _, w := range tc.want {
			if !strings.Contains(stdout, w) {
				t.Errorf("%v: output lacks %q:\n%s", tc.args, w, stdout)
			}
		}
		for _, line := range strings.Split(stdout, "\n") {
			if len(line) > maxHelpWidth && !slices.Contains(tc.args, "--json") {
				t.Errorf("%v: a line of %d columns, more than %d: %q", tc.args, len(line), maxHelpWidth, line)
			}
		}
	}
}

// TestPeersCacheShowsTiers: `peers cache` shows each record's tier, how it
// earned its record, and why it has its tier.
func TestPeersCacheShowsTiers(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+api.PathPeerCache, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, []api.CachedPeer{{PeerID: testPeer, Counts: core.Counts{Served: 12, Misses: 20, Events: 2}, Value: "events",
			Tier: "suspect", TierReason: "suspect: 20 misses, 0 invalid, 0 failed solutions, 0 held streams against 12 served"}})
	})
	dir := fakeDaemon(t, mux)
	code, stdout, stderr := runCLI(t, "", "peers", "cache", "--repo", dir)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, w := range []string{"TIER", "REPUTED", testPeer + "  suspect", "value: events", "why suspect: 20 misses"} {
		if !strings.Contains(stdout, w) {
			t.Errorf("peers cache: no %q in\n%s", w, stdout)
		}
	}
}

// TestPeersCacheEmpty: an empty peer cache says why, not a bare header.
func TestPeersCacheEmpty(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+api.PathPeerCache, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, []api.CachedPeer{})
	})
	dir := fakeDaemon(t, mux)
	code, stdout, stderr := runCLI(t, "", "peers", "cache", "--repo", dir)
	if code != exitOK || !strings.HasPrefix(stdout, "no peer remembered yet: a peer gets a record once it shows value") ||
		strings.Contains(stdout, "PEER ID") {
		t.Fatalf("peers cache of none: exit %d, %q, %s", code, stdout, stderr)
	}
}
