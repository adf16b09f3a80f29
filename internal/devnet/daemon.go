package devnet

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/wats-network/wats/api"
)

// Timing of starting, calling and stopping daemons.
const (
	// StopGrace is how long a daemon has to exit after SIGTERM before it
	// gets SIGKILL: enough to close pebble and the libp2p host cleanly.
	StopGrace = 10 * time.Second
	// killGrace is how long a SIGKILLed process may take to disappear.
	killGrace = 2 * time.Second
	// PollInterval is how often the devnet (and the benches) check a
	// process or a node's API while they wait for a state change they
	// cannot be told of (a process that is not their child, a socket that
	// is not up yet).
	PollInterval = 100 * time.Millisecond
	// CallTimeout bounds each short control API call made to a node, so
	// that one hung daemon does not hang `devnet status`.
	CallTimeout = 5 * time.Second
)

// Daemon is a `wats daemon` process this process started (StartDaemon).
// Its methods may be called from any goroutine.
type Daemon struct {
	index   int
	logPath string
	cmd     *exec.Cmd
	// exited is closed when the process has exited and been reaped; err is
	// then its exit error.
	exited chan struct{}
	err    error
}

// PID is the daemon's process id, which is also its process group's.
func (d *Daemon) PID() int { return d.cmd.Process.Pid }

// Exited is closed once the daemon has exited and been reaped.
func (d *Daemon) Exited() <-chan struct{} { return d.exited }

// Err is the daemon's exit error (nil for exit status 0, as after
// SIGTERM). REQUIRES: Exited is closed.
func (d *Daemon) Err() error { return d.err }

// StartDaemon starts `exe daemon --repo repoDir` with its stdout and
// stderr appended to logPath (created 0600 if need be), in a process group
// of its own (so that the terminal's Ctrl-C, meant for a later command,
// does not reach it). index is the N that error messages call it by
// ("nodeN"). With foreground set the daemon also gets SIGTERM if this
// process dies (on Linux), so `devnet run` leaves nothing behind even if
// it is killed. The daemon is reaped in the background (Exited).
func StartDaemon(exe, repoDir, logPath string, index int, foreground bool) (*Daemon, error) {
	return StartDaemonIn(nil, nil, exe, repoDir, logPath, index, foreground)
}

// StartDaemonIn is StartDaemon with the daemon run through prefix (a
// command and its arguments before exe, such as `ip netns exec NS`, which
// must exec exe in its place, so that the pid is the daemon's) and env
// added to this process's environment; nil for neither.
func StartDaemonIn(prefix, env []string, exe, repoDir, logPath string, index int, foreground bool) (*Daemon, error) {
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	defer logf.Close() // the child has its own descriptor
	args := append(append(append([]string{}, prefix...), exe), "daemon", "--repo", repoDir)
	cmd := exec.Command(args[0], args[1:]...)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = ProcAttr(foreground)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start node%d: %w", index, err)
	}
	p := &Daemon{index: index, logPath: logPath, cmd: cmd, exited: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// WaitAPI waits until the daemon answers ID on cl, its control API, and
// returns what it answered. It fails, saying where its log is, if the
// daemon exits first (quoting the end of the log) or ctx ends; each call
// is bounded by CallTimeout and they are PollInterval apart.
func (d *Daemon) WaitAPI(ctx context.Context, cl *api.Client) (*api.ID, error) {
	t := time.NewTicker(PollInterval)
	defer t.Stop()
	for {
		cctx, cancel := context.WithTimeout(ctx, CallTimeout)
		id, err := cl.ID(cctx)
		cancel()
		if err == nil {
			return id, nil
		}
		select {
		case <-d.exited:
			return nil, fmt.Errorf("node%d exited while starting (%v); the end of %s:\n%s",
				d.index, d.err, d.logPath, LogTail(d.logPath, 15))
		case <-ctx.Done():
			return nil, fmt.Errorf("node%d's API did not answer on %s (last error: %v); see %s",
				d.index, cl.Socket(), err, d.logPath)
		case <-t.C:
		}
	}
}

// StopDaemons stops daemons this process started: SIGTERM to each
// process group, up to StopGrace for them to exit, then SIGKILL to every
// one left. It returns once every one has exited and been reaped.
func StopDaemons(procs []*Daemon) {
	for _, p := range procs {
		SignalGroup(p.PID(), syscall.SIGTERM)
	}
	deadline := time.NewTimer(StopGrace)
	defer deadline.Stop()
	for _, p := range procs {
		select {
		case <-p.exited:
		case <-deadline.C:
			// Past the grace: kill this one and every other still running.
			for _, q := range procs {
				SignalGroup(q.PID(), syscall.SIGKILL)
			}
			<-p.exited
		}
	}
	for _, p := range procs {
		<-p.exited
	}
}

// SignalGroup sends sig to the process group led by pid (a process
// started with ProcAttr, in a group of its own), or to pid alone if there
// is no such group. Errors (no such process) are ignored.
func SignalGroup(pid int, sig syscall.Signal) {
	if err := syscall.Kill(-pid, sig); errors.Is(err, syscall.ESRCH) {
		_ = syscall.Kill(pid, sig)
	}
}

// ProcessAlive reports whether pid is a live process: it exists and is not
// a zombie (a zombie has exited; only its parent's wait is missing, and a
// daemon orphaned by `devnet up` may have a parent that never waits).
func ProcessAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	if errors.Is(err, syscall.ESRCH) {
		return false
	}
	if err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	return !isZombie(pid)
}

// isZombie reports whether /proc says pid has exited but not been reaped;
// false where there is no /proc.
func isZombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// pid (comm) state ...: comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && i+2 < len(b) && b[i+2] == 'Z'
}

// isDevnetDaemon reports whether pid runs `wats daemon --repo repoDir`, so
// that a pid recorded in devnet.json and since reused by another program
// is never signalled. Where /proc cannot say, it trusts the record.
func isDevnetDaemon(pid int, repoDir string) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return true
	}
	args := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
	hasDaemon, hasRepo := false, false
	for i, a := range args {
		if a == "daemon" {
			hasDaemon = true
		}
		if a == "--repo" && i+1 < len(args) && args[i+1] == repoDir || a == "--repo="+repoDir {
			hasRepo = true
		}
	}
	return hasDaemon && hasRepo
}

// stopRecorded stops the daemons recorded in st, which need not be this
// process's children: SIGTERM, up to StopGrace to exit, SIGKILL, and up to
// killGrace more. It returns the pids still alive after all that (none,
// normally) and writes what it does to log.
func stopRecorded(ctx context.Context, st *State, log func(format string, args ...any)) []int {
	var pids []int
	for _, n := range st.Nodes {
		switch {
		case !ProcessAlive(n.PID):
			log("node%d (pid %d) is not running", n.Index, n.PID)
		case !isDevnetDaemon(n.PID, n.Repo):
			log("node%d: pid %d is now another program; leaving it alone", n.Index, n.PID)
		default:
			SignalGroup(n.PID, syscall.SIGTERM)
			pids = append(pids, n.PID)
		}
	}
	left := waitGone(ctx, pids, StopGrace)
	if len(left) == 0 {
		return nil
	}
	for _, pid := range left {
		log("pid %d did not stop within %s: killing it", pid, StopGrace)
		SignalGroup(pid, syscall.SIGKILL)
	}
	return waitGone(context.WithoutCancel(ctx), left, killGrace)
}

// waitGone waits until none of pids is alive, for at most d or until ctx
// is done, and returns those still alive. The processes are not this
// process's children, so there is nothing to wait on but their pids.
func waitGone(ctx context.Context, pids []int, d time.Duration) []int {
	deadline := time.Now().Add(d)
	t := time.NewTicker(PollInterval)
	defer t.Stop()
	for {
		var left []int
		for _, pid := range pids {
			if ProcessAlive(pid) {
				left = append(left, pid)
			}
		}
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		pids = left
		select {
		case <-ctx.Done():
			return left
		case <-t.C:
		}
	}
}
