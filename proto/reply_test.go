package proto

import (
	"testing"
	"time"
)

// TestReplyTimeout: 5 s for a small answer, 64 KiB/s more for a large one,
// never more than the call's bound.
func TestReplyTimeout(t *testing.T) {
	if got := ReplyTimeout(100); got < PrefixTimeout+3*time.Second || got > PrefixTimeout+3*time.Second+2*time.Millisecond {
		t.Errorf("ReplyTimeout of a small answer: %v", got)
	}
	if got := ReplyTimeout(MaxPageBytes + 1<<20); got != ResponseTimeout {
		t.Errorf("ReplyTimeout of more than a full page: %v, want the call's %v", got, ResponseTimeout)
	}
	if small, large := ReplyTimeout(64<<10), ReplyTimeout(1<<20); large-small != 15*time.Second {
		t.Errorf("ReplyTimeout grows by %v from 64 KiB to 1 MiB, want 15 s (64 KiB/s)", large-small)
	}
}
