package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/wats-network/wats/config"
	"github.com/wats-network/wats/internal/humanize"
	"github.com/wats-network/wats/node/api"
)

// Devnet defaults.
const (
	// defaultDevnetNetwork is the network name of a devnet's nodes.
	defaultDevnetNetwork = "wats-devnet"
	// defaultUpTimeout bounds `devnet up`: every node started and connected.
	defaultUpTimeout = 30 * time.Second
	// devnetSyncInterval is the nodes' sync.interval: shorter than the
	// default 30s so that an event missed by gossip shows up quickly.
	devnetSyncInterval = 5 * time.Second
)

// devnetBootAddr picks the address of a devnet node that later nodes are
// bootstrapped to: its first TCP address (the devnet's cheapest transport,
// ADR 0029), else its first.
func devnetBootAddr(addrs []string) string {
	for _, a := range addrs {
		if strings.Contains(a, "/tcp/") {
			return a
		}
	}
	if len(addrs) > 0 {
		return addrs[0]
	}
	return ""
}

// describeBoot says what a node is bootstrapped to: one address, or the
// number of nodes.
func describeBoot(boot []string) string {
	if len(boot) == 1 {
		return boot[0]
	}
	return fmt.Sprintf("the %d nodes before it", len(boot))
}

// devnetListen is every devnet node's p2p.listen: loopback only, ports
// chosen by the kernel, TCP and QUIC (docs/design.md §13: on loopback).
var devnetListen = []string{"/ip4/127.0.0.1/tcp/0", "/ip4/127.0.0.1/udp/0/quic-v1"}

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
			f.dir = defaultDevnetDir()
		case f.dir == "":
			return usageErrorf("--dir is empty: pass a directory, or leave --dir out for the default")
		}
		return nil
	}
}

// dirHint is the args "--dir DIR" when DIR is not the default, for the
// commands the devnet commands suggest; none otherwise.
func (f *devnetFlags) dirHint() []string {
	if f.dir == defaultDevnetDir() {
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
	if n < 1 || n > maxDevnetNodes {
		return usageErrorf("-n %d: a devnet has 1 to %d nodes", n, maxDevnetNodes)
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
			net, err := startNetwork(cmd.Context(), netOptions{
				dir: f.dir, n: n, network: network, timeout: timeout, log: c.progress,
				downHint: c.devnetHint(&f, "down"),
			})
			if err != nil {
				return err
			}
			if asJSON {
				return c.printJSON(devnetUp{Dir: f.dir, Network: network, Nodes: nodeRows(cmd.Context(), net.state)})
			}
			fmt.Fprintf(c.stdout, "devnet of %s up in %s (network %s)\n", humanize.Plural(n, "node"), f.dir, network)
			if err := c.printDevnetTable(cmd.Context(), net.state, false); err != nil {
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
	cmd.Flags().StringVar(&network, "network", defaultDevnetNetwork, "the nodes' network name")
	cmd.Flags().DurationVar(&timeout, "timeout", defaultUpTimeout, "how long to wait for the nodes to start and connect")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON: dir, network, nodes")
	return cmd
}

// devnetUp is the JSON of `devnet up --json`.
type devnetUp struct {
	Dir     string    `json:"dir"`
	Network string    `json:"network"`
	Nodes   []nodeRow `json:"nodes"`
}

// devnetDown is the JSON of `devnet down --json`: the nodes stopped (0
// when none ran) and whether the repos were removed.
type devnetDown struct {
	Dir     string `json:"dir"`
	Stopped int    `json:"stopped"`
	Removed bool   `json:"removed"`
}

// progress writes a progress message of a long command to stderr.
func (c *cli) progress(format string, args ...any) {
	fmt.Fprintf(c.stderr, format+"\n", args...)
}

// netOptions are the settings of startNetwork.
type netOptions struct {
	dir     string
	n       int
	network string
	timeout time.Duration
	// foreground: the nodes belong to this process (`devnet run`).
	foreground bool
	log        func(format string, args ...any)
	// downHint is the command that stops a devnet already running in dir.
	downHint string
	// config, if set, adjusts each node's config before its repo is made.
	config func(*config.Config)
}

// devnet is a network started by this process.
type devnet struct {
	dir     string
	state   *devnetState
	procs   []*proc
	clients []*api.Client
}

// startNetwork starts o.n daemons in o.dir as `devnet up` describes, one
// after the other, each bootstrapped to those before it, and waits, at
// most o.timeout, until every node has the o.n-1 others as peers. On any failure it stops what it started, removes the
// pid file and returns an error saying what went wrong and where the logs
// are.
func startNetwork(ctx context.Context, o netOptions) (_ *devnet, err error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find the wats binary: %w", err)
	}
	if err := os.MkdirAll(o.dir, 0o700); err != nil {
		return nil, err
	}
	if err := refuseRunning(o.dir, o.downHint); err != nil {
		return nil, err
	}
	deadline := time.Now().Add(o.timeout)
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()

	d := &devnet{dir: o.dir, state: &devnetState{
		Version: stateVersion, Network: o.network, Started: time.Now().UTC(),
		Foreground: o.foreground, RunnerPID: os.Getpid(),
	}}
	defer func() {
		if err != nil {
			d.stop()
			_ = removeState(o.dir)
			if ctx.Err() == context.DeadlineExceeded {
				err = fmt.Errorf("devnet did not come up within %s: %w", o.timeout, err)
			}
		}
	}()
	start := func(i int, bootstrap []string) error {
		dir := nodeDir(o.dir, i)
		cfg := config.Default()
		cfg.Network = o.network
		cfg.P2P.Listen = append([]string(nil), devnetListen...)
		cfg.P2P.Bootstrap = bootstrap
		cfg.Sync.Interval = config.Duration{Duration: devnetSyncInterval}
		if o.config != nil {
			o.config(cfg)
		}
		r, err := prepareNodeRepo(dir, cfg)
		if err != nil {
			return fmt.Errorf("node%d: %w", i, err)
		}
		logPath := filepath.Join(dir, logFileName)
		p, err := startDaemon(exe, dir, logPath, i, o.foreground)
		if err != nil {
			return err
		}
		d.procs = append(d.procs, p)
		d.clients = append(d.clients, api.NewClient(r.SocketPath()))
		d.state.Nodes = append(d.state.Nodes, nodeState{Index: i, Repo: dir, Log: logPath, PID: p.pid()})
		return d.state.save(o.dir)
	}
	identify := func(i int) error {
		id, err := waitAPI(ctx, d.procs[i], d.clients[i], d.state.Nodes[i].Log)
		if err != nil {
			return err
		}
		d.state.Nodes[i].PeerID, d.state.Nodes[i].Addrs = id.PeerID, id.Addrs
		return nil
	}

	o.log("starting node0 in %s", nodeDir(o.dir, 0))
	if err := start(0, nil); err != nil {
		return nil, err
	}
	if err := identify(0); err != nil {
		return nil, err
	}
	// Each later node is bootstrapped to every node before it, so that the
	// devnet is a full mesh (mDNS stays off: it would join the devnets of
	// other runs on this host, and its dials are not up to the devnet).
	var boot []string
	for i := 1; i < o.n; i++ {
		prev := d.state.Nodes[i-1]
		a := devnetBootAddr(prev.Addrs)
		if a == "" {
			return nil, fmt.Errorf("node%d (%s) reports no listen address; see %s", i-1, prev.PeerID, prev.Log)
		}
		boot = append(boot, a)
		o.log("starting node%d, bootstrapped to %s", i, describeBoot(boot))
		if err := start(i, slices.Clone(boot)); err != nil {
			return nil, err
		}
		if err := identify(i); err != nil {
			return nil, err
		}
	}
	if err := d.state.save(o.dir); err != nil {
		return nil, err
	}
	o.log("waiting for the %s to connect", humanize.Plural(o.n, "node"))
	if err := waitConnected(ctx, d); err != nil {
		return nil, err
	}
	return d, nil
}

// refuseRunning fails if dir holds a devnet with a node still running,
// saying to stop it with downHint.
func refuseRunning(dir, downHint string) error {
	st, err := loadState(dir)
	if errors.Is(err, errNoDevnet) {
		return nil
	}
	if err != nil {
		return err
	}
	var pids []string
	for _, n := range st.Nodes {
		if processAlive(n.PID) && isDevnetDaemon(n.PID, n.Repo) {
			pids = append(pids, strconv.Itoa(n.PID))
		}
	}
	if len(pids) > 0 {
		return fmt.Errorf("a devnet is already running in %s (pids %s); stop it with: %s",
			dir, strings.Join(pids, ", "), downHint)
	}
	return nil // a stale devnet.json: its nodes are gone
}

// stop stops the daemons of d and closes its clients.
func (d *devnet) stop() {
	stopProcs(d.procs)
	for _, cl := range d.clients {
		cl.Close()
	}
}

// waitAPI waits until the daemon p answers ID on its socket. It fails if
// p exits first (quoting the end of its log) or ctx ends.
func waitAPI(ctx context.Context, p *proc, cl *api.Client, logPath string) (*api.ID, error) {
	t := time.NewTicker(pollInterval)
	defer t.Stop()
	for {
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		id, err := cl.ID(cctx)
		cancel()
		if err == nil {
			return id, nil
		}
		select {
		case <-p.exited:
			return nil, fmt.Errorf("node%d exited while starting (%v); the end of %s:\n%s",
				p.index, p.err, logPath, logTail(logPath, 15))
		case <-ctx.Done():
			return nil, fmt.Errorf("node%d's API did not answer on %s (last error: %v); see %s",
				p.index, cl.Socket(), err, logPath)
		case <-t.C:
		}
	}
}

// waitConnected waits until every node has completed hello with every
// other: the devnet is a full mesh.
func waitConnected(ctx context.Context, d *devnet) error {
	n := len(d.clients)
	t := time.NewTicker(pollInterval)
	defer t.Stop()
	for {
		var missing []string
		want := n - 1
		for i, cl := range d.clients {
			if want == 0 {
				break
			}
			cctx, cancel := context.WithTimeout(ctx, callTimeout)
			st, err := cl.Status(cctx)
			cancel()
			switch {
			case err != nil:
				missing = append(missing, fmt.Sprintf("node%d: %v", i, err))
			case st.Peers < want:
				missing = append(missing, fmt.Sprintf("node%d has %d of %d peers", i, st.Peers, want))
			}
		}
		if len(missing) == 0 {
			return nil
		}
		for _, p := range d.procs {
			select {
			case <-p.exited:
				return fmt.Errorf("node%d exited (%v); the end of its log:\n%s",
					p.index, p.err, logTail(d.state.Nodes[p.index].Log, 15))
			default:
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the nodes did not connect: %s; logs in %s/node*/%s",
				strings.Join(missing, ", "), d.dir, logFileName)
		case <-t.C:
		}
	}
}

// logTail returns the last n lines of the file at path, indented.
func logTail(path string, n int) string {
	b, err := readTail(path, 64<<10)
	if err != nil {
		return "  (" + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "  " + strings.Join(lines, "\n  ")
}

// readTail reads at most the last max bytes of the file at path.
func readTail(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if off := fi.Size() - max; off > 0 {
		if _, err := f.Seek(off, io.SeekStart); err != nil {
			return nil, err
		}
	}
	return io.ReadAll(io.LimitReader(f, max))
}

// nodeRow is one row of `devnet status`.
type nodeRow struct {
	Index  int    `json:"index"`
	PeerID string `json:"peer_id"`
	PID    int    `json:"pid"`
	Alive  bool   `json:"alive"`
	Peers  int    `json:"peers"`
	Events uint64 `json:"events"`
	Head   uint64 `json:"head"`
	Repo   string `json:"repo"`
	// Error is why the node's API did not answer, if it did not.
	Error string `json:"error,omitempty"`
}

// nodeRows asks every node of st for its status, concurrently, each call
// bounded by callTimeout.
func nodeRows(ctx context.Context, st *devnetState) []nodeRow {
	rows := make([]nodeRow, len(st.Nodes))
	var wg sync.WaitGroup
	for i, n := range st.Nodes {
		rows[i] = nodeRow{Index: n.Index, PeerID: n.PeerID, PID: n.PID, Repo: n.Repo,
			Alive: processAlive(n.PID) && isDevnetDaemon(n.PID, n.Repo)}
		if !rows[i].Alive {
			rows[i].Error = "not running"
			continue
		}
		wg.Go(func() {
			cl, err := nodeClient(n.Repo)
			if err != nil {
				rows[i].Error = err.Error()
				return
			}
			defer cl.Close()
			cctx, cancel := context.WithTimeout(ctx, callTimeout)
			defer cancel()
			s, err := cl.Status(cctx)
			if err != nil {
				rows[i].Error = err.Error()
				return
			}
			rows[i].PeerID, rows[i].Peers, rows[i].Events, rows[i].Head = s.PeerID, s.Peers, s.Events, s.Head
		})
	}
	wg.Wait()
	return rows
}

// printDevnetTable prints `devnet status`'s rows for st.
func (c *cli) printDevnetTable(ctx context.Context, st *devnetState, asJSON bool) error {
	rows := nodeRows(ctx, st)
	if asJSON {
		return c.printJSON(rows)
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tPEER ID\tPID\tALIVE\tPEERS\tEVENTS\tHEAD\tREPO")
	for _, r := range rows {
		if r.Error != "" && r.Alive {
			fmt.Fprintf(tw, "%d\t%s\t%d\t%s\t-\t-\t-\t%s\t(%s)\n", r.Index, dash(r.PeerID), r.PID, yesNo(r.Alive), r.Repo, r.Error)
			continue
		}
		if !r.Alive {
			fmt.Fprintf(tw, "%d\t%s\t%d\t%s\t-\t-\t-\t%s\n", r.Index, dash(r.PeerID), r.PID, yesNo(r.Alive), r.Repo)
			continue
		}
		fmt.Fprintf(tw, "%d\t%s\t%d\t%s\t%d\t%d\t%d\t%s\n", r.Index, r.PeerID, r.PID, yesNo(r.Alive), r.Peers, r.Events, r.Head, r.Repo)
	}
	return tw.Flush()
}

func (c *cli) devnetStatusCmd() *cobra.Command {
	var (
		f      devnetFlags
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "status [--json]",
		Short: "Show each node of the devnet: peer id, pid, alive, peers, events, head",
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
func (c *cli) loadDevnet(f *devnetFlags) (*devnetState, error) {
	st, err := loadState(f.dir)
	if errors.Is(err, errNoDevnet) {
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
			dir := nodeDir(f.dir, i)
			st, err := loadState(f.dir)
			switch {
			case err == nil && i >= len(st.Nodes):
				return usageErrorf("node index %d: the devnet in %s has nodes 0 to %d", i, f.dir, len(st.Nodes)-1)
			case err != nil && !errors.Is(err, errNoDevnet):
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
			paths, err := c.devnetLogPaths(&f, args)
			if err != nil {
				return err
			}
			prefix := len(args) == 0
			fl := make([]*logFollower, len(paths))
			for i, p := range paths {
				fl[i] = &logFollower{path: p.path}
				if prefix {
					fl[i].prefix = fmt.Sprintf("node%d | ", p.index)
				}
				if _, err := fl[i].copy(c.stdout, true); err != nil && !follow {
					return err
				}
			}
			if !follow {
				return nil
			}
			return followLogs(cmd.Context(), c.stdout, fl)
		},
	}
	f.register(cmd)
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing new lines until interrupted")
	return cmd
}

type indexedPath struct {
	index int
	path  string
}

// devnetLogPaths lists the log files `devnet logs` prints: node args[0],
// or every node of the devnet.
func (c *cli) devnetLogPaths(f *devnetFlags, args []string) ([]indexedPath, error) {
	if len(args) == 1 {
		i, err := strconv.Atoi(args[0])
		if err != nil || i < 0 {
			return nil, usageErrorf("node index %q: want 0, 1, 2, ...", args[0])
		}
		p := filepath.Join(nodeDir(f.dir, i), logFileName)
		if _, err := os.Stat(p); err != nil {
			return nil, fmt.Errorf("no log for node %d: %w", i, err)
		}
		return []indexedPath{{i, p}}, nil
	}
	st, err := loadState(f.dir)
	if err == nil {
		out := make([]indexedPath, len(st.Nodes))
		for i, n := range st.Nodes {
			out[i] = indexedPath{n.Index, n.Log}
		}
		return out, nil
	}
	if !errors.Is(err, errNoDevnet) {
		return nil, err
	}
	// No devnet running: the logs of the repos left behind, if any.
	var out []indexedPath
	for i := 0; i < maxDevnetNodes; i++ {
		p := filepath.Join(nodeDir(f.dir, i), logFileName)
		if _, err := os.Stat(p); err != nil {
			break
		}
		out = append(out, indexedPath{i, p})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no devnet logs in %s", f.dir)
	}
	return out, nil
}

// logFollower prints the new complete lines of one log file, each with a
// prefix.
type logFollower struct {
	path   string
	prefix string
	off    int64
}

// copy writes the lines added to the file since the last call. A last
// line without its newline is held back until it is complete, unless
// final is set.
func (l *logFollower) copy(w io.Writer, final bool) (bool, error) {
	f, err := os.Open(l.path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	if _, err := f.Seek(l.off, io.SeekStart); err != nil {
		return false, err
	}
	r := bufio.NewReader(f)
	wrote := false
	for {
		line, err := r.ReadString('\n')
		if len(line) > 0 && (strings.HasSuffix(line, "\n") || final) {
			l.off += int64(len(line))
			if !strings.HasSuffix(line, "\n") {
				line += "\n"
			}
			if _, werr := io.WriteString(w, l.prefix+line); werr != nil {
				return wrote, werr
			}
			wrote = true
		}
		if err == io.EOF {
			return wrote, nil
		}
		if err != nil {
			return wrote, err
		}
	}
}

// followLogs prints new lines of every log as they are written, until ctx
// is done. Logs are plain files written by other processes: it looks for
// new lines every followInterval.
func followLogs(ctx context.Context, w io.Writer, fl []*logFollower) error {
	t := time.NewTicker(followInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		for _, l := range fl {
			if _, err := l.copy(w, false); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
		}
	}
}

// followInterval is how often `devnet logs -f` looks for new lines.
const followInterval = 250 * time.Millisecond

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
			res := devnetDown{Dir: f.dir}
			done := func() error {
				if asJSON {
					return c.printJSON(res)
				}
				return nil
			}
			st, err := loadState(f.dir)
			if errors.Is(err, errNoDevnet) {
				if _, serr := os.Stat(f.dir); errors.Is(serr, fs.ErrNotExist) {
					say("no devnet is running in %s (there is no such directory)", f.dir)
					return done()
				}
				say("no devnet is running in %s", f.dir)
				if clean {
					if err := cleanDevnetDir(f.dir); err != nil {
						return err
					}
					res.Removed = true
					say("removed the node repos")
				}
				return done()
			}
			if err != nil {
				return err
			}
			left := stopRecorded(cmd.Context(), st, c.progress)
			if len(left) > 0 {
				return fmt.Errorf("processes %v are still alive after SIGKILL; %s kept", left, stateFileName)
			}
			if err := removeState(f.dir); err != nil {
				return err
			}
			res.Stopped = len(st.Nodes)
			say("devnet in %s stopped (%s)", f.dir, humanize.Plural(len(st.Nodes), "node"))
			if clean {
				if err := cleanDevnetDir(f.dir); err != nil {
					return err
				}
				res.Removed = true
				say("removed the node repos")
			}
			return done()
		},
	}
	f.register(cmd)
	cmd.Flags().BoolVar(&clean, "clean", false, "also remove the node repos and their logs")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON: dir, stopped (nodes), removed (repos)")
	return cmd
}
