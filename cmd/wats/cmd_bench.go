package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/wats-network/wats/internal/bench"
)

func (c *cli) benchCmd() *cobra.Command {
	return withoutRepo(group("bench", "Measure the node's throughput, and its service under attack, on this machine",
		c.benchSyncCmd(), c.benchFetchCmd(), c.benchAttackCmd(), c.benchAttackWorkerCmd(),
		c.benchGossipCmd(), c.benchGossipWorkerCmd(), c.benchDiskCmd(), c.benchVsIPFSCmd()), "in temporary directories, or --dir/--keep DIR")
}

func (c *cli) benchSyncCmd() *cobra.Command {
	var (
		n       int
		dir     string
		jsonOut bool
	)
	cmd := &cobra.Command{
		Use:   "sync",
		Short: "Fill one node with N events and time a second node's catch-up by sync",
		Long: `Start two nodes in this process on 127.0.0.1 (gossip off), fill the first
with N signed events, then time the second node's catch-up from it by sync over
real libp2p (TCP, Noise, yamux): signatures verified on all cores, writes
durable. Reports events/s, bytes per event on disk and the peak RSS of the
process during the catch-up. Rate limits do not apply to this run.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if n < 1 {
				return usageErrorf("-n must be at least 1, got %d", n)
			}
			progress := func(line string) {
				if !jsonOut {
					fmt.Fprintln(c.stderr, line)
				}
			}
			res, err := bench.Sync(cmd.Context(), n, dir, progress)
			if err != nil {
				return err
			}
			if jsonOut {
				return c.printJSON(res)
			}
			fmt.Fprintf(c.stdout, "events           %d\n", res.Events)
			fmt.Fprintf(c.stdout, "fill             %v\n", res.Fill.Round(time.Millisecond))
			fmt.Fprintf(c.stdout, "catch-up         %v\n", res.CatchUp.Round(time.Millisecond))
			fmt.Fprintf(c.stdout, "events/s         %.0f\n", res.EventsPerSec)
			fmt.Fprintf(c.stdout, "disk bytes/event %.0f\n", res.DiskBytesPerEvent)
			fmt.Fprintf(c.stdout, "peak RSS         %.0f MiB\n", float64(res.PeakRSSBytes)/(1<<20))
			fmt.Fprintf(c.stdout, "dropped          %d\n", res.Dropped)
			return nil
		},
	}
	cmd.Flags().IntVarP(&n, "events", "n", 100_000, "events to fill the source node with")
	cmd.Flags().StringVar(&dir, "dir", "", "directory for the two repos (default: a temp dir, removed after)")
	cmd.Flags().BoolVar(&jsonOut, "json", false, "print the result as JSON")
	return cmd
}
