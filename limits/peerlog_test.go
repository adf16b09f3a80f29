package limits

import (
	"bytes"
	"fmt"
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

// TestSummarizeSaysWhat: the summary line says how many peer-caused lines
// were left out, of which topics (the most first) and why; none when none
// was; the counts start again from zero after it.
func TestSummarizeSaysWhat(t *testing.T) {
	var out bytes.Buffer
	l := NewPeerLog(slog.New(slog.NewTextHandler(&out, nil)), func() time.Duration { return time.Second })
	var last [core.NumRequests]atomic.Int64
	for range 3 {
		l.Throttled("p", core.Sync, &last[core.Sync], time.Second)
	}
	l.Info("p", "hello", "peer completed hello")
	l.Info("p", "hello", "peer completed hello")
	l.Summarize()
	want := `msg="peer-caused log lines left out (ADR 0030's cap: one a minute per peer and topic, 60 a minute in all)" ` +
		`count=3 topics="throttled sync 2, hello 1" since=1m0s`
	if !strings.Contains(out.String(), want) {
		t.Errorf("summary:\n%s\nwant it to hold\n%s", out.String(), want)
	}
	out.Reset()
	l.Summarize()
	if out.Len() != 0 {
		t.Errorf("a summary of nothing: %s", out.String())
	}
	// Past maxSuppressedTopics topics, the rest count as "other".
	c := NewLogCap()
	for i := range maxSuppressedTopics + 5 {
		c.Suppress(fmt.Sprintf("topic %d", i))
	}
	got := c.TakeSuppressedTopics()
	if len(got) != maxSuppressedTopics+1 || got[0] != (TopicCount{"other", 5}) {
		t.Errorf("%d topics, the first %v; want %d, other 5 first", len(got), got[0], maxSuppressedTopics+1)
	}
}
