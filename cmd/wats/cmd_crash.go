package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/wats-network/wats/api"
)

func (c *cli) crashCmd() *cobra.Command {
	return group("crash", "Report crashes and list them by fingerprint", c.crashReportCmd(), c.crashLsCmd())
}

func (c *cli) crashReportCmd() *cobra.Command {
	var req api.CrashReportRequest
	var stackFile, dumpFile string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "report --program P --version V --reason R [--dump FILE] [--to PEER]",
		Short: "Report a crash: a signed event of kind crash, with its dump as a blob",
		Long: `Sign a crash report (docs/design.md §5) with the node's key: program, version, os and
arch (this machine's by default), reason, the stack from --stack FILE (at most
8 KiB), and a fingerprint that groups reports of the same failure. With --dump
FILE the dump is stored as a blob and named in the event. The report is stored
and gossiped by this node, or, with --to PEER, submitted to that peer. It
prints the event's id, as 'events add' does (with --json, the signed event).`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if req.Program == "" || req.Version == "" || req.Reason == "" {
				return usageErrorf("--program, --version and --reason are required")
			}
			if stackFile != "" {
				b, err := os.ReadFile(stackFile)
				if err != nil {
					return err
				}
				req.Stack = string(b)
			}
			if req.To != "" {
				if err := c.checkPeerID(req.To); err != nil {
					return fmt.Errorf("--to: %w", err)
				}
			}
			cl, err := c.client()
			if err != nil {
				return err
			}
			if dumpFile != "" {
				bi, err := c.addFile(cmd.Context(), cl, dumpFile, "crash report --dump", false, "")
				if err != nil {
					return err
				}
				req.DumpCID, req.DumpSize, req.DumpName = bi.CID, bi.Size, filepath.Base(dumpFile)
			}
			ev, err := cl.ReportCrash(cmd.Context(), req)
			if err != nil {
				return c.apiError(err)
			}
			return c.printStored(ev, asJSON)
		},
	}
	f := cmd.Flags()
	f.StringVar(&req.Program, "program", "", "the program that crashed (required)")
	f.StringVar(&req.Version, "version", "", "its version (required)")
	f.StringVar(&req.Reason, "reason", "", "the reason, e.g. the panic message (required)")
	f.StringVar(&req.OS, "os", runtime.GOOS, "the operating system")
	f.StringVar(&req.Arch, "arch", runtime.GOARCH, "the architecture")
	f.StringVar(&stackFile, "stack", "", "a file holding the stack trace (at most 8 KiB)")
	f.StringVar(&dumpFile, "dump", "", "a dump file to store as a blob and name in the report")
	f.StringVar(&req.To, "to", "", "a peer ID to submit the report to (default: this node)")
	f.BoolVar(&asJSON, "json", false, "print the signed event")
	return cmd
}

func (c *cli) crashLsCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "ls",
		Short: "List crash reports grouped by fingerprint, with counts, first and last seen",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return show(c, cmd, asJSON, (*api.Client).Crashes, func(groups []api.CrashGroup) error {
				tw := c.table("FINGERPRINT\tCOUNT\tFIRST SEEN\tLAST SEEN\tPROGRAM\tLAST VERSION\tREASON")
				for _, g := range groups {
					fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\n", g.Fingerprint[:min(16, len(g.Fingerprint))], g.Count,
						when(g.FirstSeen), when(g.LastSeen), printable(g.Program), printable(g.LastVersion), printable(g.Reason))
				}
				return tw.Flush()
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
