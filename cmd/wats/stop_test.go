package main

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/wats-network/wats/api"
	"github.com/wats-network/wats/repo"
)

// stoppingDaemon is a fake daemon for `wats shutdown`: it holds the repo
// lock as a daemon does (with this process's pid) and answers a shutdown
// 202; once asked, it goes on answering GET api.PathID for answers more
// calls (-1: for ever), then closes its socket and releases the lock, in
// that order, as Run does.
type stoppingDaemon struct {
	dir      string
	asked    atomic.Bool
	released atomic.Bool
}

func newStoppingDaemon(t *testing.T, answers int) *stoppingDaemon {
	t.Helper()
	d := &stoppingDaemon{dir: newRepo(t)}
	r, err := repo.Open(d.dir)
	if err != nil {
		t.Fatal(err)
	}
	release, err := r.Lock()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { release() })
	ln, err := net.Listen("unix", r.SocketPath())
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	var srv *httptest.Server
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+api.PathShutdown, func(w http.ResponseWriter, r *http.Request) {
		d.asked.Store(true)
		w.WriteHeader(http.StatusAccepted)
		json.MarshalWrite(w, api.Shutdown{PID: os.Getpid()})
	})
	mux.HandleFunc("GET "+api.PathID, func(w http.ResponseWriter, r *http.Request) {
		if d.asked.Load() && answers == 0 {
			once.Do(func() {
				go func() {
					srv.Close() // once this answer is sent
					d.released.Store(true)
					release()
				}()
			})
		}
		answers--
		writeJSON(w, api.ID{PeerID: testPeer})
	})
	srv = httptest.NewUnstartedServer(mux)
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	return d
}

// TestShutdownWaitsUntilStopped: `wats shutdown` asks the daemon to stop
// and says it has stopped only once the daemon's control API no longer
// answers and it released the repo lock, naming its pid.
func TestShutdownWaitsUntilStopped(t *testing.T) {
	d := newStoppingDaemon(t, 3)
	code, stdout, stderr := runCLI(t, "", "shutdown", "--repo", d.dir)
	if code != exitOK {
		t.Fatalf("shutdown: exit %d: %s", code, stderr)
	}
	if !d.released.Load() {
		t.Fatalf("shutdown returned before the daemon released the repo lock: %s", stdout)
	}
	pid := pidText(os.Getpid())
	if want := "the daemon of repo " + d.dir + " (" + pid + ") has stopped, in "; !strings.HasPrefix(stdout, want) {
		t.Errorf("stdout %q, want %q…", stdout, want)
	}
	if want := "asked the daemon of repo " + d.dir + " (" + pid + ") to shut down; waiting up to 30s\n"; stderr != want {
		t.Errorf("stderr %q, want %q", stderr, want)
	}
}

// TestShutdownTimesOut: a daemon that still holds the repo lock and
// answers after --timeout is said to still run, with its pid: exit 1.
func TestShutdownTimesOut(t *testing.T) {
	d := newStoppingDaemon(t, -1)
	code, _, stderr := runCLI(t, "", "shutdown", "--timeout", "1ms", "--repo", d.dir)
	want := "Error: the daemon of repo " + d.dir + " (" + pidText(os.Getpid()) + ") was asked to shut down and still runs after 1ms"
	if code != exitError || !strings.Contains(stderr, "\n"+want) || !d.asked.Load() {
		t.Errorf("exit %d, stderr %q; want %d and %q…", code, stderr, exitError, want)
	}
}

// TestShutdownNoDaemon: with no daemon, there is nothing to stop: exit 0.
func TestShutdownNoDaemon(t *testing.T) {
	dir := newRepo(t)
	code, stdout, stderr := runCLI(t, "", "shutdown", "--repo", dir)
	if code != exitOK || stdout != "no daemon runs for repo "+dir+": nothing to stop\n" {
		t.Errorf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

// TestWaitStopped: waitStopped looks at once, then every poll, and
// returns as soon as the daemon has stopped; past the timeout,
// errStillRuns, at the timeout and not before; an error of the look ends
// it.
func TestWaitStopped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		looks := 0
		err := waitStopped(t.Context(), time.Second, 50*time.Millisecond, func() (bool, error) {
			looks++
			return looks == 3, nil
		})
		if err != nil || looks != 3 || time.Since(start) != 100*time.Millisecond {
			t.Errorf("stopped at the third look: %v after %d looks, %v", err, looks, time.Since(start))
		}
		start = time.Now()
		err = waitStopped(t.Context(), time.Second, 50*time.Millisecond, func() (bool, error) { return false, nil })
		if !errors.Is(err, errStillRuns) || time.Since(start) != time.Second {
			t.Errorf("never stopped: %v after %v, want errStillRuns after 1s", err, time.Since(start))
		}
		boom := errors.New("boom")
		if err := waitStopped(t.Context(), time.Second, time.Millisecond, func() (bool, error) { return false, boom }); err != boom {
			t.Errorf("a failed look: %v", err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		if err := waitStopped(ctx, time.Second, time.Millisecond, func() (bool, error) { return false, nil }); err != context.Canceled {
			t.Errorf("a cancelled context: %v", err)
		}
	})
}

// TestPeersDisconnect: `peers disconnect` says how many connections it
// closed, or that the peer was not connected (exit 0 both); --json prints
// the daemon's answer.
func TestPeersDisconnect(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+api.PathDisconnect, func(w http.ResponseWriter, r *http.Request) {
		var req api.DisconnectRequest
		json.UnmarshalRead(r.Body, &req)
		closed := 0
		if req.Peer == testPeer {
			closed = 2
		}
		writeJSON(w, api.Disconnected{PeerID: req.Peer, Closed: closed})
	})
	dir := fakeDaemon(t, mux)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{testPeer}, "disconnected from " + testPeer + ": closed 2 connections\n"},
		{[]string{testPeer2}, "not connected to " + testPeer2 + ": nothing to close\n"},
		{[]string{testPeer, "--json"}, "{\n  \"peer_id\": \"" + testPeer + "\",\n  \"closed\": 2\n}\n"},
	} {
		code, stdout, stderr := runCLI(t, "", append(append([]string{"peers", "disconnect"}, tc.args...), "--repo", dir)...)
		if code != exitOK || stdout != tc.want {
			t.Errorf("%v: exit %d, stdout %q (stderr %q), want %q", tc.args, code, stdout, stderr, tc.want)
		}
	}
}

// TestShutdownAndDisconnectE2E: against real daemons of the default
// profile (no mDNS, which would connect them again at once): `peers
// disconnect` closes B's connection to A and then finds none; `shutdown`
// stops A, whose process exits 0 with its socket removed and its lock
// released, and a second shutdown finds nothing to stop.
func TestShutdownAndDisconnectE2E(t *testing.T) {
	bin, tmp, env := e2eSetup(t)
	a, b := filepath.Join(tmp, "a"), filepath.Join(tmp, "b")
	initDefault(t, env, bin, a, b)
	var aLog lockedBuffer
	proc, exited := startDaemon(t, env, bin, a, &aLog)
	startBinDaemon(t, env, bin, b)
	waitCLI(t, 20*time.Second, "A answers", func() bool {
		code, _, _ := runBin(t, env, bin, "status", "--repo", a)
		return code == 0
	})
	idA := idOf(t, env, bin, a)
	if code, _, stderr := runBin(t, env, bin, "peers", "connect", idA.Addrs[0], "--repo", b); code != 0 {
		t.Fatalf("peers connect: exit %d: %s", code, stderr)
	}
	code, out, stderr := runBin(t, env, bin, "peers", "disconnect", idA.PeerID, "--repo", b)
	if code != 0 || !strings.HasPrefix(out, "disconnected from "+idA.PeerID+": closed ") {
		t.Fatalf("peers disconnect: exit %d: %s%s", code, out, stderr)
	}
	if _, out, _ := runBin(t, env, bin, "peers", "ls", "--repo", b); strings.Contains(out, idA.PeerID) {
		t.Errorf("peers ls after disconnect still lists A:\n%s", out)
	}
	if code, out, stderr := runBin(t, env, bin, "peers", "disconnect", idA.PeerID, "--repo", b); code != 0 ||
		out != "not connected to "+idA.PeerID+": nothing to close\n" {
		t.Errorf("peers disconnect again: exit %d: %s%s", code, out, stderr)
	}

	code, out, stderr = runBinWithin(t, time.Minute, env, bin, "shutdown", "--repo", a)
	pid := proc.Process.Pid
	if code != 0 || !strings.HasPrefix(out, "the daemon of repo "+a+" (pid "+strconv.Itoa(pid)+") has stopped, in ") {
		t.Fatalf("shutdown: exit %d: %s%s\nthe daemon's log:\n%s", code, out, stderr, aLog.String())
	}
	if holder, held, err := repo.LockHolder(a); err != nil || held {
		t.Errorf("after shutdown the repo lock is held (pid %d, %v)", holder, err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("the daemon exited with %v, want 0; its log:\n%s", err, aLog.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("the daemon had not exited 10 s after shutdown said it had stopped")
	}
	if !strings.Contains(aLog.String(), "shutdown asked over the control API") {
		t.Errorf("the daemon's log does not say why it stopped:\n%s", aLog.String())
	}
	if sock, err := repo.SocketPathOf(a); err != nil {
		t.Error(err)
	} else if _, err := os.Stat(sock); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket left behind: %v", err)
	}
	if code, out, _ := runBin(t, env, bin, "shutdown", "--repo", a); code != 0 || !strings.Contains(out, "nothing to stop") {
		t.Errorf("a second shutdown: exit %d: %s", code, out)
	}
}
