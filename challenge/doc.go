// Package challenge is the b3 proof-of-work challenge of ADR 0014 ("Load
// challenge" addendum; docs/design.md §7): under load or over its rate limit, a
// peer that advertised the "challenge" feature gets a BLAKE3 hashcash
// puzzle instead of a refusal, and a node under pressure raises the price
// until the pressure stops.
//
// It imports no other wats package but core (docs/design.md §2): the wire encoding of the
// challenge response and of the "solution" field is proto's, the decision
// to challenge (feature, limit, overload, reputation) is Node.admit's.
// Ids are raw 32-byte Ed25519 public keys.
//
// # The puzzle
//
// Find a decimal nonce of 1..20 digits such that
//
//	BLAKE3-derive_key("wats challenge v1", seed ‖ requester id ‖ responder id ‖ nonce)
//
// has at least effort leading zero bits. The seed is 32 bytes, stateless:
//
//	expires (8, big endian unix s) ‖ effort (1) ‖ random (7) ‖ MAC (16)
//
// where the MAC is the first 16 bytes of the BLAKE3 keyed hash, under a
// per-process random key, of seed[0:16] ‖ requester id. The responder
// keeps nothing per challenge; it cannot be made to lower the effort, and
// a seed is useless to another requester or at another node.
//
// # Responder
//
//	is, err := challenge.NewIssuer(selfID, &opts)    // one per node; nil: the defaults
//	is.Pressure(mono)                               // overloaded, or challenging a rate-limited peer
//	c := is.Issue(peerID, now, mono)                // → {"type":"challenge", c.Alg, c.Seed, c.Effort, c.Expires}
//	err := is.Verify(sol, peerID, now, mono)        // a resubmitted request's "solution"
//
// now is the wall clock (a seed's expiry is unix seconds on the wire);
// mono is a monotonic reading, e.g. time.Since(start), which the effort and
// the solved ceiling run on, so that a step of the wall clock never closes
// the ceiling or stalls the effort.
//
// Verify returns nil when the request may pass the per-peer limit and the
// overload; otherwise one sentinel (ErrUnknownAlg, ErrBadSeed, ErrBadMAC,
// ErrExpired, ErrBadNonce, ErrInsufficientWork, ErrReplayed or
// ErrForgotten, ErrCeiling) that the node counts by kind and then ignores
// the solution, as docs/design.md §7 says. It takes about 0.6 µs and does not
// allocate. A valid solution is recorded as used (until its seed expires,
// at most MaxUsedSeeds, with a watermark past that) and takes one of the
// SolvedPerMin solved requests of the sliding minute, for all peers
// together.
//
// The effort adapts (Effort, after Tor proposal 327): it starts at
// BaseBits and, per EffortInterval (10 s), rises one bit after an interval
// with pressure, up to MaxBits, and falls one bit after a quiet one, never
// below BaseBits. Every piece of state is driven by the readings passed
// in; an Issuer is safe for concurrent use. Should the wall clock step back
// past seeds the replay memory forgot, its watermark still refuses them;
// past SeedLifetime, the Issuer draws a new MAC key (see Issuer).
//
// # Requester
//
//	if challenge.ShouldGiveUp(c, now) { /* as for a refusal */ }
//	sol, err := challenge.SolveChallenge(ctx, c, selfID, peerID, now) // then resubmit once
//
// Solve runs on GOMAXPROCS workers over disjoint nonce ranges and honours
// ctx. Each attempt is one BLAKE3 compression: the context key is derived
// once per process, the chaining value of the first 64-byte block (seed ‖
// requester id) once per challenge, and only the last block (responder id
// ‖ nonce) per attempt, through lukechampine.com/blake3/guts (about 10 M
// attempts a second per core, 2^effort attempts expected).
//
// # Files
//
//	b3.go       the puzzle: constants, context key, fast-path digest, leading zero bits, nonce shape
//	seed.go     seed layout, hex decoding, MAC, expiry
//	issuer.go   Options, Challenge, Solution, Issuer (Issue, Verify, Pressure)
//	effort.go   the adaptive effort state machine
//	replay.go   the bounded replay memory with its watermark
//	ceiling.go  the global ceiling of solved requests a minute
//	solve.go    Solve, ShouldGiveUp, SolveChallenge
//	errors.go   the sentinel errors
//
// testdata/b3.json holds vectors from an independent implementation
// (seeds and MACs under a given key, digests, smallest solving nonces);
// the tests reproduce them exactly and check the fast path against the
// library's one-shot blake3.DeriveKey.
package challenge
