package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
)

// cli is the state shared by the commands of one invocation.
type cli struct {
	// repoDir is the --repo flag: the repo the command works on; its
	// default is filled in before any command runs (resolveRepoFlag).
	repoDir string
	// name is how hints name this binary (commandName): "wats", or e.g.
	// "bin/wats" when that is not on $PATH.
	name string

	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
}

// newRootCmd builds the whole command tree, writing to stdout and stderr.
func newRootCmd(stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	c := &cli{stdin: stdin, stdout: stdout, stderr: stderr, name: commandName()}
	root := &cobra.Command{
		Use:   "wats",
		Short: "wats: a peer-to-peer node sharing a signed event log",
		Long: strings.ReplaceAll(`wats runs a node of a wats network (wats daemon) and drives it
over the control API on the repo's Unix socket.

Start with:  WATS init && WATS daemon
Then:        WATS status, WATS peers ls,
             WATS events add --kind note --body '{"text":"hi"}'
A local network of several nodes: WATS devnet up -n 3`, "WATS", c.name),
		SilenceErrors: true,
		SilenceUsage:  true,
		Version:       version,
		// Every command but devnet's and bench's works on --repo.
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			return c.resolveRepoFlag(cmd)
		},
	}
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &usageError{err} })
	root.SetVersionTemplate("wats {{.Version}}\n")
	// The default is left out of the flag itself so that the help shows it
	// once, as the rule rather than this user's path.
	root.PersistentFlags().StringVar(&c.repoDir, "repo", "",
		"the repo directory (default: $WATS_PATH, else ~/.wats)")

	root.AddCommand(
		c.initCmd(),
		c.daemonCmd(),
		c.shutdownCmd(),
		c.idCmd(),
		c.statusCmd(),
		c.peersCmd(),
		c.eventsCmd(),
		c.syncCmd(),
		c.configCmd(),
		c.versionCmd(),
		c.devnetCmd(),
		c.benchCmd(),
		c.limitsCmd(),
		c.diagCmd(),
		c.dashboardCmd(),
		c.blobCmd(),
		c.replicateCmd(),
		c.crashCmd(),
		c.repoCmd(),
	)
	if c.name != defaultName {
		nameExamples(root, c.name)
	}
	return root
}

// nameExamples rewrites the examples of cmd and its subcommands, written
// as "  wats ...", to name the binary as name, so that they can be pasted.
func nameExamples(cmd *cobra.Command, name string) {
	cmd.Example = strings.ReplaceAll(cmd.Example, "  "+defaultName+" ", "  "+name+" ")
	for _, sub := range cmd.Commands() {
		nameExamples(sub, name)
	}
}

// resolveRepoFlag gives --repo its default when it was not given:
// $WATS_PATH, else ~/.wats ("" if neither can be found, which
// checkRepoFlag refuses).
func (c *cli) resolveRepoFlag(cmd *cobra.Command) error {
	if !cmd.Flags().Changed("repo") {
		c.repoDir = defaultRepoDir()
	}
	return nil
}

// hint returns the command line args as the user can paste it: the binary
// as c.name, then args, each quoted for the shell where it needs to be.
func (c *cli) hint(args ...string) string {
	var b strings.Builder
	b.WriteString(c.name)
	for _, a := range args {
		b.WriteByte(' ')
		b.WriteString(shellQuote(a))
	}
	return b.String()
}

// repoHint is the args "--repo DIR" when --repo is not its default, for
// the commands that hints suggest; none otherwise.
func (c *cli) repoHint() []string {
	if c.repoDir == defaultRepoDir() {
		return nil
	}
	return []string{"--repo", c.repoDir}
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
