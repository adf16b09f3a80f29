package challenge

import (
	"context"
	"encoding/binary"
	"math/bits"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"lukechampine.com/blake3/guts"

	"github.com/wats-network/wats/core"
)

// solveBatch is the number of consecutive nonces a solver worker claims at
// a time from the shared counter: the ranges of the workers are disjoint,
// the counter is touched once per batch, and cancellation is checked once
// per batch (about 1 ms of work at 10 M attempts a second).
const solveBatch = 1 << 13

// maxSolveStart bounds the nonces the solver tries: every nonce below it
// has at most MaxNonceDigits digits and fits a uint64 with a batch to
// spare. Unreachable in practice (2^24 attempts are expected at core.MaxChallengeEffort).
const maxSolveStart = 1e19

// Solve finds a nonce that solves the b3 puzzle of ADR 0014 for seed,
// requester and responder (raw Ed25519 public keys) at effort leading
// zero bits, on runtime.GOMAXPROCS(0) workers that claim disjoint ranges
// of nonces. The nonce is the shortest decimal form (no leading zeros).
// Which solving nonce is returned depends on scheduling; it is not
// necessarily the smallest.
//
// It returns ErrEffortTooHigh when effort is not 0..core.MaxChallengeEffort (the
// requester gives up, ADR 0014), ctx.Err() when ctx ends first, and
// ErrNoSolution in the (unreachable) case that every nonce it can try
// fails. The expected work is 2^effort digests; each is one BLAKE3
// compression, the first block being compressed once per call.
func Solve(ctx context.Context, seed Seed, requester, responder [IDLen]byte, effort int) (string, error) {
	if effort < 0 || effort > core.MaxChallengeEffort {
		return "", ErrEffortTooHigh
	}
	if err := ctx.Err(); err != nil {
		return "", err
	}
	p := newPuzzle(&seed, &requester, &responder)
	inner, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		next   atomic.Uint64
		wg     sync.WaitGroup
		once   sync.Once
		result string
		found  bool
	)
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			done := inner.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				start := next.Add(solveBatch) - solveBatch
				if start >= maxSolveStart {
					return
				}
				if n, ok := p.search(start, start+solveBatch, effort); ok {
					once.Do(func() { result, found = n, true })
					cancel()
					return
				}
			}
		})
	}
	wg.Wait()
	if found {
		return result, nil
	}
	if err := ctx.Err(); err != nil {
		return "", err
	}
	return "", ErrNoSolution
}

// search tries the nonces from..to-1 in order, in their shortest decimal
// form, and returns the first whose digest has at least effort leading
// zero bits.
//
// REQUIRES: 0 <= effort <= 32; to < 10^MaxNonceDigits.
func (p *puzzle) search(from, to uint64, effort int) (string, bool) {
	var tail [MaxNonceDigits]byte // the nonce, left-aligned, zero padded
	n := len(strconv.AppendUint(tail[:0], from, 10))
	node := p.lastNode(n)
	for i := range 5 {
		node.Block[8+i] = binary.LittleEndian.Uint32(tail[4*i:])
	}
	for nonce := from; nonce < to; nonce++ {
		out := guts.CompressNode(node)
		if bits.LeadingZeros32(bits.ReverseBytes32(out[0])) >= effort {
			return string(tail[:n]), true
		}
		// Increment the decimal digits in place.
		i := n - 1
		for ; i >= 0 && tail[i] == '9'; i-- {
			tail[i] = '0'
		}
		if i >= 0 {
			tail[i]++
		} else { // 99…9 → 100…0, one digit longer
			tail[0] = '1'
			tail[n] = '0'
			n++
			node.BlockLen = uint32(IDLen + n)
		}
		// Repack the words that changed: from the one holding digit i.
		for w := max(i, 0) / 4; w < 5; w++ {
			node.Block[8+w] = binary.LittleEndian.Uint32(tail[4*w:])
		}
	}
	return "", false
}

// ShouldGiveUp reports whether a requester gives up on challenge c at now,
// as for a refusal (ADR 0014, "Messages"): the alg is unknown, the effort
// is not 0..core.MaxChallengeEffort, the seed is not 64 lowercase hex digits, or the
// challenge has expired (now after Expires).
func ShouldGiveUp(c Challenge, now time.Time) bool {
	if c.Alg != Alg || c.Effort < 0 || c.Effort > core.MaxChallengeEffort {
		return true
	}
	if _, err := ParseSeed(c.Seed); err != nil {
		return true
	}
	return expired(c.Expires, now)
}

// SolveChallenge is the requester's whole step (ADR 0014, "Messages"):
// unless ShouldGiveUp(c, now) (then it returns ErrGiveUp), it solves c for
// requester (this node) and responder (the peer that sent c) and returns
// the Solution to resubmit once, with the seed as received. It solves for
// the larger of c.Effort and the seed's effort byte, which is what the
// responder checks. Errors as Solve.
func SolveChallenge(ctx context.Context, c Challenge, requester, responder [IDLen]byte, now time.Time) (Solution, error) {
	if ShouldGiveUp(c, now) {
		return Solution{}, ErrGiveUp
	}
	seed, _ := ParseSeed(c.Seed) // checked by ShouldGiveUp
	effort := max(c.Effort, seed.Effort())
	nonce, err := Solve(ctx, seed, requester, responder, effort)
	if err != nil {
		return Solution{}, err
	}
	return Solution{Alg: Alg, Seed: c.Seed, Nonce: nonce}, nil
}
