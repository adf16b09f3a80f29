package daemon

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/wats-network/wats/api"
	"github.com/wats-network/wats/config"
	"github.com/wats-network/wats/eventlog"
	"github.com/wats-network/wats/node"
	"github.com/wats-network/wats/repo"
)

// testConfig is a config on network "test", listening on 127.0.0.1 only,
// gossip on or off, syncing every hour.
func testConfig(gossip bool) *config.Config {
	cfg := config.Default()
	cfg.Network = "test"
	cfg.P2P.Listen = []string{"/ip4/127.0.0.1/tcp/0"}
	cfg.Sync.Gossip = gossip
	cfg.Sync.Interval = config.Duration{Duration: time.Hour}
	return cfg
}

// startNode starts a node of cfg (on network "test", listening on
// 127.0.0.1 only, gossip off) with its database in memory, and closes it at
// the end of the test.
func startNode(t *testing.T, edit func(*config.Config)) *node.Node {
	t.Helper()
	cfg := testConfig(false)
	if edit != nil {
		edit(cfg)
	}
	key, _, err := crypto.GenerateEd25519Key(nil)
	if err != nil {
		t.Fatal(err)
	}
	n, err := node.New(cfg, key, &node.Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	if err := n.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return n
}

// apiClient serves n's control API on a socket in a temp dir, as Serve
// does, and returns a client for it.
func apiClient(t *testing.T, n *node.Node) *api.Client {
	t.Helper()
	c := api.NewClient(serveSocket(t, n))
	t.Cleanup(c.Close)
	return c
}

// serveSocket serves n's control API on a socket in a temp dir, as Serve
// does, until the test ends, and returns the socket's path.
func serveSocket(t *testing.T, n *node.Node) string {
	t.Helper()
	return serveSocketWith(t, n, nil)
}

// serveSocketWith is serveSocket with the daemon's log ring (nil: none).
func serveSocketWith(t *testing.T, n *node.Node, ring *LogRing) string {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "api.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serveHTTP(ctx, wrapListener(l), Handler(n, ring), nil) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return sock
}

// TestAPIEvents drives the event endpoints: add, list, get by id and by
// prefix, and the errors for a bad kind, a body that is not an object, an
// unknown id and a malformed one.
func TestAPIEvents(t *testing.T) {
	n := startNode(t, nil)
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
	if n.Events().Head() != 1 {
		t.Fatalf("head %d after refused adds, want 1", n.Events().Head())
	}

	// author_use=1: what each author of the page holds; nothing without it;
	// 400 for another value.
	if _, err := c.AddEvent(ctx, "note", jsontext.Value(`{"text":"again"}`)); err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return new(net.Dialer).DialContext(ctx, "unix", c.Socket())
	}}}
	get := func(q string) (int, api.EventPage) {
		resp, err := hc.Get("http://wats" + api.PathEvents + "?after=0&limit=1" + q)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var page api.EventPage
		if resp.StatusCode == http.StatusOK {
			if err := json.UnmarshalRead(resp.Body, &page); err != nil {
				t.Fatal(err)
			}
		}
		return resp.StatusCode, page
	}
	u, _ := n.Events().AuthorUsage(n.ID().String())
	if code, page := get("&author_use=1"); code != http.StatusOK || len(page.AuthorUse) != 1 ||
		page.AuthorUse[n.ID().String()] != (api.AuthorUse{Events: 2, Bytes: u.Bytes}) || u.Bytes == 0 {
		t.Errorf("author_use=1: %d, %+v; want the node's 2 events, %d bytes", code, page.AuthorUse, u.Bytes)
	}
	for _, q := range []string{"", "&author_use=0"} {
		if code, page := get(q); code != http.StatusOK || page.AuthorUse != nil {
			t.Errorf("%q: %d, %+v; want no author_use", q, code, page.AuthorUse)
		}
	}
	if code, _ := get("&author_use=yes"); code != http.StatusBadRequest {
		t.Errorf("author_use=yes: %d, want 400", code)
	}
}

// TestAPIBlobs: a blob added through the API is listed, exported only with
// its exact size, refused past blobs.max_blob_bytes with nothing stored,
// and removed.
func TestAPIBlobs(t *testing.T) {
	n := startNode(t, func(cfg *config.Config) { cfg.Blobs.MaxBlobBytes = 3 << 20 })
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
	if err != nil || len(list) != 1 || list[0].CID != bi.CID || list[0].Size != bi.Size || list[0].Added.IsZero() {
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

// TestAPIPeerCacheAndLimits: the peer cache lists nothing on a new node and
// forgetting a peer it does not hold is a 404; the limits are the
// configured ones, with burst and interval.
func TestAPIPeerCacheAndLimits(t *testing.T) {
	n := startNode(t, func(cfg *config.Config) { cfg.Limits.SyncPerMin = 60 })
	c := apiClient(t, n)
	ctx := context.Background()
	if peers, err := c.PeerCache(ctx); err != nil || len(peers) != 0 {
		t.Fatalf("peer cache of a new node: %+v, %v", peers, err)
	}
	other, _ := peer.Decode("12D3KooWD3eckifWpRn9wQpMG9R9hX3sD158z7EqHWmweQAJU5SA")
	if err := c.ForgetPeer(ctx, other.String()); !errors.Is(err, api.ErrNotFound) {
		t.Fatalf("forgetting a peer not held: %v, want ErrNotFound", err)
	}
	l, err := c.Limits(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range l.Requests {
		if r.Type == "sync" && (r.PerMin != 60 || r.Burst != 15 || time.Duration(r.IntervalNs) != time.Second) {
			t.Fatalf("sync limit %+v, want 60/min, burst 15, one a second", r)
		}
	}

}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// startRun runs Run on r with ctx and log in a goroutine, and returns its
// control API's client once the status answers (within 10 s) and the
// channel of Run's error. The client is closed when the test ends.
func startRun(t *testing.T, ctx context.Context, r *repo.Repo, log *slog.Logger) (*api.Client, <-chan error) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- Run(ctx, r, &node.Options{Logger: log}, nil) }()
	c := api.NewClient(r.SocketPath())
	t.Cleanup(func() { c.Close() })
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) { // waiting for the daemon to start
		_, err := c.Status(t.Context())
		if err == nil {
			return c, done
		}
		if !errors.Is(err, api.ErrNoDaemon) || time.Now().After(deadline) {
			t.Fatalf("status: %v", err)
		}
	}
}

// TestRunServesTheAPIAndStopsCleanly runs the daemon's Run on a repo: the
// control API answers on the socket (mode 0600), a second Run on the same
// repo is refused, and cancelling the context stops it with no error and
// removes the socket.
func TestRunServesTheAPIAndStopsCleanly(t *testing.T) {
	r, err := repo.Init(t.TempDir(), &repo.InitOptions{Config: testConfig(true)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	c, done := startRun(t, ctx, r, quietLogger())
	st, err := c.Status(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if st.PeerID != repo.PeerID(r).String() || st.Network != "test" || !st.Gossip {
		t.Fatalf("status %+v does not describe the repo's node", st)
	}
	fi, err := os.Stat(r.SocketPath())
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket mode: %v %v, want 0600", fi.Mode(), err)
	}
	if err := Run(context.Background(), r, &node.Options{Logger: quietLogger()}, nil); !errors.Is(err, repo.ErrLocked) {
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

// TestNDJSONLines: a progress line is one JSON object and a newline, with
// the fields the API has always sent: "done" and "error" only when set.
func TestNDJSONLines(t *testing.T) {
	rec := httptest.NewRecorder()
	line := ndjsonLines(rec)
	line(api.FetchProgress{Bytes: 1, Size: 2})
	line(api.FetchProgress{Bytes: 2, Size: 2, Done: true})
	line(api.FetchProgress{Size: 2, Error: "no"})
	want := `{"bytes":1,"size":2}` + "\n" + `{"bytes":2,"size":2,"done":true}` + "\n" + `{"bytes":0,"size":2,"error":"no"}` + "\n"
	if got := rec.Body.String(); got != want || rec.Header().Get("Content-Type") != api.ContentTypeNDJSON {
		t.Fatalf("lines %q (content type %q), want %q", got, rec.Header().Get("Content-Type"), want)
	}
}

// TestNDJSONLineInvalidUTF8: text that is not UTF-8 still makes a line.
func TestNDJSONLineInvalidUTF8(t *testing.T) {
	rec := httptest.NewRecorder()
	ndjsonLines(rec)(api.FetchProgress{Size: 1, Error: "bad \xff byte"})
	if got, want := rec.Body.String(), `{"bytes":0,"size":1,"error":"bad `+"\ufffd"+` byte"}`+"\n"; got != want {
		t.Fatalf("line %q, want %q", got, want)
	}
}

// TestAPIBlobStream: POST PathBlobStream streams a blob fetched from
// another node (real libp2p hosts on 127.0.0.1) and says it is complete;
// a held blob streams from the store; a declared size that is not the
// blob's is a failure with no byte sent; a request it cannot start is a
// 400.
func TestAPIBlobStream(t *testing.T) {
	a := startNode(t, nil)
	b := startNode(t, func(cfg *config.Config) { cfg.Blobs.AutoFetch = false })
	ca, cb := apiClient(t, a), apiClient(t, b)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	data := bytes.Repeat([]byte("streamed "), 500_000) // 4.5 MB: five chunks
	bi, err := ca.AddBlob(ctx, bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	from := a.Host().Addrs()[0].String() + "/p2p/" + a.ID().String()
	var out bytes.Buffer
	n, err := cb.StreamBlob(ctx, api.FetchRequest{CID: bi.CID, Size: bi.Size, From: from}, &out, nil)
	if err != nil || n != bi.Size || !bytes.Equal(out.Bytes(), data) {
		t.Fatalf("stream from a: %d bytes, %v", n, err)
	}
	if list, _ := cb.Blobs(ctx); len(list) != 1 || list[0].CID != bi.CID || list[0].Size != bi.Size {
		t.Fatalf("after the stream b lists %+v, want the blob", list)
	}
	out.Reset()
	if n, err := ca.StreamBlob(ctx, api.FetchRequest{CID: bi.CID, Size: bi.Size}, &out, nil); err != nil || n != bi.Size || !bytes.Equal(out.Bytes(), data) {
		t.Fatalf("stream of a held blob: %d bytes, %v", n, err)
	}
	// A size mismatch, from the provider (c lacks the blob) and held.
	c := startNode(t, func(cfg *config.Config) { cfg.Blobs.AutoFetch = false })
	cc := apiClient(t, c)
	for _, tc := range []struct {
		name string
		cl   *api.Client
		from string
	}{{"fetched", cc, from}, {"held", ca, ""}} {
		out.Reset()
		n, err := tc.cl.StreamBlob(ctx, api.FetchRequest{CID: bi.CID, Size: bi.Size + 1, From: tc.from}, &out, nil)
		if !errors.Is(err, api.ErrFetchFailed) || !strings.Contains(err.Error(), "not of the declared size") || n != 0 || out.Len() != 0 {
			t.Errorf("%s, declared one byte more: %d bytes, %v; want a failure and nothing", tc.name, n, err)
		}
	}
	if list, _ := cc.Blobs(ctx); len(list) != 0 {
		t.Fatalf("a blob of the wrong size was stored: %+v", list)
	}
	var apiErr *api.Error
	for _, req := range []api.FetchRequest{{CID: "nope", Size: 1}, {CID: bi.CID, Size: bi.Size, From: "nobody"}} {
		if _, err := cb.StreamBlob(ctx, req, &out, nil); !errors.As(err, &apiErr) || apiErr.Status != http.StatusBadRequest {
			t.Errorf("stream %+v: %v, want 400", req, err)
		}
	}
}

// TestHeaderText: a trailer's text is printable ASCII, cut at its bound
// and kept whole at it.
func TestHeaderText(t *testing.T) {
	for _, tc := range []struct {
		in   string
		max  int
		want string
	}{
		{"could not fetch: a\nb\x1b[31m é", 100, "could not fetch: a?b?[31m ?"},
		{"abcd", 4, "abcd"},
		{"abcde", 4, "abcd"},
	} {
		if got := headerText(tc.in, tc.max); got != tc.want {
			t.Errorf("headerText(%q, %d) = %q, want %q", tc.in, tc.max, got, tc.want)
		}
	}
}
