package daemon

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wats-network/wats/repo"
)

// lockedBuffer is a bytes.Buffer safe for the daemon's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestRunEndsWithStopped: the last line a daemon stopped by its context
// logs is a short "stopped", after the repo lock is released; the line of
// the request counters before it reads plainly and stays short.
func TestRunEndsWithStopped(t *testing.T) {
	r, err := repo.Init(t.TempDir(), &repo.InitOptions{Config: testConfig(false)})
	if err != nil {
		t.Fatal(err)
	}
	var out lockedBuffer
	log := slog.New(slog.NewTextHandler(&out, nil))
	ctx, cancel := context.WithCancel(context.Background())
	_, done := startRun(t, ctx, r, log)
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("Run did not return")
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if last := lines[len(lines)-1]; !strings.HasSuffix(last, " level=INFO msg=stopped") {
		t.Errorf("the last line: %q, want msg=stopped", last)
	}
	for _, l := range lines {
		if strings.Contains(l, "requests of peers since the start") {
			if len(l) > 200 || !strings.Contains(l, " limits.sync=0/0 ") {
				t.Errorf("the counters' line, %d characters: %s", len(l), l)
			}
			return
		}
	}
	t.Errorf("no line of the request counters:\n%s", out.String())
}
