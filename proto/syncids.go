package proto

import (
	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Sync by id range (ADR 0052): an optional extension of the sync request,
// so that a node behind several peers can split its catch-up among them.
// A peer's cursor is a position in that peer's log alone, and the logs
// order their events differently; ids are the same everywhere, so the
// requester splits the id space into shards and asks each peer for a
// share of them, and asks a range's fingerprint (count and sum of its
// ids, as range-based set reconciliation does) to learn without a
// transfer that a peer holds nothing in it that the requester lacks.
//
//	{"type":"sync","after":"0","limit":256,"ids":{"from":"<64 hex>","to":"<64 hex>"}}
//	{"type":"sync","after":"0","limit":256,"ids":{"from":"<64 hex>"},"fingerprint":true}
//
// A node that serves these advertises FeatureSyncIDs in its hello; a node
// sends them to no other peer (an older one ignores "ids" and would answer
// with the page after "after").
//
// A range's list of ids (ADR 0057), negentropy's last step: a requester
// whose fingerprint of a range differs from a peer's asks for the ids the
// peer holds in it, and fetches only those it lacks.
//
//	{"type":"sync","after":"0","limit":256,"ids":{"from":"<64 hex>","to":"<64 hex>"},"id_list":true}
//	{"type":"sync","events":[],"next":"90000","more":false,"ids":["<64 hex>",…]}
//
// A node that serves it advertises FeatureSyncIDLists; a node sends it to no
// other peer (one that serves sync by id range alone ignores "id_list" and
// would answer with the range's events).

// FeatureSyncIDs is the Hello feature of a node that serves sync requests
// by id range and their fingerprints (ADR 0052).
const FeatureSyncIDs = "sync-ids"

// FeatureSyncIDLists is the Hello feature of a node that serves the list
// of a range's ids (SyncRequest.IDList, ADR 0057).
const FeatureSyncIDLists = "sync-id-lists"

// MaxListIDs bounds the ids of one answer to an id list request: 4,096,
// a shard of the requester's catch-up (ADR 0052), 274,432 bytes of JSON
// (ListIDBytes each). The responder lists fewer when its page budget is
// smaller (ListIDBytes an id) and says "more"; the requester asks the rest
// from the id after the last one listed. A request costs one sync token,
// as a page of 256 events does (ADR 0014).
const MaxListIDs = 4096

// ListIDBytes is what one id of an id list takes in the JSON of the answer:
// 64 hex digits, two quotes and a comma.
const ListIDBytes = IDHexLen + 3

// IDHexLen is the length of an event id: 64 lowercase hex digits (the
// BLAKE3-256 of its signing bytes, docs/design.md §5).
const IDHexLen = 64

// MaxFingerprintIDs bounds the ids a responder counts for one fingerprint
// request: 65,536, sixteen of the requester's shards of 4,096 events (the
// responder adds up sums it keeps by bucket of the id space and reads the
// index only where the range or the bound cuts a bucket, ADR 0055). A
// request costs one sync token like a page of 256 events; past the bound
// the responder stops counting and says "more", and the requester asks a
// smaller range.
const MaxFingerprintIDs = 1 << 16

// IDRange is the "ids" object of a sync request (ADR 0052): the event ids
// from From (inclusive) to To (exclusive), compared as 256-bit big-endian
// numbers, which their lowercase hex compares alike.
//
//	{"from":"<64 hex>","to":"<64 hex>"}
//
//	from  64 lowercase hex digits, required.
//	to    64 lowercase hex digits above from, optional: "" (or absent) is
//	      the end of the id space.
type IDRange struct {
	From string `json:"from" wire:"required"`
	To   string `json:"to,omitzero"`
}

// Contains reports whether id (64 lowercase hex digits) falls in r.
func (r IDRange) Contains(id string) bool {
	return id >= r.From && (r.To == "" || id < r.To)
}

func (r *IDRange) validate() error {
	if !isID(r.From) {
		return badRequest("sync: \"ids\".from: not %d lowercase hex digits", IDHexLen)
	}
	if r.To != "" {
		if !isID(r.To) {
			return badRequest("sync: \"ids\".to: not %d lowercase hex digits", IDHexLen)
		}
		if r.To <= r.From {
			return badRequest("sync: \"ids\": an empty range (to is not above from)")
		}
	}
	return nil
}

// isID reports whether s is IDHexLen lowercase hex digits.
func isID(s string) bool {
	if len(s) != IDHexLen {
		return false
	}
	for i := range len(s) {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// IDList is the "ids" of an answer to an id list request (ADR 0057): at
// most MaxListIDs ids, each IDHexLen lowercase hex digits, strictly
// ascending (so none twice). Whether they fall in the range asked is the
// requester's to check (package catchup), as it is for a page's events.
// A list of its own type, so that the decoder stops reading it at entry
// MaxListIDs+1 (unmarshalIDList), where other lists stop at 64.
type IDList []string

// unmarshalIDList reads an IDList, stopping at entry MaxListIDs+1.
func unmarshalIDList(d *jsontext.Decoder, list *IDList) error {
	var out IDList
	err := eachEntry(d, MaxListIDs, func() error {
		var id string
		err := json.UnmarshalDecode(d, &id)
		out = append(out, id)
		return err
	})
	if err == nil {
		*list = out
	}
	return err
}

func (ids IDList) validate() error {
	if len(ids) > MaxListIDs {
		return badRequest("sync: \"ids\": %d entries, more than %d", len(ids), MaxListIDs)
	}
	for i, id := range ids {
		if !isID(id) {
			return badRequest("sync: \"ids\"[%d]: not %d lowercase hex digits", i, IDHexLen)
		}
		if i > 0 && id <= ids[i-1] {
			return badRequest("sync: \"ids\"[%d]: not above the id before", i)
		}
	}
	return nil
}
