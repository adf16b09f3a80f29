package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/wats-network/wats/internal/attack"
	"github.com/wats-network/wats/internal/bench"
)

func (c *cli) benchGossipCmd() *cobra.Command {
	var netns, trace bool
	var (
		scenario        string
		duration, after time.Duration
		ids, rate       int
		warmup          time.Duration
		keep            string
		jsonOut         bool
	)
	names := []string{"all"}
	for _, s := range bench.GossipScenarios {
		names = append(names, s.Name)
	}
	cmd := &cobra.Command{
		Use:   "gossip [--scenario NAME|all] [--duration D] [--after D] [--ids N]",
		Short: "Run three daemons in a line under gossip attacks and measure honest delivery",
		Long: `Start three daemons (real processes, as 'devnet up' does) on 127.0.0.1 in a
line: B bootstrapped to A, C to B (mDNS off, sync.interval 1h, so that only
gossip moves events; limits as defaults but limits.new_author_minutes = 1).
After a --warmup in which A publishes as it will (so that A is an established
author at C, as in a network that was up before the attack), A publishes an honest event every
500 ms through its control API while an attacker, in another process at the
lowest CPU priority (nice 19), attacks A and B with ids that are real libp2p
hosts speaking gossipsub on the network's topic:

  none            no attack: the baseline
  invalid-flood   envelopes just under the size cap whose event's signature
                  is bad, as fast as the nodes read them, from each id
  valid-spam      valid events signed by each id's own key, as fast as the
                  nodes read them
  ihave-flood     raw gossipsub RPCs with IHAVEs of thousands of fake message
                  ids, ten a second per id and node, never delivered; the
                  IWANT ids received back are counted per 10 s
  mesh-sybil      many fresh ids (200) subscribe, graft into A's and B's
                  mesh and publish a valid event every 5 s each

and the open-loop shapes of docs/adr/0041, whose ids publish valid events
of their own at a fixed rate whatever the nodes do, dropping what their
own queue to a node cannot take:

  spam-RxN        N ids (20, 100) at R envelopes a second each (50, 200,
                  1000); an id that cannot sign that fast falls behind
  spam-large      20 ids at 50 a second, envelopes of about 59 KiB (the
                  largest valid: just under the 64 KiB cap)
  spam-ihave      spam-200x20 while 20 more ids run ihave-flood
  spam-hello      spam-200x20 from ids that also complete hello, ask for a
                  sync page every second, serve their own logs and
                  announce their heads
  spam-honest50   spam-200x20 while A publishes 50 events a second (past
                  the default limits.author_per_min: what is over it comes
                  by pull); -budget: with limits.author_per_min 6000
  spam-cold       spam-200x20 with no warm-up: A is a new author at B and
                  C, as in a network whose nodes all just started
  cold            no attack and no warm-up: spam-cold's control (what a
                  node's first minutes of work cost in memory, attack or
                  not)

With --netns (root and the ip command) the attacker runs in a network
namespace of its own, each id dialling from its own address in
198.18.0.0/15, as attackers on the internet do: libp2p's per-IP connection
rate limit, which exempts loopback, then applies to them.

Each scenario gets fresh daemons. Reports, per scenario: A's honest events
that reached B and C within 1 s (watched on their event tails), those late
and those never delivered by the end of --after, and the p50/p99 latency of
those delivered; the attacker's events stored at A, B and C; each repo's
disk growth; each daemon's RSS before the attack, at its peak, at its end and
--after it, its CPU, and its WAL fsyncs over 100 ms during the attack. Every
event is synced before it is forwarded, so a disk's fsync stalls add to the
latency whatever the attack (time a disk with 'wats bench disk'); with
--keep /dev/shm/DIR the repos are on tmpfs and the figures leave the disk out.
--json adds each daemon's counters of where events went (gossip ignored by
reason, pulls by outcome, announcements). --trace runs the daemons with
gossipsub's trace (WATS_GOSSIP_TRACE) and says, for each honest event late or
never delivered, what happened to it on each hop. The figures describe this
machine under this load; docs/reliability.md records them with the command.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			run, err := pickScenarios(bench.GossipScenarios, gossipName, scenario, names)
			if err != nil {
				return err
			}
			if duration < 5*time.Second {
				return usageErrorf("--duration %v: at least 5s", duration)
			}
			if after < 0 {
				return usageErrorf("--after %v: must not be negative", after)
			}
			if ids < 0 {
				return usageErrorf("--ids %d: must not be negative", ids)
			}
			results, err := runScenarios(c, run, gossipName, jsonOut, func(s bench.GossipScenario) (*bench.GossipResult, error) {
				if ids > 0 && s.Attack != "" {
					s.IDs = ids
				}
				if rate > 0 && s.Attack == attack.ValidSpam {
					s.Rate = rate
				}
				s.Netns = netns && s.Attack != ""
				c.progress("scenario %s: %v, then %v after", s.Name, duration, after)
				r, err := bench.RunGossip(cmd.Context(), s, bench.GossipOptions{
					Warmup: warmup, Duration: duration, After: after, Keep: keep, Trace: trace, Log: c.progress})
				if err != nil {
					return nil, err
				}
				h := r.Honest
				c.progress("  A→B within 1 s: %.1f%%, never %d, p99 %.0f ms; A→C within 1 s: %.1f%% (%d of %d), late %d, never %d, p99 %.0f ms; attacker events A/B/C %s",
					h.WithinBPct, h.NeverDeliveredB, h.P99BMs, h.WithinPct, h.Within, h.Published, h.Late, h.NeverDelivered, h.P99ms, attackerEvents(r))
				if r.Trace != nil {
					for _, f := range r.Trace.SortedFates() {
						c.progress("    %3d × %s", r.Trace.Fates[f], f)
					}
				}
				return r, nil
			})
			if err != nil {
				return err
			}
			if jsonOut {
				return nil
			}
			return c.printGossipTable(results)
		},
	}
	cmd.Flags().StringVar(&scenario, "scenario", "all", "a scenario named above, or all")
	cmd.Flags().DurationVar(&warmup, "warmup", 65*time.Second, "how long A publishes before each attack (at least 1m)")
	cmd.Flags().DurationVar(&duration, "duration", 60*time.Second, "how long each attack runs (A publishes meanwhile)")
	cmd.Flags().DurationVar(&after, "after", 60*time.Second, "the wait after the attack before the last RSS reading")
	cmd.Flags().IntVar(&ids, "ids", 0, "attacker ids (default: 20, mesh-sybil 200)")
	cmd.Flags().IntVar(&rate, "rate", 0, "valid-spam's envelopes a second per id, open loop (0: as the nodes read)")
	cmd.Flags().StringVar(&keep, "keep", "", "keep each scenario's repos, logs and heap profiles under DIR")
	cmd.Flags().BoolVar(&jsonOut, "json", false, `print one JSON object a line, as each scenario ends: {"scenario": …}`)
	cmd.Flags().BoolVar(&netns, "netns", false, "run the attacker in a network namespace, an address per id (needs root)")
	cmd.Flags().BoolVar(&trace, "trace", false, "trace gossipsub (WATS_GOSSIP_TRACE): where each late or lost event went")
	return cmd
}

// attackerEvents, printGossipTable and gossipAttackerSummary print the
// bench gossip table.
func attackerEvents(r *bench.GossipResult) string {
	var parts []string
	for _, d := range r.Daemons {
		parts = append(parts, strconv.FormatUint(d.AttackerEvents, 10))
	}
	return strings.Join(parts, " / ")
}

func (c *cli) printGossipTable(results []bench.GossipResult) error {
	tw := c.table("SCENARIO\tA→B ≤1s\tNEVER B\tA→C ≤1s\tLATE C\tNEVER C\tP50\tP99\tATTACKER EVENTS A/B/C\tDISK +A/+B/+C du (files)\tRSS A start/peak/end/after (of the growth, memtables)\tRSS B\tRSS C\tCPU A/B/C\tFSYNCS >100ms A/B/C\tC–A\tATTACKER")
	for _, r := range results {
		var disk, rss, cpu, fsyncs []string
		for _, d := range r.Daemons {
			fsyncs = append(fsyncs, fmt.Sprintf("%d of %d", d.FsyncsSlow, d.Fsyncs))
			disk = append(disk, fmt.Sprintf("%+.1f (%+.1f)", (float64(d.DiskEnd)-float64(d.DiskStart))/(1<<20),
				(float64(d.FilesEnd)-float64(d.FilesStart))/(1<<20)))
			rss = append(rss, fmt.Sprintf("%d/%d/%d/%d (memtables %.1f)", d.RSSStart>>20, d.RSSPeak>>20, d.RSSEnd>>20, d.RSSAfter>>20,
				float64(d.RSSAfterMemtables)/(1<<20)))
			cpu = append(cpu, fmt.Sprintf("%.0f%%", d.CPUPct))
		}
		for len(rss) < 3 {
			rss = append(rss, "—")
		}
		ca := "no"
		if r.CConnectedToA {
			ca = "yes"
		}
		fmt.Fprintf(tw, "%s\t%.1f%%\t%d\t%.1f%% (%d/%d)\t%d\t%d\t%.0f ms\t%.0f ms\t%s\t%s MiB\t%s MiB\t%s\t%s\t%s\t%s\t%s\t%s\n",
			r.Scenario.Name, r.Honest.WithinBPct, r.Honest.NeverDeliveredB, r.Honest.WithinPct, r.Honest.Within, r.Honest.Published,
			r.Honest.Late, r.Honest.NeverDelivered, r.Honest.P50ms, r.Honest.P99ms,
			attackerEvents(&r), strings.Join(disk, "/"), rss[0], rss[1], rss[2], strings.Join(cpu, "/"), strings.Join(fsyncs, " / "), ca,
			gossipAttackerSummary(r))
	}
	return tw.Flush()
}

// gossipAttackerSummary says what the attacker did, in a table cell.
func gossipAttackerSummary(r bench.GossipResult) string {
	s := r.Attacker
	if s == nil {
		return "—"
	}
	conn := fmt.Sprintf("%d ids, %d dials (%d failed), %d disconnects", s.IDs, s.Dials, s.DialsFailed, s.Disconnects)
	switch r.Scenario.Attack {
	case attack.IHaveFlood:
		w := make([]string, len(s.IWantPerWindow))
		for i, n := range s.IWantPerWindow {
			w[i] = strconv.FormatInt(n, 10)
		}
		return fmt.Sprintf("%s; %d IHAVE ids in %d RPCs; IWANT ids per %.0f s: %s", conn, s.IHaveIDs, s.IHaveRPCs,
			s.WindowSeconds, strings.Join(w, ", "))
	case attack.MeshSybil:
		return fmt.Sprintf("%s; %d published; %d grafts, %d prunes", conn, s.Published, s.Grafts, s.Prunes)
	}
	out := fmt.Sprintf("%s; %d published (%.0f a second), %d sent (%.0f MiB), %d dropped", conn, s.Published,
		float64(s.Published)/r.Seconds, s.Sent, float64(s.SentBytes)/(1<<20), s.Dropped)
	if r.Scenario.Hello {
		out += fmt.Sprintf("; %d hellos, %d sync pages, %d requests failed, %d heads announced", s.Hellos, s.Syncs, s.WatsFailed, s.Announced)
	}
	if a := s.Also; a != nil {
		out += fmt.Sprintf("; with %s: %d IHAVE ids in %d RPCs, IWANT ids %d", r.Scenario.Also, a.IHaveIDs, a.IHaveRPCs, a.IWantIDs)
	}
	return out
}

// benchGossipWorkerCmd is the attacker process of `bench gossip`, which
// starts it with these flags (bench.RunGossip): it prints "ready N" once
// its ids have connected (N of them to every target), attacks for
// --duration from then, and prints its figures as JSON
// (bench.GossipWorker).
func (c *cli) benchGossipWorkerCmd() *cobra.Command {
	var sources []string
	var (
		name, also string
		targets    []string
		duration   time.Duration
		o, alsoO   attack.GossipOptions
	)
	cmd := &cobra.Command{
		Use:    "gossip-worker",
		Short:  "The attacker process of 'bench gossip' (prints its figures as JSON)",
		Hidden: true,
		Args:   noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ts, err := attack.ParseTargets(targets)
			if err != nil {
				return usageErrorf("%v", err)
			}
			if o.Sources, err = parseSources(sources); err != nil {
				return err
			}
			// The second attack's ids dial from the addresses after the
			// first's, when there are enough for both (--netns).
			alsoO.Network, alsoO.Sources = o.Network, o.Sources
			if len(o.Sources) > o.IDs {
				alsoO.Sources = o.Sources[o.IDs:]
			}
			return bench.GossipWorker(cmd.Context(), name, ts, o, also, alsoO, duration, c.stdout)
		},
	}
	cmd.Flags().StringVar(&name, "attack", "", "the attack: "+strings.Join(attack.GossipAttacks, ", "))
	cmd.Flags().StringArrayVar(&targets, "target", nil, "a daemon's full multiaddr (repeat for several)")
	cmd.Flags().StringVar(&o.Network, "network", "", "the daemons' network")
	cmd.Flags().DurationVar(&duration, "duration", 60*time.Second, "how long to attack once the ids are connected")
	cmd.Flags().IntVar(&o.IDs, "ids", 0, "attacker ids (0: the attack's default)")
	cmd.Flags().IntVar(&o.Rate, "rate", 0, "envelopes a second per id, open loop (0: as fast as the targets read)")
	cmd.Flags().BoolVar(&o.Large, "large", false, "open loop: envelopes of about 59 KiB, just under the cap")
	cmd.Flags().BoolVar(&o.Hello, "hello", false, "open loop: the ids complete hello, sync and announce heads too")
	cmd.Flags().StringVar(&also, "also", "", "a second gossip attack to run at the same time, with ids of its own")
	cmd.Flags().IntVar(&alsoO.IDs, "also-ids", 0, "the second attack's ids (0: its default)")
	cmd.Flags().StringSliceVar(&sources, "source", nil, "local addresses the ids dial from, id i from the i-th (cycled)")
	return cmd
}

func gossipName(s bench.GossipScenario) string { return s.Name }
