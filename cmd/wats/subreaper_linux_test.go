package main

import (
	"syscall"
	"testing"
)

// prSetChildSubreaper is PR_SET_CHILD_SUBREAPER of prctl(2).
const prSetChildSubreaper = 36

// setSubreaper makes this test process the parent of the processes its
// children orphan (the daemons of `devnet up`), so that the test can reap
// them after `devnet down`, as init does on a usual host. Some sandboxes'
// PID 1 never reaps orphans, which would leave the daemons as zombies whose
// pids still exist.
func setSubreaper(t *testing.T) {
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); errno != 0 {
		t.Logf("prctl(PR_SET_CHILD_SUBREAPER): %v", errno)
	}
}
