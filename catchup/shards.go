package catchup

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math/bits"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/wats-network/wats/core"
	"github.com/wats-network/wats/proto"
)

// The id space of a catch-up from several peers (ADR 0052) is split into
// shards of about ShardEvents events each, ids being BLAKE3 hashes spread
// evenly over it: at least MinShards, so that peers that join a catch-up
// late find work, and at most MaxShards.
const (
	// ShardEvents is the events a shard is planned to hold: sixteen pages
	// of 256, so that a slow peer holds the catch-up back by at most that
	// at its end, and a stalled one loses at most that.
	ShardEvents = 16 * core.MaxPageEvents
	// MinShards and MaxShards bound the shards of a plan.
	MinShards = 16
	MaxShards = 4096
	// groupShards is how many shards one fingerprint request covers at
	// most when a peer's share is checked: 65,536 events planned, as many
	// as a responder counts (proto.MaxFingerprintIDs).
	groupShards = proto.MaxFingerprintIDs / ShardEvents
)

// zeroID is the lowest id, the start of the id space.
var zeroID = hex.EncodeToString(make([]byte, 32))

// planShards splits the id space into the shards of a catch-up of about
// events events: [from, to) ranges in ascending order, the first from
// zeroID, the last to the end of the space (To ""), each starting at a
// multiple of 2^256/n rounded down in its top 64 bits.
func planShards(events uint64) []proto.IDRange {
	n := min(max((events+ShardEvents-1)/ShardEvents, MinShards), MaxShards)
	out := make([]proto.IDRange, n)
	bound := func(i uint64) string {
		// i·2^64/n, the top 64 bits of the boundary; the rest are zeros.
		q, _ := bits.Div64(i, 0, n)
		var b [32]byte
		binary.BigEndian.PutUint64(b[:8], q)
		return hex.EncodeToString(b[:])
	}
	for i := range n {
		out[i].From = bound(i)
		if i+1 < n {
			out[i].To = bound(i + 1)
		}
	}
	return out
}

// nextID returns the id after id (64 lowercase hex digits), the from of
// the page that follows a page ending at id; ok is false for the last id
// of the space.
func nextID(id string) (next string, ok bool) {
	raw, err := hex.DecodeString(id)
	if err != nil || len(raw) != 32 {
		return "", false
	}
	for i := len(raw) - 1; i >= 0; i-- {
		raw[i]++
		if raw[i] != 0 {
			return hex.EncodeToString(raw), true
		}
	}
	return "", false
}

// claimedID returns the "id" member an event says it has (the verify
// stage checks it is the event's), or false when it has none that is a
// string.
func claimedID(raw jsontext.Value) (string, bool) {
	d := jsontext.NewDecoder(bytes.NewReader(raw))
	if tok, err := d.ReadToken(); err != nil || tok.Kind() != '{' {
		return "", false
	}
	for d.PeekKind() == '"' {
		name, err := d.ReadToken()
		if err != nil {
			return "", false
		}
		if name.String() == "id" {
			v, err := d.ReadToken()
			if err != nil || v.Kind() != '"' {
				return "", false
			}
			return v.String(), true
		}
		if err := d.SkipValue(); err != nil {
			return "", false
		}
	}
	return "", false
}

// checkIDPage checks a page answered to a request for the ids of r from
// from: every event claims an id in [from, r.To), each above the one
// before (the responder pages in id order, ADR 0052). It returns the last
// id, from the next page's from; an error wrapping ErrBadPage otherwise.
// An event whose claimed id is not its own is dropped by the verify stage
// as invalid, as any.
func checkIDPage(events []jsontext.Value, r proto.IDRange, from string) (last string, err error) {
	last = ""
	for i, raw := range events {
		id, ok := claimedID(raw)
		if !ok || len(id) != proto.IDHexLen {
			return "", fmt.Errorf("%w: event %d has no id", ErrBadPage, i)
		}
		if err := checkNextID("event %d's id", i, id, r, from, last); err != nil {
			return "", err
		}
		last = id
	}
	return last, nil
}

// checkNextID checks the i-th id of an answer by id range (what, a format
// of i such as "event %d's id", read only for an error), for the ids of r
// from from: in [from, r.To) and above last, the one before ("" for
// none); an error wrapping ErrBadPage otherwise (ADR 0052 §4).
func checkNextID(what string, i int, id string, r proto.IDRange, from, last string) error {
	switch {
	case id < from || (r.To != "" && id >= r.To):
		return fmt.Errorf("%w: "+what+", %.16s…, is outside the range asked for", ErrBadPage, i, id)
	case id <= last:
		return fmt.Errorf("%w: "+what+", %.16s…, is not above the one before", ErrBadPage, i, id)
	}
	return nil
}
