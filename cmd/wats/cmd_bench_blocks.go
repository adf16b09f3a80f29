package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/wats-network/wats/internal/bench"
	"github.com/wats-network/wats/internal/humanize"
)

// blocksAttackFlags are the flags of `bench fetch --attack`: the block
// transfer under attack (docs/adr/0056).
type blocksAttackFlags struct {
	scenario string
	duration time.Duration
	netns    bool
	// jsonOut is bench fetch's --json: a {"scenario": …} line a scenario.
	jsonOut bool
}

func (f *blocksAttackFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.scenario, "attack", "", "attack node0's block transfer: a scenario named above, or all")
	cmd.Flags().DurationVar(&f.duration, "duration", 30*time.Second, "with --attack, how long each scenario is measured")
	cmd.Flags().BoolVar(&f.netns, "netns", false, "with --attack, run the attacker in a network namespace (needs root)")
}

const blocksAttackHelp = `With --attack SCENARIO (or all), node0 also holds a blob of 256 MiB that an
attacker, in another process at the lowest CPU priority (nice 19), asks for
over node0's block transfer (docs/adr/0056), while node1 gets the blob of
--size from node0 by 'wats blob get', again and again for --duration (the
attacker starts 3 s before). Every scenario gets fresh daemons; none, the
baseline, runs first, and a get is late past twice its median:

  none                    no attack
  blocks-flood-open-N     N ids (1, 8) ask for every block on many streams
                          and never read the answers
  blocks-flood-closed-N   N ids ask for every block on 16 streams each and
                          read everything as fast as it comes
  blocks-max-N            N ids (1, 8) send requests at the bounds: 64 CIDs
                          and 65, CIDs of 128 bytes and 129, CIDs not held
  blocks-sybil-R          R fresh ids a second (20, 200) say hello, ask for
                          64 MiB of blocks, read for 1 s and leave

With --netns (root and the ip command) the attacker's ids dial from
addresses of their own in a network namespace, as on the internet. Reports
per scenario the honest gets delivered in time, late and never delivered
(failed, or not done in 120 s), their median and longest time, and node0's
CPU and RSS at the start, peak and end.`

// benchBlocks runs and prints `bench fetch --attack`.
func (c *cli) benchBlocks(cmd *cobra.Command, f blocksAttackFlags, size uint64) error {
	names := []string{"all"}
	for _, s := range bench.BlocksScenarios {
		names = append(names, s.Name)
	}
	run, err := pickScenarios(bench.BlocksScenarios, func(s bench.BlocksScenario) string { return s.Name }, f.scenario, names)
	if err != nil {
		return usageErrorf("--attack %q: must be one of %s", f.scenario, strings.Join(names, ", "))
	}
	if f.duration < 5*time.Second {
		return usageErrorf("--duration %v: at least 5s", f.duration)
	}
	if run[0].Attack != "" { // the same run's baseline first
		run = append([]bench.BlocksScenario{bench.BlocksScenarios[0]}, run...)
	}
	var lateAfter time.Duration
	results, err := runScenarios(c, run, func(s bench.BlocksScenario) string { return s.Name }, f.jsonOut,
		func(s bench.BlocksScenario) (*bench.BlocksResult, error) {
			c.progress("scenario %s: %v", s.Name, f.duration)
			s.Netns = f.netns && s.Attack != ""
			r, err := bench.RunBlocks(cmd.Context(), s, bench.BlocksOptions{Size: size, Duration: f.duration, LateAfter: lateAfter, Log: c.progress})
			if err == nil && s.Attack == "" {
				lateAfter = 2 * time.Duration(r.MedianFetch)
			}
			if err == nil && !f.jsonOut {
				c.progress("  %d gets: %d in time, %d late, %d never; median %v, longest %v; node0 CPU %.0f%%, RSS peak %s",
					len(r.Fetches), r.Delivered, r.Late, r.Never, r.MedianFetch, r.MaxFetch, r.CPUPct, mib(r.RSSPeak))
			}
			return r, err
		})
	if err != nil || f.jsonOut {
		return err
	}
	fmt.Fprintf(c.stdout, "honest blob %s; a get is late past %v\n", humanize.Bytes(size), bench.Seconds(lateAfter))
	tw := c.table("SCENARIO\tGETS\tIN TIME\tLATE\tNEVER\tMEDIAN\tLONGEST\tMiB/s\tCPU\tRSS START/PEAK/END\tATTACKER")
	for _, r := range results {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%v\t%v\t%.0f\t%.0f%%\t%s / %s / %s\t%s, %s received\n",
			r.Scenario.Name, len(r.Fetches), r.Delivered, r.Late, r.Never, r.MedianFetch, r.MaxFetch, r.HonestMiBPerS,
			r.CPUPct, mib(r.RSSStart), mib(r.RSSPeak), mib(r.RSSEnd), attackerSummary(r.Attacker), humanize.Bytes(uint64(r.Attacker.Bytes)))
	}
	return tw.Flush()
}
