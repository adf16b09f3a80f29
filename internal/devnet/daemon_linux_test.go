package devnet

import (
	"os"
	"os/exec"
	"syscall"
	"testing"
	"unsafe"
)

// waitExitedNoReap blocks until the child pid has exited, leaving it a
// zombie: waitid(P_PID, pid, WEXITED|WNOWAIT).
func waitExitedNoReap(t *testing.T, pid int) {
	t.Helper()
	const (
		pPID    = 1
		wExited = 4
		wNoWait = 0x1000000
	)
	var siginfo [128]byte
	for {
		_, _, errno := syscall.Syscall6(syscall.SYS_WAITID, pPID, uintptr(pid),
			uintptr(unsafe.Pointer(&siginfo[0])), wExited|wNoWait, 0, 0)
		if errno == syscall.EINTR {
			continue
		}
		if errno != 0 {
			t.Fatalf("waitid: %v", errno)
		}
		return
	}
}

func TestProcessAlive(t *testing.T) {
	if !ProcessAlive(os.Getpid()) {
		t.Error("this process is not alive")
	}
	if ProcessAlive(0) || ProcessAlive(-1) {
		t.Error("pid 0 or -1 alive")
	}
	cmd := exec.Command("sleep", "60")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Skip("no sleep binary:", err)
	}
	pid := cmd.Process.Pid
	if !ProcessAlive(pid) || isZombie(pid) {
		t.Error("a running child is not alive")
	}
	SignalGroup(pid, syscall.SIGTERM)
	waitExitedNoReap(t, pid)
	if !isZombie(pid) {
		t.Error("an exited, unreaped child is not a zombie")
	}
	if ProcessAlive(pid) {
		t.Error("a zombie counts as alive")
	}
	var ws syscall.WaitStatus
	if _, err := syscall.Wait4(pid, &ws, 0, nil); err != nil {
		t.Fatal(err)
	}
	if ProcessAlive(pid) || isZombie(pid) {
		t.Error("a reaped process is alive")
	}
}
