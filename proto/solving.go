package proto

import (
	"context"
	"errors"
	"fmt"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"
)

// Solver answers a challenge with a solution, or an error to give up (as
// for a refusal): ADR 0014 says a requester gives up when the alg is
// unknown, the effort is above 24 bits or the challenge has expired. It
// should stop when ctx ends. The node's solver is package challenge's.
type Solver func(ctx context.Context, c *Challenge) (*Solution, error)

// CallSolving is Call for a node that solves challenges (ADR 0014
// addendum: call_solving). If the peer answers with a challenge and solve
// returns a solution, the same request is resubmitted once, on a new
// stream, with the solution as its top-level "solution" field; the answer
// to that is returned as Call returns it (a second challenge is a
// *ChallengeError: the requester resubmits at most once). If solve gives
// up, the *ChallengeError is returned, wrapping solve's reason.
func CallSolving(ctx context.Context, h host.Host, p peer.ID, req Message, solve Solver) (*Response, error) {
	resp, err := Call(ctx, h, p, req)
	var ce *ChallengeError
	if !errors.As(err, &ce) || solve == nil {
		return resp, err
	}
	sol, serr := solve(ctx, &ce.Challenge)
	if serr != nil {
		return nil, &ChallengeError{Challenge: ce.Challenge, Reason: serr}
	}
	b, err := MarshalWithSolution(req, sol)
	if err != nil {
		return nil, fmt.Errorf("proto: call: resubmit with solution: %w", err)
	}
	return call(ctx, h, p, req.MessageType(), b)
}
