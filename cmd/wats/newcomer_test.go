package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestInitProfileSaysWhatItChanges: `init --profile local` says, as it
// makes the repo, all that the profile changes (mDNS among it), and so
// does init's help; a plain init names no profile.
func TestInitProfileSaysWhatItChanges(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "repo")
	code, stdout, stderr := runCLI(t, "", "init", "--profile", "local", "--repo", dir)
	if code != exitOK {
		t.Fatalf("init --profile local: exit %d: %s", code, stderr)
	}
	for _, want := range []string{"profile local:", "127.0.0.1", "ports the system picks", "turns mDNS on", "DHT server"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("init --profile local says no %q:\n%s", want, stdout)
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

func TestWrapWords(t *testing.T) {
	for _, tc := range []struct {
		s     string
		width int
		want  []string
	}{
		{"a bb ccc", 4, []string{"a bb", "ccc"}},
		{"a bb ccc", 3, []string{"a", "bb", "ccc"}},
		{"abcdef gh", 4, []string{"abcdef", "gh"}},
		{"", 4, nil},
	} {
		if got := wrapWords(tc.s, tc.width); strings.Join(got, "|") != strings.Join(tc.want, "|") || len(got) != len(tc.want) {
			t.Errorf("wrapWords(%q, %d) = %q, want %q", tc.s, tc.width, got, tc.want)
		}
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
		{[]string{"events", "get", "zz"}, "want 8 to 64 lowercase hex characters"},
		{[]string{"crash", "report", "--program", "p", "--version", "v", "--reason", "r", "--to", "garbage"}, `--to: "garbage" is not a peer ID`},
		{[]string{"peers", "forget", "garbage"}, `"garbage" is not a peer ID`},
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
