package api

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// fakeDaemon serves handler on a Unix socket in a temporary directory and
// returns a client for it.
func fakeDaemon(t *testing.T, handler http.Handler) *Client {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "api.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(handler)
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	c := NewClient(sock)
	t.Cleanup(c.Close)
	return c
}

// route answers method and path with status and body, and fails the test
// on any other request.
func route(t *testing.T, method, path string, status int, body string, check func(*http.Request)) http.Handler {
	t.Helper()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != method || r.URL.Path != path {
			t.Errorf("request %s %s, want %s %s", r.Method, r.URL.Path, method, path)
			http.Error(w, "wrong route", http.StatusTeapot)
			return
		}
		if check != nil {
			check(r)
		}
		w.Header().Set("Content-Type", ContentTypeJSON)
		w.WriteHeader(status)
		io.WriteString(w, body)
	})
}

func TestID(t *testing.T) {
	c := fakeDaemon(t, route(t, "GET", PathID, 200,
		`{"peer_id":"12D3KooWA","addrs":["/ip4/127.0.0.1/tcp/4001/p2p/12D3KooWA"],"network":"devnet","agent":"wats/dev","extra":1}`, nil))
	id, err := c.ID(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	want := ID{PeerID: "12D3KooWA", Addrs: []string{"/ip4/127.0.0.1/tcp/4001/p2p/12D3KooWA"}, Network: "devnet", Agent: "wats/dev"}
	if fmt.Sprint(*id) != fmt.Sprint(want) {
		t.Errorf("ID = %+v, want %+v", *id, want)
	}
}

func TestStatus(t *testing.T) {
	c := fakeDaemon(t, route(t, "GET", PathStatus, 200,
		`{"peer_id":"P","network":"n","agent":"a","peers":2,"events":7,"head":9,"gossip":true,"uptime_seconds":61,"dropped":3}`, nil))
	st, err := c.Status(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	want := Status{PeerID: "P", Network: "n", Agent: "a", Peers: 2, Events: 7, Head: 9, Gossip: true, UptimeSeconds: 61, Dropped: 3}
	if !reflect.DeepEqual(*st, want) {
		t.Errorf("Status = %+v, want %+v", *st, want)
	}
}

func TestPeers(t *testing.T) {
	c := fakeDaemon(t, route(t, "GET", PathPeers, 200,
		`[{"peer_id":"A","addrs":["/ip4/1.2.3.4/tcp/1"],"agent":"wats/x","hello":true,"head":5,"cursor":4,"direction":"inbound"}]`, nil))
	ps, err := c.Peers(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 1 {
		t.Fatalf("got %d peers, want 1", len(ps))
	}
	p := ps[0]
	if p.PeerID != "A" || !p.Hello || p.Head != 5 || p.Cursor != 4 || p.Direction != DirectionInbound || p.Agent != "wats/x" || len(p.Addrs) != 1 {
		t.Errorf("peer = %+v", p)
	}
}

func TestPeersNullIsEmpty(t *testing.T) {
	c := fakeDaemon(t, route(t, "GET", PathPeers, 200, `null`, nil))
	ps, err := c.Peers(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if ps == nil || len(ps) != 0 {
		t.Errorf("Peers = %#v, want empty non-nil", ps)
	}
}

func TestConnect(t *testing.T) {
	const addr = "/ip4/127.0.0.1/tcp/4001/p2p/B"
	c := fakeDaemon(t, route(t, "POST", PathConnect, 200,
		`{"peer_id":"B","hello":true,"direction":"outbound"}`, func(r *http.Request) {
			var req ConnectRequest
			if err := json.UnmarshalRead(r.Body, &req); err != nil || req.Addr != addr {
				t.Errorf("connect request = %+v, %v", req, err)
			}
		}))
	p, err := c.Connect(t.Context(), addr)
	if err != nil {
		t.Fatal(err)
	}
	if p.PeerID != "B" || !p.Hello || p.Direction != DirectionOutbound {
		t.Errorf("peer = %+v", p)
	}
}

func TestAddEvent(t *testing.T) {
	const stored = `{"id":"ab","kind":"note","body":{"x":1}}`
	c := fakeDaemon(t, route(t, "POST", PathEvents, 200, stored, func(r *http.Request) {
		if ct := r.Header.Get("Content-Type"); ct != ContentTypeJSON {
			t.Errorf("Content-Type = %q", ct)
		}
		b, _ := io.ReadAll(r.Body)
		if string(b) != `{"kind":"note","body":{"x":1}}` {
			t.Errorf("add request body = %s", b)
		}
	}))
	ev, err := c.AddEvent(t.Context(), "note", jsontext.Value(`{"x":1}`))
	if err != nil {
		t.Fatal(err)
	}
	if string(ev) != stored {
		t.Errorf("AddEvent = %s, want %s", ev, stored)
	}
}

func TestAddEventInvalidBody(t *testing.T) {
	c := fakeDaemon(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Error("request sent with an invalid body")
	}))
	if _, err := c.AddEvent(t.Context(), "note", jsontext.Value(`{"x":`)); err == nil {
		t.Fatal("AddEvent with invalid JSON body succeeded")
	}
}

func TestEvents(t *testing.T) {
	for _, tc := range []struct {
		after     uint64
		limit     int
		wantQuery string
	}{
		{0, 0, "after=0"},
		{7, 10, "after=7&limit=10"},
		{18446744073709551615, -1, "after=18446744073709551615"},
	} {
		c := fakeDaemon(t, route(t, "GET", PathEvents, 200,
			`{"events":[{"id":"a"},{"id":"b"}],"next":9,"more":true,"head":12}`, func(r *http.Request) {
				if r.URL.RawQuery != tc.wantQuery {
					t.Errorf("query = %q, want %q", r.URL.RawQuery, tc.wantQuery)
				}
			}))
		page, err := c.Events(t.Context(), tc.after, tc.limit)
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Events) != 2 || string(page.Events[1]) != `{"id":"b"}` || page.Next != 9 || !page.More || page.Head != 12 {
			t.Errorf("page = %+v", page)
		}
	}
}

func TestEvent(t *testing.T) {
	c := fakeDaemon(t, route(t, "GET", PathEvent+"abc123", 200, `{"id":"abc123"}`, nil))
	ev, err := c.Event(t.Context(), "abc123")
	if err != nil {
		t.Fatal(err)
	}
	if string(ev) != `{"id":"abc123"}` {
		t.Errorf("Event = %s", ev)
	}
	if _, err := c.Event(t.Context(), ""); err == nil {
		t.Error("Event(\"\") succeeded")
	}
}

func TestEventPathEscaped(t *testing.T) {
	c := fakeDaemon(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.EscapedPath() != PathEvent+"a%2Fb" {
			t.Errorf("escaped path = %q", r.URL.EscapedPath())
		}
		io.WriteString(w, `{}`)
	}))
	if _, err := c.Event(t.Context(), "a/b"); err != nil {
		t.Fatal(err)
	}
}

func TestErrorResponses(t *testing.T) {
	for _, tc := range []struct {
		name      string
		status    int
		body      string
		wantMsg   string
		notFound  bool
		ambiguous bool
	}{
		{"error body", 404, `{"error":"event not found"}`, "event not found", true, false},
		{"ambiguous prefix", 409, `{"error":"prefix matches 2 events"}`, "prefix matches 2 events", false, true},
		{"plain text", 500, "boom\n", "boom", false, false},
		{"empty", 400, "", "Bad Request", false, false},
		{"other json", 502, `{"message":"x"}`, "Bad Gateway", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := fakeDaemon(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tc.status)
				io.WriteString(w, tc.body)
			}))
			_, err := c.Event(t.Context(), "x")
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("err = %v (%T), want *Error", err, err)
			}
			if e.Status != tc.status || e.Message != tc.wantMsg {
				t.Errorf("Error = %+v, want status %d message %q", e, tc.status, tc.wantMsg)
			}
			if errors.Is(err, ErrNotFound) != tc.notFound {
				t.Errorf("errors.Is(err, ErrNotFound) = %v, want %v", !tc.notFound, tc.notFound)
			}
			if errors.Is(err, ErrAmbiguous) != tc.ambiguous {
				t.Errorf("errors.Is(err, ErrAmbiguous) = %v, want %v", !tc.ambiguous, tc.ambiguous)
			}
			if errors.Is(err, ErrNoDaemon) {
				t.Error("an HTTP error matches ErrNoDaemon")
			}
		})
	}
}

func TestErrorBodyBounded(t *testing.T) {
	c := fakeDaemon(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(500)
		io.WriteString(w, strings.Repeat("x", MaxErrorBytes+100))
	}))
	_, err := c.Status(t.Context())
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("err = %v", err)
	}
	if len(e.Message) != MaxErrorBytes {
		t.Errorf("message length = %d, want %d", len(e.Message), MaxErrorBytes)
	}
}

func TestNoDaemonMissingSocket(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "api.sock")
	c := NewClient(sock)
	_, err := c.Status(t.Context())
	if !errors.Is(err, ErrNoDaemon) {
		t.Fatalf("err = %v, want ErrNoDaemon", err)
	}
	var nd *NoDaemonError
	if !errors.As(err, &nd) || nd.Socket != sock {
		t.Fatalf("err = %#v, want *NoDaemonError for %s", err, sock)
	}
	if !strings.Contains(err.Error(), sock) {
		t.Errorf("error %q does not name the socket", err)
	}
}

func TestNoDaemonStaleSocket(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "api.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close() // the file stays, nothing listens: ECONNREFUSED
	c := NewClient(sock)
	for name, call := range map[string]func() error{
		"Tail": func() error {
			return c.Tail(t.Context(), 0, func(jsontext.Value) error { return nil })
		},
		"Sync": func() error { _, err := c.Sync(t.Context(), "p", nil); return err },
		"Metrics": func() error {
			_, err := c.Metrics(t.Context())
			return err
		},
	} {
		if err := call(); !errors.Is(err, ErrNoDaemon) {
			t.Errorf("%s: err = %v, want ErrNoDaemon", name, err)
		}
	}
}

func TestResponseBound(t *testing.T) {
	const limit = 64
	for _, tc := range []struct {
		size    int
		tooLong bool
	}{{limit, false}, {limit + 1, true}} {
		// A JSON string of exactly tc.size bytes.
		body := `"` + strings.Repeat("a", tc.size-2) + `"`
		c := fakeDaemon(t, route(t, "GET", PathEvent+"x", 200, body, nil))
		c.maxResponse = limit
		_, err := c.Event(t.Context(), "x")
		if got := errors.Is(err, ErrTooLarge); got != tc.tooLong {
			t.Errorf("size %d: err = %v, want ErrTooLarge %v", tc.size, err, tc.tooLong)
		}
	}
}

// streamer writes lines as NDJSON, flushing each, then holds the stream
// open until the client goes away if hold is set.
func streamer(t *testing.T, method, path string, lines []string, hold bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != method || r.URL.Path != path {
			t.Errorf("request %s %s, want %s %s", r.Method, r.URL.Path, method, path)
		}
		w.Header().Set("Content-Type", ContentTypeNDJSON)
		for _, l := range lines {
			io.WriteString(w, l+"\n")
			w.(http.Flusher).Flush()
		}
		if hold {
			<-r.Context().Done()
		}
	})
}

func TestTail(t *testing.T) {
	lines := []string{`{"id":"1"}`, ``, `{"id":"2"}`, `{"id":"3"}`}
	var gotQuery string
	h := streamer(t, "GET", PathTail, lines, true)
	c := fakeDaemon(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotQuery = r.URL.RawQuery
		h.ServeHTTP(w, r)
	}))
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var got []string
	err := c.Tail(ctx, 5, func(v jsontext.Value) error {
		got = append(got, string(v))
		if len(got) == 3 {
			cancel() // the stream is endless: the client leaves
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Tail err = %v, want context.Canceled", err)
	}
	if want := `{"id":"1"} {"id":"2"} {"id":"3"}`; strings.Join(got, " ") != want {
		t.Errorf("tailed %v, want %s", got, want)
	}
	if gotQuery != "after=5" {
		t.Errorf("query = %q, want after=5", gotQuery)
	}
}

func TestTailCallbackError(t *testing.T) {
	c := fakeDaemon(t, streamer(t, "GET", PathTail, []string{`1`, `2`, `3`}, true))
	stop := errors.New("stop")
	n := 0
	err := c.Tail(t.Context(), 0, func(jsontext.Value) error {
		n++
		if n == 2 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || n != 2 {
		t.Errorf("Tail err = %v after %d values, want stop after 2", err, n)
	}
}

func TestTailStreamEnded(t *testing.T) {
	c := fakeDaemon(t, streamer(t, "GET", PathTail, []string{`{"id":"1"}`}, false))
	n := 0
	err := c.Tail(t.Context(), 0, func(jsontext.Value) error { n++; return nil })
	if !errors.Is(err, ErrStreamEnded) || n != 1 {
		t.Errorf("Tail err = %v after %d values, want ErrStreamEnded after 1", err, n)
	}
}

func TestTailInvalidLine(t *testing.T) {
	c := fakeDaemon(t, streamer(t, "GET", PathTail, []string{`{"id":`}, false))
	err := c.Tail(t.Context(), 0, func(jsontext.Value) error { return nil })
	if err == nil || errors.Is(err, ErrStreamEnded) {
		t.Errorf("Tail err = %v, want an invalid-line error", err)
	}
}

func TestStreamLineBound(t *testing.T) {
	const limit = 32
	for _, tc := range []struct {
		size    int
		tooLong bool
	}{{limit, false}, {limit + 1, true}} {
		line := `"` + strings.Repeat("a", tc.size-2) + `"`
		c := fakeDaemon(t, streamer(t, "GET", PathTail, []string{line}, false))
		c.maxLine = limit
		err := c.Tail(t.Context(), 0, func(jsontext.Value) error { return nil })
		if got := errors.Is(err, ErrTooLarge); got != tc.tooLong {
			t.Errorf("line of %d bytes: err = %v, want ErrTooLarge %v", tc.size, err, tc.tooLong)
		}
	}
}

func TestSync(t *testing.T) {
	lines := []string{
		`{"peer":"P","received":256,"stored":250,"dropped":6,"cursor":256,"peer_head":600}`,
		`{"peer":"P","received":600,"stored":590,"dropped":10,"cursor":600,"peer_head":600}`,
		`{"peer":"P","received":600,"stored":590,"dropped":10,"cursor":600,"peer_head":600,"done":true}`,
		`{"peer":"P","received":9999}`, // after the final line: never read
	}
	var req SyncRequest
	h := streamer(t, "POST", PathSync, lines, false)
	c := fakeDaemon(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := json.UnmarshalRead(r.Body, &req); err != nil {
			t.Error(err)
		}
		h.ServeHTTP(w, r)
	}))
	var seen []SyncProgress
	final, err := c.Sync(t.Context(), "/ip4/127.0.0.1/tcp/1/p2p/P", func(p SyncProgress) { seen = append(seen, p) })
	if err != nil {
		t.Fatal(err)
	}
	if req.Peer != "/ip4/127.0.0.1/tcp/1/p2p/P" {
		t.Errorf("sync request = %+v", req)
	}
	if len(seen) != 3 {
		t.Fatalf("saw %d progress lines, want 3", len(seen))
	}
	want := SyncProgress{Peer: "P", Received: 600, Stored: 590, Dropped: 10, Cursor: 600, PeerHead: 600, Done: true}
	if !reflect.DeepEqual(*final, want) || !reflect.DeepEqual(seen[2], want) {
		t.Errorf("final = %+v, want %+v", *final, want)
	}
	if seen[0].Received != 256 || seen[0].Done {
		t.Errorf("first = %+v", seen[0])
	}
}

// TestClientSyncAll: a sync from every peer is asked with "all" and no
// peer, and its lines carry each peer's share.
func TestClientSyncAll(t *testing.T) {
	lines := []string{
		`{"peer":"","received":10,"stored":10,"dropped":0,"cursor":0,"peer_head":20,"shares":[{"peer":"A","received":10,"stored":10,"dropped":0,"cursor":0,"peer_head":20,"done":false},{"peer":"B","received":0,"stored":0,"dropped":0,"cursor":0,"peer_head":20,"done":false}]}`,
		`{"peer":"","received":20,"stored":20,"dropped":0,"cursor":0,"peer_head":20,"done":true,"shares":[{"peer":"A","received":12,"stored":12,"dropped":0,"cursor":20,"peer_head":20,"done":true},{"peer":"B","received":8,"stored":8,"dropped":0,"cursor":20,"peer_head":20,"done":true}]}`,
	}
	var req SyncRequest
	h := streamer(t, "POST", PathSync, lines, false)
	c := fakeDaemon(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := json.UnmarshalRead(r.Body, &req); err != nil {
			t.Error(err)
		}
		h.ServeHTTP(w, r)
	}))
	final, err := c.SyncAll(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !req.All || req.Peer != "" {
		t.Errorf("sync request = %+v", req)
	}
	if len(final.Shares) != 2 || final.Shares[1] != (SyncShare{Peer: "B", Received: 8, Stored: 8, Cursor: 20, PeerHead: 20, Done: true}) {
		t.Errorf("final shares = %+v", final.Shares)
	}
}

func TestSyncFailed(t *testing.T) {
	c := fakeDaemon(t, streamer(t, "POST", PathSync, []string{
		`{"peer":"P","received":3}`,
		`{"peer":"P","received":3,"error":"rate limited (sync): retry later"}`,
	}, true))
	final, err := c.Sync(t.Context(), "P", nil)
	if !errors.Is(err, ErrSyncFailed) || !strings.Contains(err.Error(), "rate limited") {
		t.Fatalf("Sync err = %v, want ErrSyncFailed with the reason", err)
	}
	if final == nil || final.Received != 3 || final.Error == "" {
		t.Errorf("final = %+v", final)
	}
}

func TestSyncStreamEnded(t *testing.T) {
	c := fakeDaemon(t, streamer(t, "POST", PathSync, []string{`{"peer":"P","received":1}`}, false))
	last, err := c.Sync(t.Context(), "P", nil)
	if !errors.Is(err, ErrStreamEnded) {
		t.Fatalf("Sync err = %v, want ErrStreamEnded", err)
	}
	if last == nil || last.Received != 1 {
		t.Errorf("last = %+v", last)
	}
}

func TestSyncHTTPError(t *testing.T) {
	c := fakeDaemon(t, route(t, "POST", PathSync, 404, `{"error":"unknown peer P"}`, nil))
	_, err := c.Sync(t.Context(), "P", nil)
	var e *Error
	if !errors.As(err, &e) || e.Message != "unknown peer P" {
		t.Errorf("Sync err = %v, want *Error unknown peer", err)
	}
}

func TestMetrics(t *testing.T) {
	const text = "# TYPE wats_events_total counter\nwats_events_total 3\n"
	c := fakeDaemon(t, route(t, "GET", PathMetrics, 200, text, nil))
	got, err := c.Metrics(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if got != text {
		t.Errorf("Metrics = %q", got)
	}
}

func TestConcurrentCalls(t *testing.T) {
	c := fakeDaemon(t, route(t, "GET", PathStatus, 200, `{"events":1}`, nil))
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			st, err := c.Status(t.Context())
			if err != nil || st.Events != 1 {
				t.Errorf("Status = %+v, %v", st, err)
			}
		})
	}
	wg.Wait()
}

// TestWireNames pins the JSON names of the shared types: the daemon and
// scripts depend on them.
func TestWireNames(t *testing.T) {
	for _, tc := range []struct {
		v    any
		want string
	}{
		{ID{PeerID: "p", Addrs: []string{"a"}, Network: "n", Agent: "g"},
			`{"peer_id":"p","addrs":["a"],"network":"n","agent":"g"}`},
		{Status{PeerID: "p", Network: "n", Agent: "g", Peers: 1, Events: 2, Head: 3, Gossip: true, UptimeSeconds: 4, Dropped: 5, InFlight: 6, ChallengeEffort: 7, ChallengesIssued: 8, ChallengesSolved: 9, ChallengesFailed: 10, Blobs: 11, BlobBytes: 12, BlobQuotaBytes: 13, PartialBlobs: 38, PartialBytes: 39,
			PeerTiers: map[string]int{"new": 1}, StrangerSlots: 14, StrangerSlotsUsed: 15,
			Log:          LogUsage{Events: 16, Bytes: 17, Authors: 18, MaxEvents: 19, MaxBytes: 20, MaxEventsPerAuthor: 21, MaxBytesPerAuthor: 22, Commits: 23},
			Reachability: "private", RelayAddrs: []string{"r"}, HolePunches: HolePunches{Succeeded: 24, Failed: 25},
			DHT: DHTStatus{Mode: "auto", Server: true, RoutingTable: 26, LANRoutingTable: 31, ProviderRecords: 27, MaxProviderRecords: 28, ProviderRecordsRefused: 30, Discovered: 29,
				RequestsGreeted: 40, RequestsRefusedStrangers: 41, LANRequestsRefusedStrangers: 42,
				AllowancesBudget: 43, AllowancesSolved: 44, AllowancesOverSolved: 45},
			Bandwidth: BandwidthStatus{UpBytes: 32, DownBytes: 33, UpBytesPerS: 34, DownBytesPerS: 35, MonthlyUpBytes: 36, MonthUpBytes: 37, Month: "2026-12", StrangerBlobsStopped: true}},
			`{"peer_id":"p","network":"n","agent":"g","peers":1,"events":2,"head":3,"gossip":true,"uptime_seconds":4,"dropped":5,"in_flight":6,"challenge_effort":7,"challenges_issued":8,"challenges_solved":9,"challenges_failed":10,"blobs":11,"blob_bytes":12,"blob_quota_bytes":13,"partial_blobs":38,"partial_bytes":39,"peer_tiers":{"new":1},"stranger_slots":14,"stranger_slots_used":15,` +
				`"log":{"events":16,"bytes":17,"authors":18,"max_events":19,"max_bytes":20,"max_events_per_author":21,"max_bytes_per_author":22,"commits":23},` +
				`"reachability":"private","relay_addrs":["r"],"hole_punches":{"succeeded":24,"failed":25},` +
				`"dht":{"mode":"auto","server":true,"routing_table":26,"lan_routing_table":31,"provider_records":27,"max_provider_records":28,"provider_records_refused":30,"discovered":29,"requests_greeted":40,"requests_refused_strangers":41,"lan_requests_refused_strangers":42,"allowances_budget":43,"allowances_solved":44,"allowances_over_solved":45},` +
				`"bandwidth":{"up_bytes":32,"down_bytes":33,"up_bytes_per_s":34,"down_bytes_per_s":35,"monthly_up_bytes":36,"month_up_bytes":37,"month":"2026-12","stranger_blobs_stopped":true}}`},
		{FetchRequest{CID: "c", Size: 1, From: "p"}, `{"cid":"c","size":1,"from":"p"}`},
		{FetchProgress{Bytes: 1, Size: 2, Done: true}, `{"bytes":1,"size":2,"done":true}`},
		{FetchProgress{Size: 2, Finding: true}, `{"bytes":0,"size":2,"finding":true}`},
		{FetchProgress{Bytes: 2, Size: 2, Provider: "p", Done: true}, `{"bytes":2,"size":2,"provider":"p","done":true}`},
		{FetchProgress{Bytes: 3, Size: 4, Resumed: 2}, `{"bytes":3,"size":4,"resumed":2}`},
		{PartialBlob{CID: "c", Size: 4, Held: 2, Bytes: 3, Progressed: time.Date(2026, 12, 4, 1, 2, 3, 0, time.UTC), Fetching: true}, `{"cid":"c","size":4,"held":2,"bytes":3,"progressed":"2026-12-04T01:02:03Z","fetching":true}`},
		{ReplicateRequest{Peer: "p", Blobs: []BlobInfo{{CID: "c", Size: 1}}}, `{"peer":"p","blobs":[{"cid":"c","size":1}]}`},
		{ReplicateResult{Stored: []string{"a"}, Skipped: []string{}, Failed: []FailedBlob{{CID: "c", Reason: "r"}}},
			`{"stored":["a"],"skipped":[],"failed":[{"cid":"c","reason":"r"}]}`},
		{AddEventRequest{Kind: "file", Body: jsontext.Value(`{}`), Blobs: []BlobRef{{CID: "c", Size: 1, Name: "n"}}},
			`{"kind":"file","body":{},"blobs":[{"cid":"c","size":1,"name":"n"}]}`},
		{Peer{PeerID: "p", Addrs: nil, Agent: "g", Hello: true, Head: 1, Cursor: 2, Direction: "inbound", Tier: "new", TierReason: "r", Reputed: true, Score: -1.5, HasScore: true, Conn: "relayed",
			Served: 3, Challenged: 4, Refused: 5, BytesUp: 6, BytesDown: 7},
			`{"peer_id":"p","addrs":[],"agent":"g","hello":true,"not_wats":false,"head":1,"cursor":2,"direction":"inbound","tier":"new","tier_reason":"r","reputed":true,"score":-1.5,"has_score":true,"conn":"relayed",` +
				`"served":3,"challenged":4,"refused":5,"bytes_up":6,"bytes_down":7}`},
		{Fetch{CID: "c", Size: 1, Held: 2, Started: time.Date(2026, 12, 4, 1, 2, 3, 0, time.UTC), Finding: true, Provider: "p"},
			`{"cid":"c","size":1,"held":2,"started":"2026-12-04T01:02:03Z","finding":true,"provider":"p"}`},
		{Dashboard{URL: "u"}, `{"url":"u"}`},
		{EventPage{Events: []jsontext.Value{jsontext.Value(`{}`)}, Next: 1, More: true, Head: 2},
			`{"events":[{}],"next":1,"more":true,"head":2}`},
		{SyncProgress{Peer: "p", Received: 1, Stored: 2, Dropped: 3, Cursor: 4, PeerHead: 5, Done: true},
			`{"peer":"p","received":1,"stored":2,"dropped":3,"cursor":4,"peer_head":5,"done":true}`},
		{SyncProgress{Peer: "p", Error: "x"},
			`{"peer":"p","received":0,"stored":0,"dropped":0,"cursor":0,"peer_head":0,"done":false,"error":"x"}`},
		{ErrorBody{Error: "x"}, `{"error":"x"}`},
		{ConnectRequest{Addr: "a"}, `{"addr":"a"}`},
		{SyncRequest{Peer: "p"}, `{"peer":"p"}`},
		{AddEventRequest{Kind: "note", Body: jsontext.Value(`{"a":1}`)}, `{"kind":"note","body":{"a":1}}`},
	} {
		b, err := json.Marshal(tc.v)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != tc.want {
			t.Errorf("%T = %s, want %s", tc.v, b, tc.want)
		}
	}
}

// BenchmarkTail measures the client's cost per streamed event: reading a
// line, checking it is JSON and handing over a copy.
func BenchmarkTail(b *testing.B) {
	line := []byte(`{"id":"32eacf574f511cbd9f083456265f57f3c734c4cde90c8203b25d8ed024340ea7","author":"12D3KooWJ1TsijH7H5F74hfAD5XishQz3sxrmAtVY37GtNd9CqYf","time":1767225600000,"kind":"note","body":{"from":"node1","n":7},"blobs":[],"sig":"_uMw5mRAF1i3EaVVsCZCPm2O-PilKupNzUjS3WKJYtGYG8Nrhd3bYtsLVvdKqKl8AP8F8J8xQbqySxK31jB5Cg"}` + "\n")
	var n int
	sock := filepath.Join(b.TempDir(), "api.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		bw := bufio.NewWriterSize(w, 64<<10)
		for range n {
			bw.Write(line)
		}
		bw.Flush()
	}))
	srv.Listener = ln
	srv.Start()
	defer srv.Close()
	c := NewClient(sock)
	defer c.Close()
	n = b.N
	b.SetBytes(int64(len(line)))
	b.ReportAllocs()
	b.ResetTimer()
	got := 0
	err = c.Tail(context.Background(), 0, func(jsontext.Value) error { got++; return nil })
	if !errors.Is(err, ErrStreamEnded) || got != b.N {
		b.Fatalf("Tail: %v after %d of %d events", err, got, b.N)
	}
}

func TestIsEventIDPrefix(t *testing.T) {
	const id = "32eacf574f511cbd9f083456265f57f3c734c4cde90c8203b25d8ed024340ea7"
	for _, tc := range []struct {
		s    string
		want bool
	}{
		{id, true},
		{id[:MinEventIDPrefix], true},
		{id[:MinEventIDPrefix-1], false}, // just under the shortest prefix
		{id + "0", false},                // just over a full id
		{"", false},
		{"32EACF57", false}, // uppercase: ids are lowercase hex
		{"32eacf5g", false},
		{"32eacf5/", false},
	} {
		if got := IsEventIDPrefix(tc.s); got != tc.want {
			t.Errorf("IsEventIDPrefix(%q) = %v, want %v", tc.s, got, tc.want)
		}
	}
	if len(id) != EventIDLen {
		t.Errorf("EventIDLen %d, a real id has %d characters", EventIDLen, len(id))
	}
}

// blobStreamer answers POST PathBlobStream with body and then the trailer
// status (with msg when failed; no trailer when status is ""); abort cuts
// the answer off after the body instead, as a daemon that stops.
func blobStreamer(t *testing.T, body, status, msg string, abort bool) http.Handler {
	t.Helper()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != PathBlobStream {
			t.Errorf("request %s %s, want POST %s", r.Method, r.URL.Path, PathBlobStream)
		}
		w.Header().Set("Content-Type", ContentTypeBlob)
		w.Header().Set("Trailer", TrailerBlobStatus+", "+TrailerBlobError)
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, body)
		w.(http.Flusher).Flush()
		if abort {
			panic(http.ErrAbortHandler)
		}
		if status != "" {
			w.Header().Set(TrailerBlobStatus, status)
		}
		if msg != "" {
			w.Header().Set(TrailerBlobError, msg)
		}
	})
}

// TestStreamBlob: the bytes of a complete blob are written and counted;
// the client takes exactly the declared size, and one byte more is an
// error; a failure, a cut-off answer and a missing status are errors after
// the bytes that came.
func TestStreamBlob(t *testing.T) {
	for _, tc := range []struct {
		name        string
		body        string
		status, msg string
		abort       bool
		want        error // nil, or what the error matches
		wantMsg     string
		wantN       uint64
	}{
		{name: "complete at the declared size", body: "hello", status: BlobComplete, wantN: 5},
		{name: "one byte more than declared", body: "hello!", status: BlobComplete, want: ErrTooLarge, wantN: 5},
		{name: "complete but short", body: "hell", status: BlobComplete, want: ErrStreamEnded, wantN: 4},
		{name: "failed after a prefix", body: "he", status: BlobFailed, msg: "could not fetch blob B: stalled", want: ErrFetchFailed, wantMsg: "stalled", wantN: 2},
		{name: "failed before any byte", status: BlobFailed, msg: "too large", want: ErrFetchFailed, wantMsg: "too large"},
		{name: "cut off", body: "hel", abort: true, want: ErrStreamEnded, wantN: 3},
		{name: "no status", body: "hello", want: ErrStreamEnded, wantN: 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := fakeDaemon(t, blobStreamer(t, tc.body, tc.status, tc.msg, tc.abort))
			var out strings.Builder
			n, err := c.StreamBlob(t.Context(), FetchRequest{CID: "B", Size: 5}, &out, nil)
			if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) || !strings.Contains(fmt.Sprint(err), tc.wantMsg) {
				t.Fatalf("StreamBlob: %v, want %v %q", err, tc.want, tc.wantMsg)
			}
			if n != tc.wantN || out.String() != tc.body[:tc.wantN] {
				t.Fatalf("wrote %q (%d counted), want %q", out.String(), n, tc.body[:tc.wantN])
			}
		})
	}
}

// TestStreamBlobResumed: the head's HeaderBlobResumed is told to progress
// once, before any byte, when it is a count of bytes short of the blob;
// anything else (none, 0, the whole blob or more, not a number) is not.
func TestStreamBlobResumed(t *testing.T) {
	for _, tc := range []struct {
		header string
		want   uint64 // 0: progress not called
	}{{"3", 3}, {"4", 4}, {"", 0}, {"0", 0}, {"5", 0}, {"6", 0}, {"-1", 0}, {"3 bytes", 0}} {
		inner := blobStreamer(t, "hello", BlobComplete, "", false)
		c := fakeDaemon(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if tc.header != "" {
				w.Header().Set(HeaderBlobResumed, tc.header)
			}
			inner.ServeHTTP(w, r)
		}))
		var out strings.Builder
		var told []FetchProgress
		_, err := c.StreamBlob(t.Context(), FetchRequest{CID: "B", Size: 5}, &out, func(p FetchProgress) {
			told = append(told, p)
			if out.Len() != 0 {
				t.Errorf("header %q: told after %d bytes were written", tc.header, out.Len())
			}
		})
		switch {
		case err != nil:
			t.Errorf("header %q: %v", tc.header, err)
		case tc.want == 0 && len(told) != 0:
			t.Errorf("header %q: told %+v, want nothing", tc.header, told)
		case tc.want != 0 && (len(told) != 1 || told[0] != FetchProgress{Size: 5, Resumed: tc.want}):
			t.Errorf("header %q: told %+v, want once Resumed %d of 5", tc.header, told, tc.want)
		}
	}
}

// TestStreamBlobWriterError: a failing writer's error is returned as is.
func TestStreamBlobWriterError(t *testing.T) {
	c := fakeDaemon(t, blobStreamer(t, "hello", BlobComplete, "", false))
	broken := errors.New("disk full")
	if _, err := c.StreamBlob(t.Context(), FetchRequest{CID: "B", Size: 5}, failingWriter{broken}, nil); !errors.Is(err, broken) {
		t.Fatalf("StreamBlob into a failing writer: %v, want its error", err)
	}
}

type failingWriter struct{ err error }

func (f failingWriter) Write([]byte) (int, error) { return 0, f.err }

// TestStreamBlobErrorBound: the daemon's reason is kept whole up to
// MaxBlobErrorBytes and cut there past it.
func TestStreamBlobErrorBound(t *testing.T) {
	for _, n := range []int{MaxBlobErrorBytes, MaxBlobErrorBytes + 1} {
		c := fakeDaemon(t, blobStreamer(t, "", BlobFailed, strings.Repeat("x", n), false))
		_, err := c.StreamBlob(t.Context(), FetchRequest{CID: "B", Size: 5}, io.Discard, nil)
		if !errors.Is(err, ErrFetchFailed) || strings.Count(err.Error(), "x") != MaxBlobErrorBytes {
			t.Errorf("a reason of %d bytes: %d kept, %.200v", n, strings.Count(fmt.Sprint(err), "x"), err)
		}
	}
}
