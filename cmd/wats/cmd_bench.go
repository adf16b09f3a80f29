package main

import (
	"fmt"
	"os"
	"time"

	"github.com/go-json-experiment/json"

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
		n          int
		dir        string
		jsonOut    bool
		cpuProfile string
		traceFile  string
	)
	cmd := &cobra.Command{
		Use:   "sync",
		Short: "Fill one node with N events and time a second node's catch-up by sync",
		Long: `Start two nodes in this process on 127.0.0.1 (gossip off), fill the first
with N signed events, then time the second node's catch-up from it by sync over
real libp2p (TCP, Noise, yamux): signatures verified on all cores, writes
durable. It also times crypto/ed25519.Verify of the same N signatures one at a
time on all cores, twice: before the catch-up on the events of the first node,
and after it on the events the second node stored. It reports the catch-up over the mean of the two
(ADR 0034: at most 0.8), so that a machine whose speed drifts during the run
moves the anchor as it moves the catch-up. Reports events/s, bytes per event on
disk and the peak RSS of the process during the catch-up. Rate limits do not
apply to this run.

Each figure is printed as soon as it is measured, so that an error later in a
long run loses nothing: a line of text each, or with --json one JSON object a
line (NDJSON), {"figure":NAME,"value":V,"unit":U}, NAME one of events, fill_ns,
single_verify_before_ns, catch_up_ns, single_verify_after_ns,
single_verify_ns (their mean), catch_up_over_single_verify,
single_verify_cpu_ns, catch_up_cpu_ns (the process's CPU time in each, which
a shared machine's load does not change), events_per_sec, peak_rss_bytes,
dropped, disk_bytes_per_event, in that order. Progress goes to
stderr (not with --json).`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if n < 1 {
				return usageErrorf("-n must be at least 1, got %d", n)
			}
			opts := &bench.SyncOptions{Dir: dir, Figure: func(f bench.Figure) { c.printSyncFigure(f, jsonOut) }}
			if !jsonOut {
				opts.Progress = func(line string) { fmt.Fprintln(c.stderr, line) }
			}
			if cpuProfile != "" {
				f, err := os.Create(cpuProfile)
				if err != nil {
					return err
				}
				defer f.Close()
				opts.CPUProfile = f
			}
			if traceFile != "" {
				f, err := os.Create(traceFile)
				if err != nil {
					return err
				}
				defer f.Close()
				opts.Trace = f
			}
			_, err := bench.Sync(cmd.Context(), n, opts)
			return err
		},
	}
	cmd.Flags().IntVarP(&n, "events", "n", 100_000, "events to fill the source node with")
	cmd.Flags().StringVar(&dir, "dir", "", "directory for the two repos (default: a temp dir, removed after)")
	cmd.Flags().BoolVar(&jsonOut, "json", false, "print each figure as a JSON line (NDJSON) as it is measured")
	cmd.Flags().StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile (pprof) of the catch-up to this file")
	cmd.Flags().StringVar(&traceFile, "trace", "", "write an execution trace (go tool trace) of the catch-up to this file")
	return cmd
}

// syncFigureLabels are the text labels of bench sync's figures.
var syncFigureLabels = map[string]string{
	"events":                      "events",
	"fill_ns":                     "fill",
	"single_verify_before_ns":     "single before",
	"single_verify_after_ns":      "single after",
	"single_verify_ns":            "single verify",
	"catch_up_ns":                 "catch-up",
	"catch_up_over_single_verify": "catch-up/single",
	"single_verify_cpu_ns":        "single CPU",
	"catch_up_cpu_ns":             "catch-up CPU",
	"events_per_sec":              "events/s",
	"peak_rss_bytes":              "peak RSS",
	"dropped":                     "dropped",
	"disk_bytes_per_event":        "disk bytes/event",
}

// printSyncFigure prints one figure of bench sync as it comes: a JSON line
// or a line of text.
func (c *cli) printSyncFigure(f bench.Figure, jsonOut bool) {
	if jsonOut {
		if b, err := json.Marshal(f); err == nil {
			fmt.Fprintf(c.stdout, "%s\n", b)
		} else {
			fmt.Fprintf(c.stderr, "wats: figure %s: %v\n", f.Name, err)
		}
		return
	}
	var v string
	switch f.Unit {
	case "ns":
		v = time.Duration(f.Value).Round(time.Millisecond).String()
	case "bytes":
		v = fmt.Sprintf("%.0f MiB", f.Value/(1<<20))
	case "ratio":
		v = fmt.Sprintf("%.2f", f.Value)
	default:
		v = fmt.Sprintf("%.0f", f.Value)
	}
	switch f.Name {
	case "single_verify_ns":
		v += " (crypto/ed25519, one at a time, all cores; the mean of before and after)"
	case "catch_up_over_single_verify":
		v += " (ADR 0034: at most 0.80)"
	}
	label := syncFigureLabels[f.Name]
	if label == "" {
		label = f.Name
	}
	fmt.Fprintf(c.stdout, "%-16s %s\n", label, v)
}
