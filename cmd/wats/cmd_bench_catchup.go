package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/wats-network/wats/internal/bench"
)

func (c *cli) benchCatchupCmd() *cobra.Command {
	var (
		n, peers, rounds int
		dir              string
		jsonOut          bool
	)
	cmd := &cobra.Command{
		Use:   "catchup",
		Short: "Time a new daemon's catch-up of N events from one peer and from several",
		Long: `Fill --peers repos with the same N signed events, each in an order of its
own, start a daemon on each (real processes, the default limits: 600 sync
pages of 256 a minute per peer, a burst of 150), and time, in one run, a new
daemon's catch-up from one of them and a new daemon's catch-up from all of
them, who goes first alternating from round to round (--rounds pairs): from
the first connect to the end of the catch-up, every event stored. A daemon
behind several peers that serve sync by id range spreads its catch-up across
them, each within its own rate limits (ADR 0052): many_over_one is the time
from all over the time from one (ADR 0052's target: at most 0.35 for 90,000
events from 4 peers).

Each figure is printed as soon as it is measured, a line of text each, or
with --json one JSON object a line, {"figure":NAME,"round":R,"value":V,"unit":U}:
events, peers and fill_ns; then for each round catch_up_one_ns and
catch_up_many_ns in the order they ran, many_over_one and events_from_<i>
(the events that came from peer i in the catch-up from all); last rounds and
many_over_one (the median round's). Progress goes to stderr (not with --json).`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if n < 1 {
				return usageErrorf("-n must be at least 1, got %d", n)
			}
			if peers < 2 {
				return usageErrorf("--peers must be at least 2, got %d", peers)
			}
			if rounds < 1 {
				return usageErrorf("--rounds must be at least 1, got %d", rounds)
			}
			opts := &bench.CatchupOptions{Dir: dir, Peers: peers, Rounds: rounds,
				Figure: func(f bench.Figure) { c.printSyncFigure(f, jsonOut) }}
			if !jsonOut {
				opts.Progress = func(line string) { fmt.Fprintln(c.stderr, line) }
			}
			_, err := bench.Catchup(cmd.Context(), n, opts)
			return err
		},
	}
	cmd.Flags().IntVarP(&n, "events", "n", 90_000, "events every peer holds")
	cmd.Flags().IntVar(&peers, "peers", 4, "peers that hold the events")
	cmd.Flags().IntVar(&rounds, "rounds", 1, "pairs of catch-ups, from one peer and from all, alternating")
	cmd.Flags().StringVar(&dir, "dir", "", "directory for the repos (default: a temp dir, removed after)")
	cmd.Flags().BoolVar(&jsonOut, "json", false, "print each figure as a JSON line (NDJSON) as it is measured")
	return cmd
}
