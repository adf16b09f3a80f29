package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/wats-network/wats/api"
	"github.com/wats-network/wats/internal/humanize"
	"github.com/wats-network/wats/repo"
)

// defaultShutdownWait is how long `wats shutdown` waits for the daemon to
// stop by default: the 30 s the README's systemd unit gives it
// (TimeoutStopSec) after SIGTERM.
const defaultShutdownWait = 30 * time.Second

// shutdownPoll is how often `wats shutdown` looks whether the daemon has
// stopped.
const shutdownPoll = 50 * time.Millisecond

func (c *cli) shutdownCmd() *cobra.Command {
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "shutdown [--timeout D]",
		Short: "Stop the running daemon cleanly, as Ctrl-C or SIGTERM does, and wait until it has",
		Long: `Ask the daemon of the repo, over its control API, to shut down as SIGINT and
SIGTERM make it: it closes its control API, its connections and its
database, releases the repo lock and exits 0. The command waits until the
daemon has released the repo lock (repo.lock), at most --timeout, and says
how long it took; past --timeout it says the daemon still runs, and exits 1.

With no daemon running there is nothing to stop: it says so and exits 0.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if timeout <= 0 {
				return usageErrorf("--timeout %s: must be positive", timeout)
			}
			cl, err := c.client()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			start := time.Now()
			sd, err := cl.Shutdown(ctx)
			switch {
			case errors.Is(err, api.ErrNoDaemon):
				fmt.Fprintf(c.stdout, "no daemon runs for repo %s: nothing to stop\n", c.repoDir)
				return nil
			case daemonGone(err):
				// Asked, and the connection closed before the answer: it
				// is stopping. The repo lock names it.
				sd = &api.Shutdown{}
				sd.PID, _, _ = repo.LockHolder(c.repoDir)
			case err != nil:
				return c.apiError(err)
			}
			fmt.Fprintf(c.stderr, "asked the daemon of repo %s (%s) to shut down; waiting up to %s\n", c.repoDir, pidText(sd.PID), timeout)
			stopped := func() (bool, error) { return c.daemonStopped(ctx, cl, sd.PID) }
			if err := waitStopped(ctx, timeout, shutdownPoll, stopped); err != nil {
				if errors.Is(err, errStillRuns) {
					return fmt.Errorf("the daemon of repo %s (%s) was asked to shut down and still runs after %s "+
						"(closing its database can take a while on a slow disk): wait longer with --timeout, "+
						"or look at its log", c.repoDir, pidText(sd.PID), timeout)
				}
				return err
			}
			fmt.Fprintf(c.stdout, "the daemon of repo %s (%s) has stopped, in %s\n", c.repoDir, pidText(sd.PID),
				time.Since(start).Round(time.Millisecond))
			return nil
		},
	}
	cmd.Flags().DurationVar(&timeout, "timeout", defaultShutdownWait, "how long to wait for the daemon to stop")
	return cmd
}

// daemonStopped reports whether the daemon of pid (0: unknown) that was
// asked to shut down has stopped: its control API no longer answers, and
// the repo lock is no longer held by it (free, or held by a reader or
// another process, which writes another pid or none). Both: the lock is
// released only once the daemon has closed its database, after its
// control API; the API is watched too for a daemon whose lock is not on
// this machine (a socket forwarded from another host).
func (c *cli) daemonStopped(ctx context.Context, cl *api.Client, pid int) (bool, error) {
	if _, err := cl.ID(ctx); !daemonGone(err) {
		return false, nil
	}
	holder, held, err := repo.LockHolder(c.repoDir)
	if err != nil {
		return false, err
	}
	switch {
	case !held:
		return true, nil
	case pid == 0: // not known: any daemon's pid in the lock is taken for it
		return holder == 0, nil
	}
	return holder != pid, nil
}

// errStillRuns is waitStopped's error when the daemon did not stop in
// time.
var errStillRuns = errors.New("the daemon still runs")

// waitStopped calls stopped at once, then every poll, until it reports
// true (nil), fails (its error), ctx ends (ctx's error) or timeout has
// passed (errStillRuns).
func waitStopped(ctx context.Context, timeout, poll time.Duration, stopped func() (bool, error)) error {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(poll)
	defer tick.Stop()
	for {
		ok, err := stopped()
		if err != nil || ok {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline.C:
			return errStillRuns
		case <-tick.C:
		}
	}
}

func (c *cli) peersDisconnectCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "disconnect PEERID [--json]",
		Short: "Close every connection to a peer",
		Long: `Close every connection of the node to the peer PEERID (as 'peers ls' lists
it) and say how many were open; a peer not connected is said to be so, and
nothing is done (exit 0). The peer is not banned and its record in the peer
cache is kept ('peers forget' deletes it): it may connect again, or be
dialled again by discovery or 'peers connect'.`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := c.clientFor(c.checkPeerID, args[0])
			if err != nil {
				return err
			}
			d, err := cl.Disconnect(cmd.Context(), args[0])
			if err != nil {
				return c.apiError(err)
			}
			if asJSON {
				return c.printJSON(d)
			}
			if d.Closed == 0 {
				fmt.Fprintf(c.stdout, "not connected to %s: nothing to close\n", d.PeerID)
				return nil
			}
			fmt.Fprintf(c.stdout, "disconnected from %s: closed %s\n", d.PeerID, humanize.Plural(d.Closed, "connection"))
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON (peer_id, closed)")
	return cmd
}
