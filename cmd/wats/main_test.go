package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"

	"github.com/wats-network/wats/api"
	"github.com/wats-network/wats/config"
	"github.com/wats-network/wats/repo"

	"github.com/wats-network/wats/core"
)

// runCLI runs the wats command line args in-process and returns its exit
// code, stdout and stderr.
func runCLI(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(t.Context(), args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

// newRepo initializes a repo in a temporary directory.
func newRepo(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "repo")
	if _, err := repo.Init(dir, &repo.InitOptions{}); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestUsageErrors(t *testing.T) {
	t.Setenv("WATS_PATH", t.TempDir())
	t.Setenv("WATS_DEVNET_DIR", t.TempDir())
	for _, tc := range []struct {
		args []string
		want string // in stderr
	}{
		{[]string{"bogus"}, `unknown command "bogus"`},
		{[]string{"status", "--bogus"}, "unknown flag: --bogus"},
		{[]string{"status", "extra"}, "takes no arguments"},
		{[]string{"peers", "bogus"}, `unknown command "bogus" for "wats peers"`},
		{[]string{"peers", "connect"}, "accepts 1 arg"},
		{[]string{"peers", "connect", "/ip4/127.0.0.1/tcp/1"}, "has no /p2p/"},
		{[]string{"events", "add"}, "--kind is required"},
		{[]string{"events", "add", "--kind", "Note"}, `has 'N'`},
		{[]string{"events", "add", "--kind", strings.Repeat("k", 33)}, "at most 32"},
		{[]string{"events", "add", "--kind", "note", "--body", "{"}, "not valid JSON"},
		{[]string{"events", "add", "--kind", "note", "--body", "[1]"}, "must be a JSON object"},
		{[]string{"events", "add", "--kind", "note", "--body", `{"a":1,"a":2}`}, `duplicate object member name "a"`},
		{[]string{"events", "add", "--kind", "note", "--body", `{"a":"\ud800"}`}, "invalid surrogate pair"},
		{[]string{"events", "add", "--kind", "note", "--body", `{"a":tru}`}, "after offset 8"},
		{[]string{"events", "ls", "--limit", "-1"}, "--limit -1"},
		{[]string{"events", "ls", "--limit", "0"}, "--limit 0: must be from 1 to 256"},
		{[]string{"events", "ls", "--limit", "257"}, "--limit 257: must be from 1 to 256"},
		{[]string{"events", "ls", "--limit", "100000"}, "--limit 100000: must be from 1 to 256"},
		{[]string{"events", "ls", "--after", "x"}, `invalid argument "x"`},
		{[]string{"events", "get"}, "accepts 1 arg"},
		{[]string{"events", "get", "abc"}, "want 8 to 64 hex characters"},
		{[]string{"events", "get", testEvID[:7]}, "want 8 to 64 hex characters"},
		{[]string{"events", "get", testEvID + "0"}, "want 8 to 64 hex characters"},
		{[]string{"events", "get", strings.Repeat("G", 64)}, "want 8 to 64 hex characters"},
		{[]string{"sync", "a", "b"}, "accepts at most 1 arg"},
		{[]string{"sync", "garbage"}, `"garbage" is neither a peer ID (12D3KooW…) nor a full multiaddr (/ip4/…/tcp/…/p2p/12D3KooW…)`},
		{[]string{"sync", "12D3KooWA"}, "is neither a peer ID"},
		{[]string{"sync", "/ip4/127.0.0.1/tcp/1"}, "has no /p2p/"},
		{[]string{"sync", "/ip4/1.2.3/tcp/1/p2p/" + testPeer}, "is not a multiaddr"},
		{[]string{"peers", "connect", "/ip4/127.0.0.1/tcp/1/p2p/garbage"}, "is not a multiaddr"},
		{[]string{"config", "validate", "a", "b"}, "accepts at most 1 arg"},
		{[]string{"devnet", "up", "-n", "0"}, "a devnet has 1 to 32 nodes"},
		{[]string{"devnet", "up", "-n", "33"}, "a devnet has 1 to 32 nodes"},
		{[]string{"devnet", "up", "--timeout", "0s"}, "--timeout 0s"},
		{[]string{"devnet", "run", "--interval", "1ms"}, "--interval 1ms"},
		{[]string{"devnet", "run", "--duration", "-1s"}, "--duration -1s"},
		{[]string{"devnet", "run", "--events-per-node", "3"}, "needs --demo"},
		{[]string{"devnet", "run", "--demo", "--events-per-node", "-1"}, "--events-per-node -1"},
		{[]string{"devnet", "exec", "1"}, "want a node index and a command"},
		{[]string{"devnet", "exec", "x", "status"}, `node index "x"`},
		{[]string{"devnet", "logs", "1", "2"}, "accepts at most 1 arg"},
		{[]string{"devnet", "status", "--dir", ""}, "--dir is empty"},
		{[]string{"replicate", testPeer}, "requires at least 2 arg"},
		{[]string{"replicate", testPeer, "bafk"}, `"bafk" is not CID:SIZE`},
		{[]string{"replicate", testPeer, ":5"}, `":5" is not CID:SIZE`},
		{[]string{"replicate", testPeer, "bafkqaaa:5", "bafkqaaa:4"}, "bafkqaaa is named twice (bafkqaaa:5 and bafkqaaa:4)"},
		{[]string{"replicate", testPeer, "bafkqaaa:x"}, "SIZE must be a whole number of bytes, 0..2^53"},
		{[]string{"replicate", testPeer, "bafkqaaa:-1"}, "SIZE must be a whole number"},
		{[]string{"replicate", testPeer, "bafkqaaa:9007199254740993"}, "0..2^53"},
		{append([]string{"replicate", testPeer}, repeatArg("bafk:1", 65)...), "65 blobs: a replicate request names at most 64"},
		{[]string{"events", "add", "--kind", "file", "--blob", "bafk"}, `--blob "bafk" is not CID:SIZE[:NAME]`},
		{[]string{"events", "add", "--kind", "file", "--blob", "bafkqaaa:1x:name"}, "SIZE must be a whole number"},
		{[]string{"blob", "get", "bafk", "--size", "1"}, "-o FILE is required"},
		{[]string{"blob", "get", "bafk", "--size", "-5", "-o", "x"}, "--size -5: must be 0..2^53 bytes"},
		{[]string{"blob", "get", "bafk", "--size", "9007199254740993", "-o", "x"}, "must be 0..2^53 bytes"},
		{[]string{"bench", "fetch", "--size", "0"}, "--size 0: must be 1..2^53 bytes"},
		{[]string{"bench", "fetch", "--transport", "udp"}, `--transport "udp": must be any, tcp or quic`},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, _, stderr := runCLI(t, "", tc.args...)
			if code != exitUsage {
				t.Errorf("exit code %d, want %d; stderr:\n%s", code, exitUsage, stderr)
			}
			if !strings.Contains(stderr, tc.want) {
				t.Errorf("stderr %q does not contain %q", stderr, tc.want)
			}
			if !strings.Contains(stderr, "--help' for usage") {
				t.Errorf("stderr %q does not point to --help", stderr)
			}
		})
	}
}

func TestKindBound(t *testing.T) {
	if err := checkKind(strings.Repeat("a", 32)); err != nil {
		t.Errorf("32-byte kind: %v", err)
	}
	if err := checkKind(strings.Repeat("a", 33)); err == nil {
		t.Error("33-byte kind accepted")
	}
	if err := checkKind("crash.v1_x-y0"); err != nil {
		t.Errorf("valid kind: %v", err)
	}
}

func TestBodyBound(t *testing.T) {
	dir := t.TempDir()
	obj := func(n int) []byte { // a JSON object of exactly n bytes
		return []byte(`{"a":"` + strings.Repeat("x", n-8) + `"}`)
	}
	c := &cli{}
	for _, tc := range []struct {
		size int
		ok   bool
	}{{maxBodyFlagBytes, true}, {maxBodyFlagBytes + 1, false}} {
		p := filepath.Join(dir, "body.json")
		if err := os.WriteFile(p, obj(tc.size), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := c.readBody("@" + p)
		if (err == nil) != tc.ok {
			t.Errorf("body of %d bytes: err = %v, want ok %v", tc.size, err, tc.ok)
		}
	}
	c.stdin = strings.NewReader(`{"from":"stdin"}`)
	v, err := c.readBody("@-")
	if err != nil || string(v) != `{"from":"stdin"}` {
		t.Errorf("@- = %s, %v", v, err)
	}
}

func TestGroupWithoutSubcommandPrintsHelp(t *testing.T) {
	code, stdout, _ := runCLI(t, "", "devnet")
	if code != exitOK || !strings.Contains(stdout, "Available Commands") || !strings.Contains(stdout, "down") {
		t.Errorf("wats devnet: code %d, stdout:\n%s", code, stdout)
	}
}

func TestNoDaemon(t *testing.T) {
	dir := newRepo(t)
	r, err := repo.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	sock := r.SocketPath()
	want := "Error: no wats daemon is running for repo " + dir + " (no socket at " + sock +
		"); start one with: wats daemon --repo " + dir + "\n"
	for _, args := range [][]string{
		{"status"}, {"peers", "ls"},
		{"events", "get", testEvID}, {"events", "add", "--kind", "note"}, {"events", "tail"},
		{"sync", testPeer}, {"peers", "connect", testAddr},
	} {
		code, stdout, stderr := runCLI(t, "", append(args, "--repo", dir)...)
		if code != exitError {
			t.Errorf("%v: exit code %d, want %d", args, code, exitError)
		}
		if stderr != want {
			t.Errorf("%v: stderr\n%q\nwant\n%q", args, stderr, want)
		}
		if stdout != "" {
			t.Errorf("%v: stdout %q, want nothing", args, stdout)
		}
	}
}

func TestNoDaemonStaleSocket(t *testing.T) {
	dir := newRepo(t)
	r, err := repo.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", r.SocketPath())
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close()
	code, _, stderr := runCLI(t, "", "status", "--repo", dir)
	if code != exitError || !strings.Contains(stderr, "nothing listens on "+r.SocketPath()) ||
		!strings.Contains(stderr, "start one with: wats daemon --repo "+dir) {
		t.Errorf("exit code %d, stderr %q", code, stderr)
	}
}

func TestNoRepo(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "none")
	code, _, stderr := runCLI(t, "", "status", "--repo", dir)
	want := "no wats repo at " + dir + "; create one with: wats init --repo " + dir
	if code != exitError || !strings.Contains(stderr, want) {
		t.Errorf("exit code %d, stderr %q, want %q", code, stderr, want)
	}
	code, _, stderr = runCLI(t, "", "daemon", "--repo", dir)
	if code != exitError || !strings.Contains(stderr, want) {
		t.Errorf("daemon: exit code %d, stderr %q, want %q", code, stderr, want)
	}
}

func TestRepoFlagDefaultsToWatsPath(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "from-env")
	t.Setenv("WATS_PATH", dir)
	code, stdout, stderr := runCLI(t, "", "init")
	if code != exitOK {
		t.Fatalf("init: %d %s", code, stderr)
	}
	if !strings.Contains(stdout, dir) {
		t.Errorf("init output %q does not name %s", stdout, dir)
	}
	if _, err := repo.Open(dir); err != nil {
		t.Errorf("no repo at $WATS_PATH: %v", err)
	}
}

func TestInitTwice(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "repo")
	code, stdout, stderr := runCLI(t, "", "init", "--repo", dir)
	if code != exitOK {
		t.Fatalf("first init: exit %d, stderr %s", code, stderr)
	}
	if !strings.Contains(stdout, "initialized a wats repo at "+dir) {
		t.Errorf("first init stdout %q", stdout)
	}
	cfg1, err := os.ReadFile(filepath.Join(dir, configFile))
	if err != nil {
		t.Fatal(err)
	}

	code, _, stderr = runCLI(t, "", "init", "--repo", dir)
	if code != exitError {
		t.Errorf("second init: exit %d, want %d", code, exitError)
	}
	if !strings.Contains(stderr, "already exists at "+dir) || !strings.Contains(stderr, "--force") {
		t.Errorf("second init stderr %q", stderr)
	}

	// --force replaces the config: write a custom one first.
	if err := os.WriteFile(filepath.Join(dir, configFile), []byte("network = \"other\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = runCLI(t, "", "init", "--force", "--repo", dir)
	if code != exitOK {
		t.Fatalf("init --force: exit %d, stderr %s", code, stderr)
	}
	cfg2, err := os.ReadFile(filepath.Join(dir, configFile))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(cfg1, cfg2) {
		t.Errorf("init --force did not rewrite the default config:\n%s", cfg2)
	}
}

func TestConfigValidate(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.toml")
	if err := os.WriteFile(bad, []byte("network = \"x\"\n[p2p]\nconns_lo = 3\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLI(t, "", "config", "validate", bad)
	if code != exitError {
		t.Errorf("bad file: exit %d, want %d", code, exitError)
	}
	if !strings.Contains(stderr, bad+":3") || !strings.Contains(stderr, "conns_lo") {
		t.Errorf("bad file: stderr %q does not locate the unknown key", stderr)
	}
	if stdout != "" {
		t.Errorf("bad file: stdout %q", stdout)
	}

	invalid := filepath.Join(dir, "invalid.toml")
	if err := os.WriteFile(invalid, []byte("[p2p]\nconns_low = 0\n\n[log]\nlevel = \"loud\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = runCLI(t, "", "config", "validate", invalid)
	if code != exitError || !strings.Contains(stderr, "conns_low") || !strings.Contains(stderr, "log.level") {
		t.Errorf("invalid file: exit %d, stderr %q: want both problems", code, stderr)
	}

	good := filepath.Join(dir, "good.toml")
	if err := os.WriteFile(good, config.Template(nil), 0o600); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr = runCLI(t, "", "config", "validate", good)
	if code != exitOK || stdout != good+": ok\n" {
		t.Errorf("good file: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}

	// Without FILE: the repo's config.toml.
	rdir := newRepo(t)
	code, stdout, _ = runCLI(t, "", "config", "validate", "--repo", rdir)
	if code != exitOK || !strings.Contains(stdout, filepath.Join(rdir, configFile)) {
		t.Errorf("repo config: exit %d, stdout %q", code, stdout)
	}
	code, _, stderr = runCLI(t, "", "config", "validate", filepath.Join(dir, "missing.toml"))
	if code != exitError || !strings.Contains(stderr, "missing.toml") {
		t.Errorf("missing file: exit %d, stderr %q", code, stderr)
	}
}

func TestConfigShow(t *testing.T) {
	dir := newRepo(t)
	if err := os.WriteFile(filepath.Join(dir, configFile), []byte("network = \"shown\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLI(t, "", "config", "show", "--repo", dir)
	if code != exitOK || !strings.Contains(stderr, "no daemon runs: the config of "+filepath.Join(dir, configFile)) {
		t.Fatalf("exit %d, stderr %q; want it to say that no daemon runs", code, stderr)
	}
	cfg, err := config.Parse([]byte(stdout), "stdout")
	if err != nil {
		t.Fatalf("config show printed invalid TOML: %v\n%s", err, stdout)
	}
	want := config.Default()
	want.Network = "shown"
	wb, _ := want.TOML()
	gb, _ := cfg.TOML()
	if !bytes.Equal(wb, gb) {
		t.Errorf("config show = \n%s\nwant\n%s", gb, wb)
	}

	// No repo: the defaults, and a note on stderr.
	none := filepath.Join(t.TempDir(), "none")
	code, stdout, stderr = runCLI(t, "", "config", "show", "--repo", none)
	def, _ := config.Default().TOML()
	if code != exitOK || stdout != string(def) || !strings.Contains(stderr, "no wats repo at "+none) {
		t.Errorf("no repo: exit %d, stderr %q, stdout\n%s", code, stderr, stdout)
	}
}

func TestVersion(t *testing.T) {
	old := version
	version = "v9.8.7-test"
	t.Cleanup(func() { version = old })
	code, stdout, _ := runCLI(t, "", "version")
	if code != exitOK || !strings.HasPrefix(stdout, "wats v9.8.7-test\ngo: go1.") {
		t.Errorf("version: exit %d, stdout %q", code, stdout)
	}
	code, stdout, _ = runCLI(t, "", "version", "--json")
	var bi buildInfo
	if code != exitOK || json.Unmarshal([]byte(stdout), &bi) != nil || bi.Version != "v9.8.7-test" || bi.GoVersion == "" {
		t.Errorf("version --json: exit %d, stdout %q", code, stdout)
	}
}

func TestCompletion(t *testing.T) {
	code, stdout, _ := runCLI(t, "", "completion", "bash")
	if code != exitOK || !strings.Contains(stdout, "__start_wats") {
		t.Errorf("completion bash: exit %d, %d bytes", code, len(stdout))
	}
}

// fakeDaemon serves h on the socket of a new repo and returns the repo.
func fakeDaemon(t *testing.T, h http.Handler) string {
	t.Helper()
	dir := newRepo(t)
	r, err := repo.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", r.SocketPath())
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(h)
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	return dir
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", api.ContentTypeJSON)
	json.MarshalWrite(w, v)
}

const (
	testPeer = "12D3KooWJ1TsijH7H5F74hfAD5XishQz3sxrmAtVY37GtNd9CqYf"
	// testPeer2 is a second peer, of a sync from several.
	testPeer2 = "12D3KooWEyoppNCUx8Yx66oV9fJnriXwCcXwDDUA2kj6vnc6iDEp"
	testAddr  = "/ip4/127.0.0.1/tcp/4001/p2p/" + testPeer
	testEvID  = "32eacf574f511cbd9f083456265f57f3c734c4cde90c8203b25d8ed024340ea7"
	testEv    = `{"id":"` + testEvID + `","author":"` + testPeer + `","time":1767225600000,"kind":"note","body":{"n":42},"blobs":[],"sig":"x"}`
)

// testAPI is a fake control API with fixed answers.
func testAPI(t *testing.T) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+api.PathID, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, api.ID{PeerID: testPeer, Addrs: []string{testAddr}, Network: "n", Agent: "wats/test"})
	})
	mux.HandleFunc("GET "+api.PathStatus, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, api.Status{PeerID: testPeer, Network: "n", Agent: "wats/test", Peers: 2, Events: 7, Head: 9, Gossip: true, UptimeSeconds: 65,
			Blobs: 3, BlobBytes: 3 << 20, BlobQuotaBytes: 4 << 30,
			PeerTiers: map[string]int{"normal": 1, "suspect": 1}, StrangerSlots: 64, StrangerSlotsUsed: 1,
			Log: api.LogUsage{Events: 7, Bytes: 3 << 10, Authors: 2, MaxEvents: 10_000_000, MaxBytes: 4 << 30, MaxEventsPerAuthor: 100_000}})
	})
	mux.HandleFunc("GET "+api.PathPeers, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, []api.Peer{{PeerID: testPeer, Addrs: []string{"/ip4/127.0.0.1/tcp/4001"}, Agent: "wats/x", Hello: true, Head: 5, Cursor: 4, Direction: "inbound", Tier: "new", Score: -12.25, HasScore: true}})
	})
	mux.HandleFunc("POST "+api.PathConnect, func(w http.ResponseWriter, r *http.Request) {
		var req api.ConnectRequest
		json.UnmarshalRead(r.Body, &req)
		if req.Addr != testAddr {
			w.WriteHeader(http.StatusBadRequest)
			writeJSON(w, api.ErrorBody{Error: "node: dial " + req.Addr + ": refused"})
			return
		}
		writeJSON(w, api.Peer{PeerID: testPeer, Agent: "wats/x", Hello: true, Head: 5})
	})
	mux.HandleFunc("POST "+api.PathEvents, func(w http.ResponseWriter, r *http.Request) {
		var req api.AddEventRequest
		if err := json.UnmarshalRead(r.Body, &req); err != nil || req.Kind != "note" || string(req.Body) != `{"n":42}` {
			t.Errorf("add request %+v, %v", req, err)
		}
		io.WriteString(w, testEv)
	})
	mux.HandleFunc("GET "+api.PathEvents, func(w http.ResponseWriter, r *http.Request) {
		if q := r.URL.RawQuery; q != "after=3&limit=1" {
			t.Errorf("events ls query %q", q)
		}
		io.WriteString(w, `{"events":[`+testEv+`],"next":4,"more":true,"head":9}`)
	})
	mux.HandleFunc("GET "+api.PathEvent+"{id}", func(w http.ResponseWriter, r *http.Request) {
		// The daemon's prefix lookup: testEvID and a second event whose id
		// shares its first 8 characters.
		id := r.PathValue("id")
		switch {
		case len(id) <= 8 && strings.HasPrefix(testEvID, id):
			w.WriteHeader(http.StatusConflict)
			writeJSON(w, api.ErrorBody{Error: "eventlog: id prefix " + id + " matches 2 events"})
		case strings.HasPrefix(testEvID, id):
			io.WriteString(w, testEv)
		default:
			w.WriteHeader(http.StatusNotFound)
			writeJSON(w, api.ErrorBody{Error: "not found"})
		}
	})
	mux.HandleFunc("POST "+api.PathSync, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", api.ContentTypeNDJSON)
		var req api.SyncRequest
		if json.UnmarshalRead(r.Body, &req) == nil && req.All {
			io.WriteString(w, `{"peer":"","received":100,"stored":100,"dropped":0,"cursor":0,"peer_head":300,"shares":[`+
				`{"peer":"`+testPeer+`","received":100,"stored":100,"dropped":0,"cursor":0,"peer_head":300,"done":false},`+
				`{"peer":"`+testPeer2+`","received":0,"stored":0,"dropped":0,"cursor":0,"peer_head":300,"done":false}]}`+"\n")
			io.WriteString(w, `{"peer":"","received":300,"stored":300,"dropped":0,"cursor":0,"peer_head":300,"done":true,"shares":[`+
				`{"peer":"`+testPeer+`","received":225,"stored":225,"dropped":0,"cursor":300,"peer_head":300,"done":true},`+
				`{"peer":"`+testPeer2+`","received":75,"stored":75,"dropped":0,"cursor":300,"peer_head":300,"done":true}]}`+"\n")
			return
		}
		io.WriteString(w, `{"peer":"`+testPeer+`","received":256,"stored":250,"dropped":6,"cursor":256,"peer_head":300}`+"\n")
		io.WriteString(w, `{"peer":"`+testPeer+`","received":300,"stored":290,"dropped":10,"cursor":300,"peer_head":300,"done":true}`+"\n")
	})
	return mux
}

func TestCommandsAgainstFakeDaemon(t *testing.T) {
	dir := fakeDaemon(t, testAPI(t))
	for _, tc := range []struct {
		args []string
		want []string // in stdout
	}{
		{[]string{"id"}, []string{testPeer + "\n" + testAddr + "\n"}},
		{[]string{"id", "--json"}, []string{`"peer_id": "` + testPeer + `"`, `"addrs": [`}},
		{[]string{"status"}, []string{"peers:        2 connected", "uptime:       1m5s\n"}}, // the rest: TestStatusInWords
		{[]string{"status", "--json"}, []string{`"events": 7`, `"uptime_seconds": 65`}},
		{[]string{"peers", "ls"}, []string{"PEER ID", "TIER", testPeer, "inbound; hello completed", "new", "score -12.2"}},
		{[]string{"peers", "ls", "--json"}, []string{`"direction": "inbound"`}},
		{[]string{"peers", "connect", testAddr}, []string{"connected to " + testPeer + " (wats/x, head 5)"}},
		{[]string{"events", "add", "--kind", "note", "--body", `{"n":42}`}, []string{testEvID + "\n"}},
		{[]string{"events", "add", "--kind", "note", "--body", `{"n":42}`, "--json"}, []string{`"id": "` + testEvID + `"`, `"n": 42`}},
		{[]string{"events", "ls", "--after", "3", "--limit", "1"}, []string{"KIND", testEvID[:16], "2026-01-01T00:00:00.000Z", "note", `{"n":42}`,
			"more: wats events ls --repo " + dir + " --after 4 --limit 1\n"}},
		{[]string{"events", "ls", "--after", "3", "--limit", "1", "--json"}, []string{`"next": 4`, `"more": true`}},
		{[]string{"events", "get", testEvID}, []string{`"id": "` + testEvID + `"`}},
		{[]string{"events", "get", testEvID, "--json"}, []string{`"id": "` + testEvID + `"`}},
		{[]string{"events", "get", testEvID[:16]}, []string{`"id": "` + testEvID + `"`}},
		{[]string{"events", "get", testEvID[:9]}, []string{`"id": "` + testEvID + `"`}},
		{[]string{"sync", testPeer}, []string{"sync from …" + testPeer[len(testPeer)-8:] + ": at position 256 of 300",
			"synced " + testPeer + ": received 300 events, stored 290 new, dropped 10 invalid; up to position 300 of its log"}},
		{[]string{"sync", testPeer, "--json"}, []string{`{"peer":"` + testPeer + `","received":256,`, `"done":true}`}},
		{[]string{"sync"}, []string{"sync from 2 peers: received 100, stored 100, dropped 0; stored from each: …" + testPeer[len(testPeer)-8:] + " 100, …" + testPeer2[len(testPeer2)-8:] + " 0",
			"synced from 2 peers: received 300 events, stored 300 new, dropped 0 invalid\n  " + testPeer +
				"\n    received 225, stored 225 (75% of those stored), dropped 0; up to position 300 of its log\n  " +
				testPeer2 + "\n    received 75, stored 75 (25% of those stored)"}},
		{[]string{"sync", "--json"}, []string{`"shares":[{"peer":"` + testPeer + `","received":100`}},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, stdout, stderr := runCLI(t, "", append(tc.args, "--repo", dir)...)
			if code != exitOK {
				t.Fatalf("exit %d, stderr %s", code, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stdout, w) {
					t.Errorf("stdout does not contain %q:\n%s", w, stdout)
				}
			}
		})
	}
}

func TestDaemonErrorsAreShown(t *testing.T) {
	dir := fakeDaemon(t, testAPI(t))
	unknown := strings.Repeat("f", 64)
	code, _, stderr := runCLI(t, "", "events", "get", unknown, "--repo", dir)
	if code != exitError || !strings.Contains(stderr, "no event "+unknown+" in the log of repo "+dir) {
		t.Errorf("events get unknown: exit %d, stderr %q", code, stderr)
	}
	code, _, stderr = runCLI(t, "", "events", "get", "ffffffff", "--repo", dir)
	if code != exitError || stderr != "Error: no event whose id starts with ffffffff in the log of repo "+dir+"\n" {
		t.Errorf("events get unknown prefix: exit %d, stderr %q", code, stderr)
	}
	code, _, stderr = runCLI(t, "", "events", "get", testEvID[:8], "--repo", dir)
	if code != exitError || stderr != "Error: id prefix "+testEvID[:8]+" matches several events; give more characters\n" {
		t.Errorf("events get ambiguous prefix: exit %d, stderr %q", code, stderr)
	}
	code, _, stderr = runCLI(t, "", "peers", "connect", "/ip4/127.0.0.1/tcp/9/p2p/"+testPeer, "--repo", dir)
	// The daemon's "node: " prefix is left out.
	if code != exitError || stderr != "Error: the daemon says: dial /ip4/127.0.0.1/tcp/9/p2p/"+testPeer+": refused\n" {
		t.Errorf("connect refused: exit %d, stderr %q", code, stderr)
	}
}

func TestSyncFailureExitCode(t *testing.T) {
	dir := fakeDaemon(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"peer":"P","received":1,"error":"catchup: sync from P after 0: proto: peer refused: rate limited (sync): retry later"}`+"\n")
	}))
	code, _, stderr := runCLI(t, "", "sync", testPeer, "--repo", dir)
	want := "Error: sync of " + testPeer + " failed; the daemon says: sync from P after 0: peer refused: rate limited (sync): retry later\n"
	if code != exitError || stderr != want {
		t.Errorf("exit %d, stderr\n%q\nwant\n%q", code, stderr, want)
	}
}

func TestSyncStreamClosed(t *testing.T) {
	dir := fakeDaemon(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"peer":"P","received":1,"cursor":1,"peer_head":9}`+"\n")
	}))
	code, _, stderr := runCLI(t, "", "sync", testPeer, "--repo", dir)
	want := "Error: sync of " + testPeer + " did not finish: the daemon closed the stream (it may have stopped)\n"
	if code != exitError || stderr != want {
		t.Errorf("exit %d, stderr %q, want %q", code, stderr, want)
	}
}

// cancelAfterLines is a writer that cancels a context once n lines were
// written to it: the user pressing Ctrl-C after seeing them.
type cancelAfterLines struct {
	bytes.Buffer
	n      int
	cancel context.CancelFunc
}

func (w *cancelAfterLines) Write(p []byte) (int, error) {
	n, err := w.Buffer.Write(p)
	if bytes.Count(w.Bytes(), []byte("\n")) >= w.n {
		w.cancel()
	}
	return n, err
}

func TestEventsTail(t *testing.T) {
	const a = `{"id":"aaaaaaaaaaaaaaaaaaaa","author":"12D3KooWAuthor01","time":0,"kind":"note","body":{"n":1}}`
	const b = `{"id":"bbbbbbbbbbbbbbbbbbbb","author":"12D3KooWAuthor02","time":1000,"kind":"crash","body":{},` +
		`"blobs":[{"cid":"bafkr4ihkr4ld3m4gqkjf4reryxsy2s5tkbxprqkow6fin2iiyvreuzzab4","size":3,"name":"c.bin"}]}`
	for _, tc := range []struct {
		args  []string
		lines int
		want  string
	}{
		{[]string{"--json"}, 2, a + "\n" + b + "\n"},
		{nil, 4, "ID                TIME                      AUTHOR     KIND      BODY\n" +
			"aaaaaaaaaaaaaaaa  1970-01-01T00:00:00.000Z  …Author01  note      {\"n\":1}\n" +
			"bbbbbbbbbbbbbbbb  1970-01-01T00:00:01.000Z  …Author02  crash     {}\n" +
			"    blobs: c.bin (3 B)\n"},
	} {
		ctx, cancel := context.WithCancel(t.Context())
		var gotAfter string
		dir := fakeDaemon(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch r.URL.Path {
			case api.PathStatus:
				writeJSON(w, api.Status{Head: 41})
			case api.PathTail:
				gotAfter = r.URL.Query().Get("after")
				w.Header().Set("Content-Type", api.ContentTypeNDJSON)
				io.WriteString(w, a+"\n"+b+"\n")
				w.(http.Flusher).Flush()
				<-r.Context().Done() // an endless stream
			}
		}))
		out := &cancelAfterLines{n: tc.lines, cancel: cancel}
		var errb bytes.Buffer
		code := run(ctx, append([]string{"events", "tail", "--repo", dir}, tc.args...), nil, out, &errb)
		cancel()
		if code != exitOK {
			t.Errorf("%v: exit %d, stderr %s", tc.args, code, errb.String())
		}
		if out.String() != tc.want {
			t.Errorf("%v: stdout\n%s\nwant\n%s", tc.args, out.String(), tc.want)
		}
		if gotAfter != "41" {
			t.Errorf("%v: tail started after %q, want the head 41", tc.args, gotAfter)
		}
	}
}

func TestNewLogger(t *testing.T) {
	var b bytes.Buffer
	l, err := newLogger(config.LogConfig{Level: "warn", Format: "json"}, &b, new(slog.LevelVar))
	if err != nil {
		t.Fatal(err)
	}
	l.Info("hidden")
	l.Warn("shown", "k", 1)
	if got := b.String(); strings.Contains(got, "hidden") || !strings.Contains(got, `"msg":"shown","k":1`) {
		t.Errorf("json logger wrote %q", got)
	}
	b.Reset()
	l, err = newLogger(config.LogConfig{Level: "debug", Format: "text"}, &b, new(slog.LevelVar))
	if err != nil {
		t.Fatal(err)
	}
	l.Debug("detail")
	if !strings.Contains(b.String(), "level=DEBUG msg=detail") {
		t.Errorf("text logger wrote %q", b.String())
	}
	if _, err := newLogger(config.LogConfig{Level: "loud", Format: "text"}, &b, new(slog.LevelVar)); err == nil {
		t.Error("level loud accepted")
	}
	if _, err := newLogger(config.LogConfig{Level: "info", Format: "xml"}, &b, new(slog.LevelVar)); err == nil {
		t.Error("format xml accepted")
	}
}

// TestClientCommandsIgnoreBrokenConfig: a config typo made while the
// daemon runs does not stop the commands that only talk to it; those that
// read the config report it.
func TestClientCommandsIgnoreBrokenConfig(t *testing.T) {
	dir := fakeDaemon(t, testAPI(t))
	if err := os.WriteFile(filepath.Join(dir, configFile), []byte("[p2p]\nconns_lo = 3\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"status"}, {"id"}, {"peers", "ls"}, {"events", "get", testEvID}} {
		code, _, stderr := runCLI(t, "", append(args, "--repo", dir)...)
		if code != exitOK {
			t.Errorf("%v with a broken config: exit %d, stderr %q", args, code, stderr)
		}
	}
	code, _, stderr := runCLI(t, "", "config", "validate", "--repo", dir)
	if code != exitError || !strings.Contains(stderr, "conns_lo") {
		t.Errorf("config validate: exit %d, stderr %q", code, stderr)
	}
	code, _, stderr = runCLI(t, "", "daemon", "--repo", dir)
	if code != exitError || !strings.Contains(stderr, "conns_lo") {
		t.Errorf("daemon: exit %d, stderr %q", code, stderr)
	}
}

func TestEventsTailDaemonStops(t *testing.T) {
	dir := fakeDaemon(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case api.PathStatus:
			writeJSON(w, api.Status{Head: 1})
		case api.PathTail:
			w.Header().Set("Content-Type", api.ContentTypeNDJSON)
			io.WriteString(w, `{"id":"a"}`+"\n") // then the daemon stops
		}
	}))
	code, stdout, stderr := runCLI(t, "", "events", "tail", "--json", "--repo", dir)
	if code != exitError || stdout != "{\"id\":\"a\"}\n" ||
		stderr != "Error: the daemon closed the stream (it may have stopped)\n" {
		t.Errorf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

func TestConfigValidateNoConfig(t *testing.T) {
	none := filepath.Join(t.TempDir(), "none")
	code, _, stderr := runCLI(t, "", "config", "validate", "--repo", none)
	want := "Error: there is no config at " + filepath.Join(none, configFile) +
		"; create a repo, with a config holding the defaults, with: wats init --repo " + none + "\n"
	if code != exitError || stderr != want {
		t.Errorf("no repo: exit %d, stderr\n%q\nwant\n%q", code, stderr, want)
	}

	dir := newRepo(t)
	os.Remove(filepath.Join(dir, configFile))
	code, _, stderr = runCLI(t, "", "config", "validate", "--repo", dir)
	if code != exitError || !strings.Contains(stderr, "there is no config at "+filepath.Join(dir, configFile)+"; create it") {
		t.Errorf("repo without config: exit %d, stderr %q", code, stderr)
	}

	code, _, stderr = runCLI(t, "", "config", "validate", filepath.Join(none, "x.toml"))
	if code != exitError || stderr != "Error: there is no file "+filepath.Join(none, "x.toml")+"\n" {
		t.Errorf("missing FILE: exit %d, stderr %q", code, stderr)
	}
}

func TestVersionCommit(t *testing.T) {
	info := &debug.BuildInfo{Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "1eff201bed4099f11e0c4802ca29fbea0c010ced"},
		{Key: "vcs.time", Value: "2026-11-29T14:40:39Z"},
		{Key: "vcs.modified", Value: "true"},
	}}
	var b bytes.Buffer
	if err := printBuildInfo(&b, buildInfoFrom("v1.2.3", info)); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(b.String(), "\ncommit: 1eff201bed4099f11e0c4802ca29fbea0c010ced (modified) 2026-11-29T14:40:39Z\n") {
		t.Errorf("version with a VCS stamp:\n%s", b.String())
	}
	b.Reset()
	printBuildInfo(&b, buildInfoFrom("v1.2.3", nil))
	if strings.Contains(b.String(), "commit") || !strings.HasPrefix(b.String(), "wats v1.2.3\n") {
		t.Errorf("version without a VCS stamp:\n%s", b.String())
	}
}

// TestDevnetDownNothingRunning: down is idempotent, for cleanup scripts.
func TestDevnetDownNothingRunning(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "devnet")
	code, stdout, stderr := runCLI(t, "", "devnet", "down", "--dir", dir)
	if code != exitOK || stdout != "no devnet is running in "+dir+" (there is no such directory)\n" {
		t.Errorf("down of a missing dir: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if err := os.MkdirAll(filepath.Join(dir, "node0"), 0o700); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		code, stdout, stderr = runCLI(t, "", "devnet", "down", "--dir", dir)
		if code != exitOK || stdout != "no devnet is running in "+dir+"\n" {
			t.Errorf("down with nothing running: exit %d, stdout %q, stderr %q", code, stdout, stderr)
		}
	}
	code, stdout, _ = runCLI(t, "", "devnet", "down", "--clean", "--dir", dir)
	if code != exitOK || !strings.Contains(stdout, "removed the node repos") {
		t.Errorf("down --clean: exit %d, stdout %q", code, stdout)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("down --clean left %s: %v", dir, err)
	}
}

func TestDevnetExecNoDevnet(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "devnet")
	code, _, stderr := runCLI(t, "", "devnet", "exec", "0", "--dir", dir, "--", "status")
	want := "Error: no devnet in " + dir + "; start one with: wats devnet up -n 3 --dir " + dir +
		" (or, if one runs elsewhere, pass its --dir DIR or set $WATS_DEVNET_DIR)\n"
	if code != exitError || stderr != want {
		t.Errorf("exit %d, stderr\n%q\nwant\n%q", code, stderr, want)
	}
}

// TestLimitBound: --limit takes 1 to core.MaxPageEvents (the usage errors
// past both ends are in TestUsageErrors).
func TestLimitBound(t *testing.T) {
	dir := newRepo(t)
	for _, limit := range []string{"1", strconv.Itoa(core.MaxPageEvents)} {
		code, _, stderr := runCLI(t, "", "events", "ls", "--limit", limit, "--repo", dir)
		if code != exitOK || !strings.Contains(stderr, "no daemon runs: read from") {
			t.Errorf("--limit %s: exit %d, stderr %q; want it accepted (then read on disk)", limit, code, stderr)
		}
	}
}

// repeatArg returns n copies of s.
func repeatArg(s string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}

func TestBlobAndReplicateAgainstFakeDaemon(t *testing.T) {
	const c = "bafkr4ihdkvcmlrvr2mbxsgvofyvjnqcz3wwb5gd5yhqn4t4zr5qinjqfbu"
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+api.PathReplicate, func(w http.ResponseWriter, r *http.Request) {
		var req api.ReplicateRequest
		if err := json.UnmarshalRead(r.Body, &req); err != nil || req.Peer != testPeer || len(req.Blobs) != 3 ||
			req.Blobs[0] != (api.BlobInfo{CID: c, Size: 5}) || req.Blobs[2].Size != 1<<53 {
			t.Errorf("replicate request %+v, %v", req, err)
		}
		writeJSON(w, api.ReplicateResult{Stored: []string{c}, Skipped: []string{"bafkqaalb"}, Failed: []api.FailedBlob{{CID: "bafkqaalc", Reason: "too large\x1b[31m"}}})
	})
	mux.HandleFunc("POST "+api.PathEvents, func(w http.ResponseWriter, r *http.Request) {
		var req api.AddEventRequest
		if err := json.UnmarshalRead(r.Body, &req); err != nil || len(req.Blobs) != 2 ||
			req.Blobs[0] != (api.BlobRef{CID: c, Size: 5, Name: "a.txt"}) || req.Blobs[1] != (api.BlobRef{CID: c, Size: 0}) {
			t.Errorf("add request %+v, %v", req, err)
		}
		io.WriteString(w, testEv)
	})
	var fetched api.FetchRequest
	mux.HandleFunc("POST "+api.PathBlobStream, func(w http.ResponseWriter, r *http.Request) {
		json.UnmarshalRead(r.Body, &fetched)
		blobAnswer(w, "hello", api.BlobComplete, "")
	})
	dir := fakeDaemon(t, mux)

	code, stdout, stderr := runCLI(t, "", "replicate", testPeer, c+":5", "bafkqaalb:0", "bafkqaalc:9007199254740992", "--repo", dir)
	if code == exitOK || !strings.Contains(stdout, "stored   "+c+"\n") || !strings.Contains(stdout, "skipped  bafkqaalb (the peer's fetch slots were in use; ask again later)") ||
		!strings.Contains(stdout, "failed   bafkqaalc: too large") || strings.Contains(stdout, "\x1b") || !strings.Contains(stderr, "1 of 3 blobs failed") {
		t.Errorf("replicate: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if code, stdout, stderr := runCLI(t, "", "events", "add", "--kind", "file", "--blob", c+":5:a.txt", "--blob", c+":0", "--repo", dir); code != exitOK || stdout != testEvID+"\n" {
		t.Errorf("events add --blob: exit %d, %q, %s", code, stdout, stderr)
	}
	out := filepath.Join(t.TempDir(), "out")
	if code, _, stderr := runCLI(t, "", "blob", "get", c, "--size", "5", "--from", testPeer, "-o", out, "--repo", dir); code != exitOK {
		t.Fatalf("blob get: exit %d: %s", code, stderr)
	}
	if b, _ := os.ReadFile(out); string(b) != "hello" || fetched != (api.FetchRequest{CID: c, Size: 5, From: testPeer}) {
		t.Errorf("blob get wrote %q after fetch %+v", b, fetched)
	}
	if fi, err := os.Stat(out); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("blob get's file: %v, %v; want mode 0644", fi.Mode(), err)
	}
	if code, stdout, stderr := runCLI(t, "", "blob", "get", c, "--size", "5", "-o", "-", "--repo", dir); code != exitOK || stdout != "hello" {
		t.Errorf("blob get -o -: exit %d, %q, %s", code, stdout, stderr)
	}
	fetched = api.FetchRequest{}
	missingDir := filepath.Join(t.TempDir(), "nodir", "x")
	if code, _, stderr := runCLI(t, "", "blob", "get", c, "--size", "5", "-o", missingDir, "--repo", dir); code == exitOK ||
		!strings.Contains(stderr, "-o "+missingDir+": the directory "+filepath.Dir(missingDir)+" does not exist") || fetched.CID != "" {
		t.Errorf("blob get into a missing directory: exit %d, %s (fetched %+v before checking)", code, stderr, fetched)
	}
	if code, _, stderr := runCLI(t, "", "blob", "get", c, "--size", "5", "-o", t.TempDir(), "--repo", dir); code == exitOK || !strings.Contains(stderr, "is a directory; name a file") {
		t.Errorf("blob get into a directory: exit %d, %s", code, stderr)
	}
}

// blobAnswer answers a blob stream (api.PathBlobStream) with body, then
// the trailer status (with msg when failed); "abort" for status cuts the
// answer off after the body, as a daemon that stops.
func blobAnswer(w http.ResponseWriter, body, status, msg string) {
	w.Header().Set("Content-Type", api.ContentTypeBlob)
	w.Header().Set("Trailer", api.TrailerBlobStatus+", "+api.TrailerBlobError)
	w.WriteHeader(http.StatusOK)
	io.WriteString(w, body)
	w.(http.Flusher).Flush()
	if status == "abort" {
		panic(http.ErrAbortHandler)
	}
	w.Header().Set(api.TrailerBlobStatus, status)
	w.Header().Set(api.TrailerBlobError, msg)
}

// TestBlobGetFailures: a blob whose fetch fails part way, whose answer is
// cut off, or which comes with more bytes than declared leaves no FILE
// and no temporary file (an existing FILE untouched), and exits 1 with one
// sentence; with -o - the bytes that came are on stdout before the exit 1.
func TestBlobGetFailures(t *testing.T) {
	const c = "bafkr4ihdkvcmlrvr2mbxsgvofyvjnqcz3wwb5gd5yhqn4t4zr5qinjqfbu"
	const reason = "could not fetch blob " + c + ": the 4 providers tried did not deliver it"
	for _, tc := range []struct {
		name, body, status, msg string
		wantOut, wantErr        string
	}{
		{"failed part way", "hel", api.BlobFailed, reason, "hel", "Error: " + reason + "\n"},
		{"failed before any byte", "", api.BlobFailed, reason, "", "Error: " + reason + "\n"},
		{"cut off", "hel", "abort", "", "hel", "Error: the daemon closed the stream (it may have stopped)\n"},
		{"more than declared", "hello!", api.BlobComplete, "", "hello", "the daemon sent more than the declared 5 bytes"},
		{"complete but short", "hell", api.BlobComplete, "", "hell", "the daemon closed the stream"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mux := http.NewServeMux()
			mux.HandleFunc("POST "+api.PathBlobStream, func(w http.ResponseWriter, r *http.Request) {
				blobAnswer(w, tc.body, tc.status, tc.msg)
			})
			dir := fakeDaemon(t, mux)
			outDir := t.TempDir()
			out := filepath.Join(outDir, "got.bin")
			code, stdout, stderr := runCLI(t, "", "blob", "get", c, "--size", "5", "-o", out, "--repo", dir)
			if code != exitError || !strings.Contains(stderr, tc.wantErr) || strings.Count(stderr, "\n") != 1 || stdout != "" {
				t.Errorf("-o FILE: exit %d, stdout %q, stderr %q; want exit 1 and %q", code, stdout, stderr, tc.wantErr)
			}
			if left, _ := os.ReadDir(outDir); len(left) != 0 {
				t.Errorf("-o FILE left %v in the directory", left)
			}
			// An existing FILE is left as it was.
			if err := os.WriteFile(out, []byte("old"), 0o600); err != nil {
				t.Fatal(err)
			}
			runCLI(t, "", "blob", "get", c, "--size", "5", "-o", out, "--repo", dir)
			if b, _ := os.ReadFile(out); string(b) != "old" {
				t.Errorf("a failed get changed the existing FILE to %q", b)
			}
			if left, _ := os.ReadDir(outDir); len(left) != 1 {
				t.Errorf("-o FILE over an existing file left %v in the directory", left)
			}
			code, stdout, stderr = runCLI(t, "", "blob", "get", c, "--size", "5", "-o", "-", "--repo", dir)
			if code != exitError || stdout != tc.wantOut || !strings.Contains(stderr, tc.wantErr) {
				t.Errorf("-o -: exit %d, stdout %q, stderr %q; want exit 1 after %q", code, stdout, stderr, tc.wantOut)
			}
		})
	}
}

// TestInterruptedSaysSo: a command stopped by Ctrl-C (its context
// cancelled) says "interrupted", not "context canceled".
func TestInterruptedSaysSo(t *testing.T) {
	dir := fakeDaemon(t, testAPI(t))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var stdout, stderr strings.Builder
	code := run(ctx, []string{"status", "--repo", dir}, strings.NewReader(""), &stdout, &stderr)
	if code != exitError || stderr.String() != "interrupted\n" {
		t.Fatalf("exit %d, stderr %q; want %d, \"interrupted\"", code, stderr.String(), exitError)
	}
}

// TestBlobGetInterruptedSaysWhatIsKept: a blob get stopped by Ctrl-C part
// way says how much of the blob the node keeps, verified (its partial
// blob, docs/adr/0054), and that the same command resumes from there;
// "interrupted" alone when the node keeps nothing of it. No file is left.
func TestBlobGetInterruptedSaysWhatIsKept(t *testing.T) {
	const c = "bafkr4ihdkvcmlrvr2mbxsgvofyvjnqcz3wwb5gd5yhqn4t4zr5qinjqfbu"
	for _, tc := range []struct {
		name     string
		partials string
		want     string
	}{
		{"kept", `[{"cid":"` + c + `","size":4194304,"held":1048576,"bytes":1048576,"fetching":true}]`,
			"Error: interrupted; the node keeps 1.0 MiB of the blob's 4.0 MiB, verified: the same command resumes from there\n"},
		{"none kept", `[{"cid":"bafkqaaa","size":9,"held":9,"bytes":9}]`, "interrupted\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			started := make(chan struct{})
			mux := http.NewServeMux()
			mux.HandleFunc("POST "+api.PathBlobStream, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", api.ContentTypeBlob)
				w.WriteHeader(http.StatusOK)
				io.WriteString(w, "hel")
				w.(http.Flusher).Flush()
				close(started)
				<-r.Context().Done()
			})
			mux.HandleFunc("GET "+api.PathBlobPartials, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, tc.partials)
			})
			dir := fakeDaemon(t, mux)
			outDir := t.TempDir()
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			go func() {
				<-started
				cancel()
			}()
			var stdout, stderr strings.Builder
			code := run(ctx, []string{"blob", "get", c, "--size", "4194304", "-o", filepath.Join(outDir, "got.bin"), "--repo", dir},
				strings.NewReader(""), &stdout, &stderr)
			if code != exitError || stderr.String() != tc.want {
				t.Errorf("exit %d, stderr %q; want %d, %q", code, stderr.String(), exitError, tc.want)
			}
			if left, _ := os.ReadDir(outDir); len(left) != 0 {
				t.Errorf("an interrupted get left %v in the directory", left)
			}
		})
	}
}
