package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/wats-network/wats/api"
)

func (c *cli) dashboardCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "dashboard",
		Short: "Print the URL of the node's web dashboard, with its access token",
		Long: `Print the URL of the web dashboard the daemon serves on api.dashboard_addr
(loopback; by default a free port chosen at each start): open it in a browser
on this machine. The URL carries the access token, which the daemon makes
anew at each start; without it every page answers 401. The dashboard shows
the node live: its peers, the event log, blobs and fetches, admission and
bandwidth over the last hour. To see it from another machine, forward the
port (ssh -L PORT:127.0.0.1:PORT this-host) rather than serving it on the
network.`,
		Example: `  wats dashboard
  xdg-open "$(wats dashboard)"`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return show(c, cmd, asJSON, (*api.Client).Dashboard, func(d *api.Dashboard) error {
				_, err := fmt.Fprintln(c.stdout, d.URL)
				return err
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
