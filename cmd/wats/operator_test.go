package main

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/wats-network/wats/api"
	"github.com/wats-network/wats/internal/devnet"
	"github.com/wats-network/wats/repo"
	"github.com/wats-network/wats/store"
)

// startBinDaemon runs `wats daemon --repo dir` from bin in the background
// until the test ends (SIGTERM, then wait) and waits until its control API
// answers. Its stderr is returned as it grows.
func startBinDaemon(t *testing.T, env []string, bin, dir string) *lockedBuffer {
	t.Helper()
	_, stderr := startBinDaemonProc(t, env, bin, dir)
	return stderr
}

// startBinDaemonProc is startBinDaemon that also returns the daemon's
// process, for a test that kills it (its cleanup then only reaps it).
func startBinDaemonProc(t *testing.T, env []string, bin, dir string) (*exec.Cmd, *lockedBuffer) {
	t.Helper()
	d := exec.Command(bin, "daemon", "--repo", dir)
	d.Env = env
	stderr := new(lockedBuffer)
	d.Stderr = stderr
	if err := d.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = d.Process.Signal(syscall.SIGTERM)
		_ = d.Wait()
	})
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		code, stdout, errOut := runBin(t, env, bin, "status", "--repo", dir)
		if code == 0 {
			return d, stderr
		}
		if exited(d.Process.Pid) {
			t.Fatalf("the daemon of %s exited before it answered; its stderr:\n%s", dir, stderr)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the daemon of %s did not answer in 20 s; the last status: exit %d: %s%s\nthe daemon's stderr:\n%s",
				dir, code, stdout, errOut, stderr)
		}
	}
}

// lockedBuffer is a bytes.Buffer that a process writes to while a test
// reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// e2eSetup skips the test in -short mode and returns the wats binary, a
// temporary directory and the binary's environment in it.
func e2eSetup(t *testing.T) (bin, tmp string, env []string) {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end: builds the binary, runs daemons")
	}
	bin, tmp = watsBinary(t), t.TempDir()
	return bin, tmp, e2eEnv(tmp)
}

// initLocal makes a repo in each of dirs with --profile local.
//
// The local profile announces the node by mDNS, so the repos of one call
// get a network of their own: daemons of other tests, benches or devnets
// running on this machine are on other networks, never found or synced
// with (they once filled a test's log with their events).
func initLocal(t *testing.T, env []string, bin string, dirs ...string) {
	t.Helper()
	network := fmt.Sprintf("e2e-%x", rand.Uint64())
	for _, dir := range dirs {
		if code, _, stderr := runBin(t, env, bin, "init", "--profile", "local", "--repo", dir); code != 0 {
			t.Fatalf("init --profile local --repo %s: exit %d: %s", dir, code, stderr)
		}
		if code, _, stderr := runBin(t, env, bin, "config", "set", "network", network, "--repo", dir); code != 0 {
			t.Fatalf("config set network %s --repo %s: exit %d: %s", network, dir, code, stderr)
		}
	}
}

// twoDaemons builds the binary and starts two daemons of the local
// profile, in tmp/a and tmp/b.
func twoDaemons(t *testing.T) (bin, tmp string, env []string, a, b string) {
	t.Helper()
	bin, tmp, env = e2eSetup(t)
	a, b = filepath.Join(tmp, "a"), filepath.Join(tmp, "b")
	initLocal(t, env, bin, a, b)
	startBinDaemon(t, env, bin, a)
	startBinDaemon(t, env, bin, b)
	return bin, tmp, env, a, b
}

// idOf returns what `wats id --json` reports for the daemon of dir.
func idOf(t *testing.T, env []string, bin, dir string) api.ID {
	t.Helper()
	code, out, stderr := runBin(t, env, bin, "id", "--json", "--repo", dir)
	if code != 0 {
		t.Fatalf("id: exit %d: %s", code, stderr)
	}
	var id api.ID
	if err := json.Unmarshal([]byte(out), &id); err != nil || len(id.Addrs) == 0 {
		t.Fatalf("id --json: %v\n%s", err, out)
	}
	return id
}

// connectAndSync connects the daemon of dir to the peer to and syncs from
// it, through the CLI.
func connectAndSync(t *testing.T, env []string, bin, dir string, to api.ID) {
	t.Helper()
	if code, _, stderr := runBin(t, env, bin, "peers", "connect", to.Addrs[0], "--repo", dir); code != 0 {
		t.Fatalf("peers connect: exit %d: %s", code, stderr)
	}
	if code, _, stderr := runBin(t, env, bin, "sync", to.PeerID, "--repo", dir); code != 0 {
		t.Fatalf("sync: exit %d: %s", code, stderr)
	}
}

// tcpPort returns the TCP port of the first listen address `wats id`
// reports for the daemon of dir.
func tcpPort(t *testing.T, env []string, bin, dir string) string {
	t.Helper()
	id := idOf(t, env, bin, dir)
	for _, a := range id.Addrs {
		if _, rest, ok := strings.Cut(a, "/tcp/"); ok {
			port, _, _ := strings.Cut(rest, "/")
			return port
		}
	}
	t.Fatalf("id lists no TCP address: %q", id.Addrs)
	return ""
}

// TestSecondDaemon: a second daemon whose p2p.listen is taken fails with
// one error that names the address, the key, the config file and the
// profile to use, in the node's log format and nothing of libp2p's own
// (no fx lifecycle lines); a second repo made with --profile local runs
// beside the first.
func TestSecondDaemon(t *testing.T) {
	bin, tmp, env := e2eSetup(t)
	first := filepath.Join(tmp, "first")
	initLocal(t, env, bin, first)
	startBinDaemon(t, env, bin, first)
	port := tcpPort(t, env, bin, first)

	// A default repo, its listen address moved onto the first's port.
	second := filepath.Join(tmp, "second")
	if code, _, stderr := runBin(t, env, bin, "init", "--repo", second); code != 0 {
		t.Fatalf("init: exit %d: %s", code, stderr)
	}
	cfgPath := filepath.Join(second, "config.toml")
	taken := "/ip4/127.0.0.1/tcp/" + port
	if code, _, stderr := runBin(t, env, bin, "config", "set", "p2p.listen", taken+",/ip4/127.0.0.1/udp/0/quic-v1", "--repo", second); code != 0 {
		t.Fatalf("config set p2p.listen: exit %d: %s", code, stderr)
	}
	code, stdout, stderr := runBinWithin(t, 30*time.Second, env, bin, "daemon", "--repo", second)
	if code != 1 {
		t.Fatalf("a daemon on a taken port: exit %d, want 1\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	for _, want := range []string{taken, "address already in use", "p2p.listen", cfgPath, "init --profile local"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr does not say %q:\n%s", want, stderr)
		}
	}
	for _, bad := range []string{"fx", "ts=", "source="} {
		if strings.Contains(stderr, bad) {
			t.Errorf("stderr has %q, a line of libp2p's own log:\n%s", bad, stderr)
		}
	}

	third := filepath.Join(tmp, "third")
	initLocal(t, env, bin, third)
	startBinDaemon(t, env, bin, third)
	if p := tcpPort(t, env, bin, third); p == port {
		t.Errorf("two daemons of --profile local on one port %s", p)
	}
	if code, _, stderr := runBin(t, env, bin, "init", "--profile", "lcoal", "--repo", filepath.Join(tmp, "fourth")); code == 0 || !strings.Contains(stderr, "local, server") {
		t.Errorf("init --profile lcoal: exit %d, stderr %q; want an error listing the profiles", code, stderr)
	}
}

// TestConfigCommands: `config set` edits config.toml in place (comments
// kept) after checking it as the daemon would; `config show` and `config
// get` report the running daemon's config and which keys the file changes
// that need a restart; SIGHUP applies log.level at once and says what
// needs a restart; a bad value leaves the file as it was.
func TestConfigCommands(t *testing.T) {
	bin, tmp, env := e2eSetup(t)
	dir := filepath.Join(tmp, "repo")
	initLocal(t, env, bin, dir)
	cfgPath := filepath.Join(dir, "config.toml")
	before, _ := os.ReadFile(cfgPath)

	// Without a daemon: get reads the file.
	if code, out, stderr := runBin(t, env, bin, "config", "get", "p2p.mdns", "--repo", dir); code != 0 || out != "true\n" {
		t.Errorf("config get p2p.mdns: exit %d, %q %s", code, out, stderr)
	}
	if code, _, stderr := runBin(t, env, bin, "config", "get", "log.levl", "--repo", dir); code != 2 || !strings.Contains(stderr, "log.level") {
		t.Errorf("config get log.levl: exit %d, stderr %q; want a usage error naming log.level", code, stderr)
	}

	daemonLog := startBinDaemon(t, env, bin, dir)
	code, out, stderr := runBin(t, env, bin, "config", "set", "log.level", "debug", "--repo", dir)
	if code != 0 || !strings.Contains(out, `log.level = "debug"`) || !strings.Contains(stderr, "SIGHUP") {
		t.Fatalf("config set log.level debug: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
	after, _ := os.ReadFile(cfgPath)
	if want := strings.Replace(string(before), "level = \"info\"", "level = \"debug\"", 1); string(after) != want {
		t.Errorf("config set changed more than the key's value:\n%s", after)
	}
	code, out, stderr = runBin(t, env, bin, "config", "set", "limits.new_author_minutes", "1441", "--repo", dir)
	if code != 1 || !strings.Contains(stderr, "new_author_minutes") {
		t.Errorf("config set past a bound: exit %d, stderr %q", code, stderr)
	}
	if now, _ := os.ReadFile(cfgPath); string(now) != string(after) {
		t.Error("a refused config set changed the file")
	}

	// The daemon still runs with info: show and get say so.
	code, out, stderr = runBin(t, env, bin, "config", "show", "--repo", dir)
	if code != 0 || !strings.Contains(out, `level = "info"`) || !strings.Contains(stderr, "log.level: send the daemon a SIGHUP to apply: kill -HUP ") {
		t.Errorf("config show: exit %d, stderr %q, stdout\n%s", code, stderr, out)
	}
	code, out, _ = runBin(t, env, bin, "config", "show", "--json", "--repo", dir)
	var view struct {
		Source  string                    `json:"source"`
		Config  map[string]jsontext.Value `json:"config"`
		Differs []string                  `json:"differs"`
	}
	if err := json.Unmarshal([]byte(out), &view); err != nil || code != 0 {
		t.Fatalf("config show --json: exit %d, %v\n%s", code, err, out)
	}
	if view.Source != "daemon" || string(view.Config["log.level"]) != `"info"` || string(view.Config["p2p.mdns"]) != "true" ||
		len(view.Differs) != 1 || view.Differs[0] != "log.level" {
		t.Errorf("config show --json = %+v", view)
	}
	if code, out, stderr := runBin(t, env, bin, "config", "get", "log.level", "--repo", dir); code != 0 || out != "\"info\"\n" || !strings.Contains(stderr, `"debug"`) {
		t.Errorf("config get log.level: exit %d, %q, stderr %q", code, out, stderr)
	}

	// SIGHUP: log.level applied, p2p.mdns said to need a restart.
	if code, _, stderr := runBin(t, env, bin, "config", "set", "p2p.mdns", "false", "--repo", dir); code != 0 || !strings.Contains(stderr, "restart the daemon to apply") {
		t.Fatalf("config set p2p.mdns: exit %d: %s", code, stderr)
	}
	pids := processesMentioning(dir + "\x00")
	if len(pids) != 1 {
		t.Fatalf("found %d daemons of %s", len(pids), dir)
	}
	if err := syscall.Kill(pids[0], syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitCLI(t, 10*time.Second, "the daemon runs with log.level debug", func() bool {
		_, out, _ := runBin(t, env, bin, "config", "get", "log.level", "--repo", dir)
		return out == "\"debug\"\n"
	})
	waitCLI(t, 5*time.Second, "the daemon logs what SIGHUP applied", func() bool {
		return strings.Contains(daemonLog.String(), "restart_to_apply=[p2p.mdns]")
	})
	if code, _, _ := runBin(t, env, bin, "status", "--repo", dir); code != 0 {
		t.Error("the daemon stopped after SIGHUP")
	}
}

// TestDevnetMesh: `devnet up -n 4` returns with every node connected to
// the 3 others (no demo, no mDNS), and `up --json` says so; with node 0
// stopped, nodes 1–3 stay connected to each other and an event of node 1
// reaches 2 and 3 within the devnet's sync interval.
func TestDevnetMesh(t *testing.T) {
	bin, tmp, env := e2eSetup(t)
	dir := filepath.Join(tmp, "devnet")
	t.Cleanup(func() { runBin(t, env, bin, "devnet", "down", "--dir", dir) })
	code, out, stderr := runBin(t, env, bin, "devnet", "up", "-n", "4", "--json", "--dir", dir)
	if code != 0 {
		t.Fatalf("devnet up -n 4: exit %d: %s", code, stderr)
	}
	var up struct {
		Dir   string              `json:"dir"`
		Nodes []devnet.NodeStatus `json:"nodes"`
	}
	if err := json.Unmarshal([]byte(out), &up); err != nil || len(up.Nodes) != 4 || up.Dir != dir {
		t.Fatalf("devnet up --json: %v\n%s", err, out)
	}
	for _, n := range up.Nodes {
		if n.Peers != 3 {
			t.Errorf("node%d has %d peers when up returns, want 3", n.Index, n.Peers)
		}
	}

	if err := syscall.Kill(up.Nodes[0].PID, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waitCLI(t, 10*time.Second, "node0 gone, nodes 1–3 with 2 peers each", func() bool {
		_, out, _ := runBin(t, env, bin, "devnet", "status", "--json", "--dir", dir)
		var rows []devnet.NodeStatus
		if json.Unmarshal([]byte(out), &rows) != nil || len(rows) != 4 || rows[0].Alive {
			return false
		}
		for _, r := range rows[1:] {
			if r.Peers != 2 {
				return false
			}
		}
		return true
	})
	code, out, stderr = runBin(t, env, bin, "devnet", "exec", "1", "--dir", dir, "--", "events", "add", "--kind", "note", "--body", `{"after":"node0"}`)
	if code != 0 {
		t.Fatalf("events add on node1: exit %d: %s", code, stderr)
	}
	id := strings.TrimSpace(out)
	r, err := repo.Open(devnet.NodeDir(dir, 2))
	if err != nil {
		t.Fatal(err)
	}
	syncInterval := r.Config.Sync.Interval.Duration // the devnet's, for every node
	start := time.Now()
	for _, i := range []string{"2", "3"} {
		waitCLI(t, syncInterval, "node"+i+" holds node1's event", func() bool {
			code, _, _ := runBin(t, env, bin, "devnet", "exec", i, "--dir", dir, "--", "events", "get", id)
			return code == 0
		})
	}
	t.Logf("node1's event reached nodes 2 and 3 in %v", time.Since(start).Round(time.Millisecond))
}

// TestBlobCommands: blob add prints CID:SIZE:NAME, which events add --blob
// and replicate take; events ls shows an event's blobs; blob get needs no
// --size for a blob the node holds or an event names, and says what it
// wrote; blob add of a directory and a fetch nobody can serve each fail
// with one plain sentence.
func TestBlobCommands(t *testing.T) {
	bin, tmp, env := e2eSetup(t)
	a, b := filepath.Join(tmp, "a"), filepath.Join(tmp, "b")
	initLocal(t, env, bin, a, b)
	// b fetches nothing by itself (what it gets, blob get fetches) and
	// gets events by sync only, so that no gossip names a provider.
	for _, kv := range [][2]string{{"blobs.auto_fetch", "false"}, {"sync.gossip", "false"}} {
		if code, _, stderr := runBin(t, env, bin, "config", "set", kv[0], kv[1], "--repo", b); code != 0 {
			t.Fatalf("config set %s: exit %d: %s", kv[0], code, stderr)
		}
	}
	startBinDaemon(t, env, bin, a)
	startBinDaemon(t, env, bin, b)

	file := filepath.Join(tmp, "notes.txt")
	data := strings.Repeat("a blob of notes\n", 5000)
	if err := os.WriteFile(file, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := runBin(t, env, bin, "blob", "add", file, "--repo", a)
	ref := strings.TrimSpace(out)
	parts := strings.Split(ref, ":")
	if code != 0 || len(parts) != 3 || parts[1] != strconv.Itoa(len(data)) || parts[2] != "notes.txt" {
		t.Fatalf("blob add: exit %d, %q %s; want CID:SIZE:NAME", code, out, stderr)
	}
	cid := parts[0]
	if code, _, stderr := runBin(t, env, bin, "events", "add", "--kind", "file", "--blob", ref, "--repo", a); code != 0 {
		t.Fatalf("events add --blob %s: exit %d: %s", ref, code, stderr)
	}
	if code, out, _ := runBin(t, env, bin, "events", "ls", "--repo", a); code != 0 || !strings.Contains(out, "notes.txt (78.1 KiB)") {
		t.Errorf("events ls does not show the blob:\n%s", out)
	}
	got := filepath.Join(tmp, "got.txt")
	code, out, stderr = runBin(t, env, bin, "blob", "get", cid, "-o", got, "--repo", a)
	if code != 0 || out != writtenText(blobWritten{CID: cid, Size: uint64(len(data)), File: got}, "") {
		t.Errorf("blob get of a held blob without --size: exit %d, %q %s", code, out, stderr)
	}

	// b learns of the blob from a's event, then fetches it by that size.
	id := idOf(t, env, bin, a)
	connectAndSync(t, env, bin, b, id)
	gotB := filepath.Join(tmp, "got-b.txt")
	if code, out, stderr := runBin(t, env, bin, "blob", "get", cid, "-o", gotB, "--repo", b); code != 0 || !strings.HasPrefix(out, "wrote "+gotB) {
		t.Errorf("blob get of a blob an event names, without --size: exit %d, %q %s", code, out, stderr)
	}
	if b, _ := os.ReadFile(gotB); string(b) != data {
		t.Errorf("blob get wrote %d bytes, want the %d added", len(b), len(data))
	}
	if code, out, stderr := runBin(t, env, bin, "replicate", id.PeerID, ref, "--repo", b); code != 0 {
		t.Errorf("replicate %s (blob add's form): exit %d, %q %s", ref, code, out, stderr)
	}

	// Failures: one sentence each.
	code, _, stderr = runBin(t, env, bin, "blob", "add", tmp, "--repo", a)
	if code != 1 || !strings.Contains(stderr, "blob add takes a file") || strings.Contains(stderr, "HTTP") || strings.Count(stderr, "\n") != 1 {
		t.Errorf("blob add DIR: exit %d, stderr %q", code, stderr)
	}
	const unknown = "bafkr4iaq4xht2pekj6pti2gizrmo5kciskrc7ww3ygwlejaqdeaejqovkm"
	code, _, stderr = runBin(t, env, bin, "blob", "get", unknown, "-o", filepath.Join(tmp, "x"), "--repo", a)
	if code != 2 || !strings.Contains(stderr, "neither holds it nor has an event naming it") || !strings.Contains(stderr, "--size") {
		t.Errorf("blob get of an unknown blob without --size: exit %d, stderr %q", code, stderr)
	}
	code, _, stderr = runBinWithin(t, 3*time.Minute, env, bin, "blob", "get", unknown, "--size", "10", "-o", filepath.Join(tmp, "x"), "--repo", a)
	// a's only peer, b, is asked (a guess) and has not got it.
	line, _, _ := strings.Cut(stderr, "\n")
	if code != 1 || !strings.HasPrefix(line, "Error: could not fetch blob "+unknown+": no peer is left to fetch it from (") ||
		!strings.HasSuffix(line, "); name a peer that holds it with --from PEER") || strings.Contains(line, "blobs:") || strings.Count(stderr, "\n") != 1 {
		t.Errorf("blob get that no peer serves: exit %d, stderr %q", code, stderr)
	}
}

// TestOfflineReads: with the daemon stopped, id, events ls, blob ls and
// peers cache read the repo on disk and print what the daemon printed
// (id: the same peer ID), saying on stderr that no daemon runs; the
// commands that need the daemon keep their message.
func TestOfflineReads(t *testing.T) {
	bin, tmp, env, a, b := twoDaemons(t)
	// a holds events of its own and of b (b showed value: a record), and a blob.
	for _, dir := range []string{a, b} {
		if code, _, stderr := runBin(t, env, bin, "events", "add", "--kind", "note", "--body", `{"from":"`+filepath.Base(dir)+`"}`, "--repo", dir); code != 0 {
			t.Fatalf("events add: exit %d: %s", code, stderr)
		}
	}
	idB := idOf(t, env, bin, b)
	connectAndSync(t, env, bin, a, idB)
	file := filepath.Join(tmp, "f.bin")
	if err := os.WriteFile(file, []byte(strings.Repeat("x", 4096)), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runBin(t, env, bin, "blob", "add", file, "--repo", a); code != 0 {
		t.Fatalf("blob add: exit %d: %s", code, stderr)
	}
	waitCLI(t, 20*time.Second, "b has a record in a's peer cache", func() bool {
		_, out, _ := runBin(t, env, bin, "peers", "cache", "--json", "--repo", a)
		return strings.Contains(out, idB.PeerID)
	})
	online := map[string]string{}
	reads := [][]string{{"id", "--json"}, {"events", "ls", "--json"}, {"blob", "ls", "--json"}, {"peers", "cache", "--json"}}
	for _, args := range reads {
		code, out, stderr := runBin(t, env, bin, append(args, "--repo", a)...)
		if code != 0 {
			t.Fatalf("%v with the daemon: exit %d: %s", args, code, stderr)
		}
		online[args[0]+" "+args[1]] = out
	}

	pids := processesMentioning(a + "\x00")
	if len(pids) != 1 {
		t.Fatalf("found %d daemons of %s", len(pids), a)
	}
	if err := syscall.Kill(pids[0], syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// Gone, not only its API: a daemon closes its socket first and its
	// database last, and the offline reads need the database's lock.
	waitCLI(t, 20*time.Second, "a's daemon gone", func() bool { return len(processesMentioning(a+"\x00")) == 0 })
	for _, args := range reads {
		code, out, stderr := runBin(t, env, bin, append(args, "--repo", a)...)
		if code != 0 || !strings.Contains(stderr, "no daemon runs: read from "+a) {
			t.Errorf("%v without the daemon: exit %d, stderr %q", args, code, stderr)
			continue
		}
		want := online[args[0]+" "+args[1]]
		switch args[0] {
		case "id":
			var on, off api.ID
			_ = json.Unmarshal([]byte(want), &on)
			if err := json.Unmarshal([]byte(out), &off); err != nil || off.PeerID != on.PeerID || len(off.Addrs) == 0 {
				t.Errorf("id offline = %s, want peer %s", out, on.PeerID)
			}
		case "peers":
			if !strings.Contains(out, idB.PeerID) {
				t.Errorf("peers cache offline has no record of b:\n%s", out)
			}
		default:
			if out != want {
				t.Errorf("%v offline:\n%s\nwith the daemon:\n%s", args, out, want)
			}
		}
	}
	if code, _, stderr := runBin(t, env, bin, "status", "--repo", a); code != 1 || !strings.Contains(stderr, "no wats daemon is running") {
		t.Errorf("status without the daemon: exit %d, stderr %q", code, stderr)
	}
	// blob get of the blob a holds reads it from the repo, to a file and
	// to stdout; of one it does not hold, says the daemon is needed.
	var held []api.BlobInfo
	if err := json.Unmarshal([]byte(online["blob ls"]), &held); err != nil || len(held) != 1 {
		t.Fatalf("blob ls: %q", online["blob ls"])
	}
	got := filepath.Join(tmp, "got.bin")
	code, out, stderr := runBin(t, env, bin, "blob", "get", held[0].CID, "-o", got, "--repo", a)
	if data, err := os.ReadFile(got); code != 0 || err != nil || string(data) != strings.Repeat("x", 4096) ||
		out != "wrote "+got+": 4.0 KiB (4096 bytes)\n    blob "+held[0].CID+", held in the repo\n" || !strings.Contains(stderr, "no daemon runs: read from "+a) {
		t.Errorf("blob get -o FILE without the daemon: exit %d, %q, stderr %q, file %q", code, out, stderr, data)
	}
	if code, out, stderr := runBin(t, env, bin, "blob", "get", held[0].CID, "-o", "-", "--repo", a); code != 0 || out != strings.Repeat("x", 4096) {
		t.Errorf("blob get -o - without the daemon: exit %d, %d bytes, stderr %q", code, len(out), stderr)
	}
	if code, _, stderr := runBin(t, env, bin, "blob", "get", held[0].CID, "--size", "4095", "-o", "-", "--repo", a); code != 1 ||
		!strings.Contains(stderr, "of 4096 bytes, not the --size 4095") {
		t.Errorf("blob get --size of another size without the daemon: exit %d, stderr %q", code, stderr)
	}
	const unknown = "bafkreihdwdcefgh4dqkjv67uzcmw7ojee6xedzdetojuzjevtenxquvyku"
	if code, _, stderr := runBin(t, env, bin, "blob", "get", unknown, "--size", "10", "-o", got, "--repo", a); code != 1 ||
		!strings.Contains(stderr, "no wats daemon is running") || !strings.Contains(stderr, "the repo does not hold blob "+unknown+" either") {
		t.Errorf("blob get of a blob not held, without the daemon: exit %d, stderr %q", code, stderr)
	}
	// A leaf damaged on disk: blob get says so, writes no file, leaves no
	// temporary one.
	datafiles, _ := filepath.Glob(filepath.Join(a, "db", "blobs", "*.blob"))
	if len(datafiles) != 1 {
		t.Fatalf("data files %q, want the blob's one", datafiles)
	}
	df, err := os.OpenFile(datafiles[0], os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := df.WriteAt([]byte("y"), 100); err != nil {
		t.Fatal(err)
	}
	df.Close()
	os.Remove(got)
	code, _, stderr = runBin(t, env, bin, "blob", "get", held[0].CID, "-o", got, "--repo", a)
	temps, _ := filepath.Glob(filepath.Join(tmp, ".wats-blob-*"))
	if _, err := os.Stat(got); code != 1 || !errors.Is(err, fs.ErrNotExist) || len(temps) != 0 ||
		!strings.Contains(stderr, "Error: the repo's copy of blob "+held[0].CID+" is damaged: leaf ") || strings.Contains(stderr, "blobs:") {
		t.Errorf("blob get of a damaged blob without the daemon: exit %d, stderr %q, file %v, temporary files %q", code, stderr, err, temps)
	}
	// The daemon starts again after the offline reads: they left no lock.
	startBinDaemon(t, env, bin, a)
}

// TestDamagedRepoCLI: a stopped node whose MANIFEST was zeroed: the daemon
// refuses to start with an error that names the repo and what to do;
// `repo check` says the database does not open and how many events its
// tables hold, and exits 1; `repo repair` moves it aside and keeps them;
// the daemon then starts and lists them; `repo check` is then clean.
func TestDamagedRepoCLI(t *testing.T) {
	bin, tmp, env := e2eSetup(t)
	dir := filepath.Join(tmp, "repo")
	initLocal(t, env, bin, dir)
	startBinDaemon(t, env, bin, dir)
	for i := range 5 {
		if code, _, stderr := runBin(t, env, bin, "events", "add", "--kind", "note", "--body", fmt.Sprintf(`{"n":%d}`, i), "--repo", dir); code != 0 {
			t.Fatalf("events add: exit %d: %s", code, stderr)
		}
	}
	pids := processesMentioning(dir + "\x00")
	if len(pids) != 1 {
		t.Fatalf("found %d daemons", len(pids))
	}
	_ = syscall.Kill(pids[0], syscall.SIGTERM)
	waitCLI(t, 10*time.Second, "the daemon gone", func() bool { return len(processesMentioning(dir+"\x00")) == 0 })
	manifests, _ := filepath.Glob(filepath.Join(dir, "db", "MANIFEST-*"))
	for _, m := range manifests {
		fi, _ := os.Stat(m)
		if err := os.WriteFile(m, make([]byte, fi.Size()), 0o600); err != nil {
			t.Fatal(err)
		}
	}

	code, _, stderr := runBinWithin(t, 30*time.Second, env, bin, "daemon", "--repo", dir)
	for _, want := range []string{"the database of repo " + dir + " is damaged", "identity key and config.toml are intact", "wats repo repair --repo " + dir} {
		if code != 1 || !strings.Contains(stderr, want) {
			t.Errorf("daemon on a damaged repo: exit %d, stderr does not say %q:\n%s", code, want, stderr)
		}
	}
	code, out, _ := runBin(t, env, bin, "repo", "check", "--repo", dir)
	if code != 1 || !strings.Contains(out, "the database does not open") || !strings.Contains(out, "hold 5 readable events") {
		t.Errorf("repo check: exit %d:\n%s", code, out)
	}
	code, out, stderr = runBin(t, env, bin, "repo", "repair", "--repo", dir)
	if code != 0 || !strings.Contains(out, "kept 5 events") || !strings.Contains(out, "db.corrupt-") {
		t.Fatalf("repo repair: exit %d, %s %s", code, out, stderr)
	}
	if code, out, _ := runBin(t, env, bin, "repo", "check", "--repo", dir); code != 0 || !strings.Contains(out, "ok: nothing damaged") {
		t.Errorf("repo check after repair: exit %d:\n%s", code, out)
	}
	var check store.CheckReport
	code, out, _ = runBin(t, env, bin, "repo", "check", "--json", "--repo", dir)
	if err := json.Unmarshal([]byte(out), &check); err != nil || code != 0 || !check.Opened || check.EventsGood != 5 || check.Damaged() {
		t.Errorf("repo check --json after repair: exit %d, %v: %+v", code, err, check)
	}
	// A repair of a sound database keeps it all.
	var again store.RepairReport
	code, out, _ = runBin(t, env, bin, "repo", "repair", "--json", "--repo", dir)
	if err := json.Unmarshal([]byte(out), &again); err != nil || code != 0 || again.EventsKept != 5 || !strings.Contains(again.MovedTo, "db.corrupt-") {
		t.Errorf("repo repair --json: exit %d, %v: %+v", code, err, again)
	}
	startBinDaemon(t, env, bin, dir)
	if code, out, _ := runBin(t, env, bin, "events", "ls", "--json", "--repo", dir); code != 0 || strings.Count(out, `"kind": "note"`) != 5 {
		t.Errorf("events ls after repair: exit %d:\n%s", code, out)
	}
	if code, _, stderr := runBin(t, env, bin, "repo", "repair", "--repo", dir); code != 1 || !strings.Contains(stderr, "in use") {
		t.Errorf("repo repair with the daemon running: exit %d, stderr %q", code, stderr)
	}
	// check, likewise: a running daemon's database is in use, not damaged.
	if code, out, stderr := runBin(t, env, bin, "repo", "check", "--repo", dir); code != 1 || !strings.Contains(stderr, "in use") || strings.Contains(out+stderr, "damaged") {
		t.Errorf("repo check with the daemon running: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
}
