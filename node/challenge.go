package node

import (
	"context"
	"errors"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/wats-network/wats/challenge"
	"github.com/wats-network/wats/proto"
)

// rawID returns the raw 32-byte Ed25519 public key of p: the "endpoint id"
// of ADR 0014's puzzle (docs/design.md §3). ok is false for other key types, which
// the gater refuses anyway.
func rawID(p peer.ID) (id [challenge.IDLen]byte, ok bool) {
	pk, err := p.ExtractPublicKey()
	if err != nil || pk.Type() != crypto.Ed25519 {
		return id, false
	}
	raw, err := pk.Raw()
	if err != nil || len(raw) != challenge.IDLen {
		return id, false
	}
	copy(id[:], raw)
	return id, true
}

// checkSolution verifies the solution of a resubmitted request from st's
// peer. A valid one lets the request through (ADR 0014: past the per-peer
// limit and the overload, within the solved ceiling); an invalid one is
// counted by its reason, in the peer's history, and ignored, as if absent.
func (n *Node) checkSolution(st *peerState, sol *proto.Solution, now time.Time, mono time.Duration) bool {
	if !st.rawOK {
		return false
	}
	err := n.issuer.Verify(challenge.Solution{Alg: sol.Alg, Seed: sol.Seed, Nonce: sol.Nonce}, st.raw, now, mono)
	if err != nil {
		n.m.challengeFailed(failureKind(err))
		if !errors.Is(err, challenge.ErrCeiling) && !errors.Is(err, challenge.ErrForgotten) {
			n.count(st, &st.hist.failed, 1) // the requester's fault
		}
		return false
	}
	n.m.challengeSolved()
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
	if !st.rawOK {
		return nil
	}
	c := n.issuer.Issue(st.raw, now, mono)
	n.m.challengeIssued()
	return &proto.Challenge{Alg: c.Alg, Seed: c.Seed, Effort: c.Effort, Expires: c.Expires}
}

// solverFor returns this node's proto.Solver for the challenges of p: it
// solves one on all cores, or gives up as ADR 0014 says (unknown alg,
// effort above 24, expired).
func (n *Node) solverFor(p peer.ID) proto.Solver {
	return func(ctx context.Context, c *proto.Challenge) (*proto.Solution, error) {
		responder, ok := rawID(p)
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
