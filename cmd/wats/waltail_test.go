package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/wats-network/wats/api"
	"github.com/wats-network/wats/repo"
)

// walBlock is the block size of pebble's WAL: damage in the last block
// is read as a write torn by a crash, and the rest of the log dropped.
const walBlock = 32 << 10

// TestWALTailLostComesBack: a daemon acknowledges events, a peer syncs
// most of them, the daemon is killed (kill -9) and a byte of its newest
// WAL's last block flipped. `repo check` then reports the acknowledged
// events the database dropped, and exits 1; the restarted daemon says how
// many were lost, fetches them back from the peer, and says so; `repo
// check` then reports them back.
func TestWALTailLostComesBack(t *testing.T) {
	bin, tmp, env := e2eSetup(t)
	a, b := filepath.Join(tmp, "a"), filepath.Join(tmp, "b")
	initLocal(t, env, bin, a, b)
	// No mDNS: b would meet a as its 1,000 events are added, take them for
	// a stranger's gossip flood and ban it; the test connects them itself.
	for _, dir := range []string{a, b} {
		if code, _, stderr := runBin(t, env, bin, "config", "set", "p2p.mdns", "false", "--repo", dir); code != 0 {
			t.Fatalf("config set p2p.mdns: exit %d: %s", code, stderr)
		}
	}
	procA, _ := startBinDaemonProc(t, env, bin, a)
	startBinDaemon(t, env, bin, b)

	ctx := context.Background()
	c := api.NewClient(filepath.Join(a, repo.SocketFile))
	add := func(from, to int) {
		for i := from; i < to; i++ {
			if _, err := c.AddEvent(ctx, "note", jsontext.Value(fmt.Sprintf(`{"n":%d,"pad":"%s"}`, i, strings.Repeat("w", 200)))); err != nil {
				t.Fatal(err)
			}
		}
	}
	add(0, 1000)
	connectAndSync(t, env, bin, b, idOf(t, env, bin, a))
	// The newest events, acknowledged last: the WAL's tail is theirs.
	add(1000, 1100)
	waitCLI(t, 20*time.Second, "the peer holds all 1,100 events", func() bool {
		return statusEvents(t, env, bin, b) == 1100
	})
	procA.Process.Kill()
	procA.Wait()

	flipInLastBlock(t, filepath.Join(a, repo.DBDir))
	code, out, stderr := runBin(t, env, bin, "repo", "check", "--repo", a)
	t.Logf("repo check before the restart:\n%s", out)
	if code != 1 || !strings.Contains(out, "still missing") || !strings.Contains(out, "lost: ") {
		t.Fatalf("repo check of a WAL that lost its tail: exit %d, want 1 and the loss:\n%s%s", code, out, stderr)
	}

	// The peer may be found by mDNS and send the events back at once:
	// the count is read from the log, not from the head.
	procA, logA := startBinDaemonProc(t, env, bin, a)
	m := regexp.MustCompile(`lost acknowledged events.* lost=(\d+) `).FindStringSubmatch(logA.String())
	if m == nil {
		t.Fatalf("the restarted daemon does not say it lost events:\n%s", logA)
	}
	lost, _ := strconv.Atoi(m[1])
	if lost < 1 || lost > 100 {
		t.Fatalf("lost %d events; want 1..100, the tail's", lost)
	}
	connectAndSync(t, env, bin, a, idOf(t, env, bin, b))
	waitCLI(t, 30*time.Second, "the lost events came back", func() bool {
		return strings.Contains(logA.String(), "lost events came back") && statusEvents(t, env, bin, a) == 1100
	})
	procA.Process.Signal(syscall.SIGTERM)
	procA.Wait()
	code, out, _ = runBin(t, env, bin, "repo", "check", "--repo", a)
	t.Logf("repo check after:\n%s", out)
	want := fmt.Sprintf("lost: %d acknowledged events", lost)
	if code != 0 || !strings.Contains(out, want) || !strings.Contains(out, fmt.Sprintf("%d came back from peers, 0 still missing", lost)) {
		t.Fatalf("repo check once they came back: exit %d, want 0 and %q:\n%s", code, want, out)
	}
}

// statusEvents is the events the daemon of dir holds (status --json).
func statusEvents(t *testing.T, env []string, bin, dir string) uint64 {
	t.Helper()
	c := api.NewClient(filepath.Join(dir, repo.SocketFile))
	st, err := c.Status(context.Background())
	if err != nil {
		t.Fatalf("status of %s: %v", dir, err)
	}
	return st.Events
}

// flipInLastBlock flips a byte inside the last 32 KiB block of the newest
// WAL of the database at dir, near its start so that the last records
// are behind it.
func flipInLastBlock(t *testing.T, dir string) {
	t.Helper()
	logs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	if len(logs) == 0 {
		t.Fatal("no WAL")
	}
	slices.Sort(logs)
	wal := logs[len(logs)-1]
	f, err := os.OpenFile(wal, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, _ := f.Stat()
	size := fi.Size()
	if size < 1024 {
		t.Fatalf("WAL %s holds %d bytes", wal, size)
	}
	last := (size - 1) / walBlock * walBlock
	off := last + min(100, (size-last)/2)
	var bb [1]byte
	if _, err := f.ReadAt(bb[:], off); err != nil {
		t.Fatal(err)
	}
	bb[0] ^= 0xff
	if _, err := f.WriteAt(bb[:], off); err != nil {
		t.Fatal(err)
	}
	_ = syscall.Fsync(int(f.Fd()))
}
