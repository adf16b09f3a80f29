package challenge_test

import (
	"context"
	"fmt"
	"time"

	"github.com/wats-network/wats/challenge"
)

// The responder issues a challenge, the requester solves it, and the
// responder verifies the solution once.
func Example() {
	var responderID, requesterID [challenge.IDLen]byte // raw Ed25519 public keys
	responderID[0], requesterID[0] = 'B', 'A'
	now := time.Unix(1767225600, 0) // the wall clock: seeds expire in unix seconds
	start := now                    // the monotonic base: effort and ceiling count from it

	// Responder (node B), over its limit or overloaded:
	is, err := challenge.NewIssuer(responderID, nil)
	if err != nil {
		panic(err)
	}
	is.Pressure(now.Sub(start)) // challenging a rate-limited peer is pressure
	c := is.Issue(requesterID, now, now.Sub(start))
	fmt.Println(c.Alg, c.Effort, c.Expires-now.Unix(), len(c.Seed))

	// Requester (node A):
	if challenge.ShouldGiveUp(c, now) {
		return // as for a refusal
	}
	sol, err := challenge.SolveChallenge(context.Background(), c, requesterID, responderID, now)
	if err != nil {
		panic(err)
	}

	// Responder again, with the resubmitted request:
	fmt.Println(is.Verify(sol, requesterID, now.Add(time.Second), time.Second))
	fmt.Println(is.Verify(sol, requesterID, now.Add(2*time.Second), 2*time.Second))
	// Output:
	// b3 8 60 64
	// <nil>
	// challenge: seed already used
}
