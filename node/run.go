package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/wats-network/wats/repo"
)

// Options are the process-level settings of a node that do not come from
// the repo's config file.
type Options struct {
	// Dir is the repo directory whose database the node opens, at
	// Dir/db (repo.DBDir), and which a DamagedError names. Empty means an
	// in-memory database, gone when the node closes (tests, benches).
	Dir string
	// Agent is sent in hello, e.g. "wats/0.1.0"; empty means "wats/dev".
	Agent string
	// Logger receives the node's structured logs; nil means slog.Default().
	Logger *slog.Logger
	// LogLevel, if set, is the level Logger logs from, which the daemon
	// changes at run time (SIGHUP); GET api.PathConfig reports it as
	// log.level. Nil: log.level as configured.
	LogLevel *slog.LevelVar
	// Now is the wall clock; nil means time.Now. Tests pass a fake one.
	Now func() time.Time
	// Mono, if set, is the monotonic clock: the time since the node was
	// built. Nil means the monotonic reading of Now (time.Now's own), so
	// that a step of the wall clock moves no duration. Tests set it to
	// step the two clocks apart.
	Mono func() time.Duration
}

// Run is `wats daemon`: it locks the repo, starts a node on it, serves the
// control API on r.SocketPath() (and metrics on api.metrics_addr when set)
// and blocks until ctx is cancelled, then shuts down cleanly. It returns an
// error if the node could not start or a server failed.
func Run(ctx context.Context, r *repo.Repo, opts Options) error {
	release, err := r.Lock()
	if err != nil {
		return err
	}
	defer release()
	sock, err := r.PrepareSocket()
	if err != nil {
		return err
	}
	opts.Dir = r.Dir
	n, err := New(r.Config, r.Key, &opts)
	if err != nil {
		return err
	}
	if err := n.Start(ctx); err != nil {
		n.Close()
		return err
	}
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	errc := make(chan error, 2)
	go func() { errc <- n.ServeAPI(sctx, sock) }()
	servers := 1
	if addr := r.Config.API.MetricsAddr; addr != "" {
		l, err := net.Listen("tcp", addr)
		if err != nil {
			stop()
			<-errc
			n.Close()
			return fmt.Errorf("node: metrics listener %s: %w", addr, err)
		}
		servers++
		go func() { errc <- n.serveHTTP(sctx, l, n.MetricsHandler(), nil) }()
	}
	n.log.Info("control API listening", "socket", sock)

	var first error
	select {
	case <-ctx.Done():
	case first = <-errc:
		servers--
	}
	stop()
	for ; servers > 0; servers-- {
		if err := <-errc; err != nil && first == nil {
			first = err
		}
	}
	n.log.Info("shutting down")
	return errors.Join(first, n.Close())
}

// EnsureDefaults sets each zero field of o to its default (see each field)
// and returns o; on a nil o it returns new Options of the defaults.
func (o *Options) EnsureDefaults() *Options {
	if o == nil {
		o = &Options{}
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Agent == "" {
		o.Agent = "wats/dev"
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}
