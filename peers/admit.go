package peers

import (
	"time"

	"github.com/wats-network/wats/core"
	"github.com/wats-network/wats/limits"
	"github.com/wats-network/wats/proto"
)

// Verdict is the decision of Admit about one request, which the node
// carries out.
type Verdict struct {
	// Decision is limits.Policy's, after the strangers' shared budget:
	// Serve, Refuse (with its Reason and RetryAfter) or Challenge (the
	// node issues one: the peer has an Ed25519 key). Pressure: the node
	// reports load to the challenge's effort.
	limits.Decision
	// Miss: the request asked for what never existed (counted in the
	// peer's history).
	Miss bool
	// Shared: a stranger's crash report was refused by the strangers'
	// shared budget, not by its own.
	Shared bool
	// Throttled: the peer was refused or challenged past its limit; the
	// node logs "peer throttled" within its caps.
	Throttled bool
	// FirstSolution: a verified solution, the peer's first value shown
	// (ADR 0030): the node gives it a record (ShowedValue with
	// peercache.ValueSolved) off the request path.
	FirstSolution bool
	// Greeted: a stranger's hello gave it GreetedRequests DHT requests
	// (ADR 0059).
	Greeted bool
	// Tier is the peer's tier after the request's counts; Retiered
	// reports that it moved there.
	Tier     limits.Tier
	Retiered bool
}

// Admit decides, for each decoded request and before any expensive work,
// whether to serve a request of type k from st's peer at the monotonic
// reading mono (docs/design.md §7, ADR 0014, ADR 0030). class is what the
// cheap existence check found it to ask for; solved reports a solution the
// node verified (an invalid one is ignored, as if absent: ADR 0014);
// inFlight is the number of requests being handled, this one included;
// hello is the request's hello for a hello (nil otherwise): whether it
// advertises "challenge" (ADR 0014).
//
// The decision is limits.Policy.Decide, a pure function of the peer's
// facts (tier, advertised challenge, reputation), the request and the
// clock, run on the peer's own buckets, held out of the admission Table
// while it is connected (limits.Held; see testdata/admit.txt in package
// limits for every rule). Around it, a
// stranger's crash report the Policy would serve is also held to the
// strangers' shared budget (limits.stranger_report_per_min): refused past
// it, with the wait for its next token; a challenge for a peer that cannot
// be sent one (no Ed25519 key) is a refusal, or under overload a serve; a
// stranger's hello gets its greeted allowance of DHT requests, or a
// challenge when nothing pays for one (greet, ADR 0059); and the outcome
// is counted in the peer's value history. It takes no
// lock wider than the peer's own: its admission state's (limits.Held),
// and its state's for a verified solution; beyond it only the strangers'
// report budget's, for strangers' reports, and its shard's when the peer
// connected with the admission Table at its cap (a shared budget by
// design).
func (t *Table[L]) Admit(st *Peer[L], k core.Request, hello *proto.Hello, class limits.Class, solved bool, inFlight int,
	mono time.Duration) Verdict {
	v := Verdict{Decision: st.adm.Admit(st.facts(mono), limits.Request{Type: k, Class: class, Solved: solved, InFlight: inFlight}, int64(mono))}
	add := func(c Counter) {
		tier, changed := st.Add(c, 1)
		v.Tier, v.Retiered = tier, v.Retiered || changed
	}
	v.Tier = st.Tier()
	if class == limits.ClassMiss {
		v.Miss = true
		add(Misses)
	}
	if v.Verdict == limits.Serve && k == core.CrashReport && class != limits.ClassMiss && st.Tier().Stranger() {
		// The strangers' shared budget, on top of the peer's own (whose
		// token this request has spent): every report is a durable write.
		if ok, wait := t.strangerReports.Allow(int64(mono)); !ok {
			v.Decision = limits.Decision{Verdict: limits.Refuse, Reason: limits.ReasonRate, RetryAfter: wait}
			v.Shared = true
		}
	}
	if k == core.Hello {
		t.greet(st, hello, solved, mono, &v)
	}
	if v.Verdict == limits.Challenge && !st.rawOK {
		v.Verdict = limits.Refuse
		if v.Reason == limits.ReasonOverload {
			v.Verdict = limits.Serve // no challenge can be made for it: served as before
		}
	}
	switch v.Verdict {
	case limits.Serve:
		if class != limits.ClassMiss {
			add(Served)
		}
		if k != core.Sync { // a sync request is active once its page is granted (Table.Page)
			st.lastActive.Store(int64(mono))
			st.servedHere.Add(1)
		}
		if solved {
			add(Solved)
			v.FirstSolution = !st.persisted.Load() && st.pendingValue() == ""
			st.paidAt.Store(int64(mono) + 1) // it paid: the stranger slots spare it (ADR 0060)
		}
	case limits.Challenge:
		add(Challenged)
		st.challengedHere.Add(1)
		// Its answer is awaited: as active, for the stranger slots, as a
		// peer served, though served nothing (ADR 0060).
		st.lastActive.Store(int64(mono))
		v.Throttled = v.Reason != limits.ReasonOverload && v.Reason != limits.ReasonGreeting
	default:
		add(Refused)
		st.refusedHere.Add(1)
		v.Throttled = true
	}
	return v
}
