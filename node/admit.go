package node

import (
	"errors"
	"time"

	"github.com/wats-network/wats/challenge"
	"github.com/wats-network/wats/limits"
	"github.com/wats-network/wats/peercache"
	"github.com/wats-network/wats/peers"
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
	v := n.run.Admit(st, k, req.Hello, class, solved, inFlight, mono)
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
		n.plog.Throttled(st.ID(), k, &st.Link.throttleLogged[k], mono)
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

// checkSolution verifies the solution of a resubmitted request from st's
// peer. A valid one lets the request through (ADR 0014: past the per-peer
// limit and the overload, within the solved ceiling); an invalid one is
// counted by its reason, in the peer's history, and ignored, as if absent.
func (n *Node) checkSolution(st *peerState, sol *proto.Solution, now time.Time, mono time.Duration) bool {
	raw, ok := st.Raw()
	if !ok {
		return false
	}
	err := n.issuer.Verify(challenge.Solution{Alg: sol.Alg, Seed: sol.Seed, Nonce: sol.Nonce}, raw, now, mono)
	if err != nil {
		n.m.ChallengeFailed(challenge.FailureKind(err))
		if !errors.Is(err, challenge.ErrCeiling) && !errors.Is(err, challenge.ErrForgotten) {
			n.count(st, peers.Failed, 1) // the requester's fault
		}
		return false
	}
	n.m.ChallengeSolved()
	return true
}

// issue returns a challenge for st's peer at the current effort; nil for a
// peer without an Ed25519 key (which the gater refuses anyway).
func (n *Node) issue(st *peerState, now time.Time, mono time.Duration) proto.Message {
	raw, ok := st.Raw()
	if !ok {
		return nil
	}
	c := n.issuer.Issue(raw, now, mono)
	n.m.ChallengeIssued()
	return &proto.Challenge{Alg: c.Alg, Seed: c.Seed, Effort: c.Effort, Expires: c.Expires}
}
