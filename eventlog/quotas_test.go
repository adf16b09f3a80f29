package eventlog

import (
	"errors"
	"testing"
)

// TestQuotas: each limit at its bound and one past it; this node's own
// events are held to nothing; a new author is refused past 90% of a
// total; a valued author is held to the totals only; 0 is no limit.
func TestQuotas(t *testing.T) {
	q := Quotas{MaxEvents: 100, MaxBytes: 10_000, MaxEventsPerAuthor: 10, MaxBytesPerAuthor: 1_000}
	f := q.Func("self", func(a string) bool { return a == "valued" })
	known := Usage{Events: 1, Bytes: 10}
	for _, c := range []struct {
		name       string
		author     string
		size       int
		a, total   Usage
		wantRefuse bool
	}{
		{"the last event of the total", "x", 10, known, Usage{Events: 99, Bytes: 100}, false},
		{"one past the total", "x", 10, known, Usage{Events: 100, Bytes: 100}, true},
		{"the last byte of the total", "x", 100, known, Usage{Events: 1, Bytes: 9_900}, false},
		{"a byte past the total", "x", 101, known, Usage{Events: 1, Bytes: 9_900}, true},
		{"self past every limit", "self", 10_000, Usage{Events: 50}, Usage{Events: 100, Bytes: 10_000}, false},
		{"a new author at 90%", "new", 10, Usage{}, Usage{Events: 89, Bytes: 100}, false},
		{"a new author past 90%", "new", 10, Usage{}, Usage{Events: 90, Bytes: 100}, true},
		{"a known author past 90%", "x", 10, known, Usage{Events: 90, Bytes: 100}, false},
		{"an author's last event", "x", 10, Usage{Events: 9, Bytes: 10}, Usage{Events: 9, Bytes: 10}, false},
		{"one past an author's events", "x", 10, Usage{Events: 10, Bytes: 10}, Usage{Events: 10, Bytes: 10}, true},
		{"one byte past an author's bytes", "x", 11, Usage{Events: 1, Bytes: 990}, Usage{Events: 1, Bytes: 990}, true},
		{"a valued author past its share", "valued", 10, Usage{Events: 10, Bytes: 10}, Usage{Events: 10, Bytes: 10}, false},
	} {
		err := f(c.author, c.size, c.a, c.total)
		if (err != nil) != c.wantRefuse || err != nil && !errors.Is(err, ErrQuota) {
			t.Errorf("%s: %v, want refused %v", c.name, err, c.wantRefuse)
		}
	}
	if err := (Quotas{}).Func("self", func(string) bool { return false })("x", 1<<20, Usage{Events: 1 << 40}, Usage{Events: 1 << 40}); err != nil {
		t.Errorf("no limits refused: %v", err)
	}
}
