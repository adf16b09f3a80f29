package bench

import (
	"fmt"
	"os/exec"
	"runtime"
	"syscall"
)

// startNiced starts cmd at nice 19, all its threads included, so that an
// attacker's figures describe the node and not two processes sharing the
// cores. On Linux, setpriority on a running process's pid reaches only its
// first thread; a new process and its threads inherit the nice value of
// the thread that forked it, so cmd is started from a thread of its own
// set to nice 19. That thread is then set back and returned to Go's pool;
// if it cannot be (lowering a nice value takes a privilege), it is parked
// for the life of this process rather than ended: a child's parent-death
// signal (SysProcAttr.Pdeathsig) follows the thread that forked it, and Go
// ends a thread whose goroutine exits locked to it.
func startNiced(cmd *exec.Cmd) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		old, err := getThreadNice()
		if err == nil {
			err = syscall.Setpriority(syscall.PRIO_PROCESS, 0, 19)
		}
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("nice 19: %w", err)
			return
		}
		errc <- cmd.Start()
		if syscall.Setpriority(syscall.PRIO_PROCESS, 0, old) != nil {
			select {}
		}
		runtime.UnlockOSThread()
	}()
	return <-errc
}

// getThreadNice returns the calling thread's nice value.
func getThreadNice() (int, error) {
	p, err := syscall.Getpriority(syscall.PRIO_PROCESS, 0)
	if err != nil {
		return 0, err
	}
	if runtime.GOOS == "linux" {
		p = 20 - p // the raw syscall's value, never negative (getpriority(2))
	}
	return p, nil
}
