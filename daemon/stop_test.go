package daemon

import (
	"context"
	"errors"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/wats-network/wats/api"
	"github.com/wats-network/wats/repo"
)

// TestRunStopsWhenAsked: POST api.PathShutdown on the control socket
// answers 202 with the daemon's pid and stops Run as a cancelled context
// does (no error, the socket removed, the repo lock released); the
// dashboard, which answers on TCP with its token, serves neither the
// shutdown nor the disconnect (only GETs of its list), and the daemon
// still runs after those asked.
func TestRunStopsWhenAsked(t *testing.T) {
	cfg := testConfig(false)
	cfg.API.DashboardAddr = "127.0.0.1:0"
	r, err := repo.Init(t.TempDir(), &repo.InitOptions{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	c, done := startRun(t, context.Background(), r, quietLogger())
	d, err := c.Dashboard(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{api.PathShutdown, api.PathDisconnect} {
		for _, method := range []string{http.MethodPost, http.MethodGet} {
			req, _ := http.NewRequest(method, d.URL+"api"+path, strings.NewReader(`{}`))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusMethodNotAllowed && resp.StatusCode != http.StatusNotFound {
				t.Errorf("%s %s on the dashboard, with its token: %d, want 405 or 404", method, path, resp.StatusCode)
			}
		}
	}
	if _, err := c.Status(t.Context()); err != nil {
		t.Fatalf("the daemon after the dashboard was asked to stop it: %v", err)
	}

	sd, err := c.Shutdown(t.Context())
	if err != nil || sd.PID != os.Getpid() {
		t.Fatalf("shutdown: %+v, %v; want the pid %d", sd, err, os.Getpid())
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run after a shutdown asked: %v, want nil", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("Run did not return within 15 s of a shutdown asked")
	}
	if _, err := os.Stat(r.SocketPath()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket left behind: %v", err)
	}
	if pid, held, err := repo.LockHolder(r.Dir); err != nil || held {
		t.Errorf("the repo lock after Run returned: pid %d, held %v, %v", pid, held, err)
	}
}

// TestAPIDisconnect: POST api.PathDisconnect closes the connections to a
// connected peer and says how many; for a peer not connected it closes
// none and says 0; a malformed peer ID is 400. Handler, which runs no
// daemon, answers a shutdown 501.
func TestAPIDisconnect(t *testing.T) {
	a, b := startNode(t, nil), startNode(t, nil)
	c := apiClient(t, a)
	ctx := t.Context()
	if _, err := c.Connect(ctx, b.FullAddrs()[0]); err != nil {
		t.Fatal(err)
	}
	// The nodes' own requests (hello, sync) may dial again right after:
	// what the disconnect must have done is close the connections open
	// before it.
	before := a.Host().Network().ConnsToPeer(b.ID())
	if len(before) == 0 {
		t.Fatal("after connect: no connection to the peer")
	}
	d, err := c.Disconnect(ctx, b.ID().String())
	if err != nil || d.Closed < len(before) || d.PeerID != b.ID().String() {
		t.Fatalf("disconnect: %+v, %v; want the %d connections open before, at least, closed", d, err, len(before))
	}
	for _, conn := range before {
		if !conn.IsClosed() {
			t.Fatalf("connection %s still open after the disconnect", conn.ID())
		}
	}
	c3 := startNode(t, nil)
	if d, err := c.Disconnect(ctx, c3.ID().String()); err != nil || d.Closed != 0 {
		t.Fatalf("disconnect of a peer never connected: %+v, %v; want 0 closed", d, err)
	}
	var apiErr *api.Error
	if _, err := c.Disconnect(ctx, "12D3KooWnot"); !errors.As(err, &apiErr) || apiErr.Status != http.StatusBadRequest {
		t.Fatalf("disconnect of a malformed peer ID: %v, want 400", err)
	}
	if _, err := c.Shutdown(ctx); !errors.As(err, &apiErr) || apiErr.Status != http.StatusNotImplemented {
		t.Fatalf("shutdown through Handler: %v, want 501", err)
	}
}

// TestSyncAllWithNoPeer: a sync from every peer, with none connected, is
// an error that says so and what to do, not a sync that succeeded from
// no one.
func TestSyncAllWithNoPeer(t *testing.T) {
	c := apiClient(t, startNode(t, nil))
	final, err := c.SyncAll(t.Context(), nil)
	if err == nil || !strings.Contains(err.Error(), "no peer to sync from") || !strings.Contains(err.Error(), "peers connect") {
		t.Fatalf("sync from all with no peer: %+v, %v; want an error saying none is connected", final, err)
	}
}
