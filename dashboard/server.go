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
	api.PathBlobFetches, api.PathBlobPartials, api.PathLimits, api.PathDiag,
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
// host:port), with the token as its path's first segment: what `wats
// dashboard` prints. The page's script and its requests are relative to
// it, so every one carries the token, and no cookie (which a browser
// shares with every port of the host) holds it.
func (d *Dashboard) URL(addr string) string {
	u := url.URL{Scheme: "http", Host: addr, Path: "/" + d.o.Token + "/"}
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
	mux.Handle("GET /", http.FileServerFS(static))
	for _, p := range Forwarded {
		mux.Handle("GET /api"+p, http.StripPrefix("/api", control))
	}
	mux.HandleFunc("GET "+PathHistory, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(d.history.View())
	})
	return d.guard(mux)
}

// guard answers a request only with the token, as the first segment of
// its path (/TOKEN/…, the URL's form) or as "Authorization: Bearer
// TOKEN" (for scripts): 401 without a token, 403 with a wrong one,
// whatever the request's method or Host (ADR 0049: without the token
// every page and endpoint answers 401 or 403); with the token, 421 for a
// Host header that names this machine by neither an IP address nor
// localhost (a DNS name rebound to 127.0.0.1 by another site) and 405
// for a method but GET and HEAD. Answers that refuse close the
// connection.
func (d *Dashboard) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'")
		h.Set("X-Frame-Options", "DENY")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-store")
		refuse := func(status int, msg string) {
			h.Set("Connection", "close")
			http.Error(w, msg, status)
		}
		// The token first: a request without it learns nothing more.
		r2 := r
		if t, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
			if !d.valid(t) {
				refuse(http.StatusForbidden, wrongToken)
				return
			}
		} else {
			first, rest, slash := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
			switch {
			case first == "" || first == "api" || isAsset(first):
				// "/", the API or an asset asked for without the token.
				h.Set("WWW-Authenticate", `Bearer realm="wats dashboard"`)
				refuse(http.StatusUnauthorized, "this is a wats node's dashboard: open the URL that `wats dashboard` prints, which carries its access token")
				return
			case !d.valid(first):
				refuse(http.StatusForbidden, wrongToken)
				return
			case slash:
				r2 = r.Clone(r.Context())
				r2.URL.Path = "/" + rest
				r2.URL.RawPath = ""
			default:
				r2 = nil // "/TOKEN": redirected to "/TOKEN/" below
			}
		}
		if !localHost(r.Host) {
			refuse(http.StatusMisdirectedRequest, "the dashboard answers only at 127.0.0.1, [::1] or localhost")
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			h.Set("Allow", "GET, HEAD")
			refuse(http.StatusMethodNotAllowed, "the dashboard only shows the node: GET and HEAD")
			return
		}
		if r2 == nil {
			http.Redirect(w, r, r.URL.Path+"/", http.StatusMovedPermanently)
			return
		}
		next.ServeHTTP(w, r2)
	})
}

// isAsset reports whether name is a file of the page (index.html,
// app.js, …).
func isAsset(name string) bool {
	_, err := fs.Stat(assets, "assets/"+name)
	return err == nil
}

const wrongToken = "wrong token (the daemon makes a new one at each start): run `wats dashboard` for the dashboard's URL"

// localHost reports whether host (a Host header) names this machine by an
// IP address or as localhost, with or without a port.
func localHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	return host == "localhost" || net.ParseIP(host) != nil
}

func (d *Dashboard) valid(t string) bool {
	return subtle.ConstantTimeCompare([]byte(t), []byte(d.o.Token)) == 1
}
