package devnet

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/wats-network/wats/api"
	"github.com/wats-network/wats/config"
	"github.com/wats-network/wats/internal/humanize"
)

// Devnet defaults.
const (
	// DefaultNetwork is the network name of a devnet's nodes.
	DefaultNetwork = "wats-devnet"
	// DefaultUpTimeout bounds `devnet up`: every node started and
	// connected.
	DefaultUpTimeout = 30 * time.Second
	// syncInterval is the nodes' sync.interval: shorter than the default
	// 30s so that an event missed by gossip shows up quickly.
	syncInterval = 5 * time.Second
)

// bootAddr picks the address of a devnet node that later nodes are
// bootstrapped to: its first TCP address (the devnet's cheapest transport,
// ADR 0029), else its first.
func bootAddr(addrs []string) string {
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

// listen is every devnet node's p2p.listen: loopback only, ports chosen by
// the kernel, TCP and QUIC (docs/design.md §13: on loopback).
var listen = []string{"/ip4/127.0.0.1/tcp/0", "/ip4/127.0.0.1/udp/0/quic-v1"}

// Options are the settings of Start.
type Options struct {
	// Dir is the devnet directory, created (0700) if need be: the nodes'
	// repos are Dir/nodeI, its pid file Dir/devnet.json.
	Dir string
	// Nodes is the number of nodes, 1 to MaxNodes.
	Nodes int
	// Network is the nodes' network name (DefaultNetwork for the devnet
	// commands).
	Network string
	// Timeout bounds the whole start: every node started, answering on its
	// API and connected to every other.
	Timeout time.Duration
	// Foreground: the nodes belong to this process (`devnet run`, the
	// benches) and get SIGTERM if it dies.
	Foreground bool
	// Log gets a line of progress now and then ("starting node1, …").
	// Required.
	Log func(format string, args ...any)
	// DownHint is the command that stops a devnet already running in Dir,
	// quoted in the error that refuses to start a second one.
	DownHint string
	// Config, if set, adjusts each node's config before its repo is made
	// (after the devnet's own settings: network, p2p.listen, p2p.bootstrap,
	// sync.interval).
	Config func(*config.Config)
}

// Network is a devnet started by this process (Start). Its methods are
// for one goroutine, but for Client and Daemon.
type Network struct {
	dir        string
	exe        string
	foreground bool
	state      *State
	procs      []*Daemon
	clients    []*api.Client
}

// State is what the network recorded in its devnet.json: the nodes' repos,
// logs, pids, peer ids and addresses.
func (d *Network) State() *State { return d.state }

// Client is the control API client of node i.
func (d *Network) Client(i int) *api.Client { return d.clients[i] }

// Daemon is the daemon process of node i (the one Restart started last).
func (d *Network) Daemon(i int) *Daemon { return d.procs[i] }

// Restart starts a new daemon for node i, which must have exited (killed
// by the caller), on the same repo and log, as Start started it; Daemon(i)
// is then the new one. It does not wait for its API (Daemon.WaitAPI) and
// does not update devnet.json.
func (d *Network) Restart(i int) error {
	n := d.state.Nodes[i]
	p, err := StartDaemon(d.exe, n.Repo, n.Log, i, d.foreground)
	if err != nil {
		return err
	}
	d.procs[i] = p
	return nil
}

// Start starts o.Nodes daemons in o.Dir as `devnet up` describes, one
// after the other, each bootstrapped to those before it, and waits, at
// most o.Timeout, until every node has the o.Nodes-1 others as peers. It
// refuses a Dir whose devnet.json names a node still running. On any
// failure it stops what it started, removes the pid file and returns an
// error saying what went wrong and where the logs are.
func Start(ctx context.Context, o Options) (_ *Network, err error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find the wats binary: %w", err)
	}
	if err := os.MkdirAll(o.Dir, 0o700); err != nil {
		return nil, err
	}
	if err := refuseRunning(o.Dir, o.DownHint); err != nil {
		return nil, err
	}
	deadline := time.Now().Add(o.Timeout)
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()

	d := &Network{dir: o.Dir, exe: exe, foreground: o.Foreground, state: &State{
		Version: stateVersion, Network: o.Network, Started: time.Now().UTC(),
		Foreground: o.Foreground, RunnerPID: os.Getpid(),
	}}
	defer func() {
		if err != nil {
			d.Stop()
			_ = removeState(o.Dir)
			if ctx.Err() == context.DeadlineExceeded {
				err = fmt.Errorf("devnet did not come up within %s: %w", o.Timeout, err)
			}
		}
	}()
	start := func(i int, bootstrap []string) error {
		dir := NodeDir(o.Dir, i)
		cfg := config.Default()
		cfg.Network = o.Network
		cfg.P2P.Listen = append([]string(nil), listen...)
		cfg.P2P.Bootstrap = bootstrap
		cfg.Sync.Interval = config.Duration{Duration: syncInterval}
		// On 127.0.0.1 AutoNAT never finds a node public: every node is a
		// DHT server, or none would answer (docs/adr/0040).
		cfg.P2P.DHT = config.DHTServer
		if o.Config != nil {
			o.Config(cfg)
		}
		r, err := PrepareRepo(dir, cfg)
		if err != nil {
			return fmt.Errorf("node%d: %w", i, err)
		}
		logPath := filepath.Join(dir, LogFileName)
		p, err := StartDaemon(exe, dir, logPath, i, o.Foreground)
		if err != nil {
			return err
		}
		d.procs = append(d.procs, p)
		d.clients = append(d.clients, api.NewClient(r.SocketPath()))
		d.state.Nodes = append(d.state.Nodes, NodeState{Index: i, Repo: dir, Log: logPath, PID: p.PID()})
		return d.state.save(o.Dir)
	}
	identify := func(i int) error {
		id, err := d.procs[i].WaitAPI(ctx, d.clients[i])
		if err != nil {
			return err
		}
		d.state.Nodes[i].PeerID, d.state.Nodes[i].Addrs = id.PeerID, id.Addrs
		return nil
	}

	o.Log("starting node0 in %s", NodeDir(o.Dir, 0))
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
	for i := 1; i < o.Nodes; i++ {
		prev := d.state.Nodes[i-1]
		a := bootAddr(prev.Addrs)
		if a == "" {
			return nil, fmt.Errorf("node%d (%s) reports no listen address; see %s", i-1, prev.PeerID, prev.Log)
		}
		boot = append(boot, a)
		o.Log("starting node%d, bootstrapped to %s", i, describeBoot(boot))
		if err := start(i, slices.Clone(boot)); err != nil {
			return nil, err
		}
		if err := identify(i); err != nil {
			return nil, err
		}
	}
	if err := d.state.save(o.Dir); err != nil {
		return nil, err
	}
	o.Log("waiting for the %s to connect", humanize.Plural(o.Nodes, "node"))
	if err := waitConnected(ctx, d); err != nil {
		return nil, err
	}
	return d, nil
}

// refuseRunning fails if dir holds a devnet with a node still running,
// saying to stop it with downHint.
func refuseRunning(dir, downHint string) error {
	st, err := Load(dir)
	if errors.Is(err, ErrNoDevnet) {
		return nil
	}
	if err != nil {
		return err
	}
	var pids []string
	for _, n := range st.Nodes {
		if ProcessAlive(n.PID) && isDevnetDaemon(n.PID, n.Repo) {
			pids = append(pids, strconv.Itoa(n.PID))
		}
	}
	if len(pids) > 0 {
		return fmt.Errorf("a devnet is already running in %s (pids %s); stop it with: %s",
			dir, strings.Join(pids, ", "), downHint)
	}
	return nil // a stale devnet.json: its nodes are gone
}

// Stop stops the daemons of the network (StopDaemons) and closes its
// clients. It leaves devnet.json and the repos.
func (d *Network) Stop() {
	StopDaemons(d.procs)
	for _, cl := range d.clients {
		cl.Close()
	}
}

// waitConnected waits until every node has completed hello with every
// other: the devnet is a full mesh.
func waitConnected(ctx context.Context, d *Network) error {
	n := len(d.clients)
	t := time.NewTicker(PollInterval)
	defer t.Stop()
	for {
		var missing []string
		want := n - 1
		for i, cl := range d.clients {
			if want == 0 {
				break
			}
			cctx, cancel := context.WithTimeout(ctx, CallTimeout)
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
					p.index, p.err, LogTail(d.state.Nodes[p.index].Log, 15))
			default:
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the nodes did not connect: %s; logs in %s/node*/%s",
				strings.Join(missing, ", "), d.dir, LogFileName)
		case <-t.C:
		}
	}
}

// LogTail returns the last n lines of the file at path (of its last 64
// KiB), each indented by two spaces, to quote a daemon's log in an error;
// if the file cannot be read, the error in parentheses.
func LogTail(path string, n int) string {
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

// NodeStatus is one node as `devnet status` shows it (and its --json
// prints it).
type NodeStatus struct {
	Index  int    `json:"index"`
	PeerID string `json:"peer_id"`
	PID    int    `json:"pid"`
	// Alive: the pid runs this node's daemon (not a zombie, not a reused
	// pid).
	Alive bool `json:"alive"`
	// Peers, Events and Head are from the node's status (0 when Error is
	// set).
	Peers  int    `json:"peers"`
	Events uint64 `json:"events"`
	Head   uint64 `json:"head"`
	Repo   string `json:"repo"`
	// Error is why the node's API did not answer, if it did not ("not
	// running" when it is not Alive).
	Error string `json:"error,omitempty"`
}

// Status asks every node of st for its status, concurrently, each call
// bounded by CallTimeout, and returns a NodeStatus a node, in st's order.
func Status(ctx context.Context, st *State) []NodeStatus {
	rows := make([]NodeStatus, len(st.Nodes))
	var wg sync.WaitGroup
	for i, n := range st.Nodes {
		rows[i] = NodeStatus{Index: n.Index, PeerID: n.PeerID, PID: n.PID, Repo: n.Repo,
			Alive: ProcessAlive(n.PID) && isDevnetDaemon(n.PID, n.Repo)}
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
			cctx, cancel := context.WithTimeout(ctx, CallTimeout)
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

// Log is the daemon log of one node.
type Log struct {
	Index int    // I of nodeI
	Path  string // DIR/nodeI/daemon.log
}

// NodeLog is the log of node i of the devnet in dir, an error if it has
// none ("no log for node I: …").
func NodeLog(dir string, i int) (Log, error) {
	p := filepath.Join(NodeDir(dir, i), LogFileName)
	if _, err := os.Stat(p); err != nil {
		return Log{}, fmt.Errorf("no log for node %d: %w", i, err)
	}
	return Log{i, p}, nil
}

// Logs lists the logs of the devnet in dir: those of devnet.json's nodes,
// or with no devnet running those of the node repos left behind (node0,
// node1, … up to the first missing), an error if there are none.
func Logs(dir string) ([]Log, error) {
	st, err := Load(dir)
	if err == nil {
		out := make([]Log, len(st.Nodes))
		for i, n := range st.Nodes {
			out[i] = Log{n.Index, n.Log}
		}
		return out, nil
	}
	if !errors.Is(err, ErrNoDevnet) {
		return nil, err
	}
	// No devnet running: the logs of the repos left behind, if any.
	var out []Log
	for i := 0; i < MaxNodes; i++ {
		p := filepath.Join(NodeDir(dir, i), LogFileName)
		if _, err := os.Stat(p); err != nil {
			break
		}
		out = append(out, Log{i, p})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no devnet logs in %s", dir)
	}
	return out, nil
}

// PrintLogs writes the lines of every log to w, one log after the other,
// each line opened by "nodeI | " if prefix is set. With follow it then
// goes on printing the lines added to any of them, as they are written,
// until ctx is done (and returns nil); a log that cannot be read is then
// skipped rather than an error.
func PrintLogs(ctx context.Context, w io.Writer, logs []Log, prefix, follow bool) error {
	fl := make([]*logFollower, len(logs))
	for i, p := range logs {
		fl[i] = &logFollower{path: p.Path}
		if prefix {
			fl[i].prefix = fmt.Sprintf("node%d | ", p.Index)
		}
		if _, err := fl[i].copy(w, true); err != nil && !follow {
			return err
		}
	}
	if !follow {
		return nil
	}
	return followLogs(ctx, w, fl)
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

// DownResult is what Down did, as `devnet down --json` prints it: the
// nodes stopped (0 when none ran) and whether the repos were removed.
type DownResult struct {
	Dir     string `json:"dir"`
	Stopped int    `json:"stopped"`
	Removed bool   `json:"removed"`
}

// Down stops every node recorded in dir's devnet.json, as `devnet down`
// describes (SIGTERM, up to StopGrace, SIGKILL; a pid that now runs
// another program is left alone), then removes devnet.json, and with clean
// the node repos (and dir, if nothing else is left in it). With no devnet
// in dir (even no dir) there is nothing to stop and that is no error. say
// gets the lines `devnet down` prints on stdout, log its progress (the
// nodes not running, those killed). It fails when a node outlived SIGKILL
// (devnet.json is then kept) or a removal failed.
func Down(ctx context.Context, dir string, clean bool, say, log func(format string, args ...any)) (*DownResult, error) {
	res := &DownResult{Dir: dir}
	cleanUp := func() error {
		if !clean {
			return nil
		}
		if err := cleanDir(dir); err != nil {
			return err
		}
		res.Removed = true
		say("removed the node repos")
		return nil
	}
	st, err := Load(dir)
	if errors.Is(err, ErrNoDevnet) {
		if _, serr := os.Stat(dir); errors.Is(serr, fs.ErrNotExist) {
			say("no devnet is running in %s (there is no such directory)", dir)
			return res, nil
		}
		say("no devnet is running in %s", dir)
		if err := cleanUp(); err != nil {
			return nil, err
		}
		return res, nil
	}
	if err != nil {
		return nil, err
	}
	left := stopRecorded(ctx, st, log)
	if len(left) > 0 {
		return nil, fmt.Errorf("processes %v are still alive after SIGKILL; %s kept", left, stateFileName)
	}
	if err := removeState(dir); err != nil {
		return nil, err
	}
	res.Stopped = len(st.Nodes)
	say("devnet in %s stopped (%s)", dir, humanize.Plural(len(st.Nodes), "node"))
	if err := cleanUp(); err != nil {
		return nil, err
	}
	return res, nil
}
