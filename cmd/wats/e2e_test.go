package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/wats-network/wats/internal/devnet"
)

// The end-to-end tests build the wats binary and run real daemons as
// devnets. They take tens of seconds; -short skips them.

var binBuild struct {
	once sync.Once
	dir  string
	bin  string
	err  error
	out  []byte
}

func TestMain(m *testing.M) {
	// The in-process tests run as the test binary, which is not on $PATH:
	// name the binary in hints as a user who has it there would see it.
	// TestHintsNameTheBinary and the end-to-end tests check the other case.
	commandName = func() string { return defaultName }
	// The test binary is package main: its C constructor ignored SIGHUP
	// (hangup.go), and the processes it starts would inherit that as if run
	// under nohup. Catching it, as the binary's main does, lets them start
	// with SIGHUP's default.
	catchHangups()
	code := m.Run()
	if binBuild.dir != "" {
		os.RemoveAll(binBuild.dir)
	}
	os.Exit(code)
}

// watsBinary builds this command once per test run (go build -o DIR/wats .).
func watsBinary(t *testing.T) string {
	t.Helper()
	binBuild.once.Do(func() {
		binBuild.dir, binBuild.err = os.MkdirTemp("", "wats-e2e-bin-")
		if binBuild.err != nil {
			return
		}
		binBuild.bin = filepath.Join(binBuild.dir, "wats")
		cmd := exec.Command("go", "build", "-o", binBuild.bin, ".")
		binBuild.out, binBuild.err = cmd.CombinedOutput()
	})
	if binBuild.err != nil {
		t.Fatalf("go build: %v\n%s", binBuild.err, binBuild.out)
	}
	return binBuild.bin
}

// e2eEnv is the environment of the binary in a test: its default repo and
// devnet dir and its temporary directory all inside tmp, so that nothing
// outside it is touched and leftovers can be found.
func e2eEnv(tmp string) []string {
	return append(os.Environ(),
		"WATS_PATH="+filepath.Join(tmp, "default-repo"),
		"WATS_DEVNET_DIR="+filepath.Join(tmp, "default-devnet"),
		"TMPDIR="+tmp,
	)
}

// runBin runs the binary with args and returns its exit code, stdout and
// stderr.
func runBin(t *testing.T, env []string, bin string, args ...string) (int, string, string) {
	t.Helper()
	return runBinWithin(t, 0, env, bin, args...)
}

// runBinWithin is runBin with the process killed after d (0: no limit),
// for a command that must end by itself and might not.
func runBinWithin(t *testing.T, d time.Duration, env []string, bin string, args ...string) (int, string, string) {
	t.Helper()
	ctx := context.Background()
	if d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, out.String(), errb.String()
	case errors.As(err, &ee):
		return ee.ExitCode(), out.String(), errb.String()
	default:
		t.Fatalf("run %v: %v", args, err)
		return -1, "", ""
	}
}

// reapAndCheckGone checks that pid no longer exists. The daemons of
// `devnet up` are orphans; setSubreaper made this process their parent, so
// it reaps them first, as init does on a usual host.
func reapAndCheckGone(t *testing.T, pid int) {
	t.Helper()
	var ws syscall.WaitStatus
	_, _ = syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("pid %d still exists after devnet down (kill 0: %v)", pid, err)
	}
}

// processesMentioning returns the pids of live processes whose command
// line contains s.
func processesMentioning(s string) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(b, []byte(s)) && !exited(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// exited reports whether pid is gone or a zombie (/proc/PID/stat's state
// is Z: it exited, only its parent's wait is missing).
func exited(pid int) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return true
	}
	i := bytes.LastIndexByte(b, ')') // comm may hold spaces and parentheses
	return i < 0 || i+2 >= len(b) || b[i+2] == 'Z'
}

var eventIDPattern = regexp.MustCompile(`^[0-9a-f]{64}$`)

func TestDevnetEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end: builds the binary and runs 3 daemons")
	}
	bin := watsBinary(t)
	setSubreaper(t)
	tmp := t.TempDir()
	env := e2eEnv(tmp)
	dir := filepath.Join(tmp, "devnet")
	down := func() (int, string, string) { return runBin(t, env, bin, "devnet", "down", "--dir", dir) }
	t.Cleanup(func() {
		if _, err := os.Stat(filepath.Join(dir, "devnet.json")); err == nil {
			down() // the test failed half-way: leave no daemon behind
		}
		for _, pid := range processesMentioning(tmp) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})

	code, stdout, stderr := runBin(t, env, bin, "devnet", "up", "-n", "3", "--dir", dir)
	if code != 0 {
		t.Fatalf("devnet up: exit %d\nstdout:\n%s\nstderr:\n%s\nnode0 log:\n%s", code, stdout, stderr,
			devnet.LogTail(filepath.Join(dir, "node0", devnet.LogFileName), 40))
	}
	st, err := devnet.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Nodes) != 3 {
		t.Fatalf("devnet.json has %d nodes, want 3", len(st.Nodes))
	}
	// The next commands, one a line (no "a | b" to paste), naming the
	// binary as invoked: it is not on $PATH.
	for _, want := range []string{"\n  " + bin + " devnet status --dir " + dir + "\n", "\n  " + bin + " devnet down --dir " + dir + "\n",
		"\n  " + bin + " devnet exec 0 --dir " + dir + " -- events add --kind note --body '{\"text\":\"hi\"}'\n"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("devnet up does not suggest %q:\n%s", strings.TrimSpace(want), stdout)
		}
	}
	if strings.Contains(stdout, " | ") {
		t.Errorf("devnet up suggests a pipe:\n%s", stdout)
	}

	// A second up on the same dir is refused while the first runs.
	if code, _, stderr := runBin(t, env, bin, "devnet", "up", "-n", "3", "--dir", dir); code != 1 ||
		!strings.Contains(stderr, "a devnet is already running in "+dir) {
		t.Errorf("second devnet up: exit %d, stderr %q", code, stderr)
	}

	code, stdout, stderr = runBin(t, env, bin, "devnet", "exec", "1", "--dir", dir, "--",
		"events", "add", "--kind", "note", "--body", `{"text":"end to end"}`)
	id := strings.TrimSpace(stdout)
	if code != 0 || !eventIDPattern.MatchString(id) {
		t.Fatalf("events add on node1: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}

	// The event spreads to every node (gossip, or sync within 5s). Polling
	// with a deadline: the processes cannot tell us.
	deadline := time.Now().Add(30 * time.Second)
	for i := range 3 {
		for {
			code, stdout, stderr = runBin(t, env, bin, "devnet", "exec", strconv.Itoa(i), "--dir", dir, "--", "events", "get", id)
			if code == 0 {
				if !strings.Contains(stdout, `"id": "`+id+`"`) || !strings.Contains(stdout, `"text": "end to end"`) {
					t.Errorf("node%d: events get printed\n%s", i, stdout)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("node%d does not have event %s after 30s: exit %d, stderr %q", i, id, code, stderr)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}

	// events get takes the 16 characters of the id that events ls shows.
	code, stdout, stderr = runBin(t, env, bin, "devnet", "exec", "0", "--dir", dir, "--", "events", "get", id[:16])
	if code != 0 || !strings.Contains(stdout, `"id": "`+id+`"`) {
		t.Errorf("events get by a 16-character prefix: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}

	// exec passes the exit code through.
	if code, _, stderr := runBin(t, env, bin, "devnet", "exec", "2", "--dir", dir, "--", "events", "get", strings.Repeat("0", 64)); code != 1 ||
		!strings.Contains(stderr, "no event") {
		t.Errorf("exec of a failing command: exit %d, stderr %q", code, stderr)
	}

	code, stdout, stderr = runBin(t, env, bin, "devnet", "status", "--dir", dir, "--json")
	if code != 0 {
		t.Fatalf("devnet status: exit %d, stderr %s", code, stderr)
	}
	var rows []devnet.NodeStatus
	if err := json.Unmarshal([]byte(stdout), &rows); err != nil {
		t.Fatalf("devnet status --json: %v\n%s", err, stdout)
	}
	if len(rows) != 3 {
		t.Fatalf("devnet status: %d rows, want 3", len(rows))
	}
	ids := map[string]bool{}
	for i, r := range rows {
		wantPeers := 1
		if i == 0 {
			wantPeers = 2
		}
		if r.Index != i || !r.Alive || r.PID != st.Nodes[i].PID || r.Error != "" || r.Peers < wantPeers || r.Events < 1 || r.Head < 1 || r.PeerID != st.Nodes[i].PeerID {
			t.Errorf("status row %d = %+v (recorded %+v)", i, r, st.Nodes[i])
		}
		ids[r.PeerID] = true
	}
	if len(ids) != 3 {
		t.Errorf("peer ids not distinct: %v", ids)
	}

	code, stdout, _ = runBin(t, env, bin, "devnet", "logs", "--dir", dir)
	if code != 0 || !strings.Contains(stdout, "node0 | ") || !strings.Contains(stdout, "node2 | ") {
		t.Errorf("devnet logs: exit %d, %d bytes", code, len(stdout))
	}

	// A tail of node0 running when the devnet stops says that the daemon
	// closed its stream and exits 1 (passed on by exec).
	tail := exec.Command(bin, "devnet", "exec", "0", "--dir", dir, "--", "events", "tail", "--json", "--after", "0")
	tail.Env = env
	var tailErr bytes.Buffer
	tail.Stderr = &tailErr
	tailOut, err := tail.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := tail.Start(); err != nil {
		t.Fatal(err)
	}
	// The first line (the event added above) shows that the tail is
	// streaming; the rest is drained so that it never blocks.
	tailLines := bufio.NewReader(tailOut)
	if line, err := tailLines.ReadString('\n'); !strings.Contains(line, id) {
		t.Errorf("tail's first line %q (%v), want event %s", line, err, id)
	}
	tailDone := make(chan error, 1)
	go func() {
		io.Copy(io.Discard, tailLines)
		tailDone <- tail.Wait()
	}()

	code, stdout, stderr = down()
	if code != 0 || !strings.Contains(stdout, "stopped (3 nodes)") {
		t.Fatalf("devnet down: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	select {
	case err := <-tailDone:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 ||
			tailErr.String() != "Error: the daemon closed the stream (it may have stopped)\n" {
			t.Errorf("tail when the daemon stopped: %v, stderr %q", err, tailErr.String())
		}
	case <-time.After(30 * time.Second):
		tail.Process.Kill()
		t.Errorf("tail still runs 30s after its daemon stopped")
	}
	for _, n := range st.Nodes {
		reapAndCheckGone(t, n.PID)
	}
	if _, err := os.Stat(filepath.Join(dir, "devnet.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("devnet.json left after down: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node0", configFile)); err != nil {
		t.Errorf("down without --clean removed the repos: %v", err)
	}
	if code, _, stderr := runBin(t, env, bin, "devnet", "status", "--dir", dir); code != 1 || !strings.Contains(stderr, "no devnet in "+dir) {
		t.Errorf("status after down: exit %d, stderr %q", code, stderr)
	}
	// down again: nothing to do, not an error (cleanup scripts).
	if code, stdout, stderr := down(); code != 0 || stdout != "no devnet is running in "+dir+"\n" {
		t.Errorf("second down: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if code, _, _ := runBin(t, env, bin, "devnet", "down", "--clean", "--dir", dir); code != 0 {
		t.Errorf("down --clean: exit %d", code)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("down --clean left %s: %v", dir, err)
	}
	if code, _, stderr := down(); code != 0 {
		t.Errorf("down after down --clean: exit %d, stderr %q", code, stderr)
	}
}

// TestBinaryHints runs the built binary with and without its directory on
// $PATH: hints say "wats" only when that runs this binary.
func TestBinaryHints(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end: builds the binary")
	}
	bin := watsBinary(t)
	tmp := t.TempDir()
	for _, tc := range []struct {
		path, want string
	}{
		{filepath.Dir(bin) + string(os.PathListSeparator) + os.Getenv("PATH"), "wats"},
		{tmp, bin}, // no wats on $PATH
	} {
		repoDir := filepath.Join(t.TempDir(), "repo")
		env := append(e2eEnv(tmp), "PATH="+tc.path)
		code, stdout, stderr := runBin(t, env, bin, "init", "--repo", repoDir)
		if want := "start the node with: " + tc.want + " daemon --repo " + repoDir + "\n"; code != 0 || !strings.HasSuffix(stdout, want) {
			t.Errorf("PATH=%s: init: exit %d, stdout %q, stderr %q; want it to end with %q", tc.path, code, stdout, stderr, want)
		}
	}
}

func TestDevnetRunDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end: builds the binary and runs 3 daemons for 15s")
	}
	bin := watsBinary(t)
	setSubreaper(t)
	tmp := t.TempDir()
	t.Cleanup(func() {
		for _, pid := range processesMentioning(tmp) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	code, stdout, stderr := runBin(t, e2eEnv(tmp), bin, "devnet", "run", "-n", "3", "--demo", "--duration", "15s")
	if code != 0 {
		t.Fatalf("devnet run: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if strings.Contains(stderr, "exited with") {
		t.Errorf("a daemon did not exit cleanly:\n%s", stderr)
	}
	m := regexp.MustCompile(`converged: all 3 nodes hold the same (\d+) events`).FindStringSubmatch(stdout)
	if m == nil {
		t.Fatalf("devnet run did not report convergence:\n%s", stdout)
	}
	if n, _ := strconv.Atoi(m[1]); n < 3 {
		t.Errorf("converged on %d events; every node should have published some", n)
	}
	if !regexp.MustCompile(`(?m)^blobs: all 3 nodes hold demo\.bin \(3\.0 MiB, from node0\) and core\.dmp \(256\.0 KiB, a crash dump from node2\)$`).MatchString(stdout) {
		t.Errorf("devnet run did not report that every node holds the demo's blobs:\n%s", stdout)
	}
	if !strings.Contains(stdout, "For each node:\n") || !strings.Contains(stdout, "  MISSING    events other nodes hold that it lacks") {
		t.Errorf("the columns are not explained:\n%s", stdout)
	}
	if !regexp.MustCompile(`(?m)^at \d+s: node2 published=\d+ events=\d+ head=\d+ peers=\d+ missing=\d+ lag=(\d+ms|…|-)$`).MatchString(stdout) {
		t.Errorf("no per-node progress lines:\n%s", stdout)
	}
	if !regexp.MustCompile(`(?m) lag=\d+ms$`).MatchString(stdout) || !regexp.MustCompile(`\d+ events reached every node, the slowest in \d+ ms`).MatchString(stdout) {
		t.Errorf("no event's spread measured:\n%s", stdout)
	}
	if !strings.Contains(stdout, "try in another terminal: "+bin+" devnet status --dir ") {
		t.Errorf("the hint does not name the binary %s:\n%s", bin, stdout)
	}
	if !strings.Contains(stdout, "\nstopped\nthe nodes' logs are kept in ") {
		t.Errorf("output does not end with the teardown and where the logs are:\n%s", stdout)
	}
	// Nothing left: no process runs from the devnet's directory, and the
	// temporary directory is gone.
	if pids := processesMentioning(tmp); len(pids) > 0 {
		t.Errorf("processes left after devnet run: %v", pids)
	}
	// The temporary devnet is gone but for its logs, which it named.
	m = regexp.MustCompile(`(?m)^the nodes' logs are kept in (\S+) `).FindStringSubmatch(stdout)
	if m == nil {
		t.Fatalf("devnet run does not say where the logs are:\n%s", stdout)
	}
	for i := range 3 {
		if b, err := os.ReadFile(filepath.Join(m[1], fmt.Sprintf("node%d.log", i))); err != nil || !strings.Contains(string(b), "node started") {
			t.Errorf("node%d's log was not kept in %s: %v", i, m[1], err)
		}
	}
	left, _ := filepath.Glob(filepath.Join(tmp, "wats-devnet-*"))
	if len(left) != 1 || left[0] != m[1] {
		t.Errorf("devnet run left %v, want only its logs %s", left, m[1])
	}
}
