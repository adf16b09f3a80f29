package main

import (
	"context"
	"log/slog"

	"github.com/libp2p/go-libp2p/gologshim"
)

// routeLibp2pLogs sends the logs of go-libp2p and the libraries that log
// through its shim (pubsub, the resource manager, …) to h, the daemon's
// handler: one format, one level, one stream. Without it they go to
// stderr in a format of their own. The lifecycle log of fx (the dependency
// injector go-libp2p builds its host with) is dropped: it repeats, in
// lines of its own, the error libp2p.New returns and the daemon reports.
//
// It must run before the first libp2p log line, as each logger takes the
// handler at its first use; it is process-wide.
func routeLibp2pLogs(h slog.Handler) {
	gologshim.SetDefaultHandler(dropFx{h})
}

// dropFx is a slog.Handler that passes records on to Handler unless they
// come from a logger with the attribute system=fx.
type dropFx struct{ slog.Handler }

func (d dropFx) WithAttrs(attrs []slog.Attr) slog.Handler {
	for _, a := range attrs {
		if a.Key == "system" && a.Value.String() == "fx" {
			return discard{}
		}
	}
	return dropFx{d.Handler.WithAttrs(attrs)}
}

func (d dropFx) WithGroup(name string) slog.Handler { return dropFx{d.Handler.WithGroup(name)} }

// discard is a slog.Handler that handles nothing.
type discard struct{}

func (discard) Enabled(context.Context, slog.Level) bool  { return false }
func (discard) Handle(context.Context, slog.Record) error { return nil }
func (d discard) WithAttrs([]slog.Attr) slog.Handler      { return d }
func (d discard) WithGroup(string) slog.Handler           { return d }
