//go:build unix && !linux

package devnet

import "syscall"

// ProcAttr puts a process (a daemon, or a bench's worker) in its own
// process group, for SignalGroup. Without Linux's Pdeathsig, foreground
// is ignored: a foreground devnet relies on its signal handler alone.
func ProcAttr(bool) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
