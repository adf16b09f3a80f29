//go:build unix && !linux

package main

import "syscall"

// daemonProcAttr puts a daemon in its own process group. Without Linux's
// Pdeathsig, a foreground devnet relies on its signal handler alone.
func daemonProcAttr(bool) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
