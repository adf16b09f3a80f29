package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/wats-network/wats/api"
	"github.com/wats-network/wats/repo"
)

// TestFullDiskEndToEnd fills the 64 MiB filesystem of a real daemon's
// repo (a tmpfs, and ext4 on a loop device; mounting needs root) with
// events: the write that would go past the reserve is refused with "disk
// full" and the repo's path, not EOF; the daemon stays up and serves
// reads; once space is freed it accepts writes again; after a restart
// every acknowledged event is there.
func TestFullDiskEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end: builds the binary and starts a daemon")
	}
	if os.Geteuid() != 0 {
		t.Skip("mounts a 64 MiB filesystem: needs root (CI runs as root)")
	}
	for _, fs := range []string{"tmpfs", "ext4"} {
		t.Run(fs, func(t *testing.T) { fillDisk(t, fs) })
	}
}

// fillDisk is TestFullDiskEndToEnd on a 64 MiB filesystem of type fs.
func fillDisk(t *testing.T, fs string) {
	bin := watsBinary(t)
	tmp := t.TempDir()
	env := e2eEnv(tmp)
	mnt := filepath.Join(tmp, "small")
	if err := os.Mkdir(mnt, 0o700); err != nil {
		t.Fatal(err)
	}
	mount := exec.Command("mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", mnt)
	if fs == "ext4" {
		img := filepath.Join(tmp, "ext4.img")
		if err := os.WriteFile(img, nil, 0o600); err != nil || os.Truncate(img, 64<<20) != nil {
			t.Fatal("cannot make the image")
		}
		if out, err := exec.Command("mkfs.ext4", "-q", "-F", img).CombinedOutput(); err != nil {
			t.Skipf("no ext4 here (mkfs.ext4: %v: %s); the tmpfs case ran", err, out)
		}
		mount = exec.Command("mount", "-o", "loop", img, mnt)
	}
	if out, err := mount.CombinedOutput(); err != nil {
		t.Skipf("cannot mount a %s: %v: %s", fs, err, out)
	}
	t.Cleanup(func() { exec.Command("umount", "-l", mnt).Run() })
	dir := filepath.Join(mnt, "repo")
	initLocal(t, env, bin, dir) // a network of its own: no other test's daemon syncs into it
	logs := new(lockedBuffer)   // the daemons' logs, printed if the test fails
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the daemon's log:\n%s", logs)
		}
	})
	start := func() (*exec.Cmd, <-chan error) { return startDaemon(t, env, bin, dir, logs) }
	up := func(exited <-chan error) {
		waitCLI(t, 30*time.Second, "the daemon is up", func() bool {
			select {
			case err := <-exited:
				t.Fatalf("the daemon exited: %v", err)
			default:
			}
			code, _, _ := runBin(t, env, bin, "status", "--repo", dir)
			return code == 0
		})
	}
	d, exited := start()
	up(exited)
	if _, err := os.Stat(filepath.Join(dir, repo.BallastFile)); err != nil {
		t.Fatalf("no ballast: %v", err)
	}

	// Leave 3 MiB above the reserve (4 MiB) and the ballast's room.
	var st syscall.Statfs_t
	if err := syscall.Statfs(mnt, &st); err != nil {
		t.Fatal(err)
	}
	free := int64(st.Bavail) * st.Bsize
	filler := filepath.Join(mnt, "filler")
	if err := os.WriteFile(filler, make([]byte, max(free-7<<20, 0)), 0o600); err != nil {
		t.Fatal(err)
	}

	c := api.NewClient(filepath.Join(dir, repo.SocketFile))
	ctx := context.Background()
	pad := strings.Repeat("x", 15_000)
	acked := 0
	var refused error
	for i := range 1000 {
		_, err := c.AddEvent(ctx, "note", jsontext.Value(fmt.Sprintf(`{"n":%d,"pad":%q}`, i, pad)))
		if err != nil {
			refused = err
			break
		}
		acked++
	}
	var apiErr *api.Error
	if !errors.As(refused, &apiErr) || apiErr.Status != 507 || !strings.Contains(apiErr.Message, "disk full") || !strings.Contains(apiErr.Message, dir) {
		t.Fatalf("after %d events: %v; want 507 disk full naming %s", acked, refused, dir)
	}
	if acked == 0 {
		t.Fatal("no event was accepted before the disk was full")
	}
	t.Logf("%s: %d events acknowledged, then: %v", fs, acked, refused)
	// Refused before pebble met ENOSPC: the ballast was not given up.
	if _, err := os.Stat(filepath.Join(dir, repo.BallastFile)); err != nil {
		t.Fatalf("the ballast is gone: pebble met a full disk before the guard refused (%v)", err)
	}
	code, out, stderr := runBin(t, env, bin, "status", "--repo", dir)
	if code != 0 || !strings.Contains(out, "FULL") {
		t.Fatalf("status on a full disk: exit %d: %s%s", code, out, stderr)
	}
	events := func(when string) {
		t.Helper()
		s, err := c.Status(ctx)
		if err != nil || s.Events != uint64(acked) {
			t.Fatalf("%s: %v, want %d events (%+v)", when, err, acked, s)
		}
		if code, out, stderr := runBin(t, env, bin, "events", "ls", "--repo", dir); code != 0 || !strings.Contains(out, "note") {
			t.Fatalf("events ls %s: exit %d: %s", when, code, stderr)
		}
	}
	events("on a full disk")
	blob := filepath.Join(tmp, "blob")
	if err := os.WriteFile(blob, make([]byte, 8<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runBin(t, env, bin, "blob", "add", "--repo", dir, blob); code == 0 || !strings.Contains(stderr, "disk full") {
		t.Fatalf("blob add on a full disk: exit %d: %s", code, stderr)
	}

	// Space freed: writes are accepted again.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runBin(t, env, bin, "events", "add", "--repo", dir, "--kind", "note", "--body", `{"after":1}`); code != 0 {
		t.Fatalf("events add once space is freed: exit %d: %s", code, stderr)
	}
	acked++
	d.Process.Signal(syscall.SIGTERM)
	if err := <-exited; err != nil {
		t.Fatalf("the daemon's stop: %v", err)
	}
	_, exited = start()
	up(exited)
	events("after a restart")
}
