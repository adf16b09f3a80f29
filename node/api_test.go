package node

import (
	"context"
	"errors"
	"net"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/wats-network/wats/eventlog"
	"github.com/wats-network/wats/node/api"
)

// apiClient serves n's control API on a socket in a temp dir and returns a
// client for it.
func apiClient(t *testing.T, n *testNode) *api.Client {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "api.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: n.Handler()}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	c := api.NewClient(sock)
	t.Cleanup(c.Close)
	return c
}

// TestAPIEvents drives the event endpoints: add, list, get by id and by
// prefix, and the errors for a bad kind, a body that is not an object, an
// unknown id and a malformed one.
func TestAPIEvents(t *testing.T) {
	n := startNode(t, testConfig(false, time.Hour))
	c := apiClient(t, n)
	ctx := context.Background()
	raw, err := c.AddEvent(ctx, "note", jsontext.Value(`{"text":"hi"}`))
	if err != nil {
		t.Fatal(err)
	}
	ev, err := eventlog.Decode(raw)
	if err != nil || ev.Verify(time.Now()) != nil || ev.Author != n.ID().String() {
		t.Fatalf("added event %s does not verify as the node's: %v", raw, err)
	}
	page, err := c.Events(ctx, 0, 10)
	if err != nil || len(page.Events) != 1 || page.Head != 1 || page.More {
		t.Fatalf("events page %+v, %v", page, err)
	}
	for _, id := range []string{ev.ID, ev.ID[:eventlog.MinIDPrefix]} {
		got, err := c.Event(ctx, id)
		if err != nil {
			t.Fatalf("get %s: %v", id, err)
		}
		if g, _ := eventlog.Decode(got); g == nil || g.ID != ev.ID {
			t.Fatalf("get %s returned %s", id, got)
		}
	}
	var apiErr *api.Error
	if _, err := c.Event(ctx, "00000000"); !errors.Is(err, api.ErrNotFound) {
		t.Fatalf("unknown id: %v, want ErrNotFound", err)
	}
	if _, err := c.Event(ctx, "xyz"); !errors.As(err, &apiErr) || apiErr.Status != http.StatusBadRequest {
		t.Fatalf("malformed id: %v, want 400", err)
	}
	for _, bad := range []struct{ kind, body string }{
		{"Bad Kind", `{}`}, {"note", `[1]`}, {"", `{}`},
	} {
		if _, err := c.AddEvent(ctx, bad.kind, jsontext.Value(bad.body)); !errors.As(err, &apiErr) || apiErr.Status != http.StatusBadRequest {
			t.Errorf("add %q %s: %v, want 400", bad.kind, bad.body, err)
		}
	}
	if n.events.Head() != 1 {
		t.Fatalf("head %d after refused adds, want 1", n.events.Head())
	}
}
