package daemon

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/wats-network/wats/api"
	"github.com/wats-network/wats/repo"
)

// runDaemon runs Run on a new repo of testConfig with dashboard_addr
// addr until the test ends, and returns its control API's client once it
// answers.
func runDaemon(t *testing.T, addr string) *api.Client {
	t.Helper()
	cfg := testConfig(false)
	cfg.API.DashboardAddr = addr
	r, err := repo.Init(t.TempDir(), &repo.InitOptions{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	c, done := startRun(t, ctx, r, quietLogger())
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return c
}

// TestDashboardOnAndOff: with api.dashboard_addr's default the daemon
// serves the dashboard at the URL GET /v1/dashboard answers (a free
// loopback port, the token in the path; 401 without it); with "" it
// serves none and says so.
func TestDashboardOnAndOff(t *testing.T) {
	c := runDaemon(t, "127.0.0.1:0")
	d, err := c.Dashboard(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	base, token, ok := strings.Cut(strings.TrimPrefix(d.URL, "http://"), "/")
	if !ok || !strings.HasPrefix(base, "127.0.0.1:") || strings.HasSuffix(base, ":0") || len(token) < 20 {
		t.Fatalf("dashboard URL %q", d.URL)
	}
	for target, want := range map[string]int{d.URL + "api/v1/status": 200, "http://" + base + "/api/v1/status": 401} {
		resp, err := http.Get(target)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET %s: %d, want %d", strings.Replace(target, token, "TOKEN/", 1), resp.StatusCode, want)
		}
	}

	off := runDaemon(t, "")
	if d, err := off.Dashboard(t.Context()); !errors.Is(err, api.ErrNotFound) || !strings.Contains(err.Error(), "the dashboard is off") {
		t.Fatalf("with dashboard_addr \"\": %+v, %v; want ErrNotFound saying the dashboard is off", d, err)
	}
}
