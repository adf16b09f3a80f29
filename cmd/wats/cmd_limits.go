package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"github.com/wats-network/wats/api"
)

func (c *cli) limitsCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "limits",
		Short: "Print the daemon's effective per-peer rate limits (ADR 0014)",
		Long: `Print the rate limits the daemon enforces per peer and request type: the rate
(per minute), the burst a peer with a full bucket may send at once, and the time
one token takes to refill. 0 means unlimited. They come from the [limits] table
of config.toml.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return show(c, cmd, asJSON, (*api.Client).Limits, func(l *api.Limits) error {
				tw := c.table("TYPE\tPER MIN\tBURST\tONE EVERY\tKEY")
				for _, r := range l.Requests {
					if r.PerMin == 0 {
						fmt.Fprintf(tw, "%s\tunlimited\t-\t-\t%s\n", r.Type, r.Key)
						continue
					}
					fmt.Fprintf(tw, "%s\t%d\t%d\t%v\t%s\n", r.Type, r.PerMin, r.Burst, time.Duration(r.IntervalNs), r.Key)
				}
				if err := tw.Flush(); err != nil {
					return err
				}
				fmt.Fprintf(c.stdout, "blob fetches per peer: %d\n", l.BlobFetchesPerPeer)
				fmt.Fprintf(c.stdout, "tracked peers at most: %d\n", l.MaxTrackedPeers)
				if l.StrangerReportPerMin > 0 {
					fmt.Fprintf(c.stdout, "crash reports from strangers, all together: %d a minute (limits.stranger_report_per_min)\n", l.StrangerReportPerMin)
				} else {
					fmt.Fprintln(c.stdout, "crash reports from strangers, all together: unlimited (limits.stranger_report_per_min)")
				}
				g := l.Gossip
				perMin := func(v int) string {
					if v == 0 {
						return "unlimited"
					}
					return fmt.Sprintf("%d a minute", v)
				}
				fmt.Fprintln(c.stdout, "gossip (docs/adr/0031):")
				fmt.Fprintf(c.stdout, "  envelopes per forwarding peer: %s (limits.gossip_per_min)\n", perMin(g.PerPeer))
				fmt.Fprintf(c.stdout, "  of new authors, from all strangers: %s (limits.stranger_gossip_per_min)\n", perMin(g.Strangers))
				fmt.Fprintf(c.stdout, "  new events per author: %s (limits.author_per_min)\n", perMin(g.PerAuthor))
				fmt.Fprintf(c.stdout, "  of all new authors together: %s (limits.stranger_author_per_min)\n", perMin(g.NewAuthors))
				fmt.Fprintf(c.stdout, "  an author is new for %d minutes (limits.new_author_minutes)\n", g.NewAuthorMinutes)
				fmt.Fprintln(c.stdout, "sync (docs/adr/0041):")
				fmt.Fprintf(c.stdout, "  new authors' events from strangers, all together: %s (limits.stranger_sync_per_min)\n",
					perMin(g.NewAuthorsBySync))
				fmt.Fprintf(c.stdout, "\nper tier, a minute (docs/adr/0030): suspects %d%% and valued peers %d%% of the rates\n"+
					"(limits.suspect_percent, limits.valued_percent); misses: limits.miss_per_min = %d\n",
					l.SuspectPercent, l.ValuedPercent, l.MissPerMin)
				tw = c.table("TIER\tHELLO\tSYNC\tREPLICATE\tCRASH_REPORT\tMISSES")
				for _, t := range l.Tiers {
					rate := func(k string) string {
						if v := t.PerMin[k]; v > 0 {
							return fmt.Sprint(v)
						}
						return "unlimited"
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", t.Tier, rate("hello"), rate("sync"), rate("replicate"), rate("crash_report"), rate("miss"))
				}
				return tw.Flush()
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func (c *cli) diagCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "diag",
		Short: "Print how many requests from peers the daemon accepted and refused, per type",
		Long: `Print, per type of request, how many requests from peers the daemon accepted
and how many it refused because the peer asked more often than its rate limit
allows, since it started; no peer identities. Then how many peers have a rate
budget of their own, how many requests were judged on the budget all other
newcomers share (when too many peers are tracked to give each its own), and how
many log lines the node wrote about what peers did. The same counters are
exported as Prometheus metrics (wats_requests_accepted_total,
wats_requests_refused_total) and logged at a clean shutdown.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return show(c, cmd, asJSON, (*api.Client).Diag, func(d *api.Diag) error {
				tw := c.table("REQUEST\tACCEPTED\tREFUSED (the peer asked too often)")
				for _, r := range d.Requests {
					fmt.Fprintf(tw, "%s\t%d\t%d\n", r.Type, r.Accepted, r.Refused)
				}
				if err := tw.Flush(); err != nil {
					return err
				}
				fmt.Fprintf(c.stdout, "peers with a rate budget of their own: %d\n", d.TrackedPeers)
				fmt.Fprintf(c.stdout, "requests judged on the budget all other newcomers share, as too many peers were tracked: %d\n", d.SharedAtCap)
				fmt.Fprintf(c.stdout, "log lines written about what peers did: %d\n", d.PeerLinesLogged)
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.AddCommand(c.diagBundleCmd())
	return cmd
}
