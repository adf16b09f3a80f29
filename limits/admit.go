package limits

import (
	"strconv"
	"time"

	"github.com/wats-network/wats/core"
)

// Class is what a request asks for, as the cheap existence check before
// any expensive work decides it (ADR 0030: limit on what is asked, not only
// on who asks). The zero Class is ClassHit.
type Class uint8

// The classes of a request.
const (
	// ClassHit: the request asks for what exists here (a sync cursor
	// within the log, a blob an event here names, a crash report not seen
	// before), or has nothing to look up (hello). ADR 0014's limits.
	ClassHit Class = iota
	// ClassMiss: the request asks for what never existed here (a cursor
	// past the head, a CID no event here names, a crash report already
	// stored). Misses are the abuse signal: counted in the peer's value
	// history and held to the miss budget (limits.miss_per_min) on top of
	// their type's rate.
	ClassMiss
	// ClassExpected: a miss with an honest cause (a blob removed here, a
	// cursor just past a head that is being written): handled as a hit
	// and not counted.
	ClassExpected

	// NumClasses is the number of Classes.
	NumClasses = 3
)

var classNames = [NumClasses]string{ClassHit: "hit", ClassMiss: "miss", ClassExpected: "expected"}

// String returns "hit", "miss", "expected", or "class(N)".
func (c Class) String() string {
	if c >= NumClasses {
		return "class(" + strconv.Itoa(int(c)) + ")"
	}
	return classNames[c]
}

// Facts are what admission knows of the requester when a request arrives.
type Facts struct {
	// Tier selects the rates (TierOf).
	Tier Tier
	// CanSolve: the peer advertised the "challenge" feature in its hello.
	// ADR 0014: a node never challenges a peer that did not.
	CanSolve bool
	// Reputed: the peer has ADR 0014's established reputation (in the
	// peer cache from an earlier run, or hello completed at least 10
	// minutes ago); it is served, not challenged, under overload.
	Reputed bool
}

// Request is what admission knows of one decoded request.
type Request struct {
	Type  core.Request
	Class Class
	// Solved: the request carried a solution that verified, within the
	// solved ceiling (challenge.Issuer.Verify). An invalid solution is
	// ignored, as if absent (ADR 0014): Solved is then false.
	Solved bool
	// InFlight is the number of /wats requests being handled, this one
	// included: above overload_in_flight the node is overloaded.
	InFlight int
}

// Verdict is admission's answer.
type Verdict uint8

const (
	// Serve the request.
	Serve Verdict = iota
	// Refuse it: {"type":"refused","reason":Refusal(kind)} with
	// retry_after_ms.
	Refuse
	// Challenge: answer with a b3 challenge at the current effort.
	Challenge
)

var verdictNames = [...]string{Serve: "serve", Refuse: "refuse", Challenge: "challenge"}

// String returns "serve", "refuse" or "challenge".
func (v Verdict) String() string {
	if int(v) >= len(verdictNames) {
		return "verdict(" + strconv.Itoa(int(v)) + ")"
	}
	return verdictNames[v]
}

// Reason says which rule gave a Decision.
type Reason uint8

const (
	// ReasonWithin: within every budget, not overloaded (or reputed, or
	// unable to solve).
	ReasonWithin Reason = iota
	// ReasonSolved: a valid solution let the request through (ADR 0014,
	// "What a solution buys").
	ReasonSolved
	// ReasonRate: over the peer's bucket for the request's type.
	ReasonRate
	// ReasonMisses: a miss over the peer's miss budget.
	ReasonMisses
	// ReasonOverload: the node is overloaded and the peer has no
	// reputation.
	ReasonOverload
	// ReasonInvalid: not a request type with a budget.
	ReasonInvalid
	// ReasonGreeting: a stranger's hello while the strangers' share of the
	// node's DHT requests cannot pay for the allowance a greeted stranger
	// gets (ADR 0059): minting greeted ids costs work while that share is
	// contested. Decided by the caller of Decide (peers.Table.Admit).
	ReasonGreeting
)

var reasonNames = [...]string{ReasonWithin: "within", ReasonSolved: "solved", ReasonRate: "rate",
	ReasonMisses: "misses", ReasonOverload: "overload", ReasonInvalid: "invalid", ReasonGreeting: "greeting"}

// String returns the reason's name: "within", "solved", "rate", "misses",
// "overload", "invalid" or "greeting".
func (r Reason) String() string {
	if int(r) >= len(reasonNames) {
		return "reason(" + strconv.Itoa(int(r)) + ")"
	}
	return reasonNames[r]
}

// Decision is admission's answer to one request.
type Decision struct {
	Verdict Verdict
	Reason  Reason
	// RetryAfter is, for Refuse, the exact wait until the bucket that
	// refused has a token (for retry_after_ms).
	RetryAfter time.Duration
	// Pressure: this request puts the node under pressure, which raises
	// the challenge's effort (ADR 0014: challenging a rate-limited peer,
	// or being overloaded).
	Pressure bool
}

// missIndex is the index of the miss budget in a State and a rate row.
const missIndex = core.NumRequests

// State is one peer's admission state: the GCRA state (TAT = ns +
// rem/perMin) of its bucket for each request type and of its miss budget.
// The zero State is every bucket full. A Table keeps one per active peer;
// Decide works on one passed in.
type State struct {
	ns  [core.NumRequests + 1]uint64
	rem [core.NumRequests + 1]uint16
}

// full reports whether every bucket of st is full at tick t: then it is the
// same as no state, and a Table may drop it.
func (st *State) full(t uint64) bool {
	for k := range st.ns {
		if !full(st.ns[k], st.rem[k], t) {
			return false
		}
	}
	return true
}

// Policy is the configuration admission decides by: the rates of each tier
// for each request type and the misses (ADR 0014's rates, scaled for the
// suspect and valued tiers by limits.suspect_percent and
// limits.valued_percent), limits.challenge and overload_in_flight. Build
// one with NewPolicy; it is immutable and safe to share.
type Policy struct {
	rates     [NumTiers][core.NumRequests + 1]Rate
	challenge bool
	overload  int
}

// NewPolicy returns the Policy of c. A value out of range is an error
// naming its key (Validate reports them all).
func NewPolicy(c Config) (*Policy, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	pl := &Policy{challenge: c.Challenge, overload: c.OverloadInFlight}
	for t := range Tier(NumTiers) {
		pct := t.percent(c.SuspectPercent, c.ValuedPercent)
		for _, k := range core.Requests() {
			pl.rates[t][k] = tierRate(c.PerMin(k), pct)
		}
		pl.rates[t][missIndex] = tierRate(c.MissPerMin, pct)
	}
	return pl, nil
}

// Rate returns the rate of request type k for a peer of tier t (the zero,
// unlimited Rate for an invalid k or t).
func (pl *Policy) Rate(t Tier, k core.Request) Rate {
	if !t.Valid() || !k.Valid() {
		return Rate{}
	}
	return pl.rates[t][k]
}

// MissRate returns the miss budget of a peer of tier t.
func (pl *Policy) MissRate(t Tier) Rate {
	if !t.Valid() {
		return Rate{}
	}
	return pl.rates[t][missIndex]
}

// Decide is admission (docs/design.md §7; ADR 0014, "When"; ADR 0030) as a pure
// function of the peer's state st, its facts f, the request r and now (ns
// from the caller's monotonic base, as for Table.Allow). It changes st
// only when it serves a request by the buckets, and only by the tokens that
// request takes. In this order:
//
//  1. A valid solution lets the request through, past the per-peer limit
//     and the overload, taking no token (ADR 0014, "What a solution buys";
//     the caller checked the global ceiling).
//  2. Over the peer's bucket for r.Type, or, for a miss, over its miss
//     budget: a peer that advertised "challenge" gets a challenge when
//     limits.challenge is on (pressure); any other peer is refused, with
//     the wait for a token. Nothing is taken.
//  3. Overloaded (r.InFlight above overload_in_flight): pressure; a peer
//     that advertised "challenge" and has no reputation gets a challenge
//     when limits.challenge is on, and nothing is taken (nothing was
//     served); every other peer is served as before.
//  4. Otherwise the request is served: it takes a token of r.Type and, for
//     a miss, one of the miss budget.
//
// An invalid request type or Tier is refused (ReasonInvalid) and changes nothing.
func (pl *Policy) Decide(st *State, f Facts, r Request, now int64) Decision {
	if !r.Type.Valid() || !f.Tier.Valid() {
		return Decision{Verdict: Refuse, Reason: ReasonInvalid}
	}
	if r.Solved {
		return Decision{Verdict: Serve, Reason: ReasonSolved}
	}
	t := tick(now)
	rates := &pl.rates[f.Tier]
	k := int(r.Type)
	// The buckets are tried on copies and written back only if served.
	kns, krem := st.ns[k], st.rem[k]
	mns, mrem := st.ns[missIndex], st.rem[missIndex]
	ok, wait := take(&rates[k], &kns, &krem, t)
	reason := ReasonRate
	if ok && r.Class == ClassMiss {
		ok, wait = take(&rates[missIndex], &mns, &mrem, t)
		reason = ReasonMisses
	}
	if !ok {
		if pl.challenge && f.CanSolve {
			return Decision{Verdict: Challenge, Reason: reason, Pressure: true}
		}
		return Decision{Verdict: Refuse, Reason: reason, RetryAfter: wait}
	}
	d := Decision{Verdict: Serve, Reason: ReasonWithin}
	if r.InFlight > pl.overload {
		d.Pressure = true
		if pl.challenge && f.CanSolve && !f.Reputed {
			d.Verdict, d.Reason = Challenge, ReasonOverload
			return d
		}
	}
	st.ns[k], st.rem[k] = kns, krem
	if r.Class == ClassMiss {
		st.ns[missIndex], st.rem[missIndex] = mns, mrem
	}
	return d
}

// take is the GCRA on one bucket of a State: an unlimited rate always
// allows and keeps no state.
func take(r *Rate, ns *uint64, rem *uint16, t uint64) (bool, time.Duration) {
	if r.perMin == 0 {
		return true, 0
	}
	return r.allow(ns, rem, t)
}
