package node

import (
	"fmt"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/wats-network/wats/eventlog"
	"github.com/wats-network/wats/limits"
	"github.com/wats-network/wats/peercache"
	"github.com/wats-network/wats/proto"

	"github.com/wats-network/wats/core"
)

// admission is the state of Node.admit: ADR 0014's per-peer token buckets
// (with ADR 0030's tiers and miss budgets), decided by limits.Policy.
type admission struct {
	table *limits.Table
	// strangerReports is the strangers' shared crash-report budget
	// (limits.stranger_report_per_min, ADR 0030).
	strangerReports *limits.Shared
}

func newAdmission(cfg limits.Config) (*admission, error) {
	table, err := limits.NewTable(cfg, nil)
	if err != nil {
		return nil, err
	}
	reports, err := limits.NewRate(cfg.StrangerReportPerMin)
	if err != nil {
		return nil, fmt.Errorf("limits.stranger_report_per_min: %w", err)
	}
	return &admission{table: table, strangerReports: limits.NewShared(reports)}, nil
}

// admit decides, for each decoded request and before any expensive work,
// whether to serve req from st's peer (docs/design.md §7, ADR 0014, ADR 0030). It
// returns nil to serve, or the response to send instead. class is what the
// cheap existence check found the request to ask for; inFlight is the
// number of /wats requests being handled, this one included.
//
// The decision itself is limits.Policy.Decide, a pure function of the
// peer's facts (tier, advertised challenge, reputation), the request
// (type, class, a verified solution, the load) and the monotonic clock,
// run on the peer's bucket state in the Table; see testdata/admit.txt in
// package limits for every rule. Around it, admit verifies a solution (an
// invalid one is counted and ignored, ADR 0014), issues the challenge,
// reports pressure to the effort, logs "peer throttled" within its caps and
// counts the outcome in the peer's value history. A stranger's crash
// report the Policy would serve is also held to the strangers' shared
// budget (limits.stranger_report_per_min): refused past it, with the wait
// for its next token. It takes no lock of the node's: the peer's state is
// read through atomics, and the Table takes one of its 64 shard locks (the
// shared budget its own, for strangers' reports only).
func (n *Node) admit(st *peerState, req *proto.Request, class limits.Class, inFlight int) proto.Message {
	k, ok := req.Type.Request()
	if !ok {
		return nil // not a request type with a budget
	}
	now := n.now()
	mono := n.mono(now)
	solved := req.Solution != nil && n.checkSolution(st, req.Solution, now, mono)
	d := n.adm.table.Admit(st.id, st.facts(mono), limits.Request{Type: k, Class: class, Solved: solved, InFlight: inFlight}, int64(mono))
	if d.Pressure {
		n.issuer.Pressure(mono)
	}
	if class == limits.ClassMiss {
		n.count(st, &st.hist.misses, 1)
		n.m.miss(k)
	}
	if d.Verdict == limits.Serve && k == core.CrashReport && class != limits.ClassMiss && st.Tier().Stranger() {
		// The strangers' shared budget, on top of the peer's own (whose
		// token this request has spent): every report is a durable write.
		if ok, wait := n.adm.strangerReports.Allow(int64(mono)); !ok {
			d = limits.Decision{Verdict: limits.Refuse, Reason: limits.ReasonRate, RetryAfter: wait}
			n.m.strangerReportRefused()
		}
	}
	switch d.Verdict {
	case limits.Serve:
		if class != limits.ClassMiss {
			n.count(st, &st.hist.served, 1)
		}
		st.lastActive.Store(int64(mono))
		st.servedHere.Add(1)
		if solved {
			n.count(st, &st.hist.solved, 1)
			// A solution is value (ADR 0030) the first time: a peer with
			// a record, or whose record is put off already, starts
			// nothing more.
			if !st.persisted.Load() && st.pendingValue() == "" {
				n.go_(func() { n.showedValue(st, peercache.ValueSolved) })
			}
		}
		return nil
	case limits.Challenge:
		if c := n.issue(st, now, mono); c != nil {
			n.count(st, &st.hist.challenged, 1)
			if d.Reason != limits.ReasonOverload {
				n.throttled(st, k, mono)
			}
			return c
		}
		if d.Reason == limits.ReasonOverload {
			// No challenge can be made for this peer: served as before.
			n.count(st, &st.hist.served, 1)
			return nil
		}
	}
	n.count(st, &st.hist.refused, 1)
	n.throttled(st, k, mono)
	return &proto.Refused{Reason: limits.Refusal(k), RetryAfterMs: limits.RetryAfterMs(d.RetryAfter)}
}

// classify is the cheap existence check of a request (ADR 0030), before admission and before any expensive work: whether it asks for
// what exists here (limits.ClassHit), for what never existed (ClassMiss,
// the abuse signal), or for what is missing for an honest reason
// (ClassExpected). Each check is an atomic read or a few Bloom-filtered
// pebble lookups.
//
//   - sync: a cursor within the log is a hit; one at most a page past the
//     head is expected (a page being written, a reader one page ahead);
//     further is a miss.
//   - replicate: a hit when every blob is held here or named by an event
//     here; else a miss (the requester names blobs nobody announced).
//   - crash_report: a miss when the log holds the event already (a
//     duplicate report); else a hit.
//   - hello: a hit.
func (n *Node) classify(req *proto.Request) limits.Class {
	switch req.Type {
	case proto.TypeSync:
		head := n.events.Head()
		switch after := req.Sync.After; {
		case after <= head:
			return limits.ClassHit
		case after-head <= core.MaxPageEvents:
			return limits.ClassExpected
		}
		return limits.ClassMiss
	case proto.TypeReplicate:
		for _, b := range req.Replicate.Blobs {
			if !n.blobKnown(b.CID) {
				return limits.ClassMiss
			}
		}
	case proto.TypeCrashReport:
		if id, ok := eventID(req.CrashReport.Event); ok && n.has(id) {
			return limits.ClassMiss
		}
	}
	return limits.ClassHit
}

// peerOf returns the run state of p for a request on one of its streams.
func (n *Node) peerOf(p peer.ID) *peerState {
	if st := n.run.get(p); st != nil {
		return st
	}
	// A stream can be handled before the connection notice ran.
	dir := networkDirection(n, p)
	return n.peerState(p, dir)
}

// blobKnown reports whether the blob c (a CID string from a request) is
// held here or named by an event here: the existence check of a replicate
// request's blobs.
func (n *Node) blobKnown(s string) bool {
	c, err := cid.Decode(s)
	if err != nil {
		return false
	}
	if ok, _ := n.blobs.Has(c); ok {
		return true
	}
	ok, err := n.events.NamesBlob(c.String())
	return err == nil && ok
}

// eventID returns the id of a raw event, without verifying it.
func eventID(raw []byte) (string, bool) {
	ev, err := eventlog.Decode(raw)
	if err != nil {
		return "", false
	}
	return ev.ID, true
}
