// Package core is the vocabulary every wats package shares, as go-libp2p's
// core is: the bounds and rules that the wire protocol (docs/design.md §4,
// §5) and ADR 0014 set, each under one name (ADR 0033). It imports no other
// wats package, and every wats package may import it (internal/layering),
// so that a number is written once and its uses cannot drift apart.
package core

const (
	// MaxSafeInt (2^53) is the largest size-like integer on the wire, in
	// events and in the configuration: a blob's declared size, a sync
	// cursor, a quota in bytes. docs/design.md §4: sizes beyond 2^53 are a
	// bad_request, since a peer that reads JSON numbers as IEEE doubles
	// sees them exactly only up to 2^53. It also keeps every sum of sizes
	// far from overflowing an int64.
	MaxSafeInt = 1 << 53

	// MaxHintsPerBlob is how many provider hints a node keeps per blob.
	// ADR 0014: "a node keeps at most 16 hints per blob".
	MaxHintsPerBlob = 16

	// MaxChallengeEffort is the largest effort of a b3 challenge, in
	// leading zero bits, that a requester solves; above it, it gives up as
	// for a refusal, so a node never asks for more (the ceiling of
	// limits.challenge_max_bits). ADR 0014, "Messages": "the effort is
	// above 24 bits".
	MaxChallengeEffort = 24

	// MaxSolvedPerMin bounds the global ceiling of solved requests a minute
	// (ADR 0014: solved_per_min, 1,200 by default): at most as many as the
	// per-peer rates allow (limits.MaxPerMin), which also bounds the
	// ceiling's memory (8 bytes a request, 480 KB).
	MaxSolvedPerMin = 60_000

	// MaxKindLen is the longest event kind, in bytes; a kind is 1 to
	// MaxKindLen characters for which IsKindChar holds (docs/design.md §5).
	MaxKindLen = 32
)

// IsKindChar reports whether r may appear in an event's kind: a-z, 0-9,
// '.', '_' or '-' (docs/design.md §5).
func IsKindChar(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-'
}
