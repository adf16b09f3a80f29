package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"
)

// diskResult is what bench disk measured: fsyncs of small appends to one
// file, as the event log's WAL makes them.
type diskResult struct {
	Dir     string  `json:"dir"`
	Seconds float64 `json:"seconds"`
	Fsyncs  int     `json:"fsyncs"`
	P50ms   float64 `json:"p50_ms"`
	P99ms   float64 `json:"p99_ms"`
	MaxMs   float64 `json:"max_ms"`
	// Over100ms counts the fsyncs that took more than 100 ms: each holds
	// up every event of its group by as much.
	Over100ms int `json:"over_100ms"`
}

// diskSlow is the fsync latency bench disk counts as a stall.
const diskSlow = 100 * time.Millisecond

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
			res, err := benchDisk(cmd.Context(), dir, duration, every)
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

// benchDisk runs bench disk in dir: a file of its own, removed after.
func benchDisk(ctx context.Context, dir string, duration, every time.Duration) (*diskResult, error) {
	f, err := os.CreateTemp(dir, "wats-bench-disk-*")
	if err != nil {
		return nil, fmt.Errorf("bench disk: %w", err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	buf := make([]byte, 1024)
	var lat []time.Duration
	start := time.Now()
	for time.Since(start) < duration && ctx.Err() == nil {
		if _, err := f.Write(buf); err != nil {
			return nil, fmt.Errorf("bench disk: %w", err)
		}
		t := time.Now()
		if err := f.Sync(); err != nil {
			return nil, fmt.Errorf("bench disk: %w", err)
		}
		lat = append(lat, time.Since(t))
		select {
		case <-ctx.Done():
		case <-time.After(every):
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return diskFigures(dir, time.Since(start), lat), nil
}

// diskFigures sums up the fsync latencies lat of a run of d in dir.
func diskFigures(dir string, d time.Duration, lat []time.Duration) *diskResult {
	res := &diskResult{Dir: dir, Seconds: d.Seconds(), Fsyncs: len(lat),
		P50ms: quantileMs(lat, 0.50), P99ms: quantileMs(lat, 0.99)}
	for _, l := range lat {
		res.MaxMs = max(res.MaxMs, ms(l))
		if l > diskSlow {
			res.Over100ms++
		}
	}
	return res
}
