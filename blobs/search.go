package blobs

import (
	"context"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"
)

// MaxAsked bounds the connected peers one fetch asks whether they hold its
// blob (Exchange.Holders; docs/adr/0047): a want-have each, a few hundred
// bytes.
const MaxAsked = 64

// AskTimeout bounds the wait for the connected peers' answers to whether
// they hold a blob: a connected holder answers within a round trip, and a
// peer that answers nothing (gone without a word, or holding its answer
// back) must not hold the fetch. A variable so that tests can shorten it.
var AskTimeout = 5 * time.Second

// RouteWithGuesses bounds the search for providers by content routing
// when guesses are left to try after it: a search that finds nothing must
// not keep them waiting long. Without guesses left, the plan's
// FetchTimeout (and the node's own bound) is the search's.
const RouteWithGuesses = 10 * time.Second

// search is a fetch's look for providers beyond its Sources, begun once its
// plan has tried or skipped every provider that claimed the blob
// (Plan.Routable): its connected peers asked whether they hold the blob
// (FetcherOptions.Connected, Exchange.Holders) and content routing asked
// for providers (FetcherOptions.FindProviders), both at once
// (docs/adr/0047). What they find comes in batches to the fetch's
// goroutine (take), which adds them to the plan (Plan.Route): a holder as
// soon as it answers, one round trip for a connected one; content
// routing's providers when its search ends. A nil *search finds nothing.
type search struct {
	f       *Fetcher
	batches chan batch
	// left counts the searches not ended: each sends an end batch when it
	// ends. Only the fetch's goroutine reads it.
	left   int
	cancel context.CancelFunc
}

// batch is what a search found (providers), or its end.
type batch struct {
	found []peer.AddrInfo
	end   bool
}

// search starts the look for providers of c for pl; cancel it when the
// fetch ends.
func (f *Fetcher) search(ctx context.Context, pl *Plan, c cid.Cid) *search {
	ctx, cancel := context.WithCancel(ctx)
	// A place for every batch (a holder each, content routing's, an end
	// each): a search never waits to send, after the fetch ended too.
	s := &search{f: f, batches: make(chan batch, MaxAsked+3), cancel: cancel}
	if f.connected != nil {
		peers := f.connected()
		if len(peers) > MaxAsked {
			peers = peers[:MaxAsked]
		}
		s.left++
		go func() {
			actx, acancel := context.WithTimeout(ctx, AskTimeout)
			defer acancel()
			for a := range f.x.Holders(actx, c, peers) {
				// A peer that says it lacks the blob stays a guess: it may
				// not serve this node yet (hello not done on its side), and
				// hold the blob when the guesses' turn comes.
				if a.Holds {
					s.batches <- batch{found: []peer.AddrInfo{{ID: a.Peer}}}
				}
			}
			s.batches <- batch{end: true}
		}()
	}
	if f.find != nil {
		end := pl.Start().Add(FetchTimeout)
		if soon := f.now().Add(RouteWithGuesses); pl.GuessesLeft() && soon.Before(end) {
			end = soon
		}
		s.left++
		go func() {
			fctx, fcancel := context.WithDeadline(ctx, end)
			found := f.find(fctx, c)
			fcancel()
			if len(found) > 0 {
				s.batches <- batch{found: found}
			}
			s.batches <- batch{end: true}
		}()
	}
	return s
}

// running reports whether a search has not ended.
func (s *search) running() bool { return s != nil && s.left > 0 }

// take adds to pl what the searches found since the last take, with the
// addresses of the providers added in the peerstore, and reports whether
// it added any. With wait it waits for a batch that adds a provider, or
// for every search to end (each bounded by the fetch's time); without, it
// takes only what has come.
func (s *search) take(pl *Plan, wait bool) (added bool) {
	if s == nil {
		return false
	}
	for s.left > 0 {
		var b batch
		if wait && !added {
			b = <-s.batches // each search ends by its deadline or the fetch's context
		} else {
			select {
			case b = <-s.batches:
			default:
				return added
			}
		}
		switch {
		case b.end:
			s.left--
		default:
			ps := s.f.x.Host().Peerstore()
			for _, ai := range pl.Route(b.found, s.f.x.Host().ID()) {
				ps.AddAddrs(ai.ID, ai.Addrs, ProviderAddrTTL)
				added = true
			}
		}
	}
	return added
}
