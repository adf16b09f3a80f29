package node

import (
	"errors"
	"time"

	"github.com/wats-network/wats/challenge"
	"github.com/wats-network/wats/peers"
	"github.com/wats-network/wats/proto"
)

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
