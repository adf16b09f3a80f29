package challenge

import (
	"errors"
	"fmt"
)

// Why a solution was not accepted, one sentinel per kind so that the node
// can count failures by kind (ADR 0025, "Observability"). Verify returns
// exactly one of these (compare with errors.Is). ADR 0014 / docs/design.md §7: an
// invalid solution is ignored, as if the request carried none.
var (
	// ErrUnknownAlg: the solution's alg is not Alg.
	ErrUnknownAlg = errors.New("challenge: unknown alg")
	// ErrBadSeed: the seed is not 64 lowercase hex digits.
	ErrBadSeed = errors.New("challenge: malformed seed")
	// ErrBadMAC: the seed was not issued by this process to this requester
	// (or one of its bytes, e.g. the effort or the expiry, was changed).
	ErrBadMAC = errors.New("challenge: seed MAC mismatch")
	// ErrExpired: the seed's expiry has passed.
	ErrExpired = errors.New("challenge: seed expired")
	// ErrBadNonce: the nonce is not 1..MaxNonceDigits decimal digits.
	ErrBadNonce = errors.New("challenge: malformed nonce")
	// ErrInsufficientWork: the digest has fewer leading zero bits than the
	// seed's effort.
	ErrInsufficientWork = errors.New("challenge: insufficient work")
	// ErrReplayed: the seed was already used. ADR 0014: "valid ... once".
	ErrReplayed = errors.New("challenge: seed already used")
	// ErrForgotten: the seed expires no later than a used seed the replay
	// memory had to forget (MaxUsedSeeds), so it cannot be told from a
	// replay and is refused; the requester gets a new challenge. It wraps
	// ErrReplayed: errors.Is(ErrForgotten, ErrReplayed) holds.
	ErrForgotten = fmt.Errorf("%w (replay memory full; ask for a new challenge)", ErrReplayed)
	// ErrCeiling: the solution is valid but the global ceiling of solved
	// requests (Options.SolvedPerMin) is reached. The seed is not consumed.
	ErrCeiling = errors.New("challenge: solved ceiling reached")
)

// Errors of the solver and of configuration.
var (
	// ErrEffortTooHigh: Solve was asked for an effort above core.MaxChallengeEffort (or
	// below 0); the requester gives up as for a refusal (ADR 0014).
	ErrEffortTooHigh = errors.New("challenge: effort out of range")
	// ErrGiveUp: SolveChallenge gives up on a challenge, as for a refusal
	// (ADR 0014: unknown alg, effort above core.MaxChallengeEffort, or expired).
	ErrGiveUp = errors.New("challenge: giving up on challenge")
	// ErrNoSolution: the solver ran through every nonce of at most
	// MaxNonceDigits digits it can reach without finding one (not expected
	// for any effort up to core.MaxChallengeEffort).
	ErrNoSolution = errors.New("challenge: no solution found")
	// ErrConfig: an Options field is out of range; the error wraps it with
	// the field name.
	ErrConfig = errors.New("challenge: invalid config")
)

// FailureKind names the reason err, Verify's, gives for a solution not
// accepted, as the metric wats_challenges_failed_total labels it: alg,
// seed, mac, expired, nonce, work, replayed, ceiling, or other.
func FailureKind(err error) string {
	for _, k := range []struct {
		err  error
		name string
	}{
		{ErrUnknownAlg, "alg"}, {ErrBadSeed, "seed"}, {ErrBadMAC, "mac"},
		{ErrExpired, "expired"}, {ErrBadNonce, "nonce"},
		{ErrInsufficientWork, "work"}, {ErrReplayed, "replayed"}, {ErrCeiling, "ceiling"},
	} {
		if errors.Is(err, k.err) {
			return k.name
		}
	}
	return "other"
}
