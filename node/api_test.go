package node

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"path/filepath"
	"strings"
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

// TestAPILimitsAndDiag: GET /v1/limits shows the effective limits with
// burst and interval, and GET /v1/diag counts accepted and refused requests.
func TestAPILimitsAndDiag(t *testing.T) {
	cfg := testConfig(false, time.Hour)
	cfg.Limits.SyncPerMin, cfg.Limits.ReportPerMin = 60, 0
	n := startNode(t, cfg)
	c := apiClient(t, n)
	ctx := context.Background()
	l, err := c.Limits(ctx)
	if err != nil {
		t.Fatal(err)
	}
	byType := map[string]api.RequestLimit{}
	for _, r := range l.Requests {
		byType[r.Type] = r
	}
	if s := byType["sync"]; s.PerMin != 60 || s.Burst != 15 || time.Duration(s.IntervalNs) != time.Second || s.Key != "limits.sync_per_min" {
		t.Fatalf("sync limit %+v, want 60/min, burst 15, one a second", s)
	}
	if r := byType["crash_report"]; r.PerMin != 0 || r.Burst != 0 {
		t.Fatalf("crash_report limit %+v, want unlimited", r)
	}
	if h := byType["hello"]; h.PerMin != 60 || h.Burst != 15 {
		t.Fatalf("hello limit %+v, want the default 60, burst 15", h)
	}

	flooder := rawHost(t)
	flooder.Peerstore().AddAddrs(n.ID(), n.Host().Addrs(), time.Hour)
	for range 17 {
		exchange(t, flooder, n.ID(), frame(`{"type":"sync","after":"0"}`))
	}
	d, err := c.Diag(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range d.Requests {
		if r.Type == "sync" && (r.Accepted < 15 || r.Accepted+r.Refused != 17 || r.Refused < 1) {
			t.Fatalf("sync counts %+v, want 15 (or 16) accepted of 17", r)
		}
	}
	if d.TrackedPeers < 1 || d.PeerLinesLogged < 1 {
		t.Fatalf("diag %+v: want the flooder tracked and one throttled line", d)
	}
}

// TestAPIBlobs: a blob added through the API is listed, exported only with
// its exact size, refused past blobs.max_blob_bytes with nothing stored,
// and removed.
func TestAPIBlobs(t *testing.T) {
	cfg := testConfig(false, time.Hour)
	cfg.Blobs.MaxBlobBytes = 3 << 20
	n := startNode(t, cfg)
	c := apiClient(t, n)
	ctx := context.Background()
	data := bytes.Repeat([]byte("wats blob "), 200_000) // 2 MB: three chunks
	bi, err := c.AddBlob(ctx, bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if bi.Size != uint64(len(data)) || !strings.HasPrefix(bi.CID, "bafy") {
		t.Fatalf("added %+v", bi)
	}
	list, err := c.Blobs(ctx)
	if err != nil || len(list) != 1 || list[0] != *bi {
		t.Fatalf("list %+v, %v", list, err)
	}
	var out bytes.Buffer
	if err := c.GetBlob(ctx, bi.CID, bi.Size, &out); err != nil || !bytes.Equal(out.Bytes(), data) {
		t.Fatalf("get: %v, %d bytes", err, out.Len())
	}
	var apiErr *api.Error
	if err := c.GetBlob(ctx, bi.CID, bi.Size+1, &out); !errors.As(err, &apiErr) || apiErr.Status != http.StatusConflict {
		t.Fatalf("get with another size: %v, want 409", err)
	}
	big := bytes.Repeat([]byte{1}, 3<<20+1)
	if _, err := c.AddBlob(ctx, bytes.NewReader(big)); !errors.As(err, &apiErr) || apiErr.Status != http.StatusRequestEntityTooLarge {
		t.Fatalf("a blob past max_blob_bytes: %v, want 413", err)
	}
	if list, _ := c.Blobs(ctx); len(list) != 1 {
		t.Fatalf("after a refused blob the store lists %d blobs, want 1", len(list))
	}
	if err := c.RemoveBlob(ctx, bi.CID); err != nil {
		t.Fatal(err)
	}
	if err := c.GetBlob(ctx, bi.CID, bi.Size, &out); !errors.Is(err, api.ErrNotFound) {
		t.Fatalf("get after remove: %v, want not found", err)
	}
}
