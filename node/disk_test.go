package node

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/wats-network/wats/metrics"
	"github.com/wats-network/wats/repo"
)

// fakeDisk is a repo disk of 1 GiB whose free space the test sets.
type fakeDisk struct{ free atomic.Uint64 }

func (d *fakeDisk) statfs(string) (uint64, uint64, error) { return d.free.Load(), 1 << 30, nil }

// TestFullDiskRefusesWritesAndServesPeers: with the repo's disk below the
// reserve (64 MiB of 1 GiB), a node refuses events and blobs with an error
// naming the repo and saying "disk full", stores nothing gossiped, and
// still serves its log to a peer that syncs from it; once the disk has
// room, writes are accepted and what it missed comes by sync.
func TestFullDiskRefusesWritesAndServesPeers(t *testing.T) {
	disk := &fakeDisk{}
	disk.free.Store(500 << 20)
	cfg := testConfig(true, time.Hour) // syncs only when asked
	r, err := repo.Init(t.TempDir(), &repo.InitOptions{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	a := startNodeWith(t, r, Options{Agent: "wats/test", Statfs: disk.statfs})
	b := startNode(t, cfg)
	if st := a.Status().Disk; st == nil || st.Full || !st.Ballast || st.ReserveBytes < 64<<20 {
		t.Fatalf("disk status at the start: %+v; want room, a ballast, a reserve of 64 MiB and the memtables", st)
	}
	if _, err := os.Stat(filepath.Join(r.Dir, repo.BallastFile)); err != nil {
		t.Fatalf("no ballast file in the repo: %v", err)
	}
	publish(t, a, 3)

	disk.free.Store(60 << 20)
	if st := a.Status().Disk; st == nil || !st.Full { // status reads the disk at once
		t.Fatalf("disk status on a full disk: %+v", st)
	}
	_, err = a.AddEvent(context.Background(), "note", jsontext.Value(`{"n":"refused"}`), nil)
	if !errors.Is(err, ErrDiskFull) || !strings.Contains(err.Error(), r.Dir) || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("an event on a full disk: %v; want ErrDiskFull naming %s", err, r.Dir)
	}
	if _, _, err := a.ImportBlob(context.Background(), bytes.NewReader(make([]byte, 1<<20)), 1<<20, "", metrics.ImportUpload); !errors.Is(err, ErrDiskFull) {
		t.Fatalf("a blob on a full disk: %v; want ErrDiskFull", err)
	}
	if st := a.Status().Disk; st == nil || !st.Full {
		t.Fatalf("disk status while full: %+v", st)
	}
	if a.events.Head() != 3 {
		t.Fatalf("head %d after refused writes, want 3", a.events.Head())
	}

	// Peers are served: b syncs a's three events; b's own events, gossiped
	// to a, are not stored there.
	connect(t, b, a)
	if _, err := b.SyncPeer(context.Background(), a.ID(), nil); err != nil {
		t.Fatalf("sync from the full node: %v", err)
	}
	waitHead(t, 10*time.Second, 3, b)
	publish(t, b, 2)
	if _, err := a.SyncPeer(context.Background(), b.ID(), nil); !errors.Is(err, ErrDiskFull) {
		t.Fatalf("a sync into the full node: %v; want ErrDiskFull", err)
	}
	if a.events.Head() != 3 {
		t.Fatalf("the full node stored %d events", a.events.Head()-3)
	}

	// Room again: writes are accepted, and sync brings what was missed.
	disk.free.Store(500 << 20)
	publish(t, a, 1)
	if _, err := a.SyncPeer(context.Background(), b.ID(), nil); err != nil {
		t.Fatalf("sync once room is back: %v", err)
	}
	waitHead(t, 10*time.Second, 6, a)
	if st := a.Status().Disk; st.Full {
		t.Fatalf("disk status once room is back: %+v", st)
	}
}
