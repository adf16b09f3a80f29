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
	cookie := func(name, tok string) func(*http.Request) {
		return func(r *http.Request) { r.AddCookie(&http.Cookie{Name: name, Value: tok}) }
	}
	for _, tc := range []struct {
		name   string
		method string
		target string
		set    func(*http.Request)
		status int
		body   string
	}{
		{"page without a token", "GET", "/", nil, 401, "wats dashboard"},
		{"api without a token", "GET", "/api/v1/status", nil, 401, ""},
		{"history without a token", "GET", PathHistory, nil, 401, ""},
		{"script without a token", "GET", "/app.js", nil, 401, ""},
		{"empty bearer", "GET", "/api/v1/status", bearer(""), 401, ""},
		{"wrong bearer", "GET", "/api/v1/status", bearer("secret-tokeN"), 403, "wrong token"},
		{"bearer one byte short", "GET", "/api/v1/status", bearer("secret-toke"), 403, "wrong token"},
		{"wrong token in the URL", "GET", "/?token=nope", nil, 403, "wrong token"},
		{"wrong cookie", "GET", "/api/v1/peers", cookie("wats_dashboard_5180", "nope"), 403, ""},
		{"another port's cookie", "GET", "/api/v1/peers", cookie("wats_dashboard_5181", "secret-token"), 401, ""},
		{"bearer", "GET", "/api/v1/status", bearer("secret-token"), 200, "GET /v1/status"},
		{"cookie", "GET", "/api/v1/peers", cookie("wats_dashboard_5180", "secret-token"), 200, "GET /v1/peers"},
		{"page", "GET", "/", bearer("secret-token"), 200, "<title>wats node</title>"},
		{"script", "GET", "/app.js", bearer("secret-token"), 200, "use strict"},
		{"history", "GET", PathHistory, bearer("secret-token"), 200, `"interval_seconds":5`},
		{"fetches", "GET", "/api/v1/blobs/fetches", bearer("secret-token"), 200, "GET /v1/blobs/fetches"},
		{"a path not forwarded", "GET", "/api/v1/config", bearer("secret-token"), 404, ""},
		{"pprof is not forwarded", "GET", "/api/debug/pprof/", bearer("secret-token"), 404, ""},
		{"POST with the token", "POST", "/api/v1/events", bearer("secret-token"), 405, "GET and HEAD"},
		{"DELETE with the token", "DELETE", "/api/v1/blobs/x", bearer("secret-token"), 405, ""},
		{"POST without a token", "POST", "/api/v1/peers/connect", nil, 405, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := do(h, tc.method, tc.target, tc.set)
			if w.Code != tc.status || !strings.Contains(w.Body.String(), tc.body) {
				t.Fatalf("%s %s: %d %q, want %d with %q", tc.method, tc.target, w.Code, w.Body.String(), tc.status, tc.body)
			}
			if w.Code == 401 && w.Header().Get("WWW-Authenticate") == "" {
				t.Error("401 without WWW-Authenticate")
			}
			if csp := w.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") {
				t.Errorf("Content-Security-Policy %q", csp)
			}
		})
	}
}

// TestTokenInTheURLBecomesACookie: the URL `wats dashboard` prints sets
// the cookie and sends the browser to the same page without the token;
// the cookie then opens the page.
func TestTokenInTheURLBecomesACookie(t *testing.T) {
	d, h := newTestDashboard(t)
	u := d.URL("127.0.0.1:5180")
	if u != "http://127.0.0.1:5180/?token=secret-token" {
		t.Fatalf("URL %q", u)
	}
	w := do(h, "GET", "/?token=secret-token&x=1", nil)
	if w.Code != http.StatusSeeOther || w.Header().Get("Location") != "/?x=1" {
		t.Fatalf("first visit: %d to %q", w.Code, w.Header().Get("Location"))
	}
	cookies := w.Result().Cookies()
	if len(cookies) != 1 || cookies[0].Name != "wats_dashboard_5180" || cookies[0].Value != "secret-token" ||
		!cookies[0].HttpOnly || cookies[0].SameSite != http.SameSiteStrictMode {
		t.Fatalf("cookies %+v", cookies)
	}
	w = do(h, "GET", "/", func(r *http.Request) { r.AddCookie(cookies[0]) })
	if w.Code != 200 {
		t.Fatalf("with the cookie: %d", w.Code)
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

func TestCookieName(t *testing.T) {
	for host, want := range map[string]string{
		"127.0.0.1:5180": "wats_dashboard_5180",
		"[::1]:7":        "wats_dashboard_7",
		"localhost":      "wats_dashboard_80",
	} {
		if got := CookieName(host); got != want {
			t.Errorf("CookieName(%q) = %q, want %q", host, got, want)
		}
	}
}
