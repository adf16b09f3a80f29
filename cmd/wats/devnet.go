package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/wats-network/wats/internal/devnet"
	"github.com/wats-network/wats/internal/humanize"
)

// devnetFlags are the flags shared by the devnet commands.
type devnetFlags struct {
	dir string
}

// register adds --dir to cmd. Its default is given before cmd runs, not in
// the flag, so that the help shows the rule once rather than this user's
// path.
func (f *devnetFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.dir, "dir", "",
		"the devnet directory (default: $WATS_DEVNET_DIR, else ~/.wats-devnet)")
	cmd.PreRunE = func(cmd *cobra.Command, _ []string) error {
		switch {
		case !cmd.Flags().Changed("dir"):
			f.dir = devnet.DefaultDir()
		case f.dir == "":
			return usageErrorf("--dir is empty: pass a directory, or leave --dir out for the default")
		}
		return nil
	}
}

// dirHint is the args "--dir DIR" when DIR is not the default, for the
// commands the devnet commands suggest; none otherwise.
func (f *devnetFlags) dirHint() []string {
	if f.dir == devnet.DefaultDir() {
		return nil
	}
	return []string{"--dir", f.dir}
}

// devnetHint is the devnet command args (e.g. "up", "-n", "3") with --dir
// if needed (last, or before a "--"), as a command to paste.
func (c *cli) devnetHint(f *devnetFlags, args ...string) string {
	full := append([]string{"devnet"}, args...)
	at := len(full)
	if i := slices.Index(full, "--"); i >= 0 {
		at = i
	}
	full = slices.Insert(full, at, f.dirHint()...)
	return c.hint(full...)
}

func (c *cli) devnetCmd() *cobra.Command {
	return withoutRepo(group("devnet", "Run a local network of several nodes",
		c.devnetUpCmd(), c.devnetRunCmd(), c.devnetStatusCmd(), c.devnetExecCmd(),
		c.devnetLogsCmd(), c.devnetDownCmd()), "--dir DIR")
}

// withoutRepo hides the global --repo from cmd and its subcommands, which
// do not use it, and makes it a usage error there that names what they
// take instead (instead).
func withoutRepo(cmd *cobra.Command, instead string) *cobra.Command {
	cmd.PersistentFlags().String("repo", "", "not used")
	_ = cmd.PersistentFlags().MarkHidden("repo")
	cmd.PersistentPreRunE = func(sub *cobra.Command, _ []string) error {
		if sub.Flags().Changed("repo") {
			return usageErrorf("%s takes no --repo: it runs repos of its own (%s)", sub.CommandPath(), instead)
		}
		return nil
	}
	return cmd
}

// checkNodeCount validates -n.
func checkNodeCount(n int) error {
	if n < 1 || n > devnet.MaxNodes {
		return usageErrorf("-n %d: a devnet has 1 to %d nodes", n, devnet.MaxNodes)
	}
	return nil
}

func (c *cli) devnetUpCmd() *cobra.Command {
	var (
		f       devnetFlags
		n       int
		network string
		timeout time.Duration
		asJSON  bool
	)
	cmd := &cobra.Command{
		Use:   "up -n N [--dir DIR] [--json]",
		Short: "Start N daemons in the background and wait until they are connected",
		Long: `Start N daemons on 127.0.0.1 in the background, each with its own repo
DIR/nodeI (created if needed) and log DIR/nodeI/daemon.log, all on one
network, started one after the other, each bootstrapped to every node before
it. Returns once every node is connected to every other (a full mesh), or
fails after --timeout and stops what it started. The pids are
recorded in DIR/devnet.json for status, exec, logs and down.

A node repo that exists already keeps its identity, log and config.toml
edits; the devnet sets only network, p2p.listen, p2p.bootstrap and
sync.interval in it.

With --json it prints an object: dir, network and nodes (as 'devnet status
--json' prints them).`,
		Example: `  wats devnet up -n 3
  wats devnet exec 1 -- events add --kind note --body '{"text":"hi"}'
  wats devnet status
  wats devnet down`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkNodeCount(n); err != nil {
				return err
			}
			if timeout <= 0 {
				return usageErrorf("--timeout %s: must be positive", timeout)
			}
			net, err := devnet.Start(cmd.Context(), devnet.Options{
				Dir: f.dir, Nodes: n, Network: network, Timeout: timeout, Log: c.progress,
				DownHint: c.devnetHint(&f, "down"),
			})
			if err != nil {
				return err
			}
			if asJSON {
				return c.printJSON(devnetUp{Dir: f.dir, Network: network, Nodes: devnet.Status(cmd.Context(), net.State())})
			}
			fmt.Fprintf(c.stdout, "devnet of %s up in %s (network %s)\n", humanize.Plural(n, "node"), f.dir, network)
			if err := c.printDevnetTable(cmd.Context(), net.State(), false); err != nil {
				return err
			}
			// One command a line: each can be pasted as it is.
			fmt.Fprintf(c.stdout, "\nnext, one command a line:\n")
			for _, h := range []string{
				c.devnetHint(&f, "exec", "0", "--", "events", "add", "--kind", "note", "--body", `{"text":"hi"}`),
				c.devnetHint(&f, "status"),
				c.devnetHint(&f, "logs"),
				c.devnetHint(&f, "down"),
			} {
				fmt.Fprintf(c.stdout, "  %s\n", h)
			}
			return nil
		},
	}
	f.register(cmd)
	cmd.Flags().IntVarP(&n, "nodes", "n", 3, "the number of nodes")
	cmd.Flags().StringVar(&network, "network", devnet.DefaultNetwork, "the nodes' network name")
	cmd.Flags().DurationVar(&timeout, "timeout", devnet.DefaultUpTimeout, "how long to wait for the nodes to start and connect")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON: dir, network, nodes")
	return cmd
}

// devnetUp is the JSON of `devnet up --json`.
type devnetUp struct {
	Dir     string              `json:"dir"`
	Network string              `json:"network"`
	Nodes   []devnet.NodeStatus `json:"nodes"`
}

// progress writes a progress message of a long command to stderr.
func (c *cli) progress(format string, args ...any) {
	fmt.Fprintf(c.stderr, format+"\n", args...)
}

// printDevnetTable prints `devnet status`'s rows for st (devnetText),
// or with asJSON the rows as JSON.
func (c *cli) printDevnetTable(ctx context.Context, st *devnet.State, asJSON bool) error {
	rows := devnet.Status(ctx, st)
	if asJSON {
		return c.printJSON(rows)
	}
	_, err := io.WriteString(c.stdout, devnetText(rows))
	return err
}

// devnetText lays out `devnet status`: a row a node (its index, full
// peer ID, whether its daemon runs, and its peers, events and head, "-"
// when its API did not answer), then, indented, its pid and repo, and why
// its API did not answer, if it did not; every line fits in maxHelpWidth
// columns while events and heads have at most 12 digits (peers, at most
// 31: a devnet has at most 32 nodes) and the repo's path does.
func devnetText(rows []devnet.NodeStatus) string {
	return rowsAndDetails("NODE\tPEER ID\tALIVE\tPEERS\tEVENTS\tHEAD", len(rows), func(i int) string {
		r := rows[i]
		if r.Error != "" || !r.Alive {
			return fmt.Sprintf("%d\t%s\t%s\t-\t-\t-", r.Index, dash(r.PeerID), yesNo(r.Alive))
		}
		return fmt.Sprintf("%d\t%s\t%s\t%d\t%d\t%d", r.Index, r.PeerID, yesNo(r.Alive), r.Peers, r.Events, r.Head)
	}, func(i int) []string {
		r := rows[i]
		d := []string{fmt.Sprintf("pid %d; repo %s", r.PID, r.Repo)}
		if r.Error != "" && r.Alive {
			d = append(d, "its API did not answer: "+printable(r.Error))
		}
		return d
	})
}

func (c *cli) devnetStatusCmd() *cobra.Command {
	var (
		f      devnetFlags
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "status [--json]",
		Short: "Show each node of the devnet: peer ID, alive, peers, events, head; pid and repo",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := c.loadDevnet(&f)
			if err != nil {
				return err
			}
			return c.printDevnetTable(cmd.Context(), st, asJSON)
		},
	}
	f.register(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON: one object per node")
	return cmd
}

// loadDevnet loads the devnet of --dir, with an error that says how to
// start one if there is none.
func (c *cli) loadDevnet(f *devnetFlags) (*devnet.State, error) {
	st, err := devnet.Load(f.dir)
	if errors.Is(err, devnet.ErrNoDevnet) {
		return nil, c.noDevnetError(f)
	}
	return st, err
}

// noDevnetError says there is no devnet in --dir and how to start one.
func (c *cli) noDevnetError(f *devnetFlags) error {
	return fmt.Errorf("no devnet in %s; start one with: %s (or, if one runs elsewhere, pass its --dir DIR or set $WATS_DEVNET_DIR)",
		f.dir, c.devnetHint(f, "up", "-n", "3"))
}

func (c *cli) devnetExecCmd() *cobra.Command {
	var f devnetFlags
	cmd := &cobra.Command{
		Use:   "exec I -- ARGS...",
		Short: "Run a wats command against node I",
		Long: `Run this wats binary with --repo DIR/nodeI followed by ARGS, passing stdin,
stdout, stderr and the exit code through. Put ARGS after "--" so that their
flags are not taken for exec's.`,
		Example: `  wats devnet exec 1 -- status
  wats devnet exec 2 -- events add --kind note --body '{"text":"hi"}'`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) < 2 {
				return usageErrorf("want a node index and a command, e.g. %s", c.hint("devnet", "exec", "1", "--", "status"))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			i, err := strconv.Atoi(args[0])
			if err != nil || i < 0 {
				return usageErrorf("node index %q: want 0, 1, 2, ...", args[0])
			}
			if dash := cmd.ArgsLenAtDash(); dash != -1 && dash != 1 {
				return usageErrorf("put the node index before \"--\": %s", c.hint("devnet", "exec", "1", "--", "status"))
			}
			dir := devnet.NodeDir(f.dir, i)
			st, err := devnet.Load(f.dir)
			switch {
			case err == nil && i >= len(st.Nodes):
				return usageErrorf("node index %d: the devnet in %s has nodes 0 to %d", i, f.dir, len(st.Nodes)-1)
			case err != nil && !errors.Is(err, devnet.ErrNoDevnet):
				return err
			}
			// With no devnet running, a node repo left by an earlier one
			// still serves (e.g. `config show`, or the no-daemon message).
			if _, serr := os.Stat(dir); errors.Is(serr, fs.ErrNotExist) {
				if err != nil {
					return c.noDevnetError(&f)
				}
				return fmt.Errorf("no node %d in %s (its repo %s is missing)", i, f.dir, dir)
			} else if serr != nil {
				return serr
			}
			exe, err := os.Executable()
			if err != nil {
				return fmt.Errorf("find the wats binary: %w", err)
			}
			sub := exec.Command(exe, append([]string{"--repo", dir}, args[1:]...)...)
			// The child sees the name it was run by, so that its hints
			// name the binary as ours do (commandName).
			sub.Args[0] = os.Args[0]
			sub.Stdin, sub.Stdout, sub.Stderr = c.stdin, c.stdout, c.stderr
			// The child shares our process group: the terminal's Ctrl-C
			// reaches it directly, and main's handler keeps us alive to
			// wait for it and pass its exit code on.
			err = sub.Run()
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				return &exitCodeError{code: exitCodeOf(ee)}
			}
			return err
		},
	}
	f.register(cmd)
	return cmd
}

// exitCodeOf returns a finished child's exit code, 128+N for a child
// killed by signal N (the shell's convention).
func exitCodeOf(ee *exec.ExitError) int {
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	if code := ee.ExitCode(); code > 0 {
		return code
	}
	return exitError
}

func (c *cli) devnetLogsCmd() *cobra.Command {
	var (
		f      devnetFlags
		follow bool
	)
	cmd := &cobra.Command{
		Use:   "logs [I] [-f]",
		Short: "Print the daemons' logs (all nodes, prefixed, or node I)",
		Args:  usageArgs(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			var logs []devnet.Log
			if len(args) == 1 {
				i, err := strconv.Atoi(args[0])
				if err != nil || i < 0 {
					return usageErrorf("node index %q: want 0, 1, 2, ...", args[0])
				}
				l, err := devnet.NodeLog(f.dir, i)
				if err != nil {
					return err
				}
				logs = []devnet.Log{l}
			} else {
				var err error
				if logs, err = devnet.Logs(f.dir); err != nil {
					return err
				}
			}
			return devnet.PrintLogs(cmd.Context(), c.stdout, logs, len(args) == 0, follow)
		},
	}
	f.register(cmd)
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing new lines until interrupted")
	return cmd
}

func (c *cli) devnetDownCmd() *cobra.Command {
	var (
		f      devnetFlags
		clean  bool
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "down [--clean] [--json]",
		Short: "Stop every node of the devnet (and remove its repos with --clean)",
		Long: `Send SIGTERM to every node recorded in DIR/devnet.json, wait up to 10s for
them to exit, then SIGKILL those left; check that none is left and remove the
pid file. The node repos stay (a later 'up' reuses their identities and logs)
unless --clean.

With no devnet running in DIR (no devnet.json, or no DIR at all, e.g. after
'down --clean') it says so and exits 0: down only makes sure that nothing
runs, so cleanup scripts may call it any number of times. It exits 1 only
when it could not stop a node or remove what --clean removes.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			say := func(format string, args ...any) {
				if !asJSON {
					fmt.Fprintf(c.stdout, format+"\n", args...)
				}
			}
			res, err := devnet.Down(cmd.Context(), f.dir, clean, say, c.progress)
			if err != nil {
				return err
			}
			if asJSON {
				return c.printJSON(res)
			}
			return nil
		},
	}
	f.register(cmd)
	cmd.Flags().BoolVar(&clean, "clean", false, "also remove the node repos and their logs")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON: dir, stopped (nodes), removed (repos)")
	return cmd
}

func (c *cli) devnetRunCmd() *cobra.Command {
	var o devnet.RunOptions
	cmd := &cobra.Command{
		Use:   "run -n N [--demo] [--dir DIR] [--duration D]",
		Short: "Run N daemons in the foreground, with a demo, until Ctrl-C",
		Long: `Start N daemons as 'devnet up' does, in the foreground, and show each
node's event count and head as they change, and whether the nodes hold the
same events ("converged"). With --demo every node publishes a note event every
--interval; node0 also publishes a file event with a 3 MiB blob, and the last
node submits a crash report with a dump to node0: every node fetches both
blobs, and the run reports when all hold them. Ctrl-C (or --duration) stops
everything; no process is left behind. Without --dir the nodes live in a
temporary directory removed at the end, but for their logs, which are moved
to a directory of their own and named; with --dir DIR everything stays in
DIR.`,
		Example: `  wats devnet run -n 3 --demo
  wats devnet run -n 3 --demo --duration 30s --events-per-node 10`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkRunFlags(&o); err != nil {
				return err
			}
			// ctx ends on Ctrl-C (SIGINT) or SIGTERM.
			o.Stdout, o.Stderr, o.TTY, o.Width, o.Hint = c.stdout, c.stderr, isTerminal(c.stdout), terminalWidth(c.stdout), c.hint
			return devnet.Run(cmd.Context(), o)
		},
	}
	// Unlike the other devnet commands, run's --dir has no default
	// directory: without it the devnet is temporary.
	cmd.Flags().StringVar(&o.Dir, "dir", "", "the devnet directory (default: a temporary one)")
	cmd.Flags().IntVarP(&o.Nodes, "nodes", "n", 3, "the number of nodes")
	cmd.Flags().BoolVar(&o.Demo, "demo", false, "publish events from every node and show them spread")
	cmd.Flags().DurationVar(&o.Duration, "duration", 0, "stop after this long (0: run until Ctrl-C)")
	cmd.Flags().DurationVar(&o.Interval, "interval", time.Second, "with --demo: how often each node publishes an event")
	cmd.Flags().IntVar(&o.EventsPerNode, "events-per-node", 0, "with --demo: stop after this many events per node (0: no limit)")
	cmd.Flags().StringVar(&o.Network, "network", devnet.DefaultNetwork, "the nodes' network name")
	cmd.Flags().DurationVar(&o.Timeout, "timeout", devnet.DefaultUpTimeout, "how long to wait for the nodes to start and connect")
	return cmd
}

// checkRunFlags validates the flags of `devnet run`.
func checkRunFlags(o *devnet.RunOptions) error {
	if err := checkNodeCount(o.Nodes); err != nil {
		return err
	}
	switch {
	case o.Duration < 0:
		return usageErrorf("--duration %s: must be 0 (until Ctrl-C) or positive", o.Duration)
	case o.Interval < 10*time.Millisecond:
		return usageErrorf("--interval %s: must be at least 10ms", o.Interval)
	case o.EventsPerNode < 0:
		return usageErrorf("--events-per-node %d: must be 0 (no limit) or positive", o.EventsPerNode)
	case o.Timeout <= 0:
		return usageErrorf("--timeout %s: must be positive", o.Timeout)
	case !o.Demo && o.EventsPerNode > 0:
		return usageErrorf("--events-per-node needs --demo")
	}
	return nil
}
