package node

import (
	"context"
	"log/slog"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/wats-network/wats/core"
	"github.com/wats-network/wats/limits"
)

// peerLogSummaryInterval is how often the node logs how many peer-caused
// lines the cap suppressed (ADR 0030: resist log amplification, but say
// what was left out).
const peerLogSummaryInterval = time.Minute

// peerLog writes the log lines that peer input causes ("peer throttled",
// "peer completed hello", "blob not fetched", ...) through one
// limits.LogCap (ADR 0030): at most once a minute per peer and topic, and
// at most limits.LogBurst at once and limits.LogPerMin a minute in all, so
// that whatever a flood of ids does, fewer than 100 such lines a minute
// reach the log (the summary line included). Debug lines are not capped:
// an operator who asks for debug asks for everything.
type peerLog struct {
	log *slog.Logger
	cap *limits.LogCap
	// mono returns the node's monotonic reading.
	mono func() time.Duration
}

// Info logs msg at info level if the cap lets a line of topic from p
// through.
func (l *peerLog) Info(p peer.ID, topic, msg string, args ...any) {
	l.at(slog.LevelInfo, p, topic, msg, args)
}

// Warn logs msg at warn level, within the same cap.
func (l *peerLog) Warn(p peer.ID, topic, msg string, args ...any) {
	l.at(slog.LevelWarn, p, topic, msg, args)
}

// Debug logs msg at debug level, uncapped.
func (l *peerLog) Debug(_ peer.ID, _, msg string, args ...any) {
	l.log.Debug(msg, args...)
}

func (l *peerLog) at(level slog.Level, p peer.ID, topic, msg string, args []any) {
	if !l.log.Enabled(context.Background(), level) {
		return
	}
	if l.cap.ShouldLog(p, topic, int64(l.mono())) {
		l.log.Log(context.Background(), level, msg, args...)
	}
}

// throttled logs "peer throttled" for st's request of kind k refused (or
// challenged) at mono: ADR 0014's once a minute per peer and type is
// checked on st first, so that a flood from one id suppresses its lines
// without taking the LogCap's lock.
func (n *Node) throttled(st *peerState, k core.Request, mono time.Duration) {
	last := &st.Link.throttleLogged[k]
	if t := last.Load(); t != 0 && mono-time.Duration(t-1) < limits.LogInterval && mono >= time.Duration(t-1) {
		n.plog.cap.Suppress()
		return
	}
	if n.plog.cap.ShouldLog(st.ID(), limits.ThrottledTopic(k), int64(mono)) {
		last.Store(int64(mono) + 1)
		n.log.Info("peer throttled", "peer", st.ID(), "type", k.String())
	}
}

// peerLogSummaries logs, once a minute, how many peer-caused lines were
// suppressed, when any were.
func (n *Node) peerLogSummaries() {
	n.every(peerLogSummaryInterval, func() {
		if k := n.plog.cap.TakeSuppressed(); k > 0 {
			n.log.Info("peer-caused log lines suppressed", "count", k, "since", peerLogSummaryInterval)
		}
	})
}
