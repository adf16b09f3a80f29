package limits

import (
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wats-network/wats/core"
)

// TestLogCapPerPeerAndKind: once a minute per peer and kind; kinds and
// peers are independent.
func TestLogCapPerPeerAndKind(t *testing.T) {
	l := NewLogCap()
	a, b := testPeer(1), testPeer(2)
	minute := int64(LogInterval)
	steps := []struct {
		p    int
		k    core.Request
		now  int64
		want bool
	}{
		{1, core.Sync, 0, true},
		{1, core.Sync, 1, false},
		{1, core.Sync, minute - 1, false},
		{1, core.Hello, minute - 1, true}, // another kind
		{2, core.Sync, minute - 1, true},  // another peer
		{1, core.Sync, minute, true},      // a minute later
		{1, core.Sync, minute + second, false},
		{1, core.Sync, 0, false}, // the clock stepped back: still within the minute
		{1, core.Hello, 2*minute - 2, false},
		{1, core.Hello, 2*minute - 1, true},
	}
	for i, st := range steps {
		p := a
		if st.p == 2 {
			p = b
		}
		if got := l.ShouldLog(p, ThrottledTopic(st.k), st.now); got != st.want {
			t.Fatalf("step %d: ShouldLog(%d, ThrottledTopic(%s), %v) = %v", i, st.p, st.k, time.Duration(st.now), got)
		}
	}
	if n := l.TakeSuppressed(); n != 5 {
		t.Fatalf("suppressed %d, want 5", n)
	}
	if n := l.TakeSuppressed(); n != 0 {
		t.Fatalf("suppressed %d after taking, want 0", n)
	}
	if l.Logged() != 5 {
		t.Fatalf("logged %d", l.Logged())
	}
}

// TestLogCapSybilFlood: 100,000 ids refused at once log exactly the
// global burst; over ten minutes of a flood, at most the burst plus the
// rate; memory stays bounded; the summary counts the rest.
func TestLogCapSybilFlood(t *testing.T) {
	l := NewLogCap()
	peers := testPeers(100_000)
	logged := 0
	for _, p := range peers {
		if l.ShouldLog(p, ThrottledTopic(core.Sync), 0) {
			logged++
		}
	}
	if logged != LogBurst {
		t.Fatalf("%d lines for 100,000 ids at once, want %d", logged, LogBurst)
	}
	if n := l.TakeSuppressed(); n != uint64(100_000-logged) {
		t.Fatalf("suppressed %d", n)
	}
	// Ten minutes, a refusal every 600 µs from one of the ids, the last at
	// 600 s.
	const refusals = 1_000_001
	logged = 0
	most := 0
	for i := range refusals {
		now := int64(i) * 600 * int64(time.Microsecond)
		if l.ShouldLog(peers[i%len(peers)], ThrottledTopic(core.Request(i%core.NumRequests)), now) {
			logged++
		}
		most = max(most, l.Len())
	}
	// The burst was spent at 0; ten minutes refill 100 lines, one every 6 s.
	if want := 10 * LogPerMin; logged != want {
		t.Fatalf("%d lines in ten minutes, want %d", logged, want)
	}
	if most > LogBurst+LogPerMin+1 {
		t.Fatalf("remembered up to %d pairs", most)
	}
	if n := l.TakeSuppressed(); n != uint64(refusals-logged) {
		t.Fatalf("suppressed %d", n)
	}
}

// TestLogCapMemoryBound: a clock that jumps keeps old entries (they
// cannot be proven old), but never more than maxLogEntries.
func TestLogCapMemoryBound(t *testing.T) {
	l := NewLogCap()
	for i := range 100_000 {
		now := int64(math.MaxInt64 - i*int(time.Minute)) // ever earlier
		l.ShouldLog(testPeer(i), ThrottledTopic(core.Hello), now)
	}
	if n := l.Len(); n > maxLogEntries {
		t.Fatalf("%d entries", n)
	}
	// Entries older than a minute go.
	l = NewLogCap()
	for i := range LogBurst {
		l.ShouldLog(testPeer(i), ThrottledTopic(core.Hello), 0)
	}
	if l.Len() != LogBurst {
		t.Fatalf("%d entries", l.Len())
	}
	l.ShouldLog(testPeer(-1), ThrottledTopic(core.Hello), int64(time.Hour))
	if l.Len() != 1 {
		t.Fatalf("%d entries an hour later, want 1", l.Len())
	}
}

// TestLogCapConcurrent: under the race detector, concurrent callers
// log exactly the burst at one instant.
func TestLogCapConcurrent(t *testing.T) {
	l := NewLogCap()
	var logged atomic.Int64
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 1000 {
				if l.ShouldLog(testPeer(g*1000+i), ThrottledTopic(core.Replicate), 5) {
					logged.Add(1)
				}
			}
		})
	}
	wg.Go(func() {
		for range 100 {
			l.TakeSuppressed()
		}
	})
	wg.Wait()
	if logged.Load() != LogBurst {
		t.Fatalf("%d logged", logged.Load())
	}
}

// TestLogCapTopics: topics of one peer are independent; every topic shares
// the global cap, so a flood spread over topics gets no more lines.
func TestLogCapTopics(t *testing.T) {
	l := NewLogCap()
	a := testPeer(1)
	for _, topic := range []string{"hello", "blob", ThrottledTopic(core.Sync)} {
		if !l.ShouldLog(a, topic, 0) {
			t.Fatalf("first %q line suppressed", topic)
		}
		if l.ShouldLog(a, topic, 1) {
			t.Fatalf("second %q line within the minute logged", topic)
		}
	}
	logged := 3
	for i := range 1000 {
		if l.ShouldLog(testPeer(i+2), [...]string{"hello", "blob", "crash"}[i%3], 2) {
			logged++
		}
	}
	if logged != LogBurst {
		t.Fatalf("%d lines over three topics at once, want the burst %d", logged, LogBurst)
	}
}
