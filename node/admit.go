package node

import (
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/wats-network/wats/limits"
	"github.com/wats-network/wats/proto"
)

// throttleSummaryInterval is how often the node logs how many "peer
// throttled" lines the throttle log suppressed (seed 001: resist log
// amplification, but say what was left out).
const throttleSummaryInterval = time.Minute

// admission is the state of Node.admit: ADR 0014's per-peer token buckets
// and the caps on their log lines.
type admission struct {
	table    *limits.Table
	throttle *limits.ThrottleLog
	// epoch is the base of the monotonic nanoseconds the table counts in.
	epoch time.Time
}

func newAdmission(cfg limits.Config, now time.Time) (*admission, error) {
	table, err := limits.NewTable(cfg)
	if err != nil {
		return nil, err
	}
	return &admission{table: table, throttle: limits.NewThrottleLog(), epoch: now}, nil
}

// admit decides, for each decoded request and before any expensive work,
// whether to serve req from p (design §7, ADR 0014). It returns nil to
// serve, or the response to send instead.
//
// Over the per-peer bucket of its type, a request is refused with
// {"type":"refused","reason":"rate limited (<type>): retry later"} and the
// exact wait in retry_after_ms; a refused attempt does not change the
// bucket, and each type has its own. "peer throttled" is logged at most once
// a minute per peer and type, never with an address, within a global cap.
// The challenge of ADR 0014's addendum comes with the challenge issue.
func (n *Node) admit(p peer.ID, req *proto.Request) proto.Message {
	k, ok := limits.ParseKind(string(req.Type))
	if !ok {
		return nil // not a request type with a budget
	}
	now := n.monoNow()
	allowed, retryAfter := n.adm.table.Allow(p, k, now)
	if allowed {
		return nil
	}
	if n.adm.throttle.ShouldLog(p, k, now) {
		n.log.Info("peer throttled", "peer", p, "type", k.String())
	}
	return &proto.Refused{Reason: limits.Refusal(k), RetryAfterMs: limits.RetryAfterMs(retryAfter)}
}

// monoNow is the admission clock: nanoseconds since the node was built,
// from the monotonic reading of n.now.
func (n *Node) monoNow() int64 { return int64(n.now().Sub(n.adm.epoch)) }

// throttleSummaries logs, once a minute, how many "peer throttled" lines
// were suppressed, when any were.
func (n *Node) throttleSummaries() {
	t := time.NewTicker(throttleSummaryInterval)
	defer t.Stop()
	for {
		select {
		case <-n.ctx.Done():
			return
		case <-t.C:
			if k := n.adm.throttle.TakeSuppressed(); k > 0 {
				n.log.Info("peer throttled lines suppressed", "count", k, "since", throttleSummaryInterval)
			}
		}
	}
}
