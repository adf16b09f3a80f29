package limits

import (
	"fmt"
	"strconv"
	"time"

	"github.com/wats-network/wats/core"
)

// Tier is a peer's standing, worked out from its value history by TierOf
// (ADR 0030: tiered rate limits from value history): it selects the rates
// admission applies to the peer and the share of shared budgets (Pool,
// stream caps, connection slots) it may take. The zero Tier is TierNew, a
// peer that has shown nothing yet: the safe default for a peer the node
// knows nothing of. Tiers index arrays: a valid Tier is below NumTiers.
type Tier uint8

// The tiers, from the one given least to the one given most.
const (
	// TierNew: a peer without a record in the peer cache and no abuse
	// (never seen, seen without giving anything, or one that gave
	// something and whose record is still to come). ADR 0014's limits.
	TierNew Tier = iota
	// TierSuspect: a peer whose value history is dominated by abuse
	// signals (misses, invalid messages, failed solutions, streams held
	// past their deadline). Its rates are limits.suspect_percent of ADR
	// 0014's.
	TierSuspect
	// TierNormal: a peer that has shown value and has its record in the
	// peer cache (records are budgeted node-wide, ADR 0030). What a peer
	// gives in this run before its record is made does not lift it from
	// the strangers' shares: an event or a solution is cheap to make for
	// a fresh id. ADR 0014's limits.
	TierNormal
	// TierValued: a peer whose record is at least ValuedAge old and that
	// gave this node much (ValuedEvents events or ValuedBytes of blobs).
	// Its rates are limits.valued_percent of ADR 0014's: the configured
	// ceiling.
	TierValued

	// NumTiers is the number of Tiers; arrays indexed by Tier have this
	// length.
	NumTiers = 4
)

var tierNames = [NumTiers]string{TierNew: "new", TierSuspect: "suspect", TierNormal: "normal", TierValued: "valued"}

// String returns the tier's name: "new", "suspect", "normal", "valued", or
// "tier(N)" for an invalid Tier.
func (t Tier) String() string {
	if t >= NumTiers {
		return "tier(" + strconv.Itoa(int(t)) + ")"
	}
	return tierNames[t]
}

// Valid reports whether t is one of the NumTiers tiers.
func (t Tier) Valid() bool { return t < NumTiers }

// Stranger reports whether t is a tier of peers that have shown no value:
// new or suspect. Strangers share the budgets kept apart from the peers
// that have (Pool, the stranger connection slots of ADR 0030).
func (t Tier) Stranger() bool { return t == TierNew || t == TierSuspect }

// History is a peer's value history (ADR 0030): what it asked of this node
// and what it gave, as counts since it was first seen (the peer cache
// keeps them across runs for peers it holds). The zero History is a peer
// never seen.
type History struct {
	// Counts are its counts (core.Counts): its requests served (those
	// that asked for what exists: ClassHit, ClassExpected), its misses
	// (ClassMiss), invalid messages, failed solutions and solved
	// requests, streams it held past a deadline, and the events and blob
	// bytes it gave. Refused and Challenged do not enter its tier.
	core.Counts
	// Persisted: the peer has a record in the peer cache, which a peer
	// earns by showing value (ADR 0030).
	Persisted bool
	// Aged: its record was made at least ValuedAge ago (by the record's
	// first_seen and the wall clock), so that an id made today, whatever
	// it gave, is not valued today.
	Aged bool
}

// Thresholds of TierOf (ADR 0030). Counts are over the peer's whole
// history, so a long-lived honest peer's occasional miss or timeout is
// outweighed by what it was served; a fresh id has nothing to outweigh.
const (
	// SuspectMinBad is the least weight of abuse signals that can make a
	// peer suspect: a few misses (a race with a write, a guessed
	// provider) never do.
	SuspectMinBad = 16
	// SuspectRatio: a peer is suspect when its abuse weight times
	// SuspectRatio exceeds its good weight, i.e. more than one abuse
	// signal for every SuspectRatio good ones.
	SuspectRatio = 4
	// TimeoutWeight is the weight of a stream held past its deadline: an
	// honest peer's streams negotiate and send their request at once, so
	// four of them are as bad as sixteen misses.
	TimeoutWeight = 4
	// ValuedEvents and ValuedBytes are what a peer in the cache must have
	// given to be valued: 64 events, or 16 MiB of blobs.
	ValuedEvents = 64
	ValuedBytes  = 16 << 20
	// ValuedAge is how old a record must be (History.Aged) for its peer
	// to be valued: a day. Events and blobs are cheap to make; a day of
	// standing is not, for a flood of fresh ids.
	ValuedAge = 24 * time.Hour
	// bytesPerGood converts blob bytes given into good weight: one per
	// 64 KiB.
	bytesPerGood = 64 << 10
)

// TierOf works out a peer's tier from its history. In this order:
//
//   - suspect: the abuse weight (misses + invalid + failed + 4 × timeouts)
//     is at least SuspectMinBad and more than a quarter of the good weight
//     (served + solved + events given + one per 64 KiB of blobs given);
//   - valued: persisted, aged, and gave ValuedEvents events or ValuedBytes
//     of blobs;
//   - normal: persisted;
//   - new: otherwise (what a peer gave before its record is made counts
//     towards its good weight only).
//
// It is on the request path (every count that changes a history works the
// tier out again), so it allocates nothing; Explain says why in words.
func TierOf(h History) Tier {
	switch {
	case h.suspect():
		return TierSuspect
	case h.valued():
		return TierValued
	case h.Persisted:
		return TierNormal
	}
	return TierNew
}

// suspect reports TierOf's first rule.
func (h History) suspect() bool {
	bad := h.Misses + h.Invalid + h.Failed + TimeoutWeight*h.Timeouts
	good := h.Served + h.Solved + h.Events + h.Bytes/bytesPerGood
	return bad >= SuspectMinBad && bad*SuspectRatio > good
}

// valued reports TierOf's second rule.
func (h History) valued() bool {
	return h.Persisted && h.Aged && (h.Events >= ValuedEvents || h.Bytes >= ValuedBytes)
}

// Explain says in a phrase why h has the tier TierOf gives it, for `wats
// peers` and `wats peers cache`: e.g. "suspect: 20 misses, 0 invalid, 0
// failed solutions, 3 held streams against 12 served", or "normal: in the
// peer cache for less than a day" for a peer that gave enough to be valued
// but is not yet.
func Explain(h History) string {
	switch TierOf(h) {
	case TierSuspect:
		return fmt.Sprintf("suspect: %d misses, %d invalid, %d failed solutions, %d held streams against %d served",
			h.Misses, h.Invalid, h.Failed, h.Timeouts, h.Served)
	case TierValued:
		return fmt.Sprintf("valued: gave %d events and %d bytes of blobs", h.Events, h.Bytes)
	case TierNormal:
		switch {
		case h.Persisted && !h.Aged && (h.Events >= ValuedEvents || h.Bytes >= ValuedBytes):
			return "normal: gave enough to be valued, in the peer cache for less than a day"
		}
		return "normal: in the peer cache (it showed value)"
	}
	if h.Events > 0 || h.Bytes > 0 || h.Solved > 0 {
		return fmt.Sprintf("new: gave %d events, %d bytes of blobs, %d solved challenges; no record yet", h.Events, h.Bytes, h.Solved)
	}
	return "new: nothing shown yet"
}

// percent is the share of ADR 0014's rates a peer of tier t gets, in
// percent: suspect for a suspect (limits.suspect_percent), valued for a
// valued peer (limits.valued_percent), 100 for the others.
func (t Tier) percent(suspect, valued int) int {
	switch t {
	case TierSuspect:
		return suspect
	case TierValued:
		return valued
	}
	return 100
}

// tierRate is rate perMin scaled to pct percent, at least 1 a minute and
// at most MaxPerMin; 0 (unlimited) stays unlimited.
func tierRate(perMin, pct int) Rate {
	if perMin == 0 {
		return Rate{}
	}
	v := min(max(perMin*pct/100, 1), MaxPerMin)
	return newRate(v, adrBurst(v))
}
