package bench

import (
	"os"
	"os/exec"
	"runtime"
	"testing"
	"time"
)

// TestStartNicedReachesEveryThread: a Go child started by startNiced runs
// at nice 19 on all its threads, and the starting thread is back at its
// own value.
func TestStartNicedReachesEveryThread(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	before, err := getThreadNice()
	if err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// The test binary itself, run to wait: a Go process with several threads.
	cmd := exec.Command(exe, "-test.run=^TestHelperSleep$")
	cmd.Env = append(os.Environ(), "WATS_HELPER_SLEEP=1")
	if err := startNiced(cmd); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	deadline := time.Now().Add(10 * time.Second)
	for _, total := threadsNiced(cmd.Process.Pid, 19); total < 3; _, total = threadsNiced(cmd.Process.Pid, 19) {
		if time.Now().After(deadline) {
			t.Fatalf("the child has %d threads after 10 s", total)
		}
		time.Sleep(10 * time.Millisecond) // waiting on the child's start
	}
	if niced, total := threadsNiced(cmd.Process.Pid, 19); niced != total {
		t.Errorf("%d of %d threads at nice 19", niced, total)
	}
	if after, _ := getThreadNice(); after != before {
		t.Errorf("this thread's nice %d, was %d", after, before)
	}
}

// TestHelperSleep is the child of TestStartNicedReachesEveryThread.
func TestHelperSleep(t *testing.T) {
	if os.Getenv("WATS_HELPER_SLEEP") == "" {
		t.Skip("a helper process")
	}
	select {}
}
