package limits

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
)

// Bounds of the "peer throttled" log lines (ADR 0014: at most once a minute
// per peer and request type; the global cap is this package's answer to a
// Sybil flood of many ids, after seed 001's "resist log amplification").
const (
	// ThrottleLogInterval is the least time between two "peer throttled"
	// lines for one peer and request type (ADR 0014: once a minute).
	ThrottleLogInterval = time.Minute

	// ThrottleLogsPerMin and ThrottleLogBurst cap the "peer throttled"
	// lines of all peers together: at most ThrottleLogBurst at once, then
	// ThrottleLogsPerMin a minute (so at most 20 in any minute), however
	// many peer ids are refused. The rest are counted for the summary.
	ThrottleLogsPerMin = 10
	ThrottleLogBurst   = 10

	// maxThrottleLogEntries caps the (peer, kind) pairs remembered. An
	// entry exists only for a line that was logged within the last
	// ThrottleLogInterval, and the global cap allows at most 20 lines in a
	// minute, so the map stays near 20; the cap is a second line of
	// defence (e.g. against a clock that jumped back), beyond which lines
	// are suppressed.
	maxThrottleLogEntries = 256
)

// ThrottleLog decides when to log "peer throttled" for a refused request:
// at most once every ThrottleLogInterval per peer and request type, and
// within a global cap of ThrottleLogBurst lines at once and
// ThrottleLogsPerMin a minute, so that a flood from many peer ids cannot
// flood the log. What it suppresses it counts; the node logs that count
// once a minute (TakeSuppressed). It is safe for concurrent use; its
// memory is bounded (maxThrottleLogEntries). The zero value is not usable;
// build one with NewThrottleLog.
type ThrottleLog struct {
	mu struct {
		sync.Mutex
		// last maps a (peer, kind) to the tick of its last line.
		// INVARIANT: entries older than ThrottleLogInterval are dropped on
		// every insert; len(last) <= maxThrottleLogEntries.
		last map[throttleKey]uint64
		// global is the GCRA state of the global cap.
		globalNS  uint64
		globalRem uint16
	}
	global     Rate
	suppressed atomic.Uint64
	logged     atomic.Uint64
}

type throttleKey struct {
	p peer.ID
	k Kind
}

// NewThrottleLog returns a ThrottleLog that has logged nothing yet.
func NewThrottleLog() *ThrottleLog {
	l := &ThrottleLog{global: newRate(ThrottleLogsPerMin, ThrottleLogBurst)}
	l.mu.last = make(map[throttleKey]uint64)
	return l
}

// ShouldLog reports whether to log "peer throttled" for a request of kind
// k from p refused at now (ns from the caller's monotonic base, as for
// Table.Allow). It returns true at most once every ThrottleLogInterval for
// one (p, k), and within the global cap; otherwise it counts the line as
// suppressed and returns false. (A clock that steps back more than a
// minute may let a pair log again sooner; the global cap, a GCRA, still
// holds.) The line should name the peer id and the
// type, never an address (issue 3).
func (l *ThrottleLog) ShouldLog(p peer.ID, k Kind, now int64) bool {
	tk := tick(now)
	key := throttleKey{p, k}
	l.mu.Lock()
	defer l.mu.Unlock()
	if last, ok := l.mu.last[key]; ok && (tk < last || tk-last < uint64(ThrottleLogInterval)) {
		l.suppressed.Add(1)
		return false
	}
	if len(l.mu.last) >= maxThrottleLogEntries {
		l.dropOld(tk)
		if len(l.mu.last) >= maxThrottleLogEntries {
			l.suppressed.Add(1)
			return false
		}
	}
	if ok, _ := l.global.allow(&l.mu.globalNS, &l.mu.globalRem, tk); !ok {
		l.suppressed.Add(1)
		return false
	}
	l.dropOld(tk)
	l.mu.last[key] = tk
	l.logged.Add(1)
	return true
}

// dropOld forgets the lines logged at least ThrottleLogInterval before tk.
// REQUIRES: l.mu held.
func (l *ThrottleLog) dropOld(tk uint64) {
	for key, last := range l.mu.last {
		if tk >= last && tk-last >= uint64(ThrottleLogInterval) {
			delete(l.mu.last, key)
		}
	}
}

// TakeSuppressed returns the number of lines suppressed since the last
// call, and starts counting again from zero. The node calls it once a
// minute and, when it is not zero, logs one summary line such as
// "peer throttled: 1234 more lines suppressed in the last minute".
func (l *ThrottleLog) TakeSuppressed() uint64 { return l.suppressed.Swap(0) }

// Logged returns the number of lines ShouldLog allowed since the
// ThrottleLog was built.
func (l *ThrottleLog) Logged() uint64 { return l.logged.Load() }

// Len returns the number of (peer, kind) pairs remembered.
func (l *ThrottleLog) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.mu.last)
}
