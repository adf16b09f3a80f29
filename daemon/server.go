package daemon

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/net/netutil"

	"github.com/wats-network/wats/api"
	"github.com/wats-network/wats/node"
)

// handlers answers the control API's paths from the node it embeds.
type handlers struct{ *node.Node }

// Handler returns the control API of n (docs/design.md §12) as an
// http.Handler. See package api for the paths and shapes. log is the
// daemon's LogRing, served on api.PathLog; nil answers 404 there.
// It cannot shut a daemon down: POST api.PathShutdown answers 501 (Run's
// control API can).
func Handler(n *node.Node, log *LogRing) http.Handler { return handler(n, log, "", nil) }

// handler is Handler, with the dashboard's URL (and token) that GET
// api.PathDashboard answers ("" when the dashboard is off) and the
// function that POST api.PathShutdown calls to stop the daemon (nil:
// none, 501).
func handler(n *node.Node, log *LogRing, dashboardURL string, shutdown func()) *http.ServeMux {
	h := handlers{n}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+api.PathDashboard, func(w http.ResponseWriter, _ *http.Request) {
		if dashboardURL == "" {
			writeError(w, http.StatusNotFound, errors.New(`the dashboard is off: api.dashboard_addr is ""`))
			return
		}
		writeJSON(w, http.StatusOK, api.Dashboard{URL: dashboardURL})
	})
	mux.HandleFunc("GET "+api.PathID, h.id)
	mux.HandleFunc("GET "+api.PathStatus, answer(h.status))
	mux.HandleFunc("GET "+api.PathPeers, answer(n.Peers))
	mux.HandleFunc("POST "+api.PathConnect, h.connect)
	mux.HandleFunc("POST "+api.PathDisconnect, h.disconnect)
	mux.HandleFunc("POST "+api.PathShutdown, shutdownHandler(shutdown))
	mux.HandleFunc("GET "+api.PathEvents, h.events)
	mux.HandleFunc("POST "+api.PathEvents, h.addEvent)
	mux.HandleFunc("GET "+api.PathEvent+"{id}", h.event)
	mux.HandleFunc("GET "+api.PathTail, h.tail)
	mux.HandleFunc("POST "+api.PathSync, h.sync)
	mux.HandleFunc("POST "+api.PathCrashes, h.reportCrash)
	mux.HandleFunc("GET "+api.PathCrashes, h.crashes)
	mux.HandleFunc("POST "+api.PathBlobs, h.addBlob)
	mux.HandleFunc("POST "+api.PathBlobImport, h.importBlob)
	mux.HandleFunc("POST "+api.PathBlobStreamFile, h.streamBlobFile)
	mux.HandleFunc("GET "+api.PathBlobs, h.blobList)
	mux.HandleFunc("GET "+api.PathBlobPartials, answer(h.partialBlobs))
	mux.HandleFunc("GET "+api.PathBlobFetches, answer(func() []api.Fetch { return fetches(n.Fetching().Fetcher().InFlight()) }))
	mux.HandleFunc("GET "+api.PathBlobs+"/{cid}", h.getBlob)
	mux.HandleFunc("GET "+api.PathBlobs+"/{cid}/size", h.blobSize)
	mux.HandleFunc("DELETE "+api.PathBlobs+"/{cid}", h.removeBlob)
	mux.HandleFunc("POST "+api.PathBlobFetch, h.fetchBlob)
	mux.HandleFunc("POST "+api.PathBlobStream, h.streamBlob)
	mux.HandleFunc("POST "+api.PathReplicate, h.replicate)
	mux.HandleFunc("GET "+api.PathPeerCache, answer(n.PeerCache))
	mux.HandleFunc("DELETE "+api.PathPeerCache+"/{id}", h.forgetPeer)
	mux.HandleFunc("GET "+api.PathLimits, answer(n.Limits))
	mux.HandleFunc("GET "+api.PathConfig, h.config)
	mux.HandleFunc("GET "+api.PathDiag, answer(n.Diag))
	mux.HandleFunc("GET "+api.PathLog, serveLog(log))
	mux.Handle("GET "+api.PathMetrics, metricsHandler(n))
	// Go's profiles, for operators on the machine only (the control API is
	// the repo's Unix socket): curl --unix-socket … http://wats/debug/pprof/.
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	return mux
}

// metricsHandler serves n's Prometheus metrics in the text exposition
// format.
func metricsHandler(n *node.Node) http.Handler {
	return promhttp.HandlerFor(n.Gatherer(), promhttp.HandlerOpts{})
}

// Serve serves the control API of n on a Unix socket at path (mode 0600)
// until ctx ends, then removes the socket. It serves no log lines
// (api.PathLog answers 404).
//
// REQUIRES: nothing exists at path (repo.Repo.PrepareSocket sees to it).
func Serve(ctx context.Context, n *node.Node, path string) error {
	l, err := listenControl(path)
	if err != nil {
		return err
	}
	return serveControl(ctx, Handler(n, nil), l, path)
}

// listenControl listens on the control socket at path, mode 0600.
func listenControl(path string) (net.Listener, error) {
	l, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("daemon: listen on control socket %s: %w", path, err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		l.Close()
		return nil, fmt.Errorf("daemon: control socket %s: %w", path, err)
	}
	return l, nil
}

// serveControl serves the control API h on l, the socket at path, until
// ctx ends, and removes the socket file then.
func serveControl(ctx context.Context, h http.Handler, l net.Listener, path string) error {
	return serveHTTP(ctx, wrapListener(l), h, func() { os.Remove(path) })
}

// serveHTTP serves h on l until ctx ends, then shuts down within 5 s.
func serveHTTP(ctx context.Context, l net.Listener, h http.Handler, cleanup func()) error {
	return serve(ctx, l, &http.Server{Handler: h}, cleanup)
}

// Bounds of the servers on TCP (the dashboard's, the metrics'): any local
// user can reach them, and none may starve the daemon of descriptors or
// memory (docs/adr/0049).
const (
	// MaxTCPConns is the most connections a TCP server holds at once;
	// more wait in the kernel's backlog.
	MaxTCPConns = 64
	// TCPIdleTimeout closes a connection idle between requests, and
	// TCPWriteTimeout one whose answer takes longer to write.
	TCPIdleTimeout  = 30 * time.Second
	TCPWriteTimeout = 30 * time.Second
	// TCPMaxHeaderBytes bounds a request's header.
	TCPMaxHeaderBytes = 16 << 10
)

// serveTCP serves h on the TCP listener l until ctx ends, within the
// bounds above.
func serveTCP(ctx context.Context, l net.Listener, h http.Handler) error {
	return serve(ctx, netutil.LimitListener(l, MaxTCPConns), &http.Server{
		Handler: h, IdleTimeout: TCPIdleTimeout, WriteTimeout: TCPWriteTimeout, MaxHeaderBytes: TCPMaxHeaderBytes,
	}, nil)
}

// serve serves srv on l until ctx ends, then shuts down within 5 s.
func serve(ctx context.Context, l net.Listener, srv *http.Server, cleanup func()) error {
	// Requests' contexts end when the server shuts down, so that streams
	// (tail, sync) end at once instead of holding Shutdown for its timeout.
	base, cancelRequests := context.WithCancel(context.Background())
	defer cancelRequests()
	srv.ReadHeaderTimeout = 10 * time.Second
	srv.BaseContext = func(net.Listener) context.Context { return base }
	// The control socket's connections carry the descriptors of imports
	// (wrapListener, ADR 0036); the TCP listeners' do not.
	srv.ConnContext, srv.ConnState = connContext, connState
	srv.RegisterOnShutdown(cancelRequests)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(l) }()
	select {
	case <-ctx.Done():
	case err := <-errc:
		return err
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := srv.Shutdown(sctx)
	if cleanup != nil {
		cleanup()
	}
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}
