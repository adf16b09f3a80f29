package limits

import (
	"cmp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/wats-network/wats/core"
)

// Bounds of the log lines a peer can cause (ADR 0014: "peer throttled" at
// most once a minute per peer and request type; ADR 0030: every line that
// peer input causes goes through the same cap, so that no flood of ids can
// amplify itself into the log).
const (
	// LogInterval is the least time between two lines of one topic for
	// one peer (ADR 0014: "peer throttled" once a minute per peer and
	// type).
	LogInterval = time.Minute

	// LogPerMin and LogBurst cap the peer-caused lines of all topics and
	// peers together: at most LogBurst at once, then LogPerMin a minute (so
	// at most 70 in any minute, and with the node's summary line, fewer
	// than 100), however many peer ids cause them. The rest are counted
	// for the summary.
	LogPerMin = 60
	LogBurst  = 10

	// maxLogEntries caps the (peer, topic) pairs remembered. An entry
	// exists only for a line logged within the last LogInterval, and the
	// global cap allows at most 70 lines in a minute, so the map stays
	// below that; the cap is a second line of defence (e.g. against a clock
	// that jumped back), beyond which lines are suppressed.
	maxLogEntries = 256

	// maxSuppressedTopics caps the topics whose suppressed lines are
	// counted apart (the topics are constants of the code: a dozen).
	maxSuppressedTopics = 32
)

// LogCap decides when to write a log line that a peer's input caused ("peer
// throttled", "peer completed hello", "blob not fetched", ...): at most once
// every LogInterval per peer and topic, and within a global cap of LogBurst
// lines at once and LogPerMin a minute for every topic and peer together,
// so that a flood from many peer ids cannot flood the log. What it
// suppresses it counts; the node logs that count once a minute
// (TakeSuppressed). It is safe for concurrent use; its memory is bounded
// (maxLogEntries). The zero value is not usable; build one with NewLogCap.
type LogCap struct {
	mu struct {
		sync.Mutex
		// last maps a (peer, topic) to the tick of its last line.
		// INVARIANT: entries older than LogInterval are dropped on every
		// insert; len(last) <= maxLogEntries.
		last map[logKey]uint64
		// global is the GCRA state of the global cap.
		globalNS  uint64
		globalRem uint16
	}
	global     Rate
	suppressed atomic.Uint64
	logged     atomic.Uint64
	// byTopic counts the suppressed lines of each topic since the last
	// TakeSuppressedTopics: topic (a string) -> *atomic.Uint64, for the
	// summary to say what it left out. INVARIANT: at most
	// maxSuppressedTopics entries and "other", under which the lines of
	// any further topic are counted (topics are constants: a dozen).
	byTopic sync.Map
	topics  atomic.Int32
}

type logKey struct {
	p     peer.ID
	topic string
}

// NewLogCap returns a LogCap that has let nothing through yet.
func NewLogCap() *LogCap {
	l := &LogCap{global: newRate(LogPerMin, LogBurst)}
	l.mu.last = make(map[logKey]uint64)
	return l
}

// ThrottledTopic is the topic of the "peer throttled" lines of requests of
// kind k: ADR 0014 caps them per peer and request type.
func ThrottledTopic(k core.Request) string {
	if !k.Valid() {
		return "throttled"
	}
	return kindInfo[k].throttled
}

// ShouldLog reports whether to write a line of topic caused by p at now (ns
// from the caller's monotonic base, as for Table.Allow). It returns true at
// most once every LogInterval for one (p, topic), and within the global
// cap; otherwise it counts the line as suppressed and returns false. (A
// clock that steps back more than a minute may let a pair log again sooner;
// the global cap, a GCRA, still holds.) A line should name the peer id,
// never an address. topic should be a constant: it is kept as a map key.
func (l *LogCap) ShouldLog(p peer.ID, topic string, now int64) bool {
	tk := tick(now)
	key := logKey{p, topic}
	l.mu.Lock()
	defer l.mu.Unlock()
	if last, ok := l.mu.last[key]; ok && (tk < last || tk-last < uint64(LogInterval)) {
		l.Suppress(topic)
		return false
	}
	if len(l.mu.last) >= maxLogEntries {
		l.dropOld(tk)
		if len(l.mu.last) >= maxLogEntries {
			l.Suppress(topic)
			return false
		}
	}
	if ok, _ := l.global.allow(&l.mu.globalNS, &l.mu.globalRem, tk); !ok {
		l.Suppress(topic)
		return false
	}
	l.dropOld(tk)
	l.mu.last[key] = tk
	l.logged.Add(1)
	return true
}

// dropOld forgets the lines logged at least LogInterval before tk.
// REQUIRES: l.mu held.
func (l *LogCap) dropOld(tk uint64) {
	for key, last := range l.mu.last {
		if tk >= last && tk-last >= uint64(LogInterval) {
			delete(l.mu.last, key)
		}
	}
}

// Suppress counts a line of topic that the caller suppressed on its own (a
// per-peer check it keeps without the LogCap's lock), for the summary. It
// takes no lock.
func (l *LogCap) Suppress(topic string) {
	l.suppressed.Add(1)
	c, ok := l.byTopic.Load(topic)
	if !ok {
		for {
			n := l.topics.Load()
			if n >= maxSuppressedTopics {
				topic = "other"
				break
			}
			if l.topics.CompareAndSwap(n, n+1) {
				break
			}
		}
		c, _ = l.byTopic.LoadOrStore(topic, new(atomic.Uint64))
	}
	c.(*atomic.Uint64).Add(1)
}

// TakeSuppressed returns the number of lines suppressed since the last
// call, and starts counting again from zero. The node calls it once a
// minute and, when it is not zero, logs one summary line.
func (l *LogCap) TakeSuppressed() uint64 { return l.suppressed.Swap(0) }

// TopicCount is a topic of peer-caused lines and how many of them were
// suppressed.
type TopicCount struct {
	Topic string
	Count uint64
}

// TakeSuppressedTopics returns the topics of the lines suppressed since
// the last call, the most suppressed first (then by topic), and starts
// counting again from zero; none when none was. Its counts may differ from
// TakeSuppressed's by the lines suppressed between the two calls.
func (l *LogCap) TakeSuppressedTopics() []TopicCount {
	var out []TopicCount
	l.byTopic.Range(func(k, v any) bool {
		if n := v.(*atomic.Uint64).Swap(0); n > 0 {
			out = append(out, TopicCount{k.(string), n})
		}
		return true
	})
	slices.SortFunc(out, func(a, b TopicCount) int {
		if a.Count != b.Count {
			return cmp.Compare(b.Count, a.Count)
		}
		return strings.Compare(a.Topic, b.Topic)
	})
	return out
}

// Logged returns the number of lines ShouldLog allowed since the LogCap was
// built.
func (l *LogCap) Logged() uint64 { return l.logged.Load() }

// Len returns the number of (peer, topic) pairs remembered.
func (l *LogCap) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.mu.last)
}
