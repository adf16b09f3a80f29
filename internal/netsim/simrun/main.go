// Command simrun runs the simulated internet of package netsim with real
// daemons and prints what it measured (`make sim`; docs/scale.md). It
// needs root, `ip` and `nft`. Interrupted (Ctrl-C, SIGTERM), it stops the
// daemons and deletes every namespace it made before it exits.
//
//	go run ./internal/netsim/simrun -bin bin/wats [-public 2] [-nats 7+1,7+1,7+1,7s+1] [-json]
package main

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/wats-network/wats/internal/netsim"
)

func main() {
	bin := flag.String("bin", "bin/wats", "the wats binary the daemons run")
	dir := flag.String("dir", "", "where the repos and logs go (default: a new temporary directory, kept)")
	public := flag.Int("public", 2, "nodes with a public address; the first is a relay, the first two the bootstrap nodes")
	nats := flag.String("nats", "7+1,7+1,7+1,7s+1", "the nodes behind each home router, comma-separated; a trailing s makes that NAT symmetric, +K adds K quiet nodes for the hole punching step")
	timeout := flag.Duration("timeout", 5*time.Minute, "the longest each step may take")
	asJSON := flag.Bool("json", false, "print the result as JSON")
	flag.Parse()
	if err := run(*bin, *dir, *public, *nats, *timeout, *asJSON); err != nil {
		fmt.Fprintln(os.Stderr, "simrun:", err)
		os.Exit(1)
	}
}

func run(bin, dir string, public int, nats string, timeout time.Duration, asJSON bool) error {
	topo := netsim.Topology{Public: public}
	for _, f := range strings.Split(nats, ",") {
		nodes, late, hasLate := strings.Cut(f, "+")
		sym := strings.HasSuffix(nodes, "s")
		k, err := strconv.Atoi(strings.TrimSuffix(nodes, "s"))
		l := 0
		if err == nil && hasLate {
			l, err = strconv.Atoi(late)
		}
		if err != nil || k < 1 || l < 0 {
			return fmt.Errorf("-nats: %q is not a count of nodes (with an s for a symmetric NAT, +K for K quiet nodes)", f)
		}
		topo.NATs = append(topo.NATs, netsim.NAT{Nodes: k, Symmetric: sym, Late: l})
	}
	if _, err := os.Stat(bin); err != nil {
		return fmt.Errorf("-bin: %w (make build makes bin/wats)", err)
	}
	if dir == "" {
		d, err := os.MkdirTemp("", "wats-sim-")
		if err != nil {
			return err
		}
		dir = d
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	logf := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "%s  %s\n", time.Now().Format(time.TimeOnly), fmt.Sprintf(format, args...))
	}
	logf("repos and logs in %s", dir)
	res, err := netsim.Run(ctx, netsim.Options{Bin: bin, Dir: dir, Topology: topo, Timeout: timeout, Log: logf})
	if res != nil {
		if asJSON {
			b, _ := json.Marshal(res)
			fmt.Println(string(b))
		} else {
			printResult(res)
		}
	}
	return err
}

func printResult(r *netsim.Result) {
	pairs := r.Pairs.Direct + r.Pairs.HolePunched + r.Pairs.Relayed + r.Pairs.None
	pct := func(k int) string { return fmt.Sprintf("%d (%.0f%%)", k, 100*float64(k)/float64(max(pairs, 1))) }
	fmt.Printf("nodes                     %d, behind %d NATs\n", r.Nodes, r.NATs)
	fmt.Printf("every node found all      %s\n", r.Discovery.Round(time.Millisecond))
	fmt.Printf("pairs                     %d: direct %s, hole-punched %s, relayed %s, none %s\n",
		pairs, pct(r.Pairs.Direct), pct(r.Pairs.HolePunched), pct(r.Pairs.Relayed), pct(r.Pairs.None))
	fmt.Printf("reachability              %v\n", r.Reachability)
	fmt.Printf("hole punches              %d succeeded, %d failed\n", r.HolePunches.Succeeded, r.HolePunches.Failed)
	fmt.Printf("gossip to every node      %s\n", r.Gossip.Round(time.Millisecond))
	fmt.Printf("blob across NATs by CID   %s\n", r.BlobAcross.Round(time.Millisecond))
	fmt.Printf("blob, named provider gone %s\n", r.BlobProviderGone.Round(time.Millisecond))
	if r.BlobSymmetric != "" {
		fmt.Printf("blob, symmetric NAT       %s\n", r.BlobSymmetric)
	}
	kinds := slices.Sorted(maps.Keys(r.Punch))
	for _, k := range kinds {
		p := r.Punch[k]
		fmt.Printf("hole punching %-20s %d of %d direct (%.0f%%), %d relayed, %d none; relayed to direct: median %s\n",
			k, p.Direct, p.Pairs, p.DirectPct(), p.Relayed, p.None, p.Median().Round(time.Millisecond))
	}
}
