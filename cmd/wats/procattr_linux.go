package main

import "syscall"

// daemonProcAttr puts a daemon in its own process group; a foreground
// devnet's daemons also get SIGTERM when their parent dies.
func daemonProcAttr(foreground bool) *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{Setpgid: true}
	if foreground {
		attr.Pdeathsig = syscall.SIGTERM
	}
	return attr
}
