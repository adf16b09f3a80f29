package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/wats-network/wats/config"
	"github.com/wats-network/wats/daemon"
	"github.com/wats-network/wats/internal/fileio"
	"github.com/wats-network/wats/internal/netsim"
	"github.com/wats-network/wats/node"
	"github.com/wats-network/wats/p2p"
)

// envGossipTrace names the file of gossipsub's trace (node.Options.GossipTrace).
const envGossipTrace = "WATS_GOSSIP_TRACE"

func (c *cli) daemonCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "daemon",
		Short: "Run the node in the foreground until interrupted",
		Long: `Run the node of the repo: connect to the network, serve peers and the
control API on the repo's Unix socket, until SIGINT or SIGTERM, then shut down
cleanly. Logs go to stderr, as text or JSON per the config's [log] table;
the last 1,000 lines are also kept in memory, for wats diag bundle.

SIGHUP reads config.toml again: a new log.level takes effect at once; the
other keys it changed are logged as needing a restart (the node keeps
running as it was); a config.toml that is not valid is logged and ignored.

For diagnosis, WATS_GOSSIP_TRACE=FILE makes gossipsub write every event of
its router to FILE, one JSON object a line (each message published,
received, validated, delivered, rejected or dropped, with its id and
peers; docs/reliability.md follows lost events with it). It grows by some
hundred bytes a message.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			r, err := c.openRepo()
			if err != nil {
				return err
			}
			level := new(slog.LevelVar)
			// The last lines logged, for `wats diag bundle` (api.PathLog).
			ring := daemon.NewLogRing()
			logger, err := newLogger(r.Config.Log, ring.Tee(c.stderr), level)
			if err != nil {
				return err
			}
			routeLibp2pLogs(logger.Handler())
			if n := fileio.RemoveLeftovers(r.ConfigPath()); n > 0 {
				logger.Info("removed the temporary files of a config set that was killed", "files", n)
			}
			if netsim.UseSimAddrs() {
				logger.Warn("simulated internet: 198.18.0.0/16 taken for public addresses and 198.19.0.0/16 for private ones (" +
					netsim.EnvAddrs + "=1, set by the netsim harness only)")
			}
			stopHUP := reloadOnHUP(r.ConfigPath(), r.Config, level, logger)
			defer stopHUP()
			// ctx is cancelled on SIGINT and SIGTERM (main's
			// signal.NotifyContext): Run then shuts down and returns.
			ctx := cmd.Context()
			err = daemon.Run(ctx, r, &node.Options{Agent: "wats/" + version, Logger: logger, LogLevel: level,
				GossipTrace: os.Getenv(envGossipTrace)}, ring)
			if ctx.Err() != nil && errors.Is(err, context.Canceled) {
				return nil // stopped by a signal, as asked: a clean exit
			}
			if errors.Is(err, p2p.ErrListen) {
				return fmt.Errorf("%w\n(the config is %s; a second daemon on this machine: %s)",
					err, configPath(r.Dir), c.hint("init", "--profile", "local", "--repo", "DIR"))
			}
			return err
		},
	}
}

// newLogger returns the daemon's logger per the config's [log] table:
// text or JSON lines to w, from the level in level up, which it sets to
// log.level (and a SIGHUP may change).
func newLogger(lc config.LogConfig, w io.Writer, level *slog.LevelVar) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(lc.Level)); err != nil {
		return nil, fmt.Errorf("log.level %q: %w", lc.Level, err)
	}
	level.Set(l)
	opts := &slog.HandlerOptions{Level: level}
	switch lc.Format {
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	case "text", "":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	default:
		return nil, fmt.Errorf("log.format %q: want text or json", lc.Format)
	}
}

// reloadOnHUP reads the config file at path again at each SIGHUP, until the
// returned stop is called. It applies log.level to level at once and logs
// the other keys that differ from running (the config the node started
// with) as needing a restart; a file that is not valid is logged, and
// nothing changes. It reads main's SIGHUP channel (processHangups), so a
// SIGHUP that came before it ran is a reload now; after stop, SIGHUPs are
// still caught, and dropped: none ends the daemon while it shuts down.
func reloadOnHUP(path string, running *config.Config, level *slog.LevelVar, log *slog.Logger) (stop func()) {
	hup := processHangups
	if hup == nil {
		hup = catchHangups()
	}
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-done:
				return
			case <-hup:
				daemon.NotifyReloading(log)
				reloadConfig(path, running, level, log)
				daemon.NotifyReloaded(log)
			}
		}
	}()
	return func() { close(done) }
}

// reloadConfig is one SIGHUP of reloadOnHUP.
func reloadConfig(path string, running *config.Config, level *slog.LevelVar, log *slog.Logger) {
	cfg, err := config.Load(path)
	if err != nil {
		log.Error("SIGHUP: config.toml is not valid; nothing reloaded", "file", path, "err", err)
		return
	}
	var applied, restart []string
	now := *running
	now.Log.Level = strings.ToLower(level.Level().String())
	for _, k := range config.Diff(&now, cfg) {
		if k == "log.level" { // the one key of reloadable
			var l slog.Level
			if err := l.UnmarshalText([]byte(cfg.Log.Level)); err == nil {
				level.Set(l)
				applied = append(applied, k)
				continue
			}
		}
		restart = append(restart, k)
	}
	log.Info("SIGHUP: config.toml read again", "file", path, "applied", applied, "restart_to_apply", restart)
}
