package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/wats-network/wats/core"
	"github.com/wats-network/wats/internal/bench"
)

func (c *cli) benchVsIPFSCmd() *cobra.Command {
	var (
		ipfs      string
		size      uint64
		rounds    int
		transport string
		dir       string
		jsonOut   bool
	)
	cmd := &cobra.Command{
		Use:   "vs-ipfs --ipfs PATH [--size BYTES] [--rounds N] [--transport tcp|quic]",
		Short: "Time kubo and wats side by side: a blob's import and fetch through each CLI",
		Long: `Measure wats against kubo (the IPFS node) in the same run on this machine.
The bench starts two kubo daemons (the binary --ipfs names, built from the
ipfs/kubo source: go build ./cmd/ipfs) and two wats daemons, each pair connected on 127.0.0.1
and offline from everything else. Each round writes a fresh pseudo-random
file of --size bytes and, for kubo and for wats in turn (kubo first in odd
rounds, wats in even ones), times:

  import  ipfs add --cid-version=1 --raw-leaves --hash=blake3 \
            --chunker=size-1048576 FILE               (kubo0)
          wats blob add FILE                          (node0)
  fetch   ipfs cat CID > OUT                          (kubo1, from kubo0)
          wats blob get CID --size N --from ADDR -o OUT  (node1, from node0)

Each fetched file is checked against the original; the blob is then removed
from both daemons. At the end it prints the medians, the ratios wats / kubo,
and each daemon's peak RSS (VmHWM from /proc). Each figure is printed as it
is measured; with --json, every line of standard output is one JSON object:
{"figure": …} for each, then {"result": …}.

Without --ipfs (or $IPFS) the bench is skipped, with a message, and exits 0.`,
		Example: `  wats bench vs-ipfs --ipfs /tmp/ipfs
  make bench-kubo IPFS=/tmp/ipfs`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch {
			case size < 1 || size > core.MaxSafeInt:
				return usageErrorf("--size %d: must be 1..2^53 bytes", size)
			case rounds < 1:
				return usageErrorf("--rounds %d: must be at least 1", rounds)
			case transport != "tcp" && transport != "quic":
				return usageErrorf("--transport %q: must be tcp or quic", transport)
			}
			if ipfs == "" {
				ipfs = os.Getenv("IPFS")
			}
			if ipfs == "" {
				fmt.Fprintf(c.stderr, "bench vs-ipfs: skipped: %v\n", bench.ErrNoKubo)
				return nil
			}
			exe, err := os.Executable()
			if err != nil {
				return err
			}
			if dir == "" {
				if dir, err = os.MkdirTemp("", "wats-bench-vs-ipfs-"); err != nil {
					return err
				}
				defer os.RemoveAll(dir)
			} else if err := os.MkdirAll(dir, 0o700); err != nil {
				return err
			}
			opts := bench.VsIPFSOptions{IPFS: ipfs, Wats: exe, Size: size, Rounds: rounds, Transport: transport, Dir: dir}
			if jsonOut {
				opts.Measured = printFigure[bench.VsIPFSFigure](c)
			} else {
				opts.Log = c.progress
				opts.Measured = func(f bench.VsIPFSFigure) { bench.VsIPFSLine(c.stdout, f) }
			}
			res, err := bench.VsIPFS(cmd.Context(), opts)
			if errors.Is(err, bench.ErrNoKubo) {
				return usageErrorf("%v", err)
			}
			if err != nil {
				return err
			}
			if jsonOut {
				return printResult(c, res)
			}
			fmt.Fprintln(c.stdout)
			bench.VsIPFSTable(c.stdout, res)
			return nil
		},
	}
	cmd.Flags().StringVar(&ipfs, "ipfs", "", "the kubo binary (default $IPFS; without one the bench is skipped)")
	cmd.Flags().Uint64Var(&size, "size", 256<<20, "each round's file, in bytes")
	cmd.Flags().IntVar(&rounds, "rounds", 5, "rounds, each importing and fetching a fresh file with both")
	cmd.Flags().StringVar(&transport, "transport", "tcp", "what the four daemons listen on: tcp or quic")
	cmd.Flags().StringVar(&dir, "dir", "", "directory for the repos and files (default: a temp dir, removed after)")
	cmd.Flags().BoolVar(&jsonOut, "json", false, "print one JSON object a line: each figure, then the result")
	return cmd
}
