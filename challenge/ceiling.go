package challenge

import "time"

// ceilingWindow is the window of the solved ceiling. ADR 0014, "What a
// solution buys": "solved_per_min (1,200) solved requests a minute".
const ceilingWindow = int64(time.Minute)

// ceiling admits at most n events in any window of ceilingWindow
// nanoseconds of a monotonic clock (a step of the wall clock must not close
// it for the length of the step): a sliding log of the last n admission times in a ring.
// Exact (no burst above n in any minute, unlike a token bucket of
// capacity n), O(1), and 8·n bytes. n == 0 means unlimited.
//
// Not safe for concurrent use; Issuer guards it with its mutex.
//
// INVARIANT: when full, times[next] is the oldest of the last n admissions.
type ceiling struct {
	times []int64 // admission times, ns
	next  int
	full  bool
}

func newCeiling(n int) *ceiling { return &ceiling{times: make([]int64, n)} }

// allow admits one event at now (monotonic ns) if fewer than n were
// admitted in the window (now-ceilingWindow, now]. A reading earlier than
// the last one (concurrent callers that read the clock before the lock)
// admits nothing until it passes the oldest admission again.
func (c *ceiling) allow(now int64) bool {
	if len(c.times) == 0 {
		return true
	}
	if c.full && now-c.times[c.next] < ceilingWindow {
		return false
	}
	c.times[c.next] = now
	c.next++
	if c.next == len(c.times) {
		c.next, c.full = 0, true
	}
	return true
}
