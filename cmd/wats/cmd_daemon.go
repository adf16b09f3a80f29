package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/wats-network/wats/config"
	"github.com/wats-network/wats/node"
)

func (c *cli) daemonCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "daemon",
		Short: "Run the node in the foreground until interrupted",
		Long: `Run the node of the repo: connect to the network, serve peers and the
control API on the repo's Unix socket, until SIGINT or SIGTERM, then shut down
cleanly. Logs go to stderr, as text or JSON per the config's [log] table.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			r, err := c.openRepo()
			if err != nil {
				return err
			}
			logger, err := newLogger(r.Config.Log, c.stderr)
			if err != nil {
				return err
			}
			// ctx is cancelled on SIGINT and SIGTERM (main's
			// signal.NotifyContext): Run then shuts down and returns.
			ctx := cmd.Context()
			err = node.Run(ctx, r, node.Options{Agent: "wats/" + version, Logger: logger})
			if ctx.Err() != nil && errors.Is(err, context.Canceled) {
				return nil // stopped by a signal, as asked: a clean exit
			}
			return err
		},
	}
}

// newLogger returns the daemon's logger per the config's [log] table:
// text or JSON lines to w, from the configured level up.
func newLogger(lc config.LogConfig, w io.Writer) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(lc.Level)); err != nil {
		return nil, fmt.Errorf("log.level %q: %w", lc.Level, err)
	}
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
