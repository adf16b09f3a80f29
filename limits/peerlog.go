package limits

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/wats-network/wats/core"
)

// SummaryInterval is how often PeerLog.Summarize is meant to run: the
// line that says how many peer-caused lines the cap suppressed (ADR 0030:
// resist log amplification, but say what was left out).
const SummaryInterval = time.Minute

// PeerLog writes the log lines that peer input causes ("peer throttled",
// "peer completed hello", "blob not fetched", ...) through one LogCap (ADR
// 0030): at most once a minute per peer and topic, and at most LogBurst at
// once and LogPerMin a minute in all, so that whatever a flood of ids
// does, fewer than 100 such lines a minute reach the log (the summary line
// included). Debug lines are not capped: an operator who asks for debug
// asks for everything. It is safe for concurrent use.
type PeerLog struct {
	// Log receives the lines.
	Log *slog.Logger
	// Cap decides which lines go through.
	Cap *LogCap
	// Mono returns the monotonic reading the cap runs on.
	Mono func() time.Duration
}

// NewPeerLog returns a PeerLog writing to log, on a new LogCap, at the
// readings of mono.
func NewPeerLog(log *slog.Logger, mono func() time.Duration) *PeerLog {
	return &PeerLog{Log: log, Cap: NewLogCap(), Mono: mono}
}

// Info logs msg at info level if the cap lets a line of topic from p
// through.
func (l *PeerLog) Info(p peer.ID, topic, msg string, args ...any) {
	l.at(slog.LevelInfo, p, topic, msg, args)
}

// Warn logs msg at warn level, within the same cap.
func (l *PeerLog) Warn(p peer.ID, topic, msg string, args ...any) {
	l.at(slog.LevelWarn, p, topic, msg, args)
}

// Debug logs msg at debug level, uncapped.
func (l *PeerLog) Debug(_ peer.ID, _, msg string, args ...any) {
	l.Log.Debug(msg, args...)
}

func (l *PeerLog) at(level slog.Level, p peer.ID, topic, msg string, args []any) {
	if !l.Log.Enabled(context.Background(), level) {
		return
	}
	if l.Cap.ShouldLog(p, topic, int64(l.Mono())) {
		l.Log.Log(context.Background(), level, msg, args...)
	}
}

// Summarize logs how many peer-caused lines were suppressed since the
// last call, when any were, and of which topics ("throttled sync 12,
// hello 1"), saying why (the cap of ADR 0030); run it every
// SummaryInterval.
func (l *PeerLog) Summarize() {
	k := l.Cap.TakeSuppressed()
	topics := l.Cap.TakeSuppressedTopics()
	if k == 0 {
		return
	}
	parts := make([]string, len(topics))
	for i, t := range topics {
		parts[i] = fmt.Sprintf("%s %d", t.Topic, t.Count)
	}
	l.Log.Info("peer-caused log lines left out (ADR 0030's cap: one a minute per peer and topic, 60 a minute in all)",
		"count", k, "topics", strings.Join(parts, ", "), "since", SummaryInterval)
}

// Throttled logs "peer throttled" for p's request of type k refused (or
// challenged) at the monotonic reading mono, within ADR 0014's once a
// minute per peer and type: last is the peer's own mark of its last such
// line (the reading plus one; 0 for none), checked first, so that a flood
// from one id suppresses its lines without taking the LogCap's lock.
func (l *PeerLog) Throttled(p peer.ID, k core.Request, last *atomic.Int64, mono time.Duration) {
	if t := last.Load(); t != 0 && mono-time.Duration(t-1) < LogInterval && mono >= time.Duration(t-1) {
		l.Cap.Suppress(ThrottledTopic(k))
		return
	}
	if l.Cap.ShouldLog(p, ThrottledTopic(k), int64(mono)) {
		last.Store(int64(mono) + 1)
		l.Log.Info("peer throttled", "peer", p, "type", k.String())
	}
}
