package main

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/wats-network/wats/internal/attack"
	"github.com/wats-network/wats/internal/bench"
)

func (c *cli) benchAttackCmd() *cobra.Command {
	var (
		scenario string
		duration time.Duration
		kills    int
		jsonOut  bool
		netns    bool
	)
	names := []string{"all", "kill9"}
	for _, s := range bench.AttackScenarios {
		names = append(names, s.Name)
	}
	cmd := &cobra.Command{
		Use:   "attack [--scenario NAME|all|kill9] [--duration D]",
		Short: "Run a real daemon under attack and measure how its honest peers are served",
		Long: `Start a daemon (a real process, as 'devnet up' does) in a temporary directory,
then, per scenario, run an honest load against it (10 peers that share events,
each a sync every 500 ms and a hello every 10 s, and a never-seen peer every
second that must complete hello and one sync) while an attacker, in another
process at the lowest CPU priority (nice 19), attacks it on 127.0.0.1
(docs/adr/0030):

  none                    no attack: the baseline
  one-id-flood            one id floods sync and hello requests
  sybil, sybil-hello      550 fresh ids a second connect (and say hello), each
                          holding its connection 1 s
  sybil-sync              330 fresh ids a second say hello and ask for a sync
                          page each, as newcomers do
  sybil-host-sync         the same from whole libp2p hosts (identify, heads)
  hoard-unnegotiated-N    N ids hold streams that never name a protocol
  hoard-prefix-N          N ids hold /wats/1 streams stalled in a length prefix
  bad-solutions           ids flood requests and answer challenges wrongly
  unread-pages-8          8 ids ask for sync pages of over a megabyte and
                          never read them
  crash-flood             200 fresh ids a second submit two crash reports
                          each and leave
  value-sybils            100 fresh ids a second give one self-signed event
                          each by sync, and leave
  dht-flood               one id floods the DHT with FIND_NODE requests and
                          provider records (docs/adr/0040)
  dht-sybil               200 fresh ids a second put 32 provider records
                          each on the DHT, and leave
  ids-none                sync by ids (docs/adr/0055), no attack: the daemon
                          holds 100,000 events (one in 8 of 16 KiB), and a
                          fresh daemon catches up by id range from it and
                          from a second peer holding the same while the
                          attack runs (as in each scenario below)
  fingerprint-flood-N     N ids ask for whole-space fingerprints, 16 at once
                          an id, each waiting for its answer
  fingerprint-flood-open-N  the same as fast as streams open, reading nothing
  fingerprint-sybil-R     R fresh ids a second say hello, ask for one
                          whole-space fingerprint each, and leave
  ids-sybil-sync-330      their control: sybil-sync's ids, the same log
  ids-pages-N             N ids ask for pages by id range and read none
  id-lists-flood-N        N ids ask for id lists (docs/adr/0057) of 4,096 ids,
                          16 at once an id, each reading its answer
  id-lists-small-N        the same with lists of some 6 ids
  id-lists-open-N         N ids ask for lists as fast as streams open, reading
                          nothing
  id-lists-sybil-R        R fresh ids a second say hello, ask for one list
                          each, read it and leave
  id-lists-hold-N         N ids ask for lists and hold them unread
  kill9                   events written through the control API while the
                          daemon is killed with SIGKILL and restarted --kills
                          times: acknowledged events against those present

With --netns (root and the ip command) the attacker runs in a network
namespace of its own, its ids dialling from addresses of their own in
198.18.0.0/15 (a Sybil attack's new ids cycle through 4 a second of its rate,
up to 4,096), as attackers on the internet do: libp2p's per-IP connection
limits, which exempt loopback, then apply to them. The honest load stays on
127.0.0.1.

Each scenario gets a fresh daemon. Reports, per scenario, the honest requests
served and their p50/p99 latency, the newcomers served, the daemon's RSS at the
start, peak and end, its log lines and its CPU. The figures describe this
machine under this load; docs/reliability.md records them with the command.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var run []bench.AttackScenario
			if scenario != "kill9" {
				var err error
				if run, err = pickScenarios(bench.AttackScenarios, attackName, scenario, names); err != nil {
					return err
				}
			}
			if duration < 5*time.Second {
				return usageErrorf("--duration %v: at least 5s (a newcomer arrives every 5 s)", duration)
			}
			if kills < 1 {
				return usageErrorf("--kills %d: at least 1", kills)
			}
			results, err := runScenarios(c, run, attackName, jsonOut, func(s bench.AttackScenario) (*bench.AttackResult, error) {
				c.progress("scenario %s: %v", s.Name, duration)
				s.Netns = netns && s.Attack != ""
				r, err := bench.RunAttack(cmd.Context(), s, duration)
				if err == nil && !jsonOut {
					c.progress("  honest %.1f%% served, p99 %.1f ms, newcomers %.0f%%; not served: %v, newcomers: %v",
						r.HonestServedPct, r.Honest.P99ms, r.NewcomersServedPct, r.Honest.Failures, r.Honest.NewcomerFailures)
					if u := r.CatchUp; u != nil {
						c.progress("  catch-up %.1f s, %d of %d events during the attack, %d late, %d never, %d received %s",
							u.Seconds, u.DuringAttack, u.Events, u.Late, u.Never, u.Received, u.Error)
					}
				}
				return r, err
			})
			if err != nil {
				return err
			}
			var kr *bench.KillResult
			if scenario == "all" || scenario == "kill9" {
				c.progress("scenario kill9: %d kills", kills)
				var err error
				if kr, err = bench.RunKill(cmd.Context(), kills, c.progress); err != nil {
					return fmt.Errorf("scenario kill9: %w", err)
				}
			}
			if jsonOut {
				if kr == nil {
					return nil
				}
				return c.printJSONLine(struct {
					Kill9 *bench.KillResult `json:"kill9"`
				}{kr})
			}
			tw := c.table("SCENARIO\tHONEST\tP50\tP99\tNEWCOMERS\tRSS START/PEAK/END\tLOG LINES/MIN\tCPU\tATTACKER")
			for _, r := range results {
				fmt.Fprintf(tw, "%s\t%.1f%%\t%.1f ms\t%.1f ms\t%.0f%% (%d/%d)\t%s / %s / %s\t%.0f\t%.0f%%\t%s\n",
					r.Scenario.Name, r.HonestServedPct, r.Honest.P50ms, r.Honest.P99ms,
					r.NewcomersServedPct, r.Honest.NewcomersServed, r.Honest.Newcomers,
					mib(r.RSSStart), mib(r.RSSPeak), mib(r.RSSEnd), r.LogLinesPerMin, r.CPUPct, attackerSummary(r.Attacker))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			if err := catchUpTable(c, results); err != nil {
				return err
			}
			if kr != nil {
				fmt.Fprintf(c.stdout, "kill9: %d kills, %d events acknowledged, %d present, %d lost\n", kr.Kills, kr.Acknowledged, kr.Present, kr.Lost)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&scenario, "scenario", "all", "a scenario named above, or all")
	cmd.Flags().DurationVar(&duration, "duration", 30*time.Second, "how long each scenario runs")
	cmd.Flags().IntVar(&kills, "kills", 50, "how many times the kill9 scenario kills the daemon")
	cmd.Flags().BoolVar(&jsonOut, "json", false, `print a JSON object a line as each ends: {"scenario": …}, {"kill9": …}`)
	cmd.Flags().BoolVar(&netns, "netns", false, "run the attacker in a network namespace, an address per id (needs root)")
	return cmd
}

// mib and attackerSummary are cells of the bench attack table.
func mib(n uint64) string { return fmt.Sprintf("%.0f MiB", float64(n)/(1<<20)) }

func attackerSummary(s attack.Stats) string {
	cut := ""
	if s.Cut > 0 {
		cut = fmt.Sprintf(", %d cut off by the end", s.Cut)
	}
	return fmt.Sprintf("%d ids%s, %d conns (%d failed), %d requests (%d served), %d streams held (%d reset)",
		s.IDs, cut, s.Conns, s.Failed, s.Requests, s.Answered, s.Streams, s.Reset)
}

// benchAttackWorkerCmd is the attacker process of `bench attack`, which
// starts it with these flags (bench.RunAttack).
func (c *cli) benchAttackWorkerCmd() *cobra.Command {
	var (
		name, target, network string
		duration              time.Duration
		o                     attack.Options
		sources               []string
	)
	cmd := &cobra.Command{
		Use:    "attack-worker",
		Short:  "The attacker process of 'bench attack' (prints its figures as JSON)",
		Hidden: true,
		Args:   noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			t, err := attack.ParseTarget(target, network)
			if err != nil {
				return usageErrorf("%v", err)
			}
			if o.Sources, err = parseSources(sources); err != nil {
				return err
			}
			return bench.AttackWorker(cmd.Context(), name, t, o, duration, c.stdout)
		},
	}
	cmd.Flags().StringVar(&name, "attack", "", "the attack: "+strings.Join(attack.Attacks, ", "))
	cmd.Flags().StringVar(&target, "target", "", "the daemon's full multiaddr")
	cmd.Flags().StringVar(&network, "network", "", "the daemon's network")
	cmd.Flags().DurationVar(&duration, "duration", 30*time.Second, "how long to attack")
	cmd.Flags().IntVar(&o.IDs, "ids", 1, "ids of a hoarding attack")
	cmd.Flags().IntVar(&o.Rate, "rate", 550, "fresh ids a second of a Sybil attack")
	cmd.Flags().StringSliceVar(&sources, "source", nil, "local addresses the ids dial from, each new id from the next (cycled)")
	cmd.Flags().StringVar(&o.CID, "cid", "", "the root of a blob the daemon holds (the block transfer's attacks)")
	return cmd
}

func attackName(s bench.AttackScenario) string { return s.Name }

// catchUpTable prints the honest catch-ups of the scenarios of sync by ids
// that ran, if any: time, events delivered during the attack, late and
// never, from which peer, and the events received (held ones included).
func catchUpTable(c *cli, results []bench.AttackResult) error {
	if !slices.ContainsFunc(results, func(r bench.AttackResult) bool { return r.CatchUp != nil }) {
		return nil
	}
	tw := c.table("SCENARIO\tCATCH-UP\tEVENTS\tDURING ATTACK\tLATE\tNEVER\tFROM ATTACKED/OTHER\tRECEIVED\tERROR")
	for _, r := range results {
		if u := r.CatchUp; u != nil {
			took := "not done"
			if u.Seconds > 0 {
				took = fmt.Sprintf("%.1f s", u.Seconds)
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d / %d\t%d\t%s\n", r.Scenario.Name, took, u.Events,
				u.DuringAttack, u.Late, u.Never, u.FromAttacked, u.FromOther, u.Received, u.Error)
		}
	}
	return tw.Flush()
}
