package daemon

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/wats-network/wats/dashboard"
	"github.com/wats-network/wats/node"
	"github.com/wats-network/wats/repo"
)

// Run is `wats daemon`: it locks the repo, starts a node on it, serves the
// control API on r.SocketPath() (the dashboard on api.dashboard_addr and
// metrics on api.metrics_addr when set)
// and blocks until ctx is cancelled or the control API is asked to stop
// (POST api.PathShutdown, `wats shutdown`), then shuts down cleanly, the
// same way in both cases. It returns an
// error if the node could not start or a server failed. opts configure the
// node (nil: the defaults); Options.Dir is r's. logRing, if not nil, keeps the
// last lines of opts.Logger's output (LogRing.Tee), which the control API
// serves (api.PathLog).
func Run(ctx context.Context, r *repo.Repo, opts *node.Options, logRing *LogRing) error {
	release, err := r.Lock()
	if err != nil {
		return err
	}
	defer release()
	sock, err := r.PrepareSocket()
	if err != nil {
		return err
	}
	var o node.Options
	if opts != nil {
		o = *opts
	}
	o.Dir = r.Dir
	log := o.EnsureDefaults().Logger
	n, err := node.New(r.Config, r.Key, &o)
	if err != nil {
		return err
	}
	if err := n.Start(ctx); err != nil {
		n.Close()
		return err
	}
	cl, err := listenControl(sock)
	if err != nil {
		n.Close()
		return err
	}
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	// asked is closed when the control API is asked to shut down.
	asked := make(chan struct{})
	var askOnce sync.Once
	shutdown := func() {
		askOnce.Do(func() {
			log.Info("shutdown asked over the control API")
			close(asked)
		})
	}
	errc := make(chan error, 4)
	servers := 0
	// fail stops what started and returns err.
	fail := func(err error) error {
		stop()
		cl.Close()
		for ; servers > 0; servers-- {
			<-errc
		}
		n.Close()
		return err
	}
	var dash *dashboard.Dashboard
	var dl net.Listener
	dashURL := ""
	if addr := r.Config.API.DashboardAddr; addr != "" {
		if dl, err = net.Listen("tcp", addr); err != nil {
			return fail(fmt.Errorf("daemon: dashboard listener %s: %w", addr, err))
		}
		if dash, err = dashboard.New(dashboard.Options{Gatherer: n.Gatherer()}); err != nil {
			dl.Close()
			return fail(err)
		}
		dashURL = dash.URL(dl.Addr().String())
	}
	control := handler(n, logRing, dashURL, shutdown)
	servers++
	go func() { errc <- serveControl(sctx, control, cl, sock) }()
	if dash != nil {
		servers += 2
		go func() { errc <- serveTCP(sctx, dl, dash.Handler(control)) }()
		start := time.Now()
		go func() {
			dash.Run(sctx, time.Now, func() time.Duration { return time.Since(start) })
			errc <- nil
		}()
		log.Info("dashboard listening", "addr", dl.Addr().String(), "see", "wats dashboard (its URL with the token)")
	}
	if addr := r.Config.API.MetricsAddr; addr != "" {
		l, err := net.Listen("tcp", addr)
		if err != nil {
			return fail(fmt.Errorf("daemon: metrics listener %s: %w", addr, err))
		}
		servers++
		go func() { errc <- serveTCP(sctx, l, metricsHandler(n)) }()
		log.Info("metrics listening", "addr", l.Addr().String())
	}
	log.Info("control API listening", "socket", sock)
	notifyStarted(log)

	var first error
	select {
	case <-ctx.Done():
	case <-asked:
	case first = <-errc:
		servers--
	}
	NotifyStopping(log)
	stop()
	for ; servers > 0; servers-- {
		if err := <-errc; err != nil && first == nil {
			first = err
		}
	}
	log.Info("shutting down")
	err = errors.Join(first, n.Close())
	release()
	if err == nil {
		// The last line, once the repo is free: a person watching the
		// terminal knows it ended well (docs/adr/0051, second addendum).
		log.Info("stopped")
	}
	return err
}
