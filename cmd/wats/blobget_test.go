package main

import (
	"bytes"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestBlobGetStreams runs `blob get` against real daemons (ADR 0035): the
// file is the blob, byte for byte, fetched and held; a declared size that
// is not the blob's leaves no file; a provider killed part way through
// leaves no file and no temporary file with -o FILE, and with -o - exits
// 1 after a prefix of the blob.
func TestBlobGetStreams(t *testing.T) {
	bin, tmp, env := e2eSetup(t)
	a, b := filepath.Join(tmp, "a"), filepath.Join(tmp, "b")
	initLocal(t, env, bin, a, b)
	// b fetches nothing by itself: what it gets, blob get fetches.
	if code, _, stderr := runBin(t, env, bin, "config", "set", "blobs.auto_fetch", "false", "--repo", b); code != 0 {
		t.Fatalf("config set: exit %d: %s", code, stderr)
	}
	da, _ := startBinDaemonProc(t, env, bin, a)
	startBinDaemon(t, env, bin, b)

	out := filepath.Join(tmp, "out")
	if err := os.Mkdir(out, 0o700); err != nil {
		t.Fatal(err)
	}
	// noneLeft checks that out holds exactly the files named.
	noneLeft := func(what string, want ...string) {
		t.Helper()
		ents, _ := os.ReadDir(out)
		var got []string
		for _, e := range ents {
			got = append(got, e.Name())
		}
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("%s: %s holds %q, want %q", what, out, got, want)
		}
	}
	add := func(n int, seed uint64) (cid string, data []byte) {
		t.Helper()
		data = make([]byte, n)
		r := rand.New(rand.NewPCG(seed, 3))
		for i := range data {
			data[i] = byte(r.Uint32())
		}
		file := filepath.Join(tmp, "blob-"+strconv.FormatUint(seed, 10))
		if err := os.WriteFile(file, data, 0o600); err != nil {
			t.Fatal(err)
		}
		code, stdout, stderr := runBin(t, env, bin, "blob", "add", file, "--repo", a)
		if code != 0 {
			t.Fatalf("blob add: exit %d: %s", code, stderr)
		}
		return strings.Split(strings.TrimSpace(stdout), ":")[0], data
	}
	from := func() string { id := idOf(t, env, bin, a); return id.Addrs[0] }

	// Fetched from a, then held by b.
	cid, data := add(5<<20+3, 1)
	size := strconv.Itoa(len(data))
	got := filepath.Join(out, "got.bin")
	if code, stdout, stderr := runBin(t, env, bin, "blob", "get", cid, "--size", size, "--from", from(), "-o", got, "--repo", b); code != 0 ||
		stdout != "wrote "+got+": 5.0 MiB ("+size+" bytes)\n    blob "+cid+"\n    from "+idOf(t, env, bin, a).PeerID+"\n" {
		t.Fatalf("blob get from a: exit %d, %q %s", code, stdout, stderr)
	}
	if g, _ := os.ReadFile(got); !bytes.Equal(g, data) {
		t.Fatalf("blob get wrote %d bytes that are not the blob's %d", len(g), len(data))
	}
	noneLeft("after a blob get", "got.bin")
	if code, stdout, stderr := runBin(t, env, bin, "blob", "get", cid, "-o", "-", "--repo", b); code != 0 || stdout != string(data) {
		t.Fatalf("blob get -o - of a blob b holds: exit %d, %d bytes, %s", code, len(stdout), stderr)
	}

	// A declared size that is not the blob's: nothing written, not kept.
	cid2, data2 := add(3<<20, 2)
	wrong := strconv.Itoa(len(data2) + 1)
	for _, o := range []string{filepath.Join(out, "wrong.bin"), "-"} {
		code, stdout, stderr := runBin(t, env, bin, "blob", "get", cid2, "--size", wrong, "--from", from(), "-o", o, "--repo", b)
		if code != 1 || stdout != "" || !strings.Contains(stderr, "its content is not of the declared size") || strings.Count(stderr, "\n") != 1 {
			t.Errorf("blob get -o %s at a wrong size: exit %d, stdout %d bytes, stderr %q", o, code, len(stdout), stderr)
		}
	}
	noneLeft("after a wrong size", "got.bin")
	if _, stdout, _ := runBin(t, env, bin, "blob", "ls", "--repo", b); strings.Contains(stdout, cid2) {
		t.Errorf("a blob of the wrong size is listed:\n%s", stdout)
	}

	// The provider killed part way: -o - gives a prefix and exits 1.
	cid3, data3 := add(48<<20, 3)
	size3 := strconv.Itoa(len(data3))
	get := exec.Command(bin, "blob", "get", cid3, "--size", size3, "--from", from(), "-o", "-", "--repo", b)
	get.Env = env
	stderr := new(lockedBuffer) // written by the process while read here
	get.Stderr = stderr
	pipe, err := get.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := get.Start(); err != nil {
		t.Fatal(err)
	}
	first := make([]byte, 1<<20)
	if _, err := io.ReadFull(pipe, first); err != nil {
		t.Fatalf("the first MiB of -o -: %v (%s)", err, stderr.String())
	}
	killDaemon(t, da)
	rest, _ := io.ReadAll(pipe)
	err = get.Wait()
	prefix := append(first, rest...)
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || len(prefix) >= len(data3) || !bytes.Equal(prefix, data3[:len(prefix)]) ||
		!strings.HasPrefix(stderr.String(), "Error: could not fetch blob "+cid3) {
		t.Fatalf("-o - with its provider killed: %v after %d of %d bytes (a prefix: %v), stderr %q",
			err, len(prefix), len(data3), bytes.Equal(prefix, data3[:min(len(prefix), len(data3))]), stderr.String())
	}

	// Again with -o FILE: no file, no temporary file. The fetch goes on
	// from what the cut-off one verified (ADR 0054), and says so first.
	da, _ = startBinDaemonProc(t, env, bin, a)
	part := filepath.Join(out, "part.bin")
	get = exec.Command(bin, "blob", "get", cid3, "--size", size3, "--from", from(), "-o", part, "--repo", b)
	get.Env = env
	stderr = new(lockedBuffer)
	get.Stderr = stderr
	if err := get.Start(); err != nil {
		t.Fatal(err)
	}
	// Polled often: the whole blob takes a few hundred milliseconds.
	for deadline := time.Now().Add(20 * time.Second); ; {
		tmps, _ := filepath.Glob(filepath.Join(out, ".wats-blob-*"))
		if fi, err := os.Stat(strings.Join(tmps, "")); len(tmps) == 1 && err == nil && fi.Size() > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no temporary file with bytes in it after 20 s (%s)", stderr.String())
		}
		time.Sleep(time.Millisecond) // waiting on another process
	}
	killDaemon(t, da)
	if ee, ok := get.Wait().(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.HasPrefix(stderr.String(), "resuming: ") ||
		!strings.Contains(stderr.String(), " already held\nError: could not fetch blob "+cid3) {
		t.Fatalf("-o FILE with its provider killed: exit %v, stderr %q", get.ProcessState, stderr.String())
	}
	noneLeft("after a fetch cut off", "got.bin")

	// And with -o -, the provider back: the whole blob, after the line
	// that says how much was held. b may still hold a QUIC connection to
	// the killed provider, which QUIC finds dead only at its idle timeout:
	// a request that went on it is sent again on a new connection
	// (proto.Call), so the first connect completes.
	startBinDaemonProc(t, env, bin, a)
	if code, _, stderr := runBin(t, env, bin, "peers", "connect", from(), "--repo", b); code != 0 {
		t.Fatalf("b could not connect to the restarted provider: %s", stderr)
	}
	code, stdout, errs := runBin(t, env, bin, "blob", "get", cid3, "--size", size3, "--from", from(), "-o", "-", "--repo", b)
	if code != 0 || stdout != string(data3) || !strings.HasPrefix(errs, "resuming: ") || !strings.HasSuffix(errs, " already held\n") {
		t.Fatalf("-o - after a cut-off fetch: exit %d, %d of %d bytes (equal: %v), stderr %q",
			code, len(stdout), len(data3), stdout == string(data3), errs)
	}
}

// killDaemon kills a daemon with SIGKILL and reaps it.
func killDaemon(t *testing.T, d *exec.Cmd) {
	t.Helper()
	if err := d.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = d.Wait()
}

// TestBlobGetIntoANamedPipe: -o naming a file that is not a regular file
// (a named pipe here; /dev/null alike) writes the blob into it, as -o -
// does, and leaves it as it was: no temporary file renamed over it (which
// replaced /dev/null with a regular file when run as root).
func TestBlobGetIntoANamedPipe(t *testing.T) {
	bin, tmp, env := e2eSetup(t)
	a := filepath.Join(tmp, "a")
	initLocal(t, env, bin, a)
	startBinDaemon(t, env, bin, a)
	data := make([]byte, 3<<20+5)
	r := rand.New(rand.NewPCG(9, 3))
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	file := filepath.Join(tmp, "blob")
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runBin(t, env, bin, "blob", "add", file, "--repo", a)
	if code != 0 {
		t.Fatalf("blob add: exit %d: %s", code, stderr)
	}
	cid := strings.Split(strings.TrimSpace(stdout), ":")[0]
	dir := filepath.Join(tmp, "out")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "pipe")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	// O_RDWR: the open does not wait for a writer, and a read waits for
	// the bytes instead of seeing the end of a pipe no writer has opened.
	rd, err := os.OpenFile(fifo, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	got := make(chan []byte, 1)
	go func() {
		b := make([]byte, len(data))
		_ = rd.SetReadDeadline(time.Now().Add(20 * time.Second))
		n, _ := io.ReadFull(rd, b)
		got <- b[:n]
	}()
	code, stdout, stderr = runBinWithin(t, 30*time.Second, env, bin, "blob", "get", cid, "-o", fifo, "--repo", a)
	if code != 0 {
		t.Fatalf("blob get -o a named pipe: exit %d, %q %s", code, stdout, stderr)
	}
	if b := <-got; !bytes.Equal(b, data) {
		t.Errorf("the named pipe gave %d bytes, not the blob's %d", len(b), len(data))
	}
	if fi, err := os.Lstat(fifo); err != nil || fi.Mode().Type() != os.ModeNamedPipe {
		t.Errorf("after blob get -o, %s: %v, %v; want the named pipe still", fifo, fi, err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("%s holds %d files, want the pipe alone", dir, len(ents))
	}
}
