// Package proto holds the wire format of wats: the messages of the /wats/1
// libp2p stream protocol and the gossip envelope, their framing, the caps on
// their sizes, and the client side of a call (docs/design.md §4, §6; ADR 0014 for
// refusals and challenges).
//
// It imports no other wats package but core (docs/design.md §2): the node,
// gossip and internal/attack packages build on it.
//
// # How it is used
//
// A requester calls a peer with Call, which encodes the request, sends it as
// one frame on a new stream, and decodes the one response:
//
//	resp, err := proto.Call(ctx, h, peerID, &proto.SyncRequest{After: cursor})
//	var refused *proto.RefusedError
//	switch {
//	case errors.As(err, &refused): // over a rate limit: retry later
//	case err != nil:
//	default: // resp.Sync.Events, resp.Sync.Next, resp.Sync.More
//	}
//
// A responder's stream handler reads the request with ReadFrame (cap
// MaxRequestBytes, within ReadTimeout), decodes it with DecodeRequest, and
// writes its answer with WriteMessage; a decoding error is a *Error whose
// Code is what to answer with. The gossip package decodes envelopes with
// DecodeEnvelope and encodes them with MarshalEnvelope.
//
// Every message has a canonical encoding (MarshalGreased with grease false),
// kept for every message type in testdata/golden. Marshal adds one
// "_grease…" field to one message in GreaseOneIn so that peers, this one
// included, keep ignoring unknown fields.
//
// # Files
//
//   - proto.go: the protocol description (version changelog, framing,
//     message flow, decoding rules), the protocol id, the size caps with their
//     reasons, timeouts, message types and error codes.
//   - messages.go: the message types, each a struct whose json tags are its
//     wire members (github.com/go-json-experiment/json, json v2), with
//     wire:"required" on required ones; the error types RefusedError and
//     ChallengeError.
//   - decode.go: DecodeRequest, DecodeResponse, DecodeEnvelope: the "type"
//     first, then the message through json v2; error messages.
//   - validate.go: what json v2 does not check (null, integer forms, events,
//     the solution, required members), and the bounds of each message's Go
//     value, shared by the decoders and the encoders.
//   - encode.go: Marshal and friends through json v2, GREASE.
//   - frame.go: WriteFrame and ReadFrame (unsigned-varint length prefix).
//   - call.go: Call, the client side of a request; WriteMessage.
//   - syncids.go: sync by id range and a range's fingerprint, the
//     extension of ADR 0052 (FeatureSyncIDs), and a range's list of ids,
//     ADR 0057's (FeatureSyncIDLists).
//
// # Decisions left to other packages
//
// This package checks shapes and bounds, not meaning: events are checked to
// be JSON objects and nothing more (the event log validates them); listen
// addresses, provider addresses, peer ids and CIDs are strings of bounded
// length, parsed by their users; a challenge's alg, effort and expiry, and
// a solution's nonce, are judged by the challenge package and the node.
package proto
