package blobs

import (
	"github.com/libp2p/go-libp2p/core/peer"
	"slices"

	"github.com/wats-network/wats/core"
)

// Sources are where one fetch looks for a blob: the one shape of a fetch's
// providers, built by the caller (a replicate request, a crash report, an
// auto-fetch, the API's blob get) and handed unchanged, in a Request, to
// the Fetcher and on to NewPlan (ADR 0033, "One shape for a fetch"). A
// provider is a peer.AddrInfo where addresses may come with it, a peer.ID
// where only the id is known.
//
// The plan tries them in this order: First, then Named, then the
// providers content routing finds (the DHT's, when the fetcher has
// FetcherOptions.FindProviders; Plan.Route), then Guesses, each provider
// once, at its first place in that order (NewPlan removes the
// duplicates, the empty ids and the node itself, in one place:
// Sources.candidates). Within the bounds of every fetch (ADR 0014,
// "Backoff"): at most MaxAttempts (4) providers tried, one after the
// other, AttemptTimeout (60 s) each and FetchTimeout (120 s) in all; a
// provider whose attempt fails or times out is skipped by later fetches
// for BackoffBase (30 s), doubling with each further failure up to
// BackoffMax (1 h), and a success clears it. A provider under backoff is
// skipped when the plan reaches it, unless it is an exempt First.
//
// The zero Sources names no provider: its plan ends at once with
// ErrNoProvider.
type Sources struct {
	// First is tried before any other ("" for none): the requester of a
	// replicate request (docs/design.md §9, "the requester is the first
	// provider tried"), a crash report's submitter, or a peer an operator
	// named. It is backed off on failure like a named provider.
	First peer.ID
	// FirstExempt tries First even while it is under backoff: a peer an
	// operator named explicitly, as an explicit dial ignores the dial
	// backoff. A failure still backs it off for other fetches. Without a
	// First it means nothing.
	FirstExempt bool
	// Named are the providers named for the blob, newest first: the gossip
	// hints (Hints.Get), then those a replicate request named. They are
	// tried after First, in this order, and backed off on failure. Only
	// the first core.MaxHintsPerBlob (16) distinct ones are kept (ADR
	// 0014: "a node keeps at most 16 hints per blob"); their addresses go
	// to the peerstore for ProviderAddrTTL.
	Named []peer.AddrInfo
	// Guesses are providers nobody named for the blob, tried last, in this
	// order (an event's author, the peer it came from, the peers connected
	// after hello): a failure does not back them off, since they never
	// claimed to serve it (ADR 0029). A guess that is First or among Named
	// (even past the 16 kept) is that, not a guess.
	Guesses []peer.ID
}

// candidate is one provider of a plan, in the order of trial.
type candidate struct {
	id peer.ID
	// named is the candidate's index in Sources.Named, whose addresses it
	// has; -1 for First and the Guesses.
	named int32
	// guess: from Sources.Guesses, never backed off.
	guess bool
	// exempt: Sources.First with FirstExempt, tried under backoff.
	exempt bool
}

// candidates returns the providers of s in the order of trial: First,
// then the first core.MaxHintsPerBlob distinct Named, then the Guesses;
// each peer once, at its first place; no empty id and not self ("" for
// none). It is the one place where a fetch's providers are de-duplicated
// (ADR 0033), so the order and the bound are decided here only. Linear
// scans: at most 1 + 16 + a few guesses, fewer than a map costs.
func (s Sources) candidates(self peer.ID) []candidate {
	out := make([]candidate, 0, 1+min(len(s.Named), core.MaxHintsPerBlob)+len(s.Guesses))
	has := func(id peer.ID) bool { return seen(out, id, self) }
	if !has(s.First) {
		out = append(out, candidate{id: s.First, named: -1, exempt: s.FirstExempt})
	}
	kept := 0
	for i, ai := range s.Named {
		if kept == core.MaxHintsPerBlob {
			break
		}
		if !has(ai.ID) {
			out = append(out, candidate{id: ai.ID, named: int32(i)})
			kept++
		}
	}
	for _, g := range s.Guesses {
		if !has(g) && !named(s.Named, g) {
			out = append(out, candidate{id: g, named: -1, guess: true})
		}
	}
	return out
}

// seen reports whether id makes no candidate of its own: the empty ID,
// this node (self), or one of cands already. Every list of candidates is
// de-duplicated by it (candidates, Plan.Route).
func seen(cands []candidate, id, self peer.ID) bool {
	return id == "" || id == self || slices.ContainsFunc(cands, func(c candidate) bool { return c.id == id })
}

// named reports whether id is among infos.
func named(infos []peer.AddrInfo, id peer.ID) bool {
	for _, ai := range infos {
		if ai.ID == id {
			return true
		}
	}
	return false
}
