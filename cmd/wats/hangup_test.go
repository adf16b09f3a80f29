package main

import (
	"context"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestHangupAtAnyMoment: a SIGHUP at any moment from the process's first
// instruction of its own on (its C constructor: hangup.go), 0 to 50 ms
// after it in 2 ms steps, never ends the daemon: each start comes up,
// serves `status`, and stops cleanly on SIGTERM. (Before that, in execve
// and the dynamic loader, no program runs to catch it: the kernel ends
// the process, as it would any other.) The repo is of the local profile
// (its ports are chosen by the system, its traffic stays on 127.0.0.1):
// what is tested is the process, not the profile.
func TestHangupAtAnyMoment(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end: builds the binary and starts a daemon 26 times")
	}
	if !heldFromExec {
		t.Skip("built without cgo (no C compiler): no constructor holds SIGHUP before main")
	}
	bin, env, repo := localRepo(t)
	for ms := 0; ms <= 50; ms += 2 {
		stderr := new(lockedBuffer)
		cmd, exited := startDaemon(t, env, bin, repo, stderr)
		for !hangupHeld(cmd.Process.Pid) {
			select {
			case err := <-exited:
				t.Fatalf("%d ms: the daemon exited before its constructor ran: %v\n%s", ms, err, stderr.String())
			default:
			}
		}
		time.Sleep(time.Duration(ms) * time.Millisecond) // the moment of the fault, not a wait for a condition
		if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatalf("%d ms: SIGHUP: %v", ms, err)
		}
		up := false
		for deadline := time.Now().Add(20 * time.Second); !up && time.Now().Before(deadline); {
			select {
			case err := <-exited:
				t.Fatalf("a SIGHUP %d ms after its constructor ended the daemon: %v\n%s", ms, err, stderr.String())
			case <-time.After(20 * time.Millisecond):
			}
			code, _, _ := runBin(t, env, bin, "status", "--repo", repo)
			up = code == 0
		}
		if !up {
			cmd.Process.Kill()
			t.Fatalf("%d ms: the daemon did not come up in 20 s\n%s", ms, stderr.String())
		}
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-exited:
			if err != nil {
				t.Fatalf("a SIGHUP %d ms after its constructor: the daemon stopped with %v\n%s", ms, err, stderr.String())
			}
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
			t.Fatalf("%d ms: the daemon did not stop on SIGTERM in 20 s", ms)
		}
	}
}

// TestHangupEndsACommand: a SIGHUP ends a command other than the daemon
// as SIGTERM does (a terminal hung up: events tail stops cleanly), and is
// ignored under nohup, where it was ignored at exec.
func TestHangupEndsACommand(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end: builds the binary and runs a daemon")
	}
	nohup, err := exec.LookPath("nohup")
	if err != nil {
		t.Skip("needs nohup")
	}
	bin, env, repo := localRepo(t)
	daemon := exec.Command(bin, "daemon", "--repo", repo)
	daemon.Env = env
	if err := daemon.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { daemon.Process.Signal(syscall.SIGTERM); daemon.Wait() })
	waitCLI(t, 20*time.Second, "the daemon is up", func() bool {
		code, _, _ := runBin(t, env, bin, "status", "--repo", repo)
		return code == 0
	})
	// tail runs until it is stopped; ready once it has printed the first
	// event (the log from its start, as JSON).
	if code, _, stderr := runBin(t, env, bin, "events", "add", "--repo", repo, "--kind", "note", "--body", `{"n":1}`); code != 0 {
		t.Fatalf("events add: exit %d: %s", code, stderr)
	}
	tail := func(name string, args ...string) (*exec.Cmd, *lockedBuffer, <-chan error) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		t.Cleanup(cancel)
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Env = env
		out := new(lockedBuffer)
		cmd.Stdout = out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		waitCLI(t, 20*time.Second, name+" prints the event", func() bool { return strings.Contains(out.String(), `"n":1`) })
		return cmd, out, done
	}
	cmd, _, done := tail(bin, "events", "tail", "--after", "0", "--json", "--repo", repo)
	cmd.Process.Signal(syscall.SIGHUP)
	select {
	case err := <-done:
		if err != nil { // tail ends cleanly when stopped, as on SIGTERM
			t.Errorf("events tail on SIGHUP: %v, want a clean exit", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("events tail still runs 20 s after a SIGHUP")
	}
	// Under nohup: after the SIGHUP, tail still prints the next event.
	cmd, out, done := tail(nohup, bin, "events", "tail", "--after", "0", "--json", "--repo", repo)
	cmd.Process.Signal(syscall.SIGHUP)
	if code, _, stderr := runBin(t, env, bin, "events", "add", "--repo", repo, "--kind", "note", "--body", `{"n":2}`); code != 0 {
		t.Fatalf("events add: exit %d: %s", code, stderr)
	}
	waitCLI(t, 20*time.Second, "tail under nohup prints the event after the SIGHUP", func() bool {
		select {
		case err := <-done:
			t.Fatalf("under nohup, events tail ended on a SIGHUP: %v", err)
		default:
		}
		return strings.Contains(out.String(), `"n":2`)
	})
	cmd.Process.Signal(syscall.SIGTERM)
	if err := <-done; err != nil {
		t.Errorf("under nohup, events tail on SIGTERM after a SIGHUP: %v, want a clean exit", err)
	}
}

// hangupHeld reports whether process pid ignores or catches SIGHUP (bit 0
// of SigIgn or SigCgt in /proc/PID/status): its constructor has run.
func hangupHeld(pid int) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return false
	}
	for line := range strings.Lines(string(b)) {
		for _, field := range []string{"SigIgn:", "SigCgt:"} {
			if v, ok := strings.CutPrefix(line, field); ok {
				if mask, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64); err == nil && mask&(1<<(syscall.SIGHUP-1)) != 0 {
					return true
				}
			}
		}
	}
	return false
}

// TestDaemonTellsTheServiceManager: under systemd (NOTIFY_SOCKET), the
// daemon says READY=1 once its control API answers, RELOADING=1 (with
// MONOTONIC_USEC) and READY=1 around a SIGHUP's reload, and STOPPING=1 on
// SIGTERM (daemon/notify.go).
func TestDaemonTellsTheServiceManager(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end: builds the binary and runs a daemon")
	}
	bin, env, repo := localRepo(t)
	sockDir, err := os.MkdirTemp("", "wats-notify-") // short: a socket path has at most 107 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	addr := &net.UnixAddr{Name: filepath.Join(sockDir, "notify"), Net: "unixgram"}
	conn, err := net.ListenUnixgram("unixgram", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	next := func(what string) string {
		t.Helper()
		conn.SetReadDeadline(time.Now().Add(20 * time.Second))
		buf := make([]byte, 4096)
		n, err := conn.Read(buf)
		if err != nil {
			t.Fatalf("waiting for %s: %v", what, err)
		}
		return string(buf[:n])
	}
	cmd := exec.Command(bin, "daemon", "--repo", repo)
	cmd.Env = append(env, "NOTIFY_SOCKET="+addr.Name)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	if got := next("READY=1"); got != "READY=1" {
		t.Fatalf("first notification %q, want READY=1", got)
	}
	if code, _, stderr := runBin(t, env, bin, "status", "--repo", repo); code != 0 {
		t.Fatalf("READY=1 said, but status fails: exit %d: %s", code, stderr)
	}
	cmd.Process.Signal(syscall.SIGHUP)
	if got := next("RELOADING=1"); !strings.HasPrefix(got, "RELOADING=1\nMONOTONIC_USEC=") {
		t.Fatalf("on SIGHUP %q, want RELOADING=1 and MONOTONIC_USEC", got)
	}
	if got := next("READY=1 after the reload"); got != "READY=1" {
		t.Fatalf("after the reload %q, want READY=1", got)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if got := next("STOPPING=1"); got != "STOPPING=1" {
		t.Fatalf("on SIGTERM %q, want STOPPING=1", got)
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("the daemon stopped with %v", err)
	}
}

// TestIsDaemonCommand: main tells the daemon from other commands before
// cobra runs, whatever the place of --repo.
func TestIsDaemonCommand(t *testing.T) {
	for args, want := range map[string]bool{
		"daemon": true, "daemon --repo x": true, "--repo x daemon": true, "--repo=x daemon": true,
		"events ls": false, "help daemon": false, "": false, "daemon --help": true, "devnet up": false,
	} {
		if got := isDaemonCommand(strings.Fields(args)); got != want {
			t.Errorf("isDaemonCommand(%q) = %v, want %v", args, got, want)
		}
	}
}

// startDaemon starts `wats daemon` on the repo dir, its stderr to stderr
// (nil: discarded), and returns it with the channel of its exit; the test's
// end kills it if it still runs.
func startDaemon(t *testing.T, env []string, bin, dir string, stderr io.Writer) (*exec.Cmd, <-chan error) {
	t.Helper()
	cmd := exec.Command(bin, "daemon", "--repo", dir)
	cmd.Env = env
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { cmd.Process.Kill() })
	return cmd, exited
}

// localRepo builds the binary and makes a repo of the local profile in a
// temporary directory (its ports chosen by the system, its traffic on
// 127.0.0.1): the tests of the process, not of the profile, use it.
func localRepo(t *testing.T) (bin string, env []string, repo string) {
	t.Helper()
	bin = watsBinary(t)
	tmp := t.TempDir()
	env = e2eEnv(tmp)
	repo = filepath.Join(tmp, "repo")
	initLocal(t, env, bin, repo) // a network of its own: no other test's daemon syncs into it
	return bin, env, repo
}
