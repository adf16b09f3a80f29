package main

import (
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/spf13/cobra"

	"github.com/wats-network/wats/internal/bench"
)

func (c *cli) benchCmd() *cobra.Command {
	return withoutRepo(group("bench", "Measure the node's throughput, and its service under attack, on this machine",
		c.benchSyncCmd(), c.benchCatchupCmd(), c.benchFetchCmd(), c.benchAttackCmd(), c.benchAttackWorkerCmd(),
		c.benchGossipCmd(), c.benchGossipWorkerCmd(), c.benchDiskCmd(), c.benchVsIPFSCmd(),
		c.benchTransportCmd(), c.benchTransportWorkerCmd()), "in temporary directories, or --dir/--keep DIR")
}

func (c *cli) benchSyncCmd() *cobra.Command {
	var (
		n          int
		rounds     int
		dir        string
		jsonOut    bool
		cpuProfile string
		traceFile  string
	)
	cmd := &cobra.Command{
		Use:   "sync",
		Short: "Fill one node with N events and time a second node's catch-up by sync",
		Long: `Start nodes in this process on 127.0.0.1 (gossip off), fill the first with N
signed events, then time a new node's catch-up from it by sync over real
libp2p (TCP, Noise, yamux): signatures verified on all cores, writes durable.
Each catch-up is timed against crypto/ed25519.Verify of the same N signatures
one at a time on all cores, timed just before it and just after it (the first
time on the events of the source, then on the events each catching-up node
stored): the catch-up over the mean of the two (ADR 0034: at most 0.8), so
that a machine whose speed drifts during the run moves the anchor as it moves
the catch-up. With --rounds R (default 3), R new nodes catch up one after the
other, each with its own anchor, and the run's figures are the round of the
median ratio, with the lowest and the highest: on a shared machine one
ratio alone says little. Also reports events/s, bytes per event on disk and
the peak RSS of the process during each catch-up. Rate limits do not apply
to this run.

Each figure is printed as soon as it is measured, so that an error later in a
long run loses nothing: a line of text each, or with --json one JSON object a
line (NDJSON), {"figure":NAME,"round":R,"value":V,"unit":U}. First events and
fill_ns; then for each round (R from 1) single_verify_before_ns, catch_up_ns,
single_verify_after_ns, single_verify_ns (their mean),
catch_up_over_single_verify, single_verify_cpu_ns, catch_up_cpu_ns (the
process's CPU time in each, which a shared machine's load does not change),
events_per_sec, peak_rss_bytes, dropped, commits (the durable batches the
events were written in), disk_bytes_per_event; last, without
"round", rounds, catch_up_over_single_verify (the median round's),
catch_up_over_single_verify_min and _max. Progress goes to stderr (not with
--json). --cpuprofile and --trace cover the first round's catch-up.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if n < 1 {
				return usageErrorf("-n must be at least 1, got %d", n)
			}
			if rounds < 1 {
				return usageErrorf("--rounds must be at least 1, got %d", rounds)
			}
			opts := &bench.SyncOptions{Dir: dir, Rounds: rounds, Figure: func(f bench.Figure) { c.printSyncFigure(f, jsonOut) }}
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
	cmd.Flags().IntVar(&rounds, "rounds", 3, "catch-ups by new nodes, each against its own anchor")
	cmd.Flags().StringVar(&dir, "dir", "", "directory for the repos (default: a temp dir, removed after)")
	cmd.Flags().BoolVar(&jsonOut, "json", false, "print each figure as a JSON line (NDJSON) as it is measured")
	cmd.Flags().StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile (pprof) of the first catch-up to this file")
	cmd.Flags().StringVar(&traceFile, "trace", "", "write an execution trace of the first catch-up to this file")
	return cmd
}

// syncFigureLabels are the text labels of bench sync's figures.
var syncFigureLabels = map[string]string{
	"events":                          "events",
	"fill_ns":                         "fill",
	"single_verify_before_ns":         "single before",
	"single_verify_after_ns":          "single after",
	"single_verify_ns":                "single verify",
	"catch_up_ns":                     "catch-up",
	"catch_up_over_single_verify":     "catch-up/single",
	"catch_up_over_single_verify_min": "lowest ratio",
	"catch_up_over_single_verify_max": "highest ratio",
	"rounds":                          "rounds",
	"single_verify_cpu_ns":            "single CPU",
	"catch_up_cpu_ns":                 "catch-up CPU",
	"events_per_sec":                  "events/s",
	"peak_rss_bytes":                  "peak RSS",
	"dropped":                         "dropped",
	"commits":                         "commits",
	"disk_bytes_per_event":            "disk bytes/event",
	"peers":                           "peers",
	"catch_up_one_ns":                 "from one peer",
	"catch_up_many_ns":                "from all peers",
	"many_over_one":                   "all/one",
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
		if f.Round == 0 {
			v += " (the median round; ADR 0034: at most 0.80)"
		}
	case "many_over_one":
		if f.Round == 0 {
			v += " (the median round)"
		}
	}
	label := syncFigureLabels[f.Name]
	if label == "" {
		label = f.Name
	}
	if f.Round > 0 {
		label = fmt.Sprintf("[%d] %s", f.Round, label)
	}
	fmt.Fprintf(c.stdout, "%-20s %s\n", label, v)
}

// pickScenarios returns the scenarios of all that --scenario names: all of
// them for "all", else the one of that name (name gives a scenario's); a
// name that is none of names (what --scenario takes) is a usage error.
func pickScenarios[S any](all []S, name func(S) string, scenario string, names []string) ([]S, error) {
	if scenario == "all" {
		return all, nil
	}
	for _, s := range all {
		if name(s) == scenario {
			return []S{s}, nil
		}
	}
	return nil, usageErrorf("--scenario %q: must be one of %s", scenario, strings.Join(names, ", "))
}

// runScenarios runs the scenarios of run in turn by one, name naming
// each, and returns their results; with jsonOut each result is printed as
// one --json line, {"scenario": r}, as soon as it is measured, so that a
// long run's figures are never lost to a later scenario's error.
func runScenarios[S, R any](c *cli, run []S, name func(S) string, jsonOut bool, one func(S) (*R, error)) ([]R, error) {
	var results []R
	for _, s := range run {
		r, err := one(s)
		if err != nil {
			return nil, fmt.Errorf("scenario %s: %w", name(s), err)
		}
		results = append(results, *r)
		if !jsonOut {
			continue
		}
		if err := c.printJSONLine(struct {
			Scenario *R `json:"scenario"`
		}{r}); err != nil {
			return nil, fmt.Errorf("scenario %s: print --json: %w", name(s), err)
		}
	}
	return results, nil
}

// parseSources parses the --source addresses of an attack worker.
func parseSources(sources []string) ([]net.IP, error) {
	var out []net.IP
	for _, s := range sources {
		ip := net.ParseIP(s)
		if ip == nil {
			return nil, usageErrorf("--source %q is not an IP address", s)
		}
		out = append(out, ip)
	}
	return out, nil
}
