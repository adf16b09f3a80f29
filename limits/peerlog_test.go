package limits

import (
	"bytes"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wats-network/wats/core"
)

// TestPeerLogThrottled: "peer throttled" once a minute per peer and type
// (ADR 0014), the second line a minute later, none while the clock steps
// back within the minute; each suppressed line counted for the summary.
func TestPeerLogThrottled(t *testing.T) {
	var out bytes.Buffer
	l := NewPeerLog(slog.New(slog.NewTextHandler(&out, nil)), func() time.Duration { return 0 })
	var last [core.NumRequests]atomic.Int64
	lines := func() int { return strings.Count(out.String(), "peer throttled") }
	at := func(k core.Request, mono time.Duration) { l.Throttled("p", k, &last[k], mono) }
	base := 10 * time.Second
	at(core.Sync, base)
	at(core.Sync, base+time.Second)
	at(core.Sync, base-time.Second) // the clock stepped back
	if lines() != 1 {
		t.Fatalf("%d lines within the minute, want 1:\n%s", lines(), out.String())
	}
	at(core.Hello, base+time.Second) // another type: its own line
	if lines() != 2 {
		t.Fatalf("another type's first refusal: %d lines, want 2", lines())
	}
	at(core.Sync, base+LogInterval-time.Nanosecond)
	if lines() != 2 {
		t.Fatal("a line just before the minute was up")
	}
	at(core.Sync, base+LogInterval)
	if lines() != 3 {
		t.Fatalf("no line once the minute was up: %d lines", lines())
	}
	if got := l.Cap.TakeSuppressed(); got != 3 {
		t.Fatalf("%d suppressed, want 3", got)
	}
}
