package main

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
)

// Timing of starting and stopping daemons.
const (
	// stopGrace is how long a daemon has to exit after SIGTERM before it
	// gets SIGKILL: enough to close pebble and the libp2p host cleanly.
	stopGrace = 10 * time.Second
	// killGrace is how long a SIGKILLed process may take to disappear.
	killGrace = 2 * time.Second
	// pollInterval is how often the devnet commands check a process or a
	// node's API while they wait for a state change they cannot be told of
	// (a process that is not their child, a socket that is not up yet).
	pollInterval = 100 * time.Millisecond
)

// proc is a daemon process this process started.
type proc struct {
	index int
	cmd   *exec.Cmd
	// exited is closed when the process has exited and been reaped; err is
	// then its exit error.
	exited chan struct{}
	err    error
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

// startDaemon starts `exe daemon --repo repoDir` with its stdout and
// stderr appended to logPath, in a process group of its own (so that the
// terminal's Ctrl-C, meant for a later command, does not reach it). With
// foreground set the daemon also gets SIGTERM if this process dies (on
// Linux), so `devnet run` leaves nothing behind even if it is killed.
func startDaemon(exe, repoDir, logPath string, index int, foreground bool) (*proc, error) {
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	defer logf.Close() // the child has its own descriptor
	cmd := exec.Command(exe, "daemon", "--repo", repoDir)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = daemonProcAttr(foreground)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start node%d: %w", index, err)
	}
	p := &proc{index: index, cmd: cmd, exited: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// stopProcs stops the daemons this process started: SIGTERM to each
// process group, up to stopGrace for them to exit, then SIGKILL. It
// returns once every one has exited and been reaped.
func stopProcs(procs []*proc) {
	for _, p := range procs {
		signalGroup(p.pid(), syscall.SIGTERM)
	}
	deadline := time.NewTimer(stopGrace)
	defer deadline.Stop()
	for _, p := range procs {
		select {
		case <-p.exited:
		case <-deadline.C:
			// Past the grace: kill this one and every other still running.
			for _, q := range procs {
				signalGroup(q.pid(), syscall.SIGKILL)
			}
			<-p.exited
		}
	}
	for _, p := range procs {
		<-p.exited
	}
}

// signalGroup sends sig to the process group led by pid (a daemon started
// with its own group), or to pid alone if there is no such group.
func signalGroup(pid int, sig syscall.Signal) {
	if err := syscall.Kill(-pid, sig); errors.Is(err, syscall.ESRCH) {
		_ = syscall.Kill(pid, sig)
	}
}

// processAlive reports whether pid is a live process: it exists and is not
// a zombie (a zombie has exited; only its parent's wait is missing, and a
// daemon orphaned by `devnet up` may have a parent that never waits).
func processAlive(pid int) bool {
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
// process's children: SIGTERM, up to stopGrace to exit, SIGKILL, and up to
// killGrace more. It returns the pids still alive after all that (none,
// normally) and writes what it does to log.
func stopRecorded(ctx context.Context, st *devnetState, log func(format string, args ...any)) []int {
	var pids []int
	for _, n := range st.Nodes {
		switch {
		case !processAlive(n.PID):
			log("node%d (pid %d) is not running", n.Index, n.PID)
		case !isDevnetDaemon(n.PID, n.Repo):
			log("node%d: pid %d is now another program; leaving it alone", n.Index, n.PID)
		default:
			signalGroup(n.PID, syscall.SIGTERM)
			pids = append(pids, n.PID)
		}
	}
	left := waitGone(ctx, pids, stopGrace)
	if len(left) == 0 {
		return nil
	}
	for _, pid := range left {
		log("pid %d did not stop within %s: killing it", pid, stopGrace)
		signalGroup(pid, syscall.SIGKILL)
	}
	return waitGone(context.WithoutCancel(ctx), left, killGrace)
}

// waitGone waits until none of pids is alive, for at most d or until ctx
// is done, and returns those still alive. The processes are not this
// process's children, so there is nothing to wait on but their pids.
func waitGone(ctx context.Context, pids []int, d time.Duration) []int {
	deadline := time.Now().Add(d)
	t := time.NewTicker(pollInterval)
	defer t.Stop()
	for {
		var left []int
		for _, pid := range pids {
			if processAlive(pid) {
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
