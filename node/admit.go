package node

import (
	"time"

	"github.com/wats-network/wats/core"
	"github.com/wats-network/wats/limits"
	"github.com/wats-network/wats/peercache"
	"github.com/wats-network/wats/proto"
)

// admit decides, for each decoded request and before any expensive work,
// whether to serve req from st's peer (peers.Table.Admit, docs/design.md
// §7, ADR 0014, ADR 0030) and carries out the verdict. It returns nil to
// serve, or the response to send instead. class is what the cheap
// existence check found the request to ask for; inFlight is the number of
// /wats requests being handled, this one included. A solution is verified
// first (an invalid one is counted and ignored, ADR 0014); the verdict's
// challenge is issued here, its pressure reported to the effort, and
// "peer throttled" logged within its caps. It takes no lock of the
// node's.
func (n *Node) admit(st *peerState, req *proto.Request, class limits.Class, inFlight int) proto.Message {
	k, ok := req.Type.Request()
	if !ok {
		return nil // not a request type with a budget
	}
	now, mono := n.clock()
	solved := req.Solution != nil && n.checkSolution(st, req.Solution, now, mono)
	v := n.run.Admit(st, k, class, solved, inFlight, mono)
	if v.Retiered {
		n.tierChanged(st, v.Tier)
	}
	if v.Pressure {
		n.issuer.Pressure(mono)
	}
	if v.Miss {
		n.m.Miss(k)
	}
	if v.Shared {
		n.m.StrangerReportRefused()
	}
	if v.Throttled {
		n.throttled(st, k, mono)
	}
	switch v.Verdict {
	case limits.Serve:
		if v.FirstSolution {
			n.go_(func() { n.showedValue(st, peercache.ValueSolved) })
		}
		return nil
	case limits.Challenge:
		return n.issue(st, now, mono)
	}
	return &proto.Refused{Reason: limits.Refusal(k), RetryAfterMs: limits.RetryAfterMs(v.RetryAfter)}
}

// throttled logs "peer throttled" for st's request of kind k refused (or
// challenged) at mono: ADR 0014's once a minute per peer and type is
// checked on st first, so that a flood from one id suppresses its lines
// without taking the LogCap's lock.
func (n *Node) throttled(st *peerState, k core.Request, mono time.Duration) {
	last := &st.Link.throttleLogged[k]
	if t := last.Load(); t != 0 && mono-time.Duration(t-1) < limits.LogInterval && mono >= time.Duration(t-1) {
		n.plog.Cap.Suppress()
		return
	}
	if n.plog.Cap.ShouldLog(st.ID(), limits.ThrottledTopic(k), int64(mono)) {
		last.Store(int64(mono) + 1)
		n.log.Info("peer throttled", "peer", st.ID(), "type", k.String())
	}
}
