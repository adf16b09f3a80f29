package challenge

import (
	"fmt"
	"time"

	"github.com/wats-network/wats/core"
)

// EffortInterval is the step of the adaptive effort. ADR 0014, "Adaptive
// effort": "For each 10 s interval during which the node was under
// pressure, it rises by one bit ...; for each interval without pressure
// it falls by one bit".
const EffortInterval = 10 * time.Second

// Effort is the adaptive effort of ADR 0014 (after Tor proposal 327), a
// deterministic state machine driven by the monotonic readings passed in
// (nanoseconds from a base the caller picks, as time.Since(start) gives):
// a step of the wall clock cannot stop it, since it never sees one.
//
// Time is cut into EffortInterval intervals, aligned to multiples of
// EffortInterval of the monotonic base (so that a caller can tell two
// readings of one interval apart without the controller: Issuer.Pressure). When an interval ends, the effort rises one bit (up to
// max) if Pressure was reported during it, and falls one bit (never below
// base) otherwise; an interval in which nothing was reported at all is a
// quiet one. Times earlier than the current interval count as inside it.
//
// The zero Effort is not usable; build one with NewEffort. Not safe for
// concurrent use; Issuer guards its own with its mutex.
type Effort struct {
	base, max int
	bits      int
	started   bool
	start     time.Duration // monotonic, start of the current interval
	pressured bool          // pressure reported in the current interval
}

// NewEffort returns a controller at base bits. It validates
// 1 <= base <= max <= core.MaxChallengeEffort (ADR 0025) and returns
// an error wrapping ErrConfig otherwise.
func NewEffort(base, max int) (*Effort, error) {
	if err := validateBits(base, max); err != nil {
		return nil, err
	}
	return &Effort{base: base, max: max, bits: base}, nil
}

func validateBits(base, max int) error {
	if base < 1 || base > max || max > core.MaxChallengeEffort {
		return fmt.Errorf("%w: need 1 <= challenge_base_bits (%d) <= challenge_max_bits (%d) <= %d",
			ErrConfig, base, max, core.MaxChallengeEffort)
	}
	return nil
}

// advance closes the intervals that ended by mono.
func (e *Effort) advance(mono time.Duration) {
	t := mono
	if !e.started {
		e.started, e.start = true, intervalStart(t)
		return
	}
	if t-e.start < EffortInterval {
		return
	}
	k := int64((t - e.start) / EffortInterval) // intervals ended, >= 1
	if e.pressured {
		e.bits = min(e.bits+1, e.max)
		k--
	}
	// The remaining k intervals were quiet; k may be huge after a long
	// idle period, so clamp instead of looping.
	if k >= int64(e.bits-e.base) {
		e.bits = e.base
	} else {
		e.bits -= int(k)
	}
	e.start += (t - e.start) / EffortInterval * EffortInterval
	e.pressured = false
}

// intervalStart is the start of the EffortInterval holding mono.
func intervalStart(mono time.Duration) time.Duration {
	start := mono / EffortInterval * EffortInterval
	if start > mono { // negative readings round toward zero
		start -= EffortInterval
	}
	return start
}

// Pressure reports that the node is under pressure at the monotonic
// reading mono: overloaded, or challenging a rate-limited peer (ADR 0014).
// Several reports in one interval count once.
func (e *Effort) Pressure(mono time.Duration) {
	e.advance(mono)
	e.pressured = true
}

// Bits returns the effort at the monotonic reading mono, in leading zero
// bits, base..max.
func (e *Effort) Bits(mono time.Duration) int {
	e.advance(mono)
	return e.bits
}
