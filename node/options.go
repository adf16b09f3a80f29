package node

import (
	"log/slog"
	"time"
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
	// GossipTrace, if set, is a file that gossipsub's JSON tracer writes
	// every event of the router to (gossip.Options.TracePath): for
	// diagnosis only, some hundred bytes an RPC.
	GossipTrace string
	// Statfs, if set, reads the free bytes and the total bytes of Dir's
	// filesystem, for the guard that refuses writes before the disk is
	// full (ADR 0044); nil means statfs(2). Tests pass a fake disk.
	Statfs func(dir string) (free, total uint64, err error)
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
