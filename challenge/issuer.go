package challenge

import (
	"crypto/rand"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"lukechampine.com/blake3"

	"github.com/wats-network/wats/core"
)

// NoCeiling is the Options.SolvedPerMin of an Issuer without a global
// ceiling of solved requests (tests and benches).
const NoCeiling = -1

// Options configure an Issuer (NewIssuer). The zero value, or nil, is ADR
// 0014's defaults; EnsureDefaults fills them in and Validate checks the
// ranges, as pebble's Options do.
type Options struct {
	// BaseBits is the effort the node starts at and falls back to, in
	// leading zero bits: limits.challenge_base_bits, 1..MaxBits; 0 means
	// core.DefaultChallengeBaseBits (8).
	BaseBits int
	// MaxBits is the effort the node rises to at most under sustained
	// pressure: limits.challenge_max_bits, BaseBits..core.MaxChallengeEffort;
	// 0 means core.DefaultChallengeMaxBits (24).
	MaxBits int
	// SolvedPerMin is the global ceiling of solved requests in any minute,
	// 1..core.MaxPerMin; 0 means core.DefaultSolvedPerMin (1,200), and
	// NoCeiling none. The node passes limits.Limits.SolvedPerMin.
	SolvedPerMin int
	// Key is the MAC key of the seeds. nil (the normal case) means a fresh
	// random key per Issuer, so seeds do not outlive the process; tests
	// set it to reproduce vectors.
	Key *[KeyLen]byte
}

// EnsureDefaults sets each zero field of o to its default (ADR 0014: base 8
// bits, max 24 bits, 1,200 solved requests a minute) and returns o; on a
// nil o it returns new Options of the defaults.
func (o *Options) EnsureDefaults() *Options {
	if o == nil {
		o = &Options{}
	}
	if o.BaseBits == 0 {
		o.BaseBits = core.DefaultChallengeBaseBits
	}
	if o.MaxBits == 0 {
		o.MaxBits = core.DefaultChallengeMaxBits
	}
	if o.SolvedPerMin == 0 {
		o.SolvedPerMin = core.DefaultSolvedPerMin
	}
	return o
}

// Validate checks the ranges documented on each field, with the defaults
// filled in; errors wrap ErrConfig. A nil o is valid.
func (o *Options) Validate() error {
	c := o.clone().EnsureDefaults()
	if err := validateBits(c.BaseBits, c.MaxBits); err != nil {
		return err
	}
	if c.SolvedPerMin != NoCeiling && (c.SolvedPerMin < 1 || c.SolvedPerMin > core.MaxPerMin) {
		return fmt.Errorf("%w: solved_per_min %d not in 1..%d (or NoCeiling)", ErrConfig, c.SolvedPerMin, core.MaxPerMin)
	}
	return nil
}

// clone returns a copy of o (nil for a nil o).
func (o *Options) clone() *Options {
	if o == nil {
		return nil
	}
	c := *o
	return &c
}

// Challenge is the content of a challenge response (ADR 0014,
// "Messages"): {"type":"challenge","alg":"b3","seed":"<64 hex>",
// "effort":N,"expires":<unix s>}. The wire encoding is proto's.
type Challenge struct {
	Alg     string // Alg
	Seed    string // SeedHexLen lowercase hex digits
	Effort  int    // leading zero bits
	Expires int64  // unix seconds
}

// Solution is the content of the top-level "solution" field of a
// resubmitted request (ADR 0014, "Messages"): {"alg":"b3","seed":"<as
// received>","nonce":"<decimal>"}. The wire decoding is proto's; the
// checks on each field are Verify's.
type Solution struct {
	Alg   string
	Seed  string
	Nonce string
}

// Issuer is the responder side of the b3 challenge: it issues stateless
// seeds at the current adaptive effort and verifies solutions, keeping the
// replay memory and the solved ceiling. It is safe for concurrent use.
//
// Each call takes two readings of the clock: now, the wall clock, for what
// the wire carries (a seed's expiry in unix seconds), and mono, a
// monotonic reading (nanoseconds from a base the caller picks, e.g.
// time.Since(start)), for the effort's intervals and the solved ceiling's
// minute, so that a step of the wall clock neither closes the ceiling nor
// stalls the effort for the length of the step.
//
// The wall clock may still step back. A seed the replay memory forgot
// because it expired then looks unexpired again; the memory's watermark
// refuses it (replayMemory). A step back of more than SeedLifetime would
// make the watermark refuse every new seed too, until the clock caught up;
// instead the Issuer then draws a new MAC key and starts an empty replay
// memory: every seed issued before no longer verifies (ErrBadMAC), so none
// can be replayed, and new ones are accepted at once.
type Issuer struct {
	self [IDLen]byte // this node's id: the responder id of its puzzles
	// key is the seed MAC key; replaced, never changed, by rotateLocked.
	key atomic.Pointer[issuerKey]
	// pressured is the start, plus one, of the last effort interval in
	// which Pressure recorded pressure: later reports in it need no lock.
	pressured atomic.Int64

	mu struct {
		sync.Mutex
		effort  *Effort
		used    *replayMemory
		ceiling *ceiling
	}
}

// issuerKey is one generation of the MAC key.
type issuerKey struct {
	raw [KeyLen]byte
	mac macKey
}

// NewIssuer returns an Issuer for the node whose raw Ed25519 public key is
// self, configured by opts (nil: the defaults; opts itself is not
// changed). It validates opts (errors wrap ErrConfig) and draws the MAC key
// from crypto/rand when opts.Key is nil.
func NewIssuer(self [IDLen]byte, opts *Options) (*Issuer, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	cfg := opts.clone().EnsureDefaults()
	var key [KeyLen]byte
	if cfg.Key != nil {
		key = *cfg.Key
	} else {
		rand.Read(key[:]) // never fails (crypto/rand, Go 1.24+)
	}
	e, err := NewEffort(cfg.BaseBits, cfg.MaxBits)
	if err != nil {
		return nil, err
	}
	is := &Issuer{self: self}
	is.key.Store(&issuerKey{raw: key, mac: newMACKey(&key)})
	is.mu.effort = e
	is.mu.used = newReplayMemory(MaxUsedSeeds)
	is.mu.ceiling = newCeiling(max(cfg.SolvedPerMin, 0))
	return is, nil
}

// Issue returns a challenge for requester (its raw Ed25519 public key) at
// the effort of the monotonic reading mono, expiring SeedLifetime after
// now (rounded down to the second). The seed binds requester, the effort
// and the expiry; its 7 random bytes come from crypto/rand.
func (is *Issuer) Issue(requester [IDLen]byte, now time.Time, mono time.Duration) Challenge {
	var random [RandomLen]byte
	rand.Read(random[:]) // never fails (crypto/rand, Go 1.24+)
	is.mu.Lock()
	is.rotateIfSteppedBackLocked(now)
	effort := is.mu.effort.Bits(mono)
	k := is.key.Load()
	is.mu.Unlock()
	expires := now.Add(SeedLifetime).Unix()
	seed := k.mac.mint(&requester, expires, effort, random)
	return Challenge{Alg: Alg, Seed: seed.String(), Effort: effort, Expires: expires}
}

// Pressure reports that the node is under pressure at the monotonic
// reading mono (overloaded, or challenging a rate-limited peer): see
// Effort. Reports after the first in an interval count for nothing more,
// and cost an atomic load: a node under overload reports on every request.
func (is *Issuer) Pressure(mono time.Duration) {
	w := int64(intervalStart(mono)) + 1
	if is.pressured.Load() == w {
		return
	}
	is.mu.Lock()
	is.mu.effort.Pressure(mono)
	is.pressured.Store(w)
	is.mu.Unlock()
}

// Effort returns the effort at the monotonic reading mono, in leading zero
// bits (for the effort gauge).
func (is *Issuer) Effort(mono time.Duration) int {
	is.mu.Lock()
	defer is.mu.Unlock()
	return is.mu.effort.Bits(mono)
}

// UsedSeeds returns how many used seeds the replay memory holds at now,
// 0..MaxUsedSeeds.
func (is *Issuer) UsedSeeds(now time.Time) int {
	is.mu.Lock()
	defer is.mu.Unlock()
	is.mu.used.prune(now)
	return is.mu.used.len()
}

// Verify checks a solution sent by requester to this node at now (wall
// clock) and mono (monotonic reading), in the order of docs/design.md §7: alg
// (ErrUnknownAlg), seed shape (ErrBadSeed), MAC for this requester
// (ErrBadMAC), expiry (ErrExpired), nonce shape (ErrBadNonce), work
// against the seed's effort byte (ErrInsufficientWork), replay
// (ErrReplayed, ErrForgotten) and the global ceiling (ErrCeiling). On
// success the seed is recorded as used and one solved request is taken
// from the ceiling; on any error nothing changes. It does not allocate.
func (is *Issuer) Verify(sol Solution, requester [IDLen]byte, now time.Time, mono time.Duration) error {
	k := is.key.Load()
	seed, err := is.check(k, &sol, &requester, now)
	if err != nil {
		return err
	}
	is.mu.Lock()
	defer is.mu.Unlock()
	is.rotateIfSteppedBackLocked(now)
	if is.key.Load() != k {
		// The key was replaced since the check: the replay memory of
		// its seeds is gone, so this one cannot be told from a replay.
		return ErrForgotten
	}
	used := is.mu.used
	used.prune(now)
	exp := seed.Expires()
	if err := used.check(&seed, exp); err != nil {
		return err
	}
	if !is.mu.ceiling.allow(int64(mono)) {
		return ErrCeiling
	}
	used.add(&seed, exp)
	return nil
}

// rotationContext derives each MAC key generation from the one before, so
// that a test's fixed Config.Key still gives reproducible seeds after a
// rotation.
const rotationContext = "wats challenge v1 key rotation"

// rotateIfSteppedBackLocked replaces the MAC key and empties the replay
// memory when a seed issued at now would expire no later than a seed the
// memory forgot because it had expired: the wall clock stepped back more
// than SeedLifetime (see Issuer). Seeds forgotten for room never cause it:
// the ADR's rule refuses those seeds' peers until a new challenge.
//
// REQUIRES: is.mu held.
func (is *Issuer) rotateIfSteppedBackLocked(now time.Time) {
	if now.Add(SeedLifetime).Unix() > is.mu.used.expiredMark {
		return
	}
	old := is.key.Load()
	var next [KeyLen]byte
	blake3.DeriveKey(next[:], rotationContext, old.raw[:])
	is.key.Store(&issuerKey{raw: next, mac: newMACKey(&next)})
	is.mu.used = newReplayMemory(MaxUsedSeeds)
}

// check runs the stateless checks of Verify.
func (is *Issuer) check(k *issuerKey, sol *Solution, requester *[IDLen]byte, now time.Time) (Seed, error) {
	if sol.Alg != Alg {
		return Seed{}, ErrUnknownAlg
	}
	seed, err := ParseSeed(sol.Seed)
	if err != nil {
		return Seed{}, err
	}
	if !k.mac.valid(&seed, requester) {
		return Seed{}, ErrBadMAC
	}
	if expired(seed.Expires(), now) {
		return Seed{}, ErrExpired
	}
	if err := CheckNonce(sol.Nonce); err != nil {
		return Seed{}, err
	}
	p := newPuzzle(&seed, requester, &is.self)
	d := p.digest(sol.Nonce)
	if !meetsEffort(d, seed.Effort()) {
		return Seed{}, ErrInsufficientWork
	}
	return seed, nil
}
