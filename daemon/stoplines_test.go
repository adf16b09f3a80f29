package daemon

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wats-network/wats/api"
	"github.com/wats-network/wats/node"
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
	done := make(chan error, 1)
	go func() { done <- Run(ctx, r, &node.Options{Logger: log}, nil) }()
	c := api.NewClient(r.SocketPath())
	defer c.Close()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		_, err := c.Status(t.Context())
		if err == nil {
			break
		}
		if !errors.Is(err, api.ErrNoDaemon) || time.Now().After(deadline) {
			t.Fatalf("status: %v", err)
		}
	}
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
