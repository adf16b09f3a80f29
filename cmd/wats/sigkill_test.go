package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestDaemonKilledRestartsWithReadableCache: a real daemon killed with
// SIGKILL while events are being written restarts on the same repo with a
// readable peer cache, in which its peer, which gave it events (value:
// docs/adr/0030), is remembered from the earlier run.
func TestDaemonKilledRestartsWithReadableCache(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end: builds the binary and runs daemons")
	}
	bin := watsBinary(t)
	setSubreaper(t)
	tmp := t.TempDir()
	env := e2eEnv(tmp)
	dir := filepath.Join(tmp, "devnet")
	if code, _, stderr := runBin(t, env, bin, "devnet", "up", "-n", "2", "--dir", dir); code != 0 {
		t.Fatalf("devnet up: exit %d: %s", code, stderr)
	}
	t.Cleanup(func() { runBin(t, env, bin, "devnet", "down", "--dir", dir) })
	node1 := filepath.Join(dir, "node1")
	_, idOut, _ := runBin(t, env, bin, "id", "--repo", filepath.Join(dir, "node0"))
	node0ID := strings.Fields(idOut)[0]

	// Writes in flight: events added on node 0 reach node 1 by gossip or
	// sync; node 1 gives node 0 a record once the first arrives.
	for i := range 20 {
		if code, _, stderr := runBin(t, env, bin, "devnet", "exec", "0", "--dir", dir, "--", "events", "add", "--kind", "note", "--body", `{"i":`+string(rune('0'+i%10))+`}`); code != 0 {
			t.Fatalf("events add on node 0: exit %d: %s", code, stderr)
		}
		if i == 9 {
			waitCLI(t, 20*time.Second, "node 1 holds node 0's events", func() bool {
				_, out, _ := runBin(t, env, bin, "peers", "cache", "--json", "--repo", node1)
				return strings.Contains(out, node0ID)
			})
		}
	}
	pids := processesMentioning(node1 + "\x00")
	if len(pids) != 1 {
		t.Fatalf("found %d daemons of node1: %v", len(pids), pids)
	}
	if err := syscall.Kill(pids[0], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); ; {
		var ws syscall.WaitStatus
		syscall.Wait4(pids[0], &ws, syscall.WNOHANG, nil)
		if syscall.Kill(pids[0], 0) == syscall.ESRCH {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pid %d survived SIGKILL for 5 s", pids[0])
		}
		time.Sleep(10 * time.Millisecond) // waiting for the kernel to reap it
	}

	d := exec.Command(bin, "daemon", "--repo", node1)
	d.Env = env
	if err := d.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		d.Process.Signal(syscall.SIGTERM)
		d.Wait()
	})
	deadline := time.Now().Add(20 * time.Second)
	for {
		if code, _, _ := runBin(t, env, bin, "status", "--repo", node1); code == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the restarted daemon did not answer within 20 s")
		}
		time.Sleep(100 * time.Millisecond) // waiting for a process to start
	}
	code, out, stderr := runBin(t, env, bin, "peers", "cache", "--json", "--repo", node1)
	if code != 0 {
		t.Fatalf("peers cache after SIGKILL: exit %d: %s", code, stderr)
	}
	if !strings.Contains(out, node0ID) || !strings.Contains(out, `"met_in_earlier_run": true`) {
		t.Fatalf("the restarted node does not remember node 0 from its earlier run:\n%s", out)
	}
	if code, out, stderr := runBin(t, env, bin, "peers", "forget", node0ID, "--repo", node1); code != 0 || !strings.Contains(out, "forgot") {
		t.Fatalf("peers forget: exit %d: %s %s", code, out, stderr)
	}

	// The blob commands against the restarted daemon: add, ls, get with the
	// exact size (and not with another), rm.
	src := filepath.Join(tmp, "dump.bin")
	data := strings.Repeat("crash dump ", 150_000) // 1.65 MB: two chunks
	if err := os.WriteFile(src, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, stderr = runBin(t, env, bin, "blob", "add", src, "--repo", node1)
	fields := strings.Split(strings.TrimSpace(out), ":")
	if code != 0 || len(fields) != 3 || fields[1] != strconv.Itoa(len(data)) || fields[2] != "dump.bin" {
		t.Fatalf("blob add: exit %d: %q %s; want CID:SIZE:NAME", code, out, stderr)
	}
	blobCID := fields[0]
	if _, out, _ := runBin(t, env, bin, "blob", "ls", "--repo", node1); !strings.Contains(out, blobCID) {
		t.Fatalf("blob ls does not list %s:\n%s", blobCID, out)
	}
	dst := filepath.Join(tmp, "dump.out")
	if code, _, stderr := runBin(t, env, bin, "blob", "get", blobCID, "--size", strconv.Itoa(len(data)), "-o", dst, "--repo", node1); code != 0 {
		t.Fatalf("blob get: exit %d: %s", code, stderr)
	}
	if got, _ := os.ReadFile(dst); string(got) != data {
		t.Fatalf("blob get wrote %d bytes, want the %d added", len(got), len(data))
	}
	other := filepath.Join(tmp, "other.out")
	if code, _, _ := runBin(t, env, bin, "blob", "get", blobCID, "--size", "5", "-o", other, "--repo", node1); code == 0 {
		t.Fatal("blob get with a wrong size succeeded")
	}
	if _, err := os.Stat(other); err == nil {
		t.Fatal("blob get with a wrong size wrote a file")
	}
	// A crash report with its dump, then listed by fingerprint.
	for range 2 {
		if code, _, stderr := runBin(t, env, bin, "crash", "report", "--program", "demo", "--version", "1.0",
			"--reason", "panic: boom", "--dump", src, "--repo", node1); code != 0 {
			t.Fatalf("crash report: exit %d: %s", code, stderr)
		}
	}
	code, out, stderr = runBin(t, env, bin, "crash", "ls", "--json", "--repo", node1)
	if code != 0 || !strings.Contains(out, `"count": 2`) || !strings.Contains(out, `"program": "demo"`) {
		t.Fatalf("crash ls: exit %d: %s %s", code, out, stderr)
	}
	if code, _, stderr := runBin(t, env, bin, "blob", "rm", blobCID, "--repo", node1); code != 0 {
		t.Fatalf("blob rm: exit %d: %s", code, stderr)
	}
}

// waitCLI runs cond every 100 ms (each run starts CLI processes) until it
// holds, failing the test after timeout.
func waitCLI(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(timeout); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(100 * time.Millisecond) // waiting on daemons
	}
}
