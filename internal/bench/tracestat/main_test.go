package main

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime/trace"
	"strings"
	"testing"
	"time"
)

// syncer fsyncs a file n times: a goroutine that starts here and spends
// its time in syscalls.
func syncer(t *testing.T, n int, done chan<- struct{}) {
	defer close(done)
	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Error(err)
		return
	}
	defer f.Close()
	for range n {
		if _, err := f.Write([]byte("x")); err != nil {
			t.Error(err)
			return
		}
		if err := f.Sync(); err != nil {
			t.Error(err)
			return
		}
	}
}

// TestSummarize traces a goroutine that fsyncs a file: the summary covers
// the whole trace with its running counts, and finds those syscalls
// under the function the goroutine started in.
func TestSummarize(t *testing.T) {
	var buf bytes.Buffer
	if err := trace.Start(&buf); err != nil {
		t.Skipf("no execution trace here: %v", err)
	}
	done := make(chan struct{})
	go syncer(t, 20, done)
	<-done
	time.Sleep(time.Millisecond)
	trace.Stop()

	s, err := summarize(&buf)
	if err != nil {
		t.Fatal(err)
	}
	var sum time.Duration
	for _, d := range s.running {
		sum += d
	}
	if s.total <= 0 || sum != s.total || len(s.running) < 2 {
		t.Fatalf("total %v, running %v (sum %v): want the running counts to cover the trace", s.total, s.running, sum)
	}
	found := false
	for _, c := range s.syscalls {
		if strings.HasSuffix(c.entry, ".syncer") {
			found = c.count >= 20 && c.time > 0
		}
	}
	if !found {
		t.Fatalf("no 20 syscalls of the goroutine started in syncer: %+v", s.syscalls)
	}
	var out bytes.Buffer
	s.print(&out)
	if !strings.Contains(out.String(), "1 running:") || !strings.Contains(out.String(), "syncer") {
		t.Fatalf("printed:\n%s", out.String())
	}
}

// TestSummarizeRefusesWhatIsNotATrace: bytes that are not a trace are an
// error, not a summary.
func TestSummarizeRefusesWhatIsNotATrace(t *testing.T) {
	if _, err := summarize(strings.NewReader("not a trace")); err == nil {
		t.Fatal("no error")
	}
}
