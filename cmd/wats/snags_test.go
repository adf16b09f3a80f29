package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"

	"github.com/wats-network/wats/api"
	"github.com/wats-network/wats/config"
	"github.com/wats-network/wats/repo"
)

// The snags of a newcomer's second hour (docs/adr/0051, second addendum).

// configDaemon is a fake daemon running with the default config, in a repo
// whose config.toml sets log.level = "debug" and p2p.mdns = true.
func configDaemon(t *testing.T) string {
	t.Helper()
	def, err := config.Default().TOML()
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+api.PathConfig, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, api.RunningConfig{TOML: string(def)})
	})
	dir := fakeDaemon(t, mux)
	file := "[p2p]\nmdns = true\n\n[log]\nlevel = \"debug\"\n"
	if err := os.WriteFile(filepath.Join(dir, configFile), []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// holdLock takes dir's repo lock as a daemon does, until the test ends: it
// then holds this process's pid.
func holdLock(t *testing.T, dir string) {
	t.Helper()
	r, err := repo.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	release, err := r.Lock()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { release() })
}

// TestConfigSaysTheSIGHUPCommand: when the daemon runs with another
// log.level than config.toml's, set, get and show give the command that
// applies it, with the daemon's pid from the repo lock (or, the pid
// unknown, a command that reads it there); show's note has no brackets
// within brackets.
func TestConfigSaysTheSIGHUPCommand(t *testing.T) {
	dir := configDaemon(t)
	cfgPath := filepath.Join(dir, configFile)
	lock := filepath.Join(dir, repo.LockFile)

	_, _, stderr := runCLI(t, "", "config", "set", "log.level", "debug", "--repo", dir)
	if want := "the daemon runs with \"info\": send the daemon a SIGHUP to apply: kill -HUP $(cat " + lock + ")\n"; stderr != want {
		t.Errorf("config set, no lock held: stderr %q, want %q", stderr, want)
	}
	holdLock(t, dir)
	kill := fmt.Sprintf("kill -HUP %d", os.Getpid())
	_, _, stderr = runCLI(t, "", "config", "set", "log.level", "debug", "--repo", dir)
	if want := "the daemon runs with \"info\": send the daemon a SIGHUP to apply: " + kill + "\n"; stderr != want {
		t.Errorf("config set: stderr %q, want %q", stderr, want)
	}
	_, _, stderr = runCLI(t, "", "config", "get", "log.level", "--repo", dir)
	if want := "the daemon runs with log.level = \"info\"; " + cfgPath + " has \"debug\": send the daemon a SIGHUP to apply: " + kill + "\n"; stderr != want {
		t.Errorf("config get: stderr %q, want %q", stderr, want)
	}
	_, _, stderr = runCLI(t, "", "config", "show", "--repo", dir)
	want := "the daemon runs with the config above; " + cfgPath + " changes p2p.mdns, log.level: " +
		"restart the daemon to apply them all; a SIGHUP applies log.level alone: " + kill + "\n"
	if stderr != want || strings.Contains(stderr, "(") {
		t.Errorf("config show: stderr %q, want %q", stderr, want)
	}
}

// TestConfigGetTable: a table's name prints the table, each key with the
// value in effect, and what config.toml changes in it; the start of a key
// suggests the keys it starts; a value of the wrong type reads as one
// sentence; a key of bytes takes a size with a unit.
func TestConfigGetTable(t *testing.T) {
	dir := configDaemon(t)
	code, stdout, stderr := runCLI(t, "", "config", "get", "p2p", "--repo", dir)
	if code != exitOK || !strings.HasPrefix(stdout, "[p2p]\nlisten = [") || !strings.Contains(stdout, "\nmdns = false\n") ||
		!strings.Contains(stderr, "the daemon runs with p2p.mdns = false; ") || strings.Contains(stderr, "log.level") {
		t.Errorf("config get p2p: exit %d, stdout\n%s\nstderr %q", code, stdout, stderr)
	}
	code, _, stderr = runCLI(t, "", "config", "get", "blobs.max_blob", "--repo", dir)
	if code != exitUsage || !strings.Contains(stderr, `"blobs.max_blob": no such key; did you mean blobs.max_blob_bytes?`) {
		t.Errorf("config get blobs.max_blob: exit %d, stderr %q", code, stderr)
	}
	code, _, stderr = runCLI(t, "", "config", "set", "p2p", "x", "--repo", dir)
	if code != exitUsage || !strings.Contains(stderr, "[p2p] is a table; its keys are p2p.listen, ") {
		t.Errorf("config set p2p: exit %d, stderr %q", code, stderr)
	}

	code, stdout, _ = runCLI(t, "", "config", "set", "blobs.max_blob_bytes", "100MiB", "--repo", dir)
	if code != exitOK || stdout != "blobs.max_blob_bytes = 104857600 in "+filepath.Join(dir, configFile)+"\n" {
		t.Errorf("config set blobs.max_blob_bytes 100MiB: exit %d, %q", code, stdout)
	}
	code, _, stderr = runCLI(t, "", "config", "set", "blobs.max_blob_bytes", "100MB", "--repo", dir)
	if code != exitError || strings.HasSuffix(stderr, "wrong type\n") ||
		!strings.HasSuffix(stderr, "not an integer (or a size such as 64MiB); example (in [blobs]): max_blob_bytes = 67108864\n") {
		t.Errorf("config set blobs.max_blob_bytes 100MB: exit %d, stderr %q", code, stderr)
	}
}

// TestRepoInUseSaysWhatToDo: a second daemon on a repo, and init --force
// on a repo a daemon runs on, say what to do: stop the daemon (the
// command, with the repo), or use another repo.
func TestRepoInUseSaysWhatToDo(t *testing.T) {
	dir := newRepo(t)
	holdLock(t, dir)
	want := fmt.Sprintf("Error: %s is in use by another wats daemon (pid %d); stop it with: wats shutdown --repo %s, or use another --repo\n",
		dir, os.Getpid(), dir)
	for _, args := range [][]string{{"daemon"}, {"init", "--force"}} {
		code, _, stderr := runCLI(t, "", append(args, "--repo", dir)...)
		if code != exitError || !strings.HasSuffix(stderr, want) {
			t.Errorf("%v: exit %d, stderr %q\nwant it to end with %q", args, code, stderr, want)
		}
	}
}

// TestEventsGetAnyCase: an event id in uppercase (or mixed case) names the
// same event; a --body that is not JSON says how to quote one.
func TestEventsGetAnyCase(t *testing.T) {
	dir := fakeDaemon(t, testAPI(t))
	code, stdout, stderr := runCLI(t, "", "events", "get", strings.ToUpper(testEvID[:16]), "--repo", dir)
	if code != exitOK || !strings.Contains(stdout, testEvID) {
		t.Errorf("events get in uppercase: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	code, _, stderr = runCLI(t, "", "events", "get", "F7FBE4FF", "--repo", dir)
	if code != exitError || stderr != "Error: no event whose id starts with f7fbe4ff in the log of repo "+dir+"\n" {
		t.Errorf("events get F7FBE4FF: exit %d, stderr %q", code, stderr)
	}
	code, _, stderr = runCLI(t, "", "events", "add", "--kind", "note", "--body", "not json", "--repo", dir)
	if code != exitUsage || !strings.Contains(stderr, `give a JSON object in single quotes, as in --body '{"text":"hi"}', or --body @FILE`) {
		t.Errorf("events add --body 'not json': exit %d, stderr %q", code, stderr)
	}
}

// TestSyncLinesOnlyWhenChanged: outside a terminal, a progress report that
// says what the line before said prints nothing; one that moved prints.
func TestSyncLinesOnlyWhenChanged(t *testing.T) {
	share := func(received int, done bool) string {
		return fmt.Sprintf(`{"peer":"","received":%d,"stored":%d,"dropped":0,"cursor":0,"peer_head":300,"done":%v,"shares":[`+
			`{"peer":"%s","received":%d,"stored":%d,"dropped":0,"cursor":%d,"peer_head":300,"done":%v}]}`+"\n",
			received, received, done, testPeer, received, received, received, done)
	}
	one := func(received int) string {
		return fmt.Sprintf(`{"peer":"%s","received":%d,"stored":%d,"dropped":0,"cursor":%d,"peer_head":300}`+"\n",
			testPeer, received, received, received)
	}
	dir := fakeDaemon(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", api.ContentTypeNDJSON)
		var req api.SyncRequest
		if json.UnmarshalRead(r.Body, &req) == nil && req.All {
			for _, l := range []string{share(100, false), share(100, false), share(200, false), share(300, true)} {
				io.WriteString(w, l)
			}
			return
		}
		for _, l := range []string{one(100), one(100), one(200), one(200)} {
			io.WriteString(w, l)
		}
		io.WriteString(w, `{"peer":"`+testPeer+`","received":300,"stored":300,"dropped":0,"cursor":300,"peer_head":300,"done":true}`+"\n")
	}))
	for _, args := range [][]string{{"sync"}, {"sync", testPeer}} {
		code, stdout, stderr := runCLI(t, "", append(args, "--repo", dir)...)
		lines := strings.Split(strings.TrimSpace(stdout), "\n")
		progress := 0
		seen := map[string]bool{}
		for _, l := range lines {
			if strings.HasPrefix(l, "sync from") {
				progress++
				if seen[l] {
					t.Errorf("%v: the line %q twice", args, l)
				}
				seen[l] = true
			}
		}
		if code != exitOK || progress != 2 {
			t.Errorf("%v: exit %d, %d progress lines, want 2; stderr %q, stdout\n%s", args, code, progress, stderr, stdout)
		}
	}
}
