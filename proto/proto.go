package proto

import (
	"time"

	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/wats-network/wats/core"
)

// The /wats/1 stream protocol (docs/design.md §4, ADR 0014). The version and its
// changelog are at Version.
//
// Framing. Every message, request or response, is one frame:
//
//	+----------------------+-------------------------------------------+
//	| uvarint length L     | L bytes: one UTF-8 JSON object            |
//	| (1..9 bytes, minimal)| (L ≤ MaxRequestBytes or MaxResponseBytes) |
//	+----------------------+-------------------------------------------+
//
// The length prefix is an unsigned LEB128 varint, minimally encoded, at most
// 9 bytes (go-msgio / multiformats varint). A reader refuses a length above
// its cap as soon as it has read the prefix, before it allocates anything.
//
// Message flow. One request and one response per stream:
//
//	requester                                      responder
//	   |--- open stream ID ("/wats/1") ------------------>|
//	   |--- frame{request}, then CloseWrite ------------->| reads it within ReadTimeout,
//	   |                                                  | at most MaxRequestBytes
//	   |                                                  | admission (node): serve,
//	   |                                                  | refuse or challenge
//	   |<-- frame{response}, then Close ------------------|
//	   | reads it within ResponseTimeout                  |
//	   | (ReplicateTimeout for replicate),                |
//	   | at most MaxResponseBytes                         |
//
// The response to a request of type T is one of:
//
//	T           success; the fields of T's response type (see below)
//	"error"     Error: the request was bad or failed; the responder goes on serving
//	"refused"   Refused: over a rate limit (ADR 0014); retry later
//	"challenge" Challenge: solve and resubmit once, on a new stream, with the same
//	            request plus a top-level "solution" (ADR 0014 addendum)
//
// Requests and their success responses (every message has "type"; the field
// lists are on each Go type):
//
//	"hello"        Hello              -> Hello
//	"sync"         SyncRequest        -> SyncResponse
//	"replicate"    ReplicateRequest   -> ReplicateResponse
//	"crash_report" CrashReportRequest -> CrashReportResponse
//
// Decoding rules (docs/design.md §4), the same for every message and the gossip
// Envelope:
//
//   - Field names are matched exactly, case included: "LIMIT" is an unknown
//     field, not "limit". Names are compared after JSON unescaping.
//   - Unknown fields are ignored, whatever their value; so are fields whose
//     name starts with "_grease", which senders add now and then (GREASE).
//   - A name that occurs twice in any object of the message, at any depth
//     (including inside events), is a CodeBadRequest.
//   - A known field of the wrong JSON type (null included) is a
//     CodeBadRequest.
//   - Integers are written as JSON integers (no fraction, no exponent, no sign);
//     a negative, fractional or exponent form, or a value above core.MaxSafeInt, is a
//     CodeBadRequest, never rounded or wrapped.
//   - Cursors are canonical decimal strings (see ParseCursor).
//   - A missing required field is a CodeBadRequest; a missing optional one
//     takes the default given on its Go type. Strings and lists have caps.
//   - The payload is exactly one JSON object, valid UTF-8; anything else, or
//     data after it, is a CodeBadRequest. Over its size cap it is a
//     CodeTooLarge.
//   - An unknown request type is CodeUnsupported.
//
// Gossip (docs/design.md §6) is not a /wats/1 stream message: an Envelope is published
// on the gossipsub topic "/wats/events/1/<network>" (see Topic), at most
// MaxEnvelopeBytes long.

// ID is the libp2p protocol id of the request/response protocol (docs/design.md §4).
const ID protocol.ID = "/wats/1"

// Version is the protocol version, carried in Hello.Version. A change that
// an older peer would misread gets a new Version and a new protocol ID.
//
// Changelog:
//
//   - 1 (2026-11-29): first version. Requests hello, sync, replicate and
//     crash_report; responses of the same types plus error, refused (ADR
//     0014: rate limits) and challenge, with the top-level "solution" field
//     of a resubmitted request (ADR 0014 addendum of 2026-10-18: load
//     challenge). GREASE fields (_grease…) in any message.
//   - 1, extended (2026-12-05, ADR 0052): a sync request may carry "ids"
//     and "fingerprint", and its answer "count" and "fingerprint", sent
//     only to peers whose hello advertises FeatureSyncIDs; older peers
//     ignore them, so the Version stays (syncids.go).
//   - 1, extended (2026-12-05, ADR 0057): a sync request by id range may
//     carry "id_list", and its answer "ids", sent only to peers whose hello
//     advertises FeatureSyncIDLists (syncids.go).
const Version = 1

// DHTProtocol returns the protocol ID of the Kademlia DHT of a network
// (docs/adr/0040): /wats/<network>/kad/1.0.0, kad-dht's protocol under the
// prefix /wats/<network>, so that a wats DHT is never the IPFS one
// (/ipfs/kad/1.0.0) and two networks never share a routing table.
func DHTProtocol(network string) protocol.ID { return DHTPrefix(network) + "/kad/1.0.0" }

// DHTPrefix returns the protocol prefix of the DHT of a network,
// /wats/<network> (kad-dht's ProtocolPrefix option).
func DHTPrefix(network string) protocol.ID { return protocol.ID("/wats/" + network) }

// DHTLANProtocol returns the protocol ID of the LAN DHT of a network
// (docs/adr/0047): /wats/<network>/lan/kad/1.0.0, the same DHT among the
// peers a node reaches at private and loopback addresses, apart from the
// network's own (DHTProtocol), as kad-dht's dual DHT keeps them.
func DHTLANProtocol(network string) protocol.ID { return DHTLANPrefix(network) + "/kad/1.0.0" }

// DHTLANPrefix returns the protocol prefix of the LAN DHT of a network,
// /wats/<network>/lan.
func DHTLANPrefix(network string) protocol.ID { return DHTPrefix(network) + "/lan" }

// ServiceName is the libp2p resource-manager service that /wats/1 streams are
// attached to (Call does; the node's stream handler should too), so that
// operators can give the protocol its own memory and stream limits.
const ServiceName = "wats"

// FeatureChallenge is the Hello feature of a node that solves challenges
// (ADR 0014 addendum): only such peers are ever sent a Challenge.
const FeatureChallenge = "challenge"

// Size caps on peer input. Each is checked by the decoders, and by the
// encoders so that what this package sends is what it accepts.
const (
	// MaxRequestBytes caps a request frame (docs/design.md §4: 1 MiB): the largest
	// request, a crash_report, carries one event with its ≤16 KiB body and
	// ≤8 KiB stack; 1 MiB leaves room without letting a peer make a handler
	// buffer much.
	MaxRequestBytes = 1 << 20

	// MaxResponseBytes caps a response frame (docs/design.md §4: 8 MiB): a sync page
	// of MaxPageBytes of events plus its framing, with room to spare.
	MaxResponseBytes = 8 << 20

	// MaxPageBytes caps the events of one sync page in all, counted as the
	// sum of their JSON lengths (docs/design.md §4: 4 MiB), so that a page fits in a
	// response frame whatever the events hold.
	MaxPageBytes = 4 << 20

	// MaxListenAddrs caps Hello.Listen (docs/design.md §4: ≤16 multiaddrs; the peer
	// cache keeps ≤16 addresses per peer, docs/design.md §8).
	MaxListenAddrs = 16

	// MaxFeatures caps Hello.Features. One feature exists today
	// ("challenge"); 32 leaves room for many more while bounding what a
	// peer record stores.
	MaxFeatures = 32

	// MaxStringBytes caps identifier-like strings, in bytes: network, agent,
	// features, error codes, CIDs, peer ids, event ids, and the alg, seed and
	// nonce of a challenge or solution. The longest legitimate ones (a CIDv1
	// with a BLAKE3 multihash in base32, ~60 bytes; a 64-hex seed) are far
	// below it; the peer cache stores some of them.
	MaxStringBytes = 256

	// MaxAddrBytes caps one multiaddr string (Hello.Listen, Provider.Addrs).
	// Relay addresses with certhashes and two peer ids stay under ~400 bytes.
	MaxAddrBytes = 1024

	// MaxTextBytes caps human-readable text: Error.Message, Refused.Reason
	// and FailedBlob.Reason. Enough for a clear sentence, not for a dump.
	MaxTextBytes = 1024

	// MaxProviders caps the providers of an Envelope or a ReplicateRequest
	// (ADR 0014 "Blob fetches" addendum: "A gossip envelope names at most 8
	// providers"; docs/design.md §4 for replicate).
	MaxProviders = 8

	// MaxProviderAddrs caps the addresses of one Provider (docs/design.md §6: ≤4).
	MaxProviderAddrs = 4

	// MaxEnvelopeBytes caps a gossip Envelope (docs/design.md §6: the validator
	// rejects, not truncates, an envelope over 64 KiB).
	MaxEnvelopeBytes = 64 << 10

	// MaxReplicateBlobs caps the blobs of a ReplicateRequest (docs/design.md §4:
	// 1..64) and the entries of a ReplicateResponse in all.
	MaxReplicateBlobs = core.MaxReplicateBlobs
)

// Timeouts (docs/design.md §4).
const (
	// ReadTimeout bounds how long a responder waits for the request frame.
	ReadTimeout = 10 * time.Second

	// PrefixTimeout bounds how long a responder waits for the first bytes
	// of a request, its length prefix (ADR 0030): a requester writes its
	// frame as soon as the stream is open, so a stream that sends nothing
	// (or one byte of a prefix) for PrefixTimeout is being held, not
	// used, and is reset. The whole frame still has ReadTimeout.
	PrefixTimeout = 2 * time.Second

	// ResponseTimeout bounds a call, from opening the stream to the decoded
	// response, for hello, sync and crash_report.
	ResponseTimeout = 30 * time.Second

	// ReplicateTimeout bounds a replicate call: the responder fetches blobs
	// (4 providers, 120 s in all, docs/design.md §9) before it answers.
	ReplicateTimeout = 130 * time.Second
)

// Type is the value of a message's "type" field.
type Type string

// Message types (docs/design.md §4). The first four are requests, the wire
// names of core's Requests (Type.Request), and each is also the type of its
// success response; the last three are responses only.
const (
	TypeHello       Type = "hello"
	TypeSync        Type = "sync"
	TypeReplicate   Type = "replicate"
	TypeCrashReport Type = "crash_report"
	TypeError       Type = "error"
	TypeRefused     Type = "refused"
	TypeChallenge   Type = "challenge"
)

// IsRequest reports whether t is a request type.
func (t Type) IsRequest() bool {
	_, ok := t.Request()
	return ok
}

// Request returns the request type t names, and false for a response type
// or an unknown one.
func (t Type) Request() (core.Request, bool) { return core.ParseRequest(string(t)) }

// Timeout is how long a call of request type t may take: ReplicateTimeout
// for replicate, ResponseTimeout otherwise (docs/design.md §4).
func (t Type) Timeout() time.Duration {
	if t == TypeReplicate {
		return ReplicateTimeout
	}
	return ResponseTimeout
}

// Code is the "code" of an Error (docs/design.md §4). A decoder keeps codes it does
// not know as they are.
type Code string

// Error codes (docs/design.md §4).
const (
	// CodeBadRequest: malformed JSON, duplicate names, a wrong field type, a
	// number or string out of range, a missing required field.
	CodeBadRequest Code = "bad_request"
	// CodeUnsupported: an unknown request type.
	CodeUnsupported Code = "unsupported"
	// CodeTooLarge: a message over its size cap.
	CodeTooLarge Code = "too_large"
	// CodeWrongNetwork: a hello from a peer of another network.
	CodeWrongNetwork Code = "wrong_network"
	// CodeNotFound: the request names something the responder does not have.
	CodeNotFound Code = "not_found"
	// CodeInternal: the responder failed; the request may be retried.
	CodeInternal Code = "internal"
)

// Topic is the gossipsub topic of a network's events (docs/design.md §6).
func Topic(network string) string { return "/wats/events/1/" + network }
