package node

import (
	"context"
	"errors"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

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
		n.m.ChallengeFailed(failureKind(err))
		if !errors.Is(err, challenge.ErrCeiling) && !errors.Is(err, challenge.ErrForgotten) {
			n.count(st, peers.Failed, 1) // the requester's fault
		}
		return false
	}
	n.m.ChallengeSolved()
	return true
}

// failureKind names the reason a solution failed, for the metric label.
func failureKind(err error) string {
	for _, k := range []struct {
		err  error
		name string
	}{
		{challenge.ErrUnknownAlg, "alg"}, {challenge.ErrBadSeed, "seed"}, {challenge.ErrBadMAC, "mac"},
		{challenge.ErrExpired, "expired"}, {challenge.ErrBadNonce, "nonce"},
		{challenge.ErrInsufficientWork, "work"}, {challenge.ErrReplayed, "replayed"},
		{challenge.ErrForgotten, "replayed"}, {challenge.ErrCeiling, "ceiling"},
	} {
		if errors.Is(err, k.err) {
			return k.name
		}
	}
	return "other"
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

// solverFor returns this node's proto.Solver for the challenges of p: it
// solves one on all cores, or gives up as ADR 0014 says (unknown alg,
// effort above 24, expired).
func (n *Node) solverFor(p peer.ID) proto.Solver {
	return func(ctx context.Context, c *proto.Challenge) (*proto.Solution, error) {
		responder, ok := peers.RawID(p)
		if !ok {
			return nil, errors.New("node: cannot solve for a non-Ed25519 peer")
		}
		sol, err := challenge.SolveChallenge(ctx, challenge.Challenge{Alg: c.Alg, Seed: c.Seed, Effort: c.Effort, Expires: c.Expires},
			n.selfID, responder, n.now())
		if err != nil {
			return nil, err
		}
		return &proto.Solution{Alg: sol.Alg, Seed: sol.Seed, Nonce: sol.Nonce}, nil
	}
}
