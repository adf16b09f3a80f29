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
// libp2p's info lines are one level lower here, debug: they are about
// single connections of single peers ("failed negotiate identify protocol
// with peer", "protocol negotiation failed"), one per connection of a
// flood of fresh ids (docs/reliability.md, dht-sybil), outside the cap of
// the node's own peer-caused lines (ADR 0030). Its warnings and errors
// stay as they are, but identify's (peerNoise).
//
// It must run before the first libp2p log line, as each logger takes the
// handler at its first use; it is process-wide.
func routeLibp2pLogs(h slog.Handler) {
	gologshim.SetDefaultHandler(dropFx{h})
}

// dropFx is a slog.Handler that passes records on to Handler, info ones at
// debug level, unless they come from a logger with the attribute
// system=fx.
type dropFx struct{ slog.Handler }

// Enabled reports whether a record of level l is handled: an info record
// as a debug one.
func (d dropFx) Enabled(ctx context.Context, l slog.Level) bool {
	return d.Handler.Enabled(ctx, lower(l))
}

// Handle passes r on, an info record at debug level.
func (d dropFx) Handle(ctx context.Context, r slog.Record) error {
	r.Level = lower(r.Level)
	return d.Handler.Handle(ctx, r)
}

// lower maps libp2p's info level to debug, and keeps every other.
func lower(l slog.Level) slog.Level {
	if l == slog.LevelInfo {
		return slog.LevelDebug
	}
	return l
}

func (d dropFx) WithAttrs(attrs []slog.Attr) slog.Handler {
	for _, a := range attrs {
		if a.Key == "system" && a.Value.String() == "fx" {
			return discard{}
		}
		if a.Key == "logger" && a.Value.String() == "net/identify" {
			return peerNoise{d.Handler.WithAttrs(attrs)}
		}
	}
	return dropFx{d.Handler.WithAttrs(attrs)}
}

// peerNoise is the handler of identify's logger: its warnings too are at
// debug level. Every one is about a single peer that did not answer
// identify ("failed to identify peer"), one per connection of a flood of
// fresh ids that speak nothing but what they attack with.
type peerNoise struct{ slog.Handler }

func (p peerNoise) Enabled(ctx context.Context, l slog.Level) bool {
	return p.Handler.Enabled(ctx, min(l, slog.LevelDebug))
}

func (p peerNoise) Handle(ctx context.Context, r slog.Record) error {
	r.Level = min(r.Level, slog.LevelDebug)
	return p.Handler.Handle(ctx, r)
}

func (p peerNoise) WithAttrs(attrs []slog.Attr) slog.Handler {
	return peerNoise{p.Handler.WithAttrs(attrs)}
}

func (p peerNoise) WithGroup(name string) slog.Handler { return peerNoise{p.Handler.WithGroup(name)} }

func (d dropFx) WithGroup(name string) slog.Handler { return dropFx{d.Handler.WithGroup(name)} }

// discard is a slog.Handler that handles nothing.
type discard struct{}

func (discard) Enabled(context.Context, slog.Level) bool  { return false }
func (discard) Handle(context.Context, slog.Record) error { return nil }
func (d discard) WithAttrs([]slog.Attr) slog.Handler      { return d }
func (d discard) WithGroup(string) slog.Handler           { return d }
