package peers

import (
	"slices"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/wats-network/wats/api"
	"github.com/wats-network/wats/limits"
	"github.com/wats-network/wats/proto"
)

// GreetedRequests is the allowance of DHT requests a stranger gets with a
// hello this node serves (ADR 0059): what a newcomer's first lookups ask
// of one DHT server (a liveness check on each DHT, the refresh of its
// routing table, a search for providers and an advertisement), drawn
// before the strangers' shared budget of DHT requests, so that while
// Sybils keep that budget spent an honest newcomer is still served. It is
// paid up front: from that shared budget while it holds as much, else by
// a solved challenge, within a bound on those
// (limits.SolvedGreetingsPerMin); a stranger holds at most one at a time.
const GreetedRequests = 64

// Greeting is what the Table asks of the node's DHT when it serves a
// stranger's hello (Options.Greeting): take k tokens from the strangers'
// shared budget of DHT requests if it holds them all (funded), and
// whether a DHT serves strangers here at all (serving; false with the DHT
// off or a client only: no allowance is then worth a challenge).
type Greeting func(k int, mono time.Duration) (funded, serving bool)

// greetings are the greeted allowances a Table gave, by what paid for
// them, and the bound on those solutions pay for.
type greetings struct {
	// solvedBound is the bucket of the allowances solved challenges pay
	// for, all strangers together: limits.SolvedGreetingsPerMin of
	// limits.stranger_dht_per_min (ADR 0059, addendum), in allowances.
	solvedBound *limits.Shared
	// budget counts the allowances the strangers' shared budget paid for;
	// solved those a solution paid for; overSolved the solved hellos
	// served with none, solvedBound spent.
	budget, solved, overSolved atomic.Uint64
}

// greet decides, for a hello from st's peer that admission would serve at
// mono, whether the peer gets GreetedRequests DHT requests (ADR 0059), and
// rewrites v: a stranger whose allowance is spent (or never given) gets
// one if the strangers' shared budget of DHT requests pays for it now,
// else if its hello carried a solution that verified (solved: the work
// paid for it) within the bound on the allowances solutions pay for
// (limits.SolvedGreetingsPerMin; past it the solved hello is served with
// none, as any solved request is); otherwise, while a DHT serves strangers
// here and limits.challenge is on, a peer that can solve (its hello
// advertises "challenge", ADR 0014) is challenged instead of served, with
// pressure (the effort rises while minting greeted ids goes on), whatever
// its reputation (as over a rate, ADR 0014 "When" (1)); one that cannot is
// served without an allowance. Peers that showed value draw on budgets of
// their own and get none.
func (t *Table[L]) greet(st *Peer[L], hello *proto.Hello, solved bool, mono time.Duration, v *Verdict) {
	if t.greeting == nil || v.Verdict != limits.Serve || !st.Tier().Stranger() || st.greeted.Load() > 0 {
		return
	}
	funded, serving := t.greeting(GreetedRequests, mono)
	canSolve := st.canSolve.Load() || hello != nil && slices.Contains(hello.Features, proto.FeatureChallenge)
	switch {
	case !serving:
	case funded:
		t.greetings.budget.Add(1)
	case solved && t.greetings.paySolved(mono):
		funded = true
	case solved: // past the bound: served, as any solved request is
	case t.lim.Challenge && canSolve && st.rawOK:
		v.Decision = limits.Decision{Verdict: limits.Challenge, Reason: limits.ReasonGreeting, Pressure: true}
	}
	if funded {
		st.greeted.Store(GreetedRequests)
		v.Greeted = true
	}
}

// paySolved takes one allowance of the bound on those solutions pay for
// at mono, reporting whether it held one, and counts either outcome.
func (g *greetings) paySolved(mono time.Duration) bool {
	if ok, _ := g.solvedBound.Allow(int64(mono)); !ok {
		g.overSolved.Add(1)
		return false
	}
	g.solved.Add(1)
	return true
}

// Greetings adds to d, a DHT status, the greeted allowances given since
// the Table was made, by what paid for them, and the solved hellos served
// with none past the bound (ADR 0059), and returns it.
func (t *Table[L]) Greetings(d api.DHTStatus) api.DHTStatus {
	d.AllowancesBudget = t.greetings.budget.Load()
	d.AllowancesSolved = t.greetings.solved.Load()
	d.AllowancesOverSolved = t.greetings.overSolved.Load()
	return d
}

// TakeGreeted takes one DHT request of p's greeted allowance at mono
// (routing.Options.Greeted), reporting whether it had one left; false for
// a peer not connected. A request so served is activity, as a served
// request is for the stranger slots: the peer is spared as one that uses
// the node (Slots.Order).
func (t *Table[L]) TakeGreeted(p peer.ID, mono time.Duration) bool {
	st := t.Get(p)
	if st == nil {
		return false
	}
	for {
		n := st.greeted.Load()
		if n <= 0 {
			return false
		}
		if st.greeted.CompareAndSwap(n, n-1) {
			st.lastActive.Store(int64(mono))
			st.servedHere.Add(1)
			return true
		}
	}
}

// Greeted returns the DHT requests left of p's greeted allowance (0 for
// a peer not connected).
func (t *Table[L]) Greeted(p peer.ID) int {
	if st := t.Get(p); st != nil {
		return int(st.greeted.Load())
	}
	return 0
}
