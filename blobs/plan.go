package blobs

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/wats-network/wats/core"
)

// Bounds of one blob fetch (ADR 0014 "Providers" and "Backoff"; docs/design.md §9).
const (
	// MaxAttempts is how many providers one fetch tries at most, one after
	// the other. ADR 0014: 4, so a peer cannot keep a node busy by naming
	// providers that do not serve.
	MaxAttempts = 4

	// AttemptTimeout is the most one provider is given. ADR 0014: 60 s.
	AttemptTimeout = 60 * time.Second

	// FetchTimeout is the most one fetch takes, all attempts together.
	// ADR 0014: 120 s.
	FetchTimeout = 120 * time.Second
)

// Plan is the order and the time budget of one blob fetch (ADR 0014):
// the providers of its Sources in their order (First, then Named newest
// first, then those content routing found, Route, then Guesses; see
// Sources); providers under backoff are skipped
// (an exempt First is not); at most MaxAttempts are tried, one after the
// other, each until min(its start+AttemptTimeout, plan start+FetchTimeout).
//
// Use:
//
//	pl := blobs.NewPlan(blobs.Sources{First: requester, Named: hints}, self, backoff, now)
//	for {
//		p, deadline, ok := pl.Next(now)
//		if !ok {
//			break // pl.Err() says why
//		}
//		err := fetchFrom(ctx, p, deadline) // context.WithDeadline(ctx, deadline)
//		pl.Report(p, err, now)
//	}
//
// A Plan is not safe for concurrent use: one goroutine runs one fetch.
type Plan struct {
	b     *Backoff
	cands []candidate // Sources.candidates: deduplicated, in order
	// named is Sources.Named, where the candidates' addresses are.
	named []peer.AddrInfo
	next  int // index of the next candidate to consider
	start time.Time
	tried int
	// pending is the index in cands of the attempt Next gave and Report
	// has not seen yet; -1 when none.
	pending int
	done    bool
	err     error // why the plan ended; nil after a success
	last    error // the last provider error, for Err
	// skipped counts the candidates passed over under backoff; until is
	// the earliest end of their backoffs, untilID the candidate's.
	skipped int
	until   time.Time
	untilID peer.ID
	// routed counts the providers Route added, at most
	// core.MaxHintsPerBlob in all.
	routed int
}

// NewPlan returns the plan of a fetch from src starting at now. self is
// this node, never a candidate ("" for none). b is the node's shared
// backoff, consulted at each Next and told each outcome by Report; nil
// means no backoff. The Sources are used as given: NewPlan de-duplicates
// them (Sources.candidates) and keeps at most core.MaxHintsPerBlob Named.
// Nothing is set after construction.
func NewPlan(src Sources, self peer.ID, b *Backoff, now time.Time) *Plan {
	return &Plan{b: b, cands: src.candidates(self), named: src.Named, start: now, pending: -1}
}

// Routable reports whether the plan would take providers from content
// routing now (Route): attempts and time are left at now, and every
// candidate before the guesses has been given its attempt or skipped,
// so that what a peer claims to hold (First, Named, the DHT's) is tried
// before what is only guessed.
func (pl *Plan) Routable(now time.Time) bool {
	if pl.done && !errors.Is(pl.err, ErrNoProvider) {
		return false
	}
	if pl.tried >= MaxAttempts || !now.Before(pl.start.Add(FetchTimeout)) {
		return false
	}
	return pl.next >= len(pl.cands) || pl.cands[pl.next].guess
}

// SkipBackedOff passes over the candidates before the guesses that are
// under backoff at now (an exempt First is not), as Next would, so that
// Routable sees whether every claimed provider is spent before Next goes
// on to a guess.
func (pl *Plan) SkipBackedOff(now time.Time) {
	for pl.next < len(pl.cands) && !pl.cands[pl.next].guess && pl.skip(pl.next, now) {
		pl.next++
	}
}

// skip reports whether candidate i is under backoff at now (never for an
// exempt First), counting it among the skipped when it is.
func (pl *Plan) skip(i int, now time.Time) bool {
	if pl.b == nil || pl.cands[i].exempt {
		return false
	}
	skipped, until := pl.b.Skipped(pl.cands[i].id, now)
	if !skipped {
		return false
	}
	pl.skipped++
	if pl.until.IsZero() || until.Before(pl.until) {
		pl.until, pl.untilID = until, pl.cands[i].id
	}
	return true
}

// GuessesLeft reports whether guesses remain to be tried.
func (pl *Plan) GuessesLeft() bool {
	for _, c := range pl.cands[pl.next:] {
		if c.guess {
			return true
		}
	}
	return false
}

// Route adds found, providers a search found for the blob (connected
// peers that hold it, content routing's), after the candidates considered
// so far and those Route added before, and before the guesses left: each
// one that is neither a candidate already nor self, at most
// core.MaxHintsPerBlob in all over the plan's calls (ADR 0014: "a node
// keeps at most 16 hints per blob"), tried in the order found and backed
// off on failure as a named provider is. A plan that Next ended for want
// of a provider (ErrNoProvider; Waiting) goes on if Route added any; one
// that ended for another reason stays over, and so do MaxAttempts and
// FetchTimeout, which count from the plan's start. Route returns the
// providers it added, for their addresses.
func (pl *Plan) Route(found []peer.AddrInfo, self peer.ID) []peer.AddrInfo {
	if pl.done && !errors.Is(pl.err, ErrNoProvider) {
		return nil
	}
	var added []peer.AddrInfo
	var cands []candidate
	for _, ai := range found {
		if pl.routed+len(added) == core.MaxHintsPerBlob {
			break
		}
		if seen(cands, ai.ID, self) {
			continue
		}
		if i := slices.IndexFunc(pl.cands, func(c candidate) bool { return c.id == ai.ID }); i >= 0 {
			if i < pl.next || !pl.cands[i].guess {
				continue // considered already, or claimed before
			}
			// A guess left that the DHT names claims the blob now: it is
			// tried among the found, and backed off on failure.
			pl.cands = slices.Delete(pl.cands, i, i+1)
		}
		// Clipped: the caller's Sources.Named is never written past its length.
		pl.named = append(slices.Clip(pl.named), ai)
		cands = append(cands, candidate{id: ai.ID, named: int32(len(pl.named) - 1)})
		added = append(added, ai)
	}
	at := pl.next
	for at < len(pl.cands) && !pl.cands[at].guess {
		at++ // after the candidates not tried yet: those Route added before
	}
	pl.cands = slices.Insert(pl.cands, at, cands...)
	pl.routed += len(added)
	if len(added) > 0 && pl.done {
		pl.done, pl.err = false, nil
	}
	return added
}

// Waiting reports whether the plan is over only for want of a provider
// (ErrNoProvider): providers Route adds would let it go on.
func (pl *Plan) Waiting() bool { return pl.done && errors.Is(pl.err, ErrNoProvider) }

// Next returns the next provider to try at now and the deadline of that
// attempt, min(now+AttemptTimeout, start+FetchTimeout). ok is false when
// the plan is over: a provider succeeded, a size mismatch was reported,
// MaxAttempts were tried, FetchTimeout is spent, or no candidate is left
// that is not under backoff at now; Err says which. Each candidate is
// given at most one attempt, and a candidate skipped under backoff is not
// considered again. Calling Next before reporting the previous attempt
// starts the next one; the unreported attempt still counts, and records
// nothing in the backoff.
func (pl *Plan) Next(now time.Time) (p peer.ID, deadline time.Time, ok bool) {
	pl.pending = -1
	if pl.done {
		return "", time.Time{}, false
	}
	end := pl.start.Add(FetchTimeout)
	switch {
	case pl.tried >= MaxAttempts:
		pl.finish(ErrAttempts)
		return "", time.Time{}, false
	case !now.Before(end):
		pl.finish(ErrFetchTimeout)
		return "", time.Time{}, false
	}
	for pl.next < len(pl.cands) {
		i := pl.next
		c := pl.cands[i].id
		pl.next++
		if pl.skip(i, now) {
			continue
		}
		pl.tried++
		pl.pending = i
		deadline = now.Add(AttemptTimeout)
		if end.Before(deadline) {
			deadline = end
		}
		return c, deadline, true
	}
	switch {
	case len(pl.cands) == 0:
		pl.finish(fmt.Errorf("%w: none is known for this blob", ErrNoProvider))
	case pl.skipped > 0:
		pl.finish(fmt.Errorf("%w: %d of %d skipped, under backoff after a failed fetch (ADR 0014), the first, %s, until %s",
			ErrNoProvider, pl.skipped, len(pl.cands), pl.untilID, pl.until.UTC().Format(time.TimeOnly)))
	default:
		pl.finish(ErrNoProvider)
	}
	return "", time.Time{}, false
}

// Report records the outcome of the attempt on p that Next gave last: a
// nil err is a success, which clears p's backoff and ends the plan; an err
// wrapping ErrSizeMismatch, ErrCollection or ErrBadBlob ends the plan
// without backing p off (the content belongs to the CID); an err wrapping
// context.Canceled (the node gave up, not the provider) records nothing; any other err, a timeout
// included, backs p off at now, unless p is a guess (Sources.Guesses). A
// report for another provider than the pending one, or a second report, is
// ignored.
func (pl *Plan) Report(p peer.ID, err error, now time.Time) {
	if pl.pending < 0 || p == "" || p != pl.cands[pl.pending].id || pl.done {
		return
	}
	guess := pl.cands[pl.pending].guess
	pl.pending = -1
	switch {
	case err == nil:
		if pl.b != nil {
			pl.b.Succeeded(p)
		}
		pl.done, pl.err = true, nil
	case ContentFault(err), errors.Is(err, ErrStore):
		pl.done, pl.err = true, err
	case errors.Is(err, context.Canceled):
		pl.last = err
	default:
		if pl.b != nil && !guess {
			pl.b.Failed(p, now)
		}
		pl.last = err
	}
}

// finish ends the plan with reason, wrapping the last provider error.
func (pl *Plan) finish(reason error) {
	pl.done = true
	if pl.last != nil {
		pl.err = fmt.Errorf("%w: last attempt: %w", reason, pl.last)
	} else {
		pl.err = reason
	}
}

// Err returns why the plan ended: nil while it runs or after a success;
// the size-mismatch error as reported; or an error wrapping ErrAttempts,
// ErrFetchTimeout or ErrNoProvider (and the last provider error, if any).
func (pl *Plan) Err() error { return pl.err }

// Done reports whether the plan is over (Next returned ok false, or a
// success or a size mismatch was reported).
func (pl *Plan) Done() bool { return pl.done }

// Attempts returns how many attempts Next has given.
func (pl *Plan) Attempts() int { return pl.tried }

// Start returns the time the plan began (NewPlan's now).
func (pl *Plan) Start() time.Time { return pl.start }
