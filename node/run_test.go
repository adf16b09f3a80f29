package node

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/wats-network/wats/node/api"
	"github.com/wats-network/wats/repo"
)

// TestRunServesTheAPIAndStopsCleanly runs the daemon's Run on a repo: the
// control API answers on the socket (mode 0600), a second Run on the same
// repo is refused, and cancelling the context stops it with no error and
// removes the socket.
func TestRunServesTheAPIAndStopsCleanly(t *testing.T) {
	r, err := repo.Init(t.TempDir(), repo.InitOptions{Config: testConfig(true, time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, r, Options{Logger: quietLogger()}) }()

	c := api.NewClient(r.SocketPath())
	defer c.Close()
	var st *api.Status
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, err = c.Status(context.Background())
		if err == nil {
			break
		}
		if !errors.Is(err, api.ErrNoDaemon) || time.Now().After(deadline) {
			t.Fatalf("status: %v", err)
		}
		time.Sleep(20 * time.Millisecond) // waiting for the daemon to start
	}
	if st.PeerID != repo.PeerID(r).String() || st.Network != "test" || !st.Gossip {
		t.Fatalf("status %+v does not describe the repo's node", st)
	}
	fi, err := os.Stat(r.SocketPath())
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket mode: %v %v, want 0600", fi.Mode(), err)
	}
	if err := Run(context.Background(), r, Options{Logger: quietLogger()}); !errors.Is(err, repo.ErrLocked) {
		t.Fatalf("a second Run on the same repo: %v, want repo.ErrLocked", err)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run after cancel: %v, want nil", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("Run did not return within 15 s of cancel")
	}
	if _, err := os.Stat(r.SocketPath()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("socket left behind: %v", err)
	}
}
