package dashboard

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// control stands for the control API: it answers every path with the
// method and the path it was asked.
var control = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost {
		w.WriteHeader(http.StatusTeapot) // must never be reached
	}
	io.WriteString(w, r.Method+" "+r.URL.Path)
})

func newTestDashboard(t *testing.T) (*Dashboard, http.Handler) {
	t.Helper()
	d, err := New(Options{Gatherer: prometheus.NewRegistry(), Token: "secret-token"})
	if err != nil {
		t.Fatal(err)
	}
	return d, d.Handler(control)
}

func do(h http.Handler, method, target string, set func(*http.Request)) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, target, nil)
	r.Host = "127.0.0.1:5180"
	if set != nil {
		set(r)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func TestTokenRefusedAndAccepted(t *testing.T) {
	_, h := newTestDashboard(t)
	bearer := func(tok string) func(*http.Request) {
		return func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+tok) }
	}
	host := func(name string) func(*http.Request) { return func(r *http.Request) { r.Host = name } }
	for _, tc := range []struct {
		name   string
		method string
		target string
		set    func(*http.Request)
		status int
		body   string
	}{
		{"page without a token", "GET", "/", nil, 401, "wats dashboard"},
		{"index without a token", "GET", "/index.html", nil, 401, ""},
		{"script without a token", "GET", "/app.js", nil, 401, ""},
		{"api without a token", "GET", "/api/v1/status", nil, 401, ""},
		{"history without a token", "GET", PathHistory, nil, 401, ""},
		{"wrong token", "GET", "/nope/", nil, 403, "wrong token"},
		{"wrong token, api", "GET", "/nope/api/v1/status", nil, 403, "wrong token"},
		{"token one byte short", "GET", "/secret-toke/", nil, 403, "wrong token"},
		{"token one byte long", "GET", "/secret-tokenn/", nil, 403, "wrong token"},
		{"the token past a dot segment", "GET", "/x/../secret-token/api/v1/status", nil, 403, ""},
		{"empty bearer", "GET", "/api/v1/status", bearer(""), 403, "wrong token"},
		{"wrong bearer", "GET", "/api/v1/status", bearer("secret-tokeN"), 403, "wrong token"},
		{"a name rebound to this machine", "GET", "/secret-token/", host("evil.example:5180"), 421, "127.0.0.1"},
		{"a name rebound, with a bearer", "GET", "/api/v1/status", func(r *http.Request) { r.Host = "evil.example"; r.Header.Set("Authorization", "Bearer secret-token") }, 421, ""},
		{"page", "GET", "/secret-token/", nil, 200, "<title>wats node</title>"},
		{"page at localhost", "GET", "/secret-token/", host("localhost:5180"), 200, "<title>wats node</title>"},
		{"page at [::1]", "GET", "/secret-token/", host("[::1]:5180"), 200, "<title>wats node</title>"},
		{"no trailing slash", "GET", "/secret-token", nil, 301, ""},
		{"script", "GET", "/secret-token/app.js", nil, 200, "use strict"},
		{"status", "GET", "/secret-token/api/v1/status", nil, 200, "GET /v1/status"},
		{"fetches", "GET", "/secret-token/api/v1/blobs/fetches", nil, 200, "GET /v1/blobs/fetches"},
		{"history", "GET", "/secret-token" + PathHistory, nil, 200, `"interval_seconds":5`},
		{"bearer", "GET", "/api/v1/peers", bearer("secret-token"), 200, "GET /v1/peers"},
		{"HEAD", "HEAD", "/secret-token/api/v1/status", nil, 200, ""},
		{"a path not forwarded", "GET", "/secret-token/api/v1/config", nil, 404, ""},
		{"pprof is not forwarded", "GET", "/secret-token/api/debug/pprof/", nil, 404, ""},
		{"the log is not forwarded", "GET", "/secret-token/api/v1/log", nil, 404, ""},
		{"POST with the token", "POST", "/secret-token/api/v1/events", nil, 405, "GET and HEAD"},
		{"DELETE with a bearer", "DELETE", "/api/v1/blobs/x", bearer("secret-token"), 405, ""},
		{"OPTIONS", "OPTIONS", "/secret-token/", nil, 405, ""},
		// Without the token, 401 or 403 whatever the method or Host.
		{"POST without a token", "POST", "/api/v1/peers/connect", nil, 401, "wats dashboard"},
		{"OPTIONS without a token", "OPTIONS", "/", nil, 401, ""},
		{"DELETE with a wrong token", "DELETE", "/nope/api/v1/blobs/x", nil, 403, "wrong token"},
		{"POST with a wrong bearer", "POST", "/api/v1/events", bearer("nope"), 403, "wrong token"},
		{"a name rebound, without a token", "GET", "/", host("evil.example"), 401, ""},
		{"a name rebound, with a wrong token", "GET", "/nope/", host("evil.example"), 403, ""},
		{"a name rebound, no trailing slash", "GET", "/secret-token", host("evil.example"), 421, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := do(h, tc.method, tc.target, tc.set)
			if w.Code != tc.status || !strings.Contains(w.Body.String(), tc.body) {
				t.Fatalf("%s %s: %d %q, want %d with %q", tc.method, tc.target, w.Code, w.Body.String(), tc.status, tc.body)
			}
			if w.Code == 401 && w.Header().Get("WWW-Authenticate") == "" {
				t.Error("401 without WWW-Authenticate")
			}
			if w.Code >= 400 && w.Code != 404 && w.Header().Get("Connection") != "close" {
				t.Error("a refusal keeps the connection open")
			}
			if csp := w.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") {
				t.Errorf("Content-Security-Policy %q", csp)
			}
			if len(w.Result().Cookies()) != 0 {
				t.Errorf("sets a cookie: %v", w.Result().Cookies())
			}
		})
	}
}

func TestURL(t *testing.T) {
	d, h := newTestDashboard(t)
	u := d.URL("127.0.0.1:5180")
	if u != "http://127.0.0.1:5180/secret-token/" {
		t.Fatalf("URL %q", u)
	}
	if w := do(h, "GET", strings.TrimPrefix(u, "http://127.0.0.1:5180"), nil); w.Code != 200 {
		t.Fatalf("GET %s: %d", u, w.Code)
	}
}

func TestNewTokenIsRandom(t *testing.T) {
	a, err := NewToken()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := NewToken()
	if a == b || len(a) != 22 {
		t.Fatalf("tokens %q %q", a, b)
	}
	d, err := New(Options{Gatherer: prometheus.NewRegistry()})
	if err != nil || len(d.Token()) != 22 {
		t.Fatalf("New made token %q, %v", d.Token(), err)
	}
}
