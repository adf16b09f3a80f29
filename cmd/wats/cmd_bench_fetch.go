package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/wats-network/wats/core"
	"github.com/wats-network/wats/internal/bench"
	"github.com/wats-network/wats/internal/humanize"
)

func (c *cli) benchFetchCmd() *cobra.Command {
	var (
		size      uint64
		transport string
		get       bool
		jsonOut   bool
		profDir   string
		profSecs  int
		rounds    int
		ceiling   bool
		resume    bool
		runs      int
		keepNone  bool
		atk       blocksAttackFlags
	)
	cmd := &cobra.Command{
		Use:   "fetch [--size N] [--get] [--ceiling] [--rounds N] [--resume|--attack S]",
		Short: "Time a blob's import into one daemon and its fetch by a second over bitswap",
		Long: `Start two daemons (real processes, as 'devnet up' does) in a temporary
directory, import a blob of --size pseudo-random bytes into node0 through its
control API, then time node1's fetch of it from node0 over bitswap (TCP or
QUIC on 127.0.0.1, the fetch rules of ADR 0014). Reports both rates in MiB/s
and each daemon's peak RSS (Linux). The nodes' blobs.max_blob_bytes is raised
to the size for the run.

With --get, node1 gets the blob as an operator does, by 'wats blob get CID -o
FILE' (this binary, in a process of its own) into the temporary directory:
the time is that command's, from start to the file written and renamed, and
the file is checked against the blob before anything is reported.

With --resume, it times fetches that resume (docs/adr/0054) against whole
ones, --runs times each, alternating which goes first: node1's whole fetch
through its API; and node1's fetch killed (SIGKILL) once it holds half the
blob, its daemon restarted, and the fetch asked again, timed from that
request (and from the restart) to the blob stored. node1 removes the blob
after each. It reports the medians and their ratios to the whole fetch.
With --keep-none the daemons keep no partial blob (blobs.max_partial_bytes =
0), as before ADR 0054: the anchor, the fetch after the restart starting from
nothing.

Each figure is printed as it is measured; with --json, every line of
standard output is one JSON object: {"figure": …} for the import and the
fetch, then {"result": …}.

With --ceiling, each round also times one libp2p stream of --size bytes
between two processes over the fetch's transport (what 'bench transport'
times; TCP for --transport any), before the fetch in odd rounds and after it
in even ones, and prints the fetch's rate over the stream's. With --rounds N
node1 fetches the blob N times (removing it before each fetch but the
first), and the summary is the median round's (by that ratio).

With --cpuprofile DIR, CPU profiles of both daemons during the fetch are
written to DIR/node0.pprof (the provider) and DIR/node1.pprof (the fetcher),
taken through their control APIs for --profile-seconds from just before the
fetch (go tool pprof DIR/node1.pprof).

` + blocksAttackHelp,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if size < 1 || size > core.MaxSafeInt {
				return usageErrorf("--size %d: must be 1..2^53 bytes", size)
			}
			switch transport {
			case "any", "tcp", "quic":
			default:
				return usageErrorf("--transport %q: must be any, tcp or quic", transport)
			}
			if rounds < 1 {
				return usageErrorf("--rounds must be at least 1, got %d", rounds)
			}
			if atk.scenario != "" {
				atk.jsonOut = jsonOut
				return c.benchBlocks(cmd, atk, size)
			}
			if resume {
				if get || ceiling || rounds != 1 {
					return usageErrorf("--resume times fetches through the API; leave out --get, --ceiling and --rounds")
				}
				if runs < 1 || runs > 100 {
					return usageErrorf("--runs %d: must be 1..100", runs)
				}
				return c.benchResume(cmd, bench.ResumeOptions{Size: size, Transport: transport, Runs: runs, KeepNone: keepNone}, jsonOut)
			}
			o := bench.FetchOptions{Size: size, Transport: transport, Rounds: rounds, Ceiling: ceiling, CPUProfileDir: profDir, CPUProfileSeconds: profSecs}
			if jsonOut {
				o.Measured = printFigure[bench.FetchFigure](c)
			} else {
				o.Log = c.progress
				fetch := "fetch (node1)"
				if get {
					fetch = "blob get (node1)"
				}
				o.Measured = func(f bench.FetchFigure) {
					label := map[string]string{"import": "import (node0)", "fetch": fetch, "ceiling": "ceiling (stream)"}[f.Op]
					if f.Round > 0 && (rounds > 1 || ceiling) {
						label = fmt.Sprintf("%d: %s", f.Round, label)
					}
					fmt.Fprintf(c.stdout, "%-21s %v, %.0f MiB/s\n", label, f.Seconds, f.MiBPerS)
				}
			}
			if get {
				o.Via = bench.ViaGet
			}
			res, err := bench.Fetch(cmd.Context(), o)
			if err != nil {
				return err
			}
			if jsonOut {
				return printResult(c, res)
			}
			fmt.Fprintf(c.stdout, "blob               %s (%s)\n", humanize.Bytes(res.Bytes), res.CID)
			fmt.Fprintf(c.stdout, "fetched over       %s\n", strings.Join(res.Conns, ", "))
			if ceiling {
				fmt.Fprintf(c.stdout, "fetch/ceiling      %.2f (round %d of %d; lowest %.2f, highest %.2f), ceiling %.0f MiB/s\n",
					res.FetchOverCeiling, res.Median, rounds, res.FetchOverCeilingMin, res.FetchOverCeilingMax, res.CeilingMiBPerS)
			}
			fmt.Fprintf(c.stdout, "CPU during fetch   node1 %v, node0 %v\n", res.FetcherCPU, res.ProviderCPU)
			fmt.Fprintf(c.stdout, "peak RSS fetcher   %s\n", rssString(res.FetcherPeakRSS))
			fmt.Fprintf(c.stdout, "peak RSS provider  %s\n", rssString(res.ProviderPeakRSS))
			if get {
				fmt.Fprintf(c.stdout, "blob get process   CPU %v, peak RSS %s\n", res.GetCPU, rssString(res.GetPeakRSS))
			}
			return nil
		},
	}
	cmd.Flags().Uint64Var(&size, "size", 256<<20, "the blob's size in bytes")
	cmd.Flags().StringVar(&transport, "transport", "any", "the transports: any (TCP, then QUIC), tcp or quic")
	cmd.Flags().BoolVar(&get, "get", false, "time 'blob get -o FILE' on node1 instead of the API's fetch")
	cmd.Flags().BoolVar(&jsonOut, "json", false, "print one JSON object a line: each figure, then the result")
	cmd.Flags().IntVar(&rounds, "rounds", 1, "fetches by node1; each but the first after a blob rm")
	cmd.Flags().BoolVar(&ceiling, "ceiling", false, "time one libp2p stream in each round too, and the fetch's ratio to it")
	cmd.Flags().StringVar(&profDir, "cpuprofile", "", "write CPU profiles of both daemons during the fetch to this directory")
	cmd.Flags().IntVar(&profSecs, "profile-seconds", 5, "the profiles' length in seconds, from before the fetch")
	cmd.Flags().BoolVar(&resume, "resume", false, "time fetches that resume (node1 killed half way) against whole ones")
	cmd.Flags().IntVar(&runs, "runs", 3, "with --resume, the pairs of fetches timed")
	cmd.Flags().BoolVar(&keepNone, "keep-none", false, "with --resume, keep no partial blob (the anchor)")
	atk.register(cmd)
	return cmd
}

// benchResume runs and prints `bench fetch --resume`.
func (c *cli) benchResume(cmd *cobra.Command, o bench.ResumeOptions, jsonOut bool) error {
	if jsonOut {
		o.Measured = printFigure[bench.ResumeFigure](c)
	} else {
		o.Log = c.progress
		o.Measured = func(f bench.ResumeFigure) {
			if f.Op == "whole" {
				fmt.Fprintf(c.stdout, "run %d whole fetch      %v\n", f.Run, f.Seconds)
				return
			}
			fmt.Fprintf(c.stdout, "run %d after a restart  %v from %s held (%v from the restart)\n", f.Run, f.Seconds, humanize.Bytes(f.Held), f.WithRestart)
		}
	}
	res, err := bench.Resume(cmd.Context(), o)
	if err != nil {
		return err
	}
	if jsonOut {
		return printResult(c, res)
	}
	fmt.Fprintf(c.stdout, "blob               %s (%s)\n", humanize.Bytes(res.Bytes), res.CID)
	fmt.Fprintf(c.stdout, "median whole       %v\n", res.Whole)
	fmt.Fprintf(c.stdout, "median resumed     %v, %.2f of a whole fetch (%v, %.2f, from the restart)\n",
		res.Resume, res.Ratio, res.ResumeWithRestart, res.RatioWithRestart)
	fmt.Fprintf(c.stdout, "median of a run's  %.2f (its resumed fetch over its whole one)\n", res.PairRatio)
	return nil
}

// rssString is a peak RSS as bench fetch prints it.
func rssString(n uint64) string {
	if n == 0 {
		return "n/a (Linux only)"
	}
	return humanize.Bytes(n)
}

func (c *cli) benchTransportCmd() *cobra.Command {
	var (
		size      uint64
		transport string
		rounds    int
		jsonOut   bool
	)
	cmd := &cobra.Command{
		Use:   "transport [--size BYTES] [--transport both|tcp|quic] [--rounds N]",
		Short: "Time one libp2p stream between two processes: the ceiling of a blob fetch",
		Long: `Start a second process of this binary with a libp2p host built as a daemon
builds its own (TCP with Noise and yamux, QUIC; the resource manager of the
default config) on 127.0.0.1, and time one stream of --size bytes from it to a
host of this process, which reads and discards them: the most a blob fetch
between two daemons on this machine could reach over that transport
(docs/adr/0053). With --transport both, TCP and QUIC alternate, TCP first in
odd rounds. Prints MiB/s and the CPU time of each side; with --json, one
JSON object a line, each stream's figure. 'bench fetch --ceiling' times the
same stream in the same run as a fetch.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if size < 1 || size > core.MaxSafeInt {
				return usageErrorf("--size %d: must be 1..2^53 bytes", size)
			}
			if rounds < 1 {
				return usageErrorf("--rounds must be at least 1, got %d", rounds)
			}
			ts := []string{transport}
			switch transport {
			case "tcp", "quic":
			case "both":
				ts = []string{"tcp", "quic"}
			default:
				return usageErrorf("--transport %q: must be both, tcp or quic", transport)
			}
			ceil, err := bench.StartCeiling(cmd.Context())
			if err != nil {
				return err
			}
			defer ceil.Close()
			for r := 1; r <= rounds; r++ {
				order := ts
				if r%2 == 0 {
					order = slices.Clone(ts)
					slices.Reverse(order)
				}
				for _, t := range order {
					f, err := ceil.Measure(cmd.Context(), t, size)
					if err != nil {
						return err
					}
					if jsonOut {
						printFigure[bench.TransportFigure](c)(f)
						continue
					}
					fmt.Fprintf(c.stdout, "%d: %-5s %s in %v, %.0f MiB/s (CPU: receiver %v, sender %v)\n",
						r, t, humanize.Bytes(f.Bytes), f.Seconds, f.MiBPerS, f.ReceiverCPU, f.SenderCPU)
				}
			}
			return nil
		},
	}
	cmd.Flags().Uint64Var(&size, "size", 256<<20, "the bytes the stream carries")
	cmd.Flags().StringVar(&transport, "transport", "both", "the transports: both (TCP and QUIC), tcp or quic")
	cmd.Flags().IntVar(&rounds, "rounds", 3, "streams of each transport")
	cmd.Flags().BoolVar(&jsonOut, "json", false, "print one JSON object a line, each stream's figure")
	return cmd
}

// benchTransportWorkerCmd is the second process of the transport ceiling,
// which bench.StartCeiling starts.
func (c *cli) benchTransportWorkerCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "transport-worker",
		Short:  "The sending process of 'bench transport' (prints its peer ID and addresses as JSON)",
		Hidden: true,
		Args:   noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return bench.TransportWorker(cmd.Context(), c.stdout)
		},
	}
}
