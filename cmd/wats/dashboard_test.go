package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/wats-network/wats/proto"
)

// chromium returns the path of Debian's Chromium, which .ci/run installs.
// Without it the browser tests are skipped, unless WATS_REQUIRE_BROWSER is
// set (as .ci/run sets it), where they fail.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("WATS_REQUIRE_BROWSER") != "" {
		t.Fatal("no chromium on PATH, and WATS_REQUIRE_BROWSER is set")
	}
	t.Skip("no chromium on PATH (apt-get install chromium)")
	return ""
}

// browser starts a headless Chromium of its own (a new profile, no
// network of its own beyond what pages ask) and returns a context of a
// tab in it.
func browser(t *testing.T, path string) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.NoSandbox, // CI runs as root
		chromedp.DisableGPU,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-quic", true),
		chromedp.WindowSize(1280, 1400),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelTab(); cancelAlloc() })
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// waitFor polls the page until the JavaScript expression is true, for up to
// 30 s.
func waitFor(t *testing.T, ctx context.Context, what, expr string) {
	t.Helper()
	ok, err := chromedp.Run(ctx, chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(30*time.Second)))
	if err != nil || !ok {
		text, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("main").innerText`))
		t.Fatalf("the dashboard never showed %s: %v\npage:\n%s", what, err, text)
	}
}

// TestDashboardInABrowser: a default-profile daemon's dashboard, opened in
// Chromium at the URL `wats dashboard` prints, shows the node's peer ID, a
// peer connecting with its bytes each way, an event added, requests refused
// to a peer over its hello budget, graphs of refusals by reason and of the
// defence's figures, fits a phone's width, and says so when the daemon is
// gone; without the token it answers 401, with a wrong one 403.
func TestDashboardInABrowser(t *testing.T) {
	path := chromium(t)
	bin, tmp, env := e2eSetup(t)
	a, b := filepath.Join(tmp, "a"), filepath.Join(tmp, "b")
	initDefault(t, env, bin, a, b)
	daemonA, _ := startBinDaemonProc(t, env, bin, a)
	startBinDaemon(t, env, bin, b)
	idA, idB := idOf(t, env, bin, a), idOf(t, env, bin, b)

	code, out, stderr := runBin(t, env, bin, "dashboard", "--repo", a)
	if code != 0 {
		t.Fatalf("dashboard: exit %d: %s", code, stderr)
	}
	u, err := url.Parse(strings.TrimSpace(out))
	if err != nil || len(u.Path) < 20 || !strings.HasSuffix(u.Path, "/") || !strings.HasPrefix(u.Host, "127.0.0.1:") {
		t.Fatalf("dashboard printed %q (want http://127.0.0.1:PORT/TOKEN/): %v", out, err)
	}
	token := strings.Trim(u.Path, "/")

	// The token refused and accepted, over plain HTTP.
	plain := http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, tc := range []struct {
		target string
		status int
	}{
		{"http://" + u.Host + "/", http.StatusUnauthorized},
		{"http://" + u.Host + "/app.js", http.StatusUnauthorized},
		{"http://" + u.Host + "/api/v1/status", http.StatusUnauthorized},
		{"http://" + u.Host + "/wrong-token/", http.StatusForbidden},
		{"http://" + u.Host + "/wrong-token/api/v1/status", http.StatusForbidden},
		{u.String(), http.StatusOK},
		{u.String() + "api/v1/status", http.StatusOK},
	} {
		resp, err := plain.Get(tc.target)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.status {
			t.Errorf("GET %s: %d, want %d", strings.Replace(tc.target, token, "TOKEN", 1), resp.StatusCode, tc.status)
		}
	}

	ctx := browser(t, path)
	if err := chromedp.Do(ctx, chromedp.Navigate(u.String())); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the node's peer ID", fmt.Sprintf(`document.getElementById("peer-id").textContent === %q`, idA.PeerID))
	if cookies, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.cookie`)); err != nil || cookies != "" {
		t.Errorf("the page set cookies %q (%v): a cookie is sent to every port of 127.0.0.1", cookies, err)
	}

	// A peer connecting.
	if code, _, stderr := runBin(t, env, bin, "peers", "connect", idB.Addrs[0], "--repo", a); code != 0 {
		t.Fatalf("peers connect: exit %d: %s", code, stderr)
	}
	waitFor(t, ctx, "the peer that connected, with bytes sent and received", fmt.Sprintf(
		`(r => r !== null && !/^(–|0 B)$/.test(r.cells[3].textContent) && !/^(–|0 B)$/.test(r.cells[4].textContent))(document.querySelector('tr[data-peer=%q]'))`, idB.PeerID))

	// An event appearing.
	code, out, stderr = runBin(t, env, bin, "events", "add", "--kind", "dashboard-test", "--body", `{"text":"<b>not html</b>"}`, "--repo", a)
	if code != 0 {
		t.Fatalf("events add: exit %d: %s", code, stderr)
	}
	eventID := strings.TrimSpace(out)
	waitFor(t, ctx, "the event added", fmt.Sprintf(`(r => r !== null && r.textContent.includes("dashboard-test"))(document.querySelector('tr[data-event=%q]'))`, eventID))
	// Its author's part of the per-author quotas, and the partial blobs
	// (none kept).
	waitFor(t, ctx, "the event's author's use", fmt.Sprintf(
		`(u => u !== null && /^[\d,]+ (of [\d,]+ )?events?, [\d.]+ (B|KiB|MiB)/.test(u.textContent))(document.querySelector('tr[data-event=%q] .author-use'))`, eventID))
	waitFor(t, ctx, "the partial blobs", `document.querySelector('#partial-count').textContent === "(0, 0 B)"`)

	// Requests refused, counted: a peer says hello past its burst (15,
	// ADR 0014), one request after the other, until one is refused, and
	// stays connected; the totals and its row count it.
	h, err := libp2p.New(libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	info, err := peer.AddrInfoFromString(tcpAddr(idA.Addrs))
	if err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := h.Connect(cctx, *info); err != nil {
		t.Fatal(err)
	}
	hello := &proto.Hello{Version: proto.Version, Network: networkOf(t, env, bin, a), Agent: "dashboard-test", Features: []string{}, Listen: []string{}}
	refused := false
	for i := 0; i < 40 && !refused; i++ {
		_, err := proto.Call(cctx, h, info.ID, hello)
		if refused = errors.Is(err, proto.ErrRefused); err != nil && !refused {
			t.Fatalf("hello %d: %v", i+1, err)
		}
	}
	if !refused {
		t.Fatal("40 hellos in a row, none refused")
	}
	waitFor(t, ctx, "requests refused", `[...document.querySelectorAll("#request-rows td.refused")].some(td => Number(td.textContent) > 0)`)
	waitFor(t, ctx, "the peer's requests refused", fmt.Sprintf(
		`(r => r !== null && Number(r.cells[6].textContent.split(" ")[0]) > 0)(document.querySelector('tr[data-peer=%q]'))`, h.ID()))

	// The graphs drawn, and the page on a phone: nothing wider than the
	// screen (tables scroll in their cards).
	waitFor(t, ctx, "the graphs", `document.querySelectorAll(".chart canvas").length === 3`)
	waitFor(t, ctx, "refusals by reason and the defence's figures over time", `(text => [
		"refused a minute, by reason", "hello over its rate limit", "strangers' connections, slots full", "streams over a peer's cap",
		"gossip over a budget or quota", "DHT requests over a peer's budget",
		"challenges sent", "solved", "failed", "bans", "strangers evicted", "effort",
	].every(w => text.includes(w)))(document.getElementById("admission-chart").innerText + document.getElementById("defence-chart").innerText)`)
	shoot(t, ctx, "dashboard.png")
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2))); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the page within a phone's width", `document.documentElement.scrollWidth <= 390`)
	shoot(t, ctx, "dashboard-phone.png")

	// The daemon gone: the page says so rather than show stale figures as
	// current.
	if err := daemonA.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	_ = daemonA.Wait()
	waitFor(t, ctx, "that the daemon stopped answering", `!document.getElementById("banner").hidden && document.getElementById("banner").textContent.includes("not answered")`)
}

// shoot writes a screenshot of the page to the directory
// WATS_SCREENSHOTS names, if set (`make screenshots` does, for the README).
func shoot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	dir := os.Getenv("WATS_SCREENSHOTS")
	if dir == "" {
		return
	}
	time.Sleep(6 * time.Second) // a history sample more, for the graphs
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// networkOf returns the network of the repo at dir.
func networkOf(t *testing.T, env []string, bin, dir string) string {
	t.Helper()
	code, out, stderr := runBin(t, env, bin, "config", "get", "network", "--repo", dir)
	if code != 0 {
		t.Fatalf("config get network: exit %d: %s", code, stderr)
	}
	return strings.Trim(strings.TrimSpace(out), `"`)
}

// tcpAddr returns the first of addrs over TCP.
func tcpAddr(addrs []string) string {
	for _, a := range addrs {
		if strings.Contains(a, "/tcp/") {
			return a
		}
	}
	return addrs[0]
}
