package proto

import (
	"errors"
	"fmt"

	"github.com/go-json-experiment/json"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/wats-network/wats/core"
)

// Heads announcements (docs/adr/0041): beside /wats/1, each node keeps one
// stream open to each peer that completed hello and advertised
// FeatureHeads, and writes on it, as its log grows, the position of its
// newest event and the short ids of the events stored since the last
// announcement. The peer that reads them checks that it holds each of
// those events and pulls what it lacks with a /wats/1 sync, so that an
// event that gossip lost anywhere arrives in seconds all the same.
//
//	announcer                                     reader
//	   |--- open stream HeadsID ("/wats/heads/1") --->|
//	   |--- frame{Heads} ---------------------------->| at most MaxHeadsBytes
//	   |--- frame{Heads} ... (as its log grows) ----->|
//
// Frames are those of /wats/1 (an unsigned-varint length, then one JSON
// object), each a Heads, decoded by the rules of /wats/1's messages. The
// stream is one-way and long-lived: the reader writes nothing, and either
// side may reset it; the announcer opens a new one and announces its
// current head. A node reads at most one Heads stream of each peer.

// HeadsID is the libp2p protocol id of heads announcements.
const HeadsID protocol.ID = "/wats/heads/1"

// FeatureHeads is the Hello feature of a node that announces its heads on
// HeadsID and reads its peers' announcements: a node opens a Heads stream
// only to a peer that advertised it.
const FeatureHeads = "heads"

// Caps of a Heads announcement.
const (
	// MaxHeadIDs caps the short ids of one announcement: an announcer
	// names at most the newest MaxHeadIDs events since the one before;
	// a reader that lacks the position of an older one pulls it.
	MaxHeadIDs = 64
	// MaxHeadsBytes caps one Heads frame: MaxHeadIDs ids of 19 bytes
	// (16 hex digits, quotes and a comma), a cursor of up to 20 digits
	// and the names, with room for GREASE.
	MaxHeadsBytes = 2 << 10
)

// Heads is one announcement of a node's log (docs/adr/0041):
//
//	{"head":"1234","ids":["0123456789abcdef",…]}
//
//	head  cursor, required: the position of the sender's newest event.
//	ids   ≤ MaxHeadIDs short ids (core.ShortID: 16 lowercase hex digits),
//	      optional (none): those of the events at the positions just before
//	      and at head, in order, the last one head's. There are at most
//	      head of them.
type Heads struct {
	Head core.Cursor    `json:"head" wire:"required"`
	IDs  []core.ShortID `json:"ids"`
}

// From returns the position before the first of h.IDs: h.IDs[i] names the
// event at From()+1+i.
func (h *Heads) From() core.Cursor { return h.Head - core.Cursor(len(h.IDs)) }

func (h *Heads) validate() error {
	if len(h.IDs) > MaxHeadIDs {
		return badRequest("heads: \"ids\": %d entries, more than %d", len(h.IDs), MaxHeadIDs)
	}
	if uint64(len(h.IDs)) > uint64(h.Head) {
		return badRequest("heads: \"ids\": %d ids for a head of %d", len(h.IDs), h.Head)
	}
	return nil
}

// DecodeHeads decodes one Heads announcement, a frame's payload. Errors
// are *Error: CodeTooLarge past MaxHeadsBytes, CodeBadRequest for
// anything else that is wrong (a short id that is not 16 lowercase hex
// digits, more ids than MaxHeadIDs or than head). The result does not
// alias b.
func DecodeHeads(b []byte) (*Heads, error) {
	return decodeValid(b, "heads", MaxHeadsBytes, &Heads{})
}

// MarshalHeads encodes h canonically: "head", then "ids" (always written,
// [] when empty). It refuses what DecodeHeads would refuse.
func MarshalHeads(h *Heads) ([]byte, error) {
	if h == nil {
		return nil, errors.New("proto: encode heads: nil")
	}
	if err := h.validate(); err != nil {
		return nil, fmt.Errorf("proto: encode heads: %w", err)
	}
	ids := h.IDs
	if ids == nil {
		ids = []core.ShortID{}
	}
	b, err := json.Marshal(Heads{Head: h.Head, IDs: ids})
	if err != nil {
		return nil, fmt.Errorf("proto: encode heads: %w", err)
	}
	if len(b) > MaxHeadsBytes {
		return nil, fmt.Errorf("proto: encode heads: %d bytes, more than %d", len(b), MaxHeadsBytes)
	}
	return b, nil
}
