package peers

import (
	"github.com/ipfs/go-cid"

	"github.com/wats-network/wats/core"
	"github.com/wats-network/wats/eventlog"
	"github.com/wats-network/wats/limits"
	"github.com/wats-network/wats/proto"
)

// Holdings are the lookups Classify decides by, each an atomic read or a
// few Bloom-filtered pebble lookups.
type Holdings struct {
	// Head is the log's head.
	Head func() core.Cursor
	// HasEvent reports whether the log holds the event with this id.
	HasEvent func(id string) bool
	// Blob reports whether blob c is complete here or named by an event
	// here.
	Blob func(c cid.Cid) bool
}

// Classify is the cheap existence check of a request (ADR 0030), before
// admission and before any expensive work: whether it asks for what exists
// here (limits.ClassHit), for what never existed (ClassMiss, the abuse
// signal), or for what is missing for an honest reason (ClassExpected).
//
//   - sync: a cursor within the log is a hit; one at most a page
//     (core.MaxPageEvents) past the head is expected (a page being written,
//     a reader one page ahead); further is a miss.
//   - replicate: a hit when every blob is held here or named by an event
//     here; else a miss (the requester names blobs nobody announced, or
//     what is not a CID).
//   - crash_report: a miss when the log holds the event already (a
//     duplicate report); else a hit.
//   - hello: a hit.
func Classify(req *proto.Request, h Holdings) limits.Class {
	switch req.Type {
	case proto.TypeSync:
		head := h.Head()
		switch after := req.Sync.After; {
		case after <= head:
			return limits.ClassHit
		case after-head <= core.MaxPageEvents:
			return limits.ClassExpected
		}
		return limits.ClassMiss
	case proto.TypeReplicate:
		for _, b := range req.Replicate.Blobs {
			if c, err := cid.Decode(b.CID); err != nil || !h.Blob(c) {
				return limits.ClassMiss
			}
		}
	case proto.TypeCrashReport:
		if ev, err := eventlog.Decode(req.CrashReport.Event); err == nil && h.HasEvent(ev.ID) {
			return limits.ClassMiss
		}
	}
	return limits.ClassHit
}
