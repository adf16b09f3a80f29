package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"
)

// cli is the state shared by the commands of one invocation.
type cli struct {
	// repoDir is the --repo flag: the repo the command works on.
	repoDir string

	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
}

// newRootCmd builds the whole command tree, writing to stdout and stderr.
func newRootCmd(stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	c := &cli{stdin: stdin, stdout: stdout, stderr: stderr}
	root := &cobra.Command{
		Use:   "wats",
		Short: "wats: a peer-to-peer node sharing a signed event log",
		Long: `wats runs a node of a wats network (wats daemon) and drives it
over the control API on the repo's Unix socket.

Start with:  wats init && wats daemon
Then:        wats status, wats peers ls, wats events add --kind note --body '{"text":"hi"}'
A local network of several nodes: wats devnet up -n 3`,
		SilenceErrors: true,
		SilenceUsage:  true,
		Version:       version,
	}
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &usageError{err} })
	root.SetVersionTemplate("wats {{.Version}}\n")
	root.PersistentFlags().StringVar(&c.repoDir, "repo", defaultRepoDir(),
		"the repo directory (default: $WATS_PATH, else ~/.wats)")

	root.AddCommand(
		c.initCmd(),
		c.daemonCmd(),
		c.idCmd(),
		c.statusCmd(),
		c.peersCmd(),
		c.eventsCmd(),
		c.syncCmd(),
		c.configCmd(),
		c.versionCmd(),
		c.devnetCmd(),
		c.benchCmd(),
	)
	return root
}

// group returns a command that only holds subcommands: run alone it prints
// its help; with an unknown subcommand it is a usage error.
func group(use, short string, subs ...*cobra.Command) *cobra.Command {
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageErrorf("unknown command %q for %q", args[0], cmd.CommandPath())
			}
			return cmd.Help()
		},
	}
	cmd.AddCommand(subs...)
	return cmd
}

// usageArgs wraps a cobra argument validator so that its errors are usage
// errors (exit code 2).
func usageArgs(v cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := v(cmd, args); err != nil {
			return &usageError{err}
		}
		return nil
	}
}

// noArgs is cobra.NoArgs as a usage error with a message that fits a leaf
// command.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageErrorf("%s takes no arguments, got %q", cmd.CommandPath(), args[0])
	}
	return nil
}

// printJSON writes v as indented JSON and a newline.
func (c *cli) printJSON(v any) error {
	b, err := marshalIndent(v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(c.stdout, "%s\n", b)
	return err
}
