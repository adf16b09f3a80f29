package main

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/wats-network/wats/internal/bench"
)

func (c *cli) benchDiskCmd() *cobra.Command {
	var (
		dir      string
		duration time.Duration
		every    time.Duration
		jsonOut  bool
	)
	cmd := &cobra.Command{
		Use:   "disk",
		Short: "Time fsyncs of small appends on a directory's disk, as the event log makes them",
		Long: `Append 1 KiB to a file in DIR and fsync it (fdatasync on Linux) every --every
for --duration, then report the latencies: p50, p99, the slowest and how many
took more than 100 ms. The node syncs every event before it acknowledges or
forwards it (ADR 0017), so a disk's stalls show in gossip's latency however
idle the node is; run this on the repo's disk to tell them from the node's own.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if duration <= 0 || every <= 0 {
				return usageErrorf("--duration and --every must be positive")
			}
			if dir == "" {
				dir = os.TempDir()
			}
			res, err := bench.Disk(cmd.Context(), dir, duration, every)
			if err != nil {
				return err
			}
			if jsonOut {
				return c.printJSON(res)
			}
			fmt.Fprintf(c.stdout, "%s: %d fsyncs in %.0f s: p50 %.2f ms, p99 %.1f ms, slowest %.1f ms, %d over 100 ms\n",
				res.Dir, res.Fsyncs, res.Seconds, res.P50ms, res.P99ms, res.MaxMs, res.Over100ms)
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "", "the directory whose disk to time (default: the temporary directory)")
	cmd.Flags().DurationVar(&duration, "duration", time.Minute, "how long to run")
	cmd.Flags().DurationVar(&every, "every", 50*time.Millisecond, "the pause between fsyncs")
	cmd.Flags().BoolVar(&jsonOut, "json", false, "print the result as JSON")
	return cmd
}
