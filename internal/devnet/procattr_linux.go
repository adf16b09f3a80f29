package devnet

import "syscall"

// ProcAttr puts a process (a daemon, or a bench's worker) in its own
// process group, for SignalGroup; with foreground set it also gets SIGTERM
// when this process dies (Linux's Pdeathsig).
func ProcAttr(foreground bool) *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{Setpgid: true}
	if foreground {
		attr.Pdeathsig = syscall.SIGTERM
	}
	return attr
}
