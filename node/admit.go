package node

import (
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/wats-network/wats/limits"
	"github.com/wats-network/wats/peercache"
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
// serve, or the response to send instead. inFlight is the number of /wats
// requests being handled, this one included. In this order:
//
//  1. A valid solution (a resubmitted request) lets this one request
//     through, past the per-peer limit and the overload, within the global
//     ceiling of solved requests; an invalid one is ignored.
//  2. Over its per-peer bucket, a peer that advertised "challenge" gets a
//     challenge when limits.challenge is on; any other peer is refused with
//     {"type":"refused","reason":"rate limited (<type>): retry later"} and
//     the exact wait in retry_after_ms. A refused attempt does not change
//     the bucket, and each type has its own. "peer throttled" is logged at
//     most once a minute per peer and type, never with an address.
//  3. Overloaded (more than overload_in_flight requests in flight), a peer
//     that advertised "challenge" and has no established reputation gets a
//     challenge; every other peer is served as before.
//  4. Otherwise the request is served.
//
// Challenging a rate-limited peer and being overloaded are the pressure
// that raises the challenge's effort.
func (n *Node) admit(p peer.ID, req *proto.Request, inFlight int) proto.Message {
	k, ok := limits.ParseKind(string(req.Type))
	if !ok {
		return nil // not a request type with a budget
	}
	now := n.now()
	if req.Solution != nil && n.checkSolution(p, req.Solution, now) {
		n.peers.Count(p, peercache.CountSolved)
		return nil
	}
	mono := int64(now.Sub(n.adm.epoch)) // the buckets' clock: ns since the node was built
	challenges := n.cfg.Limits.Challenge && n.canSolve(p)
	allowed, retryAfter := n.adm.table.Allow(p, k, mono)
	if !allowed {
		if n.adm.throttle.ShouldLog(p, k, mono) {
			n.log.Info("peer throttled", "peer", p, "type", k.String())
		}
		if challenges {
			n.issuer.Pressure(now)
			if c := n.issue(p, now); c != nil {
				n.peers.Count(p, peercache.CountChallenged)
				return c
			}
		}
		n.peers.Count(p, peercache.CountRefused)
		return &proto.Refused{Reason: limits.Refusal(k), RetryAfterMs: limits.RetryAfterMs(retryAfter)}
	}
	if inFlight > n.cfg.Limits.OverloadInFlight {
		n.issuer.Pressure(now)
		if challenges && !n.reputation.Reputed(p, now) {
			if c := n.issue(p, now); c != nil {
				n.peers.Count(p, peercache.CountChallenged)
				return c
			}
		}
	}
	n.peers.Count(p, peercache.CountServed)
	return nil
}

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
