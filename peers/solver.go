package peers

import (
	"context"
	"errors"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/wats-network/wats/challenge"
	"github.com/wats-network/wats/proto"
)

// Solver returns the proto.Solver of the challenges that responder p
// sends the requester self (the node's raw Ed25519 key): it solves one on
// all cores, or gives up as ADR 0014 says (unknown alg, effort above
// core.MaxChallengeEffort, expired at now()).
func Solver(self [challenge.IDLen]byte, p peer.ID, now func() time.Time) proto.Solver {
	return func(ctx context.Context, c *proto.Challenge) (*proto.Solution, error) {
		responder, ok := RawID(p)
		if !ok {
			return nil, errors.New("peers: cannot solve for a non-Ed25519 peer")
		}
		sol, err := challenge.SolveChallenge(ctx, challenge.Challenge{Alg: c.Alg, Seed: c.Seed, Effort: c.Effort, Expires: c.Expires},
			self, responder, now())
		if err != nil {
			return nil, err
		}
		return &proto.Solution{Alg: sol.Alg, Seed: sol.Seed, Nonce: sol.Nonce}, nil
	}
}
