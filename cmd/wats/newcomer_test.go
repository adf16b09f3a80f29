package main

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/wats-network/wats/api"
	"github.com/wats-network/wats/core"
)

// TestInitProfileSaysWhatItChanges: `init --profile local` says, as it
// makes the repo, all that the profile changes (mDNS among it) in lines
// of 100 columns at most, and so does init's help; a plain init names no
// profile.
func TestInitProfileSaysWhatItChanges(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "repo")
	code, stdout, stderr := runCLI(t, "", "init", "--profile", "local", "--repo", dir)
	if code != exitOK {
		t.Fatalf("init --profile local: exit %d: %s", code, stderr)
	}
	words := strings.Join(strings.Fields(stdout), " ")
	for _, want := range []string{"profile local:", "127.0.0.1", "ports the system picks", "turns mDNS on", "DHT server"} {
		if !strings.Contains(words, want) {
			t.Errorf("init --profile local says no %q:\n%s", want, stdout)
		}
	}
	_, profileLines, _ := strings.Cut(stdout, "profile local:")
	profileLines, _, _ = strings.Cut("profile local:"+profileLines, "\nedit ")
	for _, line := range strings.Split(profileLines, "\n") {
		if n := utf8.RuneCountInString(line); n > maxHelpWidth {
			t.Errorf("init --profile local: a line of %d columns: %q", n, line)
		}
	}
	code, stdout, stderr = runCLI(t, "", "init", "--repo", filepath.Join(t.TempDir(), "plain"))
	if code != exitOK || strings.Contains(stdout, "profile") {
		t.Errorf("plain init: exit %d, %q, %s; want no profile named", code, stdout, stderr)
	}
	code, stdout, _ = runCLI(t, "", "init", "--help")
	if code != exitOK || !strings.Contains(stdout, "turns mDNS on") || !strings.Contains(stdout, "p2p.mdns = true") ||
		!strings.Contains(stdout, "server: a node on a public address among strangers: mDNS off") {
		t.Errorf("init --help does not say what the profiles change:\n%s", stdout)
	}
}

// TestMalformedArgumentsAreUsageErrors: every malformed argument a
// command parses (a CID, a peer ID, a multiaddr, an event id), wherever
// it is given, is a usage error: exit 2, a message that names it, a
// pointer to --help; and it is found before any daemon is asked (none
// runs here).
func TestMalformedArgumentsAreUsageErrors(t *testing.T) {
	t.Setenv("WATS_PATH", t.TempDir())
	out := filepath.Join(t.TempDir(), "out")
	for _, tc := range []struct {
		args []string
		want string // in stderr
	}{
		{[]string{"blob", "get", "notacid", "-o", out}, `"notacid" is not a CID`},
		{[]string{"blob", "get", "notacid", "--size", "1", "-o", out}, `"notacid" is not a CID`},
		{[]string{"blob", "get", "bafkqaaa", "--size", "1", "-o", out, "--from", "garbage"}, `--from: "garbage" is neither a peer ID`},
		{[]string{"blob", "get", "bafkqaaa", "--size", "1", "-o", out, "--from", "/ip4/127.0.0.1/tcp/1"}, "has no /p2p/"},
		{[]string{"blob", "rm", "x"}, `"x" is not a CID`},
		{[]string{"replicate", "garbage", "bafkqaaa:1"}, `"garbage" is neither a peer ID`},
		{[]string{"replicate", testPeer, "notacid:5"}, `"notacid" is not a CID`},
		{[]string{"events", "add", "--kind", "file", "--blob", "notacid:5:a.txt"}, `"notacid" is not a CID`},
		{[]string{"events", "get", "zz"}, "want 8 to 64 hex characters"},
		{[]string{"crash", "report", "--program", "p", "--version", "v", "--reason", "r", "--to", "garbage"}, `--to: "garbage" is not a peer ID`},
		{[]string{"peers", "forget", "garbage"}, `"garbage" is not a peer ID`},
		{[]string{"peers", "disconnect", "garbage"}, `"garbage" is not a peer ID`},
		{[]string{"peers", "disconnect", testAddr}, `is not a peer ID`},
		{[]string{"shutdown", "--timeout", "0s"}, "--timeout 0s: must be positive"},
		{[]string{"peers", "connect", "garbage"}, `"garbage" is neither a peer ID`},
		{[]string{"peers", "connect", "/ip4/300.0.0.1/tcp/1/p2p/" + testPeer}, "is not a multiaddr"},
		{[]string{"sync", "garbage"}, `"garbage" is neither a peer ID`},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, _, stderr := runCLI(t, "", tc.args...)
			if code != exitUsage || !strings.Contains(stderr, tc.want) || !strings.Contains(stderr, "--help' for usage") {
				t.Errorf("exit %d, stderr %q; want exit %d and %q with a pointer to --help", code, stderr, exitUsage, tc.want)
			}
		})
	}
	// A well-formed CID gets past the check to the daemon, which is not
	// running: an error, not a usage error.
	if code, _, stderr := runCLI(t, "", "blob", "rm", "bafkqaaa"); code != exitError {
		t.Errorf("blob rm of a CID with no daemon: exit %d (%s), want %d", code, stderr, exitError)
	}
}

// TestStatusInWords: every line of `wats status` says what it counts in
// words, none of the ADRs' terms (a store "full", "stranger slots", "in
// flight", "effort"), wrapped to fit in 100 columns under the column
// where the values start, and --json keeps its field names.
func TestStatusInWords(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+api.PathStatus, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, api.Status{PeerID: testPeer, Network: "n", Agent: "wats/test", Peers: 2, Events: 7, Head: 9, Gossip: true, UptimeSeconds: 65,
			Blobs: 3, BlobBytes: 3 << 20, BlobQuotaBytes: 4 << 30, InFlight: 5, ChallengeEffort: 12, ChallengesIssued: 4, ChallengesSolved: 3, ChallengesFailed: 1,
			PeerTiers: map[string]int{"normal": 1, "suspect": 1}, StrangerSlots: 64, StrangerSlotsUsed: 1, Reachability: "private",
			HolePunches: api.HolePunches{Succeeded: 2, Failed: 1},
			DHT: api.DHTStatus{Mode: "auto", RoutingTable: 4, LANRoutingTable: 1, Discovered: 1, ProviderRecords: 10, MaxProviderRecords: 10, ProviderRecordsRefused: 3,
				AllowancesBudget: 3, AllowancesSolved: 2, AllowancesOverSolved: 1},
			Disk: &api.DiskStatus{FreeBytes: 5 << 30, ReserveBytes: 64 << 20},
			Bandwidth: api.BandwidthStatus{UpBytes: 3 << 30, UpBytesPerS: 8 << 20, DownBytes: 5 << 20, Month: "2026-12",
				MonthUpBytes: 1 << 40, MonthlyUpBytes: 1 << 40, StrangerBlobsStopped: true},
			Log: api.LogUsage{Events: 7, Bytes: 3 << 10, Authors: 2, MaxEvents: 10_000_000, MaxBytes: 4 << 30, MaxEventsPerAuthor: 100_000}})
	})
	dir := fakeDaemon(t, mux)
	code, stdout, stderr := runCLI(t, "", "status", "--repo", dir)
	if code != exitOK {
		t.Fatalf("status: exit %d: %s", code, stderr)
	}
	for _, line := range strings.Split(strings.TrimSuffix(stdout, "\n"), "\n") {
		if n := utf8.RuneCountInString(line); n > maxHelpWidth {
			t.Errorf("a line of %d columns: %q", n, line)
		}
		if label, _, _ := strings.Cut(line, ":"); strings.HasPrefix(line, " ") && !strings.HasPrefix(line, strings.Repeat(" ", len("hole punches: "))) ||
			!strings.HasPrefix(line, " ") && len(label) > len("hole punches") {
			t.Errorf("a line that does not start at a label or under the values: %q", line)
		}
	}
	words := strings.Join(strings.Fields(stdout), " ") // the columns' padding and wrapping aside
	for _, want := range []string{
		"peers: 2 connected (each greeted with hello)",
		"peer tiers: 1 normal, 1 suspect (valued peers are served the most, then normal, new, suspect)",
		"newcomers: 1 of 64 connections for peers not remembered yet are in use",
		"events: 7 in the log (the newest at position 9)",
		"log room: 7 of 10000000 events, 3.0 KiB of 4.0 GiB; 2 authors, each allowed 100000 events, unlimited",
		"gossip: on: new events are sent to peers and received from them at once",
		"busy: 5 requests from peers being handled now (over 64, new peers must first solve a puzzle)",
		"puzzles: 4 given to peers that asked too much, 3 solved, 1 failed; each now costs 12 bits of work",
		"blobs: 3 complete, 3.0 MiB of the 4.0 GiB allowed",
		"reachable: not directly: it is behind a NAT, reached through a relay, then directly once a hole punch works",
		"hole punches: 2 worked, 1 failed",
		"dht: mode auto: looks up peers and blobs in the table nodes share; not answering others' lookups yet",
		"dht peers: 4 in the network's table, 1 in this LAN's; 1 node of this network found by the last search",
		"dht records: 10 of 10 notes of who holds which blob, kept for other nodes; 3 turned away since the start because the store was full",
		"dht greeted: 5 new peers given a few lookups for their hello (3 paid from the share of new peers, 2 by a solved puzzle); " +
			"1 more solved one past the most allowed a minute and got none",
		"disk: 5.0 GiB free, 64.0 MiB of it kept in reserve; writes accepted",
		"bandwidth: 3.0 GiB sent (cap 8.0 MiB/s), 5.0 MiB received (no cap) since the start; 1.0 TiB sent in 2026-12, " +
			"the monthly cap of 1.0 TiB reached: until the month ends, blobs go only to peers this node dialled or has known for a while",
		"uptime: 1m5s",
	} {
		if !strings.Contains(words, want) {
			t.Errorf("status says no %q:\n%s", want, stdout)
		}
	}
	for _, jargon := range []string{"refused, full", "stranger", "in flight", "effort", "quota", "head:", "standing"} {
		if strings.Contains(stdout, jargon) {
			t.Errorf("status still says %q:\n%s", jargon, stdout)
		}
	}
	code, stdout, _ = runCLI(t, "", "status", "--json", "--repo", dir)
	for _, field := range []string{`"provider_records_refused": 3`, `"allowances_over_solved": 1`, `"stranger_slots_used": 1`, `"in_flight": 5`, `"challenge_effort": 12`, `"head": 9`} {
		if code != exitOK || !strings.Contains(stdout, field) {
			t.Errorf("status --json: exit %d, no %s:\n%s", code, field, stdout)
		}
	}
}

// TestStatusText: a value past maxHelpWidth columns goes on under the
// column where values start, cut between words but never between a
// number and its unit; an empty value keeps its label.
func TestStatusText(t *testing.T) {
	x := strings.Repeat("x ", 40) // 80 columns
	got := statusText([][2]string{{"peer id", "short"}, {"hole punches", x + "12.5 MiB sent"}, {"empty", ""}})
	want := "peer id:      short\n" +
		"hole punches: " + strings.TrimSpace(x) + "\n" +
		"              12.5 MiB sent\n" +
		"empty:        \n"
	if got != want {
		t.Errorf("statusText:\n%s\nwant:\n%s", got, want)
	}
}

func TestReachWords(t *testing.T) {
	for r, want := range map[string]string{
		"public":  "yes: other nodes can dial this one directly",
		"unknown": "not known yet",
		"":        "not known yet",
		"weird":   "weird",
	} {
		if got := reachWords(r); !strings.HasPrefix(got, want) {
			t.Errorf("reachWords(%q) = %q, want %q…", r, got, want)
		}
	}
}

// TestPeersCacheFits: `peers cache` fits in 100 columns, however long its
// counts and reasons, keeps each full peer ID (what `peers forget` takes),
// prints byte counts in binary units, and keeps the daemon's order (most
// recently seen first).
func TestPeersCacheFits(t *testing.T) {
	const other = "12D3KooWQYhTNQdmr3ArTeUHRYzFg94BKyTkoWBDWez9kSCVe2Xo"
	now := time.Date(2026, 3, 1, 12, 30, 0, 0, time.UTC)
	peers := []api.CachedPeer{
		{PeerID: other, LastSeen: now, FirstSeen: now.Add(-time.Hour), Tier: "valued", Value: "events, blobs", Reputed: true,
			Agent:      "wats/v1.2.3-with-a-long-build-suffix",
			Counts:     core.Counts{Served: 18446744073709551615, Misses: 18446744073709551615, Events: 123456789, Bytes: 5 << 30},
			TierReason: "valued: " + strings.Repeat("a long reason that goes on, ", 8)},
		{PeerID: testPeer, LastSeen: now.Add(-time.Minute), Tier: "new", TierReason: "new: met less than 10 minutes ago"},
	}
	text := peerCacheText(peers)
	for _, line := range strings.Split(text, "\n") {
		if n := utf8.RuneCountInString(line); n > maxHelpWidth {
			t.Errorf("a line of %d columns: %q", n, line)
		}
	}
	for _, want := range []string{"5.0 GiB of blobs", "123456789 events", other + "  valued", "2026-03-01 12:30", "why new: met less than 10 minutes ago"} {
		if !strings.Contains(text, want) {
			t.Errorf("peers cache says no %q:\n%s", want, text)
		}
	}
	if strings.Index(text, other) > strings.Index(text, testPeer) {
		t.Errorf("peers cache changed the order (most recently seen first):\n%s", text)
	}
	if strings.Contains(text, "5368709120") {
		t.Errorf("peers cache prints bytes without units:\n%s", text)
	}
}

// TestPeersLsFits: `peers ls` fits in 100 columns for the widest
// connection kind and tier and 9-digit heads and cursors, keeps each full
// peer ID in its row, and says below it who dialled, the hello, the score,
// agent and address; a long agent wraps, it is not cut.
func TestPeersLsFits(t *testing.T) {
	const other = "12D3KooWQYhTNQdmr3ArTeUHRYzFg94BKyTkoWBDWez9kSCVe2Xo"
	peers := []api.Peer{
		{PeerID: other, Direction: "outbound", Conn: "hole-punched", Tier: "suspect", Hello: true, HasScore: true,
			Score: -1234.5, Head: 999_999_999, Cursor: 999_999_999, Agent: "wats/v1.2.3 " + strings.Repeat("build-suffix ", 10),
			Addrs: []string{"/ip6/2001:db8:ffff:ffff:ffff:ffff:ffff:ffff/udp/65535/quic-v1"}},
		{PeerID: testPeer, Direction: "inbound", Tier: "new", NotWats: true},
	}
	text := peersText(peers)
	for _, line := range strings.Split(text, "\n") {
		if n := utf8.RuneCountInString(line); n > maxHelpWidth {
			t.Errorf("a line of %d columns: %q", n, line)
		}
	}
	for _, want := range []string{other + "  hole-punched  suspect  999999999", "outbound; hello completed; score -1234.5",
		"build-suffix", "address /ip6/2001:db8:ffff:ffff:ffff:ffff:ffff:ffff/udp/65535/quic-v1",
		testPeer + "  -", "inbound; no hello (not wats); score none; agent -; address -"} {
		if !strings.Contains(text, want) {
			t.Errorf("peers ls says no %q:\n%s", want, text)
		}
	}
}

// TestBlobLsNamesAndOrder: `blob ls` shows each blob's time added, size
// (in binary units, or with --bytes exact), name ("-" for none) and, under
// it, its CID, in the daemon's order (newest first, a blob without a time
// last).
func TestBlobLsNamesAndOrder(t *testing.T) {
	const c1, c2, c3 = "bafkqaaa", "bafkqaalb", "bafkqaalc"
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+api.PathBlobs, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, []api.BlobInfo{
			{CID: c2, Size: 1 << 20, Name: "report.pdf", Added: time.Date(2026, 3, 1, 12, 30, 5, 0, time.UTC)},
			{CID: c1, Size: 0, Added: time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)},
			{CID: c3, Size: 7, Name: "old\x1b[31m.txt"},
		})
	})
	dir := fakeDaemon(t, mux)
	for _, tc := range []struct {
		flags []string
		want  []string // each line's fields, one space apart
	}{
		{nil, []string{"ADDED (UTC) SIZE NAME", "2026-03-01 12:30 1.0 MiB report.pdf", c2, "2026-03-01 09:00 0 B -", c1,
			"- 7 B old\\x1b[31m.txt", c3}},
		{[]string{"--bytes"}, []string{"ADDED (UTC) SIZE NAME", "2026-03-01 12:30 1048576 report.pdf", c2, "2026-03-01 09:00 0 -", c1,
			"- 7 old\\x1b[31m.txt", c3}},
	} {
		code, stdout, stderr := runCLI(t, "", append([]string{"blob", "ls", "--repo", dir}, tc.flags...)...)
		if code != exitOK {
			t.Fatalf("blob ls %v: exit %d: %s", tc.flags, code, stderr)
		}
		lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
		if len(lines) != len(tc.want) {
			t.Fatalf("blob ls %v:\n%s\nwant %d lines", tc.flags, stdout, len(tc.want))
		}
		for i, l := range lines {
			if got := strings.Join(strings.Fields(l), " "); got != tc.want[i] {
				t.Errorf("blob ls %v: line %d: %q, want %q", tc.flags, i, got, tc.want[i])
			}
		}
	}
}
