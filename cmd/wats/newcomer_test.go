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
