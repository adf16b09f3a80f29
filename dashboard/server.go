package dashboard

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/base64"
	"encoding/json"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/wats-network/wats/api"
)

//go:embed assets
var assets embed.FS

// Forwarded are the control API's paths the dashboard's scripts read, at
// "/api" and the path (GET only: the dashboard changes nothing).
var Forwarded = []string{
	api.PathID, api.PathStatus, api.PathPeers, api.PathEvents, api.PathBlobs,
	api.PathBlobFetches, api.PathLimits, api.PathDiag,
}

// PathHistory answers GET with the History's View.
const PathHistory = "/api/history"

// Options configure a Dashboard (New).
type Options struct {
	// Gatherer is the node's metrics, sampled into the history every
	// SampleInterval by Run.
	Gatherer prometheus.Gatherer
	// Token is the access token; "" makes a new random one (NewToken).
	Token string
}

// Dashboard serves the dashboard (Handler) and keeps its History (Run).
type Dashboard struct {
	o       Options
	history *History
}

// New returns a Dashboard of o. It fails only if no random token can be
// made.
func New(o Options) (*Dashboard, error) {
	if o.Token == "" {
		t, err := NewToken()
		if err != nil {
			return nil, err
		}
		o.Token = t
	}
	return &Dashboard{o: o, history: NewHistory()}, nil
}

// NewToken returns a random access token: 128 bits, base64url.
func NewToken() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// Token returns the access token.
func (d *Dashboard) Token() string { return d.o.Token }

// URL returns the dashboard's URL at the listener address addr (a
// host:port), with the token: what `wats dashboard` prints.
func (d *Dashboard) URL(addr string) string {
	u := url.URL{Scheme: "http", Host: addr, Path: "/", RawQuery: url.Values{"token": {d.o.Token}}.Encode()}
	return u.String()
}

// History returns the dashboard's history of the node's metrics.
func (d *Dashboard) History() *History { return d.history }

// Run samples the metrics into the history every SampleInterval, at once
// first, until ctx ends. now gives the wall clock and mono the monotonic
// one (the node's clocks).
func (d *Dashboard) Run(ctx context.Context, now func() time.Time, mono func() time.Duration) {
	t := time.NewTicker(SampleInterval)
	defer t.Stop()
	for {
		if fams, err := d.o.Gatherer.Gather(); err == nil {
			d.history.Add(now(), mono(), fams)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Handler returns the dashboard's HTTP handler: the page, its assets, the
// Forwarded paths (answered by control, the control API: daemon.Handler)
// and PathHistory, each behind the token.
func (d *Dashboard) Handler(control http.Handler) http.Handler {
	mux := http.NewServeMux()
	static, _ := fs.Sub(assets, "assets") // a fixed embedded directory
	files := http.FileServerFS(static)
	mux.Handle("GET /", files)
	for _, p := range Forwarded {
		mux.Handle("GET /api"+p, http.StripPrefix("/api", control))
	}
	mux.HandleFunc("GET "+PathHistory, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(d.history.View())
	})
	return d.guard(mux)
}

// CookieName returns the name of the cookie that carries the token of the
// dashboard at host (a Host header): one per port, since browsers share
// a host's cookies among its ports and two nodes' dashboards have two
// tokens.
func CookieName(host string) string {
	_, port, err := net.SplitHostPort(host)
	if err != nil || port == "" {
		port = "80"
	}
	return "wats_dashboard_" + port
}

// guard answers every request that is not a GET or HEAD with the token:
// 405 for another method, 401 without a token, 403 with a wrong one. A
// right token in the URL is moved into a cookie, and the page asked for
// again without it (so that it leaves no history entry or Referer).
func (d *Dashboard) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'")
		h.Set("X-Frame-Options", "DENY")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-store")
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			h.Set("Allow", "GET, HEAD")
			http.Error(w, "the dashboard only shows the node: GET and HEAD", http.StatusMethodNotAllowed)
			return
		}
		q := r.URL.Query()
		if t := q.Get("token"); t != "" {
			if !d.valid(t) {
				http.Error(w, "wrong token: run `wats dashboard` for the dashboard's URL", http.StatusForbidden)
				return
			}
			http.SetCookie(w, &http.Cookie{Name: CookieName(r.Host), Value: t, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
			q.Del("token")
			u := *r.URL
			u.RawQuery = q.Encode()
			http.Redirect(w, r, u.RequestURI(), http.StatusSeeOther)
			return
		}
		t, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok {
			if c, err := r.Cookie(CookieName(r.Host)); err == nil {
				t, ok = c.Value, true
			}
		}
		switch {
		case !ok || t == "":
			h.Set("WWW-Authenticate", `Bearer realm="wats dashboard"`)
			http.Error(w, "this is a wats node's dashboard: open the URL that `wats dashboard` prints, which carries its access token", http.StatusUnauthorized)
		case !d.valid(t):
			http.Error(w, "wrong token (the daemon makes a new one at each start): run `wats dashboard` for the dashboard's URL", http.StatusForbidden)
		default:
			next.ServeHTTP(w, r)
		}
	})
}

func (d *Dashboard) valid(t string) bool {
	return subtle.ConstantTimeCompare([]byte(t), []byte(d.o.Token)) == 1
}
