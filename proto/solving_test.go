package proto

import (
	"context"
	"errors"
	"sync"
	"testing"
)

// TestCallSolving: a challenge is solved and the same request resubmitted
// once with the solution; a requester that gives up gets the challenge
// back with its reason; a second challenge is not solved again.
func TestCallSolving(t *testing.T) {
	ch := &Challenge{Alg: "b3", Seed: testSeed, Effort: 8, Expires: 1767225660}
	var mu sync.Mutex
	var got []*Request
	challengeAlways := false
	client, server := hostPair(t, answer(func(r *Request) []byte {
		mu.Lock()
		got = append(got, r)
		always := challengeAlways
		mu.Unlock()
		if r.Solution == nil || always {
			return mustMarshal(t, ch)
		}
		return mustMarshal(t, &SyncResponse{Next: r.Sync.After})
	}))
	ctx := context.Background()
	req := &SyncRequest{After: 7, Limit: 10}
	sol := &Solution{Alg: "b3", Seed: testSeed, Nonce: "4265"}
	solves := 0
	solve := func(_ context.Context, c *Challenge) (*Solution, error) {
		solves++
		if *c != *ch {
			t.Errorf("solver got %+v, want %+v", c, ch)
		}
		return sol, nil
	}
	resp, err := CallSolving(ctx, client, server.ID(), req, solve)
	if err != nil || resp.Sync == nil || resp.Sync.Next != 7 {
		t.Fatalf("CallSolving: %+v, %v", resp, err)
	}
	if solves != 1 || len(got) != 2 || got[1].Solution == nil || *got[1].Solution != *sol || got[1].Sync.After != 7 || got[1].Sync.Limit != 10 {
		t.Fatalf("solves %d, requests %d; the resubmission must be the same request plus the solution", solves, len(got))
	}

	giveUp := errors.New("effort above 24")
	_, err = CallSolving(ctx, client, server.ID(), req, func(context.Context, *Challenge) (*Solution, error) { return nil, giveUp })
	var ce *ChallengeError
	if !errors.As(err, &ce) || !errors.Is(err, giveUp) || !errors.Is(err, ErrChallenged) {
		t.Fatalf("giving up: %v, want a *ChallengeError wrapping the reason", err)
	}

	mu.Lock()
	challengeAlways, got = true, nil
	mu.Unlock()
	solves = 0
	_, err = CallSolving(ctx, client, server.ID(), req, solve)
	if !errors.Is(err, ErrChallenged) || solves != 1 || len(got) != 2 {
		t.Fatalf("a second challenge: err %v, %d solves, %d requests; want the challenge back after one resubmission", err, solves, len(got))
	}
}
