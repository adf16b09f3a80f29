package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wats-network/wats/api"
)

func TestHintName(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "bin", "wats")
	other := filepath.Join(dir, "other", "wats")
	link := filepath.Join(dir, "link", "wats")
	for _, p := range []string{exe, other} {
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(p), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	os.MkdirAll(filepath.Dir(link), 0o700)
	if err := os.Symlink(exe, link); err != nil {
		t.Fatal(err)
	}
	found := func(p string) func(string) (string, error) {
		return func(name string) (string, error) {
			if name != "wats" {
				t.Errorf("looked up %q, want wats", name)
			}
			return p, nil
		}
	}
	notFound := func(string) (string, error) { return "", errors.New("not found") }
	for _, tc := range []struct {
		name, arg0 string
		look       func(string) (string, error)
		want       string
	}{
		{"on PATH", "wats", found(exe), "wats"},
		{"on PATH, run by path", "bin/wats", found(exe), "wats"},
		{"on PATH through a symlink", "bin/wats", found(link), "wats"},
		{"another wats on PATH", "bin/wats", found(other), "bin/wats"},
		{"not on PATH", "bin/wats", notFound, "bin/wats"},
		{"not on PATH, absolute", exe, notFound, exe},
		{"path with a space", "my bin/wats", notFound, "'my bin/wats'"},
		{"no arg0", "", notFound, "wats"},
	} {
		if got := hintName(tc.arg0, exe, tc.look); got != tc.want {
			t.Errorf("%s: hintName(%q) = %q, want %q", tc.name, tc.arg0, got, tc.want)
		}
	}
}

func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{
		"/tmp/r":          "/tmp/r",
		"bin/wats":        "bin/wats",
		"a b":             "'a b'",
		`{"text":"hi"}`:   `'{"text":"hi"}'`,
		"it's":            `'it'\''s'`,
		"":                "''",
		"$HOME":           "'$HOME'",
		"--after=3,x:y@z": "--after=3,x:y@z",
	} {
		if got := shellQuote(in); got != want {
			t.Errorf("shellQuote(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestStripPkgPrefixes(t *testing.T) {
	for in, want := range map[string]string{
		"node: invalid event: eventlog: malformed event: x": "invalid event: malformed event: x",
		"api: tail: api: stream ended early":                "tail: stream ended early",
		"repo: a\nconfig: b":                                "a\nb",
		"dial /ip4/1.2.3.4: refused":                        "dial /ip4/1.2.3.4: refused",
		"anode: x":                                          "anode: x", // not at a boundary
		"no event node: x":                                  "no event node: x",
		"node:x":                                            "node:x",
	} {
		if got := stripPkgPrefixes(in); got != want {
			t.Errorf("stripPkgPrefixes(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestHintsNameTheBinary runs the CLI as a binary that is not on $PATH
// (bin/wats after `make build`): every hint names it so.
func TestHintsNameTheBinary(t *testing.T) {
	old := commandName
	commandName = func() string { return "bin/wats" }
	t.Cleanup(func() { commandName = old })
	t.Setenv("WATS_DEVNET_DIR", filepath.Join(t.TempDir(), "devnet"))

	dir := filepath.Join(t.TempDir(), "repo")
	_, stdout, _ := runCLI(t, "", "init", "--repo", dir)
	if want := "start the node with: bin/wats daemon --repo " + dir + "\n"; !strings.HasSuffix(stdout, want) {
		t.Errorf("init: stdout %q, want it to end with %q", stdout, want)
	}
	_, _, stderr := runCLI(t, "", "status", "--repo", dir)
	if !strings.Contains(stderr, "start one with: bin/wats daemon --repo "+dir+"\n") {
		t.Errorf("no daemon: stderr %q", stderr)
	}
	none := filepath.Join(t.TempDir(), "none")
	_, _, stderr = runCLI(t, "", "status", "--repo", none)
	if !strings.Contains(stderr, "create one with: bin/wats init --repo "+none+"\n") {
		t.Errorf("no repo: stderr %q", stderr)
	}
	_, _, stderr = runCLI(t, "", "status", "--bogus")
	if !strings.HasSuffix(stderr, "Run 'bin/wats status --help' for usage.\n") {
		t.Errorf("usage error: stderr %q", stderr)
	}
	_, _, stderr = runCLI(t, "", "devnet", "status")
	if !strings.Contains(stderr, "start one with: bin/wats devnet up -n 3 (or,") {
		t.Errorf("no devnet: stderr %q", stderr)
	}
	_, stdout, _ = runCLI(t, "", "devnet", "up", "--help")
	if !strings.Contains(stdout, "  bin/wats devnet up -n 3\n") || strings.Contains(stdout, "  wats devnet exec") {
		t.Errorf("devnet up --help examples do not name bin/wats:\n%s", stdout)
	}

	fake := fakeDaemon(t, testAPI(t))
	_, stdout, _ = runCLI(t, "", "events", "ls", "--after", "3", "--limit", "1", "--repo", fake)
	if want := "more: bin/wats events ls --repo " + fake + " --after 4 --limit 1\n"; !strings.HasSuffix(stdout, want) {
		t.Errorf("events ls: stdout %q, want it to end with %q", stdout, want)
	}
}

// TestHelpShowsOneDefault: the help of --repo and --dir gives the default
// once, as the rule; `devnet run`'s --dir defaults to a temporary
// directory.
func TestHelpShowsOneDefault(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"status", "--help"}, "--repo string   the repo directory (default: $WATS_PATH, else ~/.wats)\n"},
		{[]string{"devnet", "status", "--help"}, "the devnet directory (default: $WATS_DEVNET_DIR, else ~/.wats-devnet)\n"},
		{[]string{"devnet", "down", "--help"}, "(default: $WATS_DEVNET_DIR, else ~/.wats-devnet)\n"},
		{[]string{"devnet", "run", "--help"}, "the devnet directory (default: a temporary one)\n"},
	} {
		code, stdout, _ := runCLI(t, "", tc.args...)
		if code != exitOK || !strings.Contains(stdout, tc.want) {
			t.Errorf("%v: exit %d, help does not contain %q:\n%s", tc.args, code, tc.want, stdout)
		}
		for _, line := range strings.Split(stdout, "\n") {
			if (strings.Contains(line, "--repo") || strings.Contains(line, "--dir")) && strings.Contains(line, `(default "`) {
				t.Errorf("%v: a second default: %q", tc.args, line)
			}
		}
	}
}

func TestRepoFlagDefault(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "env")
	t.Setenv("WATS_PATH", dir)
	code, _, stderr := runCLI(t, "", "status")
	if code != exitError || !strings.Contains(stderr, "no wats repo at "+dir) {
		t.Errorf("without --repo: exit %d, stderr %q: want $WATS_PATH used", code, stderr)
	}
	code, _, stderr = runCLI(t, "", "status", "--repo", "")
	if code != exitUsage || !strings.Contains(stderr, "no repo directory") {
		t.Errorf("--repo '': exit %d, stderr %q", code, stderr)
	}
}

// TestUserMessageDropsARefusalsStatus: a daemon's 4xx is printed as its
// message, which says what was wrong; a 500 keeps its status.
func TestUserMessageDropsARefusalsStatus(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("blob get: %w", &api.Error{Status: 404, Message: "blob bafy: no size known: give it with --size N"}),
			"blob get: blob bafy: no size known: give it with --size N"},
		{&api.Error{Status: 400, Message: "limit must be a whole number"}, "limit must be a whole number"},
		{&api.Error{Status: 500, Message: "pebble: closed"}, "500 Internal Server Error: pebble: closed"},
		{errors.New("api: 404 Not Found: not from the daemon"), "404 Not Found: not from the daemon"},
	} {
		if got := userMessage(tc.err); got != tc.want {
			t.Errorf("userMessage(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}
