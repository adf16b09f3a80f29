package main

import (
	"fmt"
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
		resume    bool
		runs      int
		keepNone  bool
	)
	cmd := &cobra.Command{
		Use:   "fetch [--size BYTES] [--transport any|tcp|quic] [--get | --resume [--runs N]]",
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
fetch, then {"result": …}.`,
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
			if resume {
				if get {
					return usageErrorf("--resume times fetches through the API; leave out --get")
				}
				if runs < 1 || runs > 100 {
					return usageErrorf("--runs %d: must be 1..100", runs)
				}
				return c.benchResume(cmd, bench.ResumeOptions{Size: size, Transport: transport, Runs: runs, KeepNone: keepNone}, jsonOut)
			}
			o := bench.FetchOptions{Size: size, Transport: transport}
			if jsonOut {
				o.Measured = printFigure[bench.FetchFigure](c)
			} else {
				o.Log = c.progress
				fetch := "fetch (node1)"
				if get {
					fetch = "blob get (node1)"
				}
				o.Measured = func(f bench.FetchFigure) {
					fmt.Fprintf(c.stdout, "%-18s %v, %.0f MiB/s\n", map[string]string{"import": "import (node0)", "fetch": fetch}[f.Op], f.Seconds, f.MiBPerS)
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
	cmd.Flags().BoolVar(&resume, "resume", false, "time fetches that resume (node1 killed half way) against whole ones")
	cmd.Flags().IntVar(&runs, "runs", 3, "with --resume, the pairs of fetches timed")
	cmd.Flags().BoolVar(&keepNone, "keep-none", false, "with --resume, keep no partial blob (the anchor)")
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
