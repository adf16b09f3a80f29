package proto

import (
	"errors"
	"strconv"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/wats-network/wats/core"
)

// Message is a /wats/1 message: a request, or a response to one. Every
// message type of this package implements it with a pointer receiver.
//
// The wire form of each message type is its struct: a field's json tag is
// its member name (json v2, matched exactly), `wire:"required"` marks a
// member a decoded message must have, and the fields are written in
// declaration order after "type". The comment above each type shows its
// JSON shape and the bounds, which validate.go checks.
type Message interface {
	// MessageType is the value of the message's "type" field.
	MessageType() Type
}

// Hello is the greeting (docs/design.md §3, §4), sent as a request and answered with
// the responder's own Hello.
//
//	{"type":"hello","version":1,"network":"devnet","agent":"wats/0.1.0",
//	 "features":["challenge"],"listen":["/ip4/127.0.0.1/tcp/4001"],"head":"42"}
//
// Fields:
//
//	version  integer 1..core.MaxSafeInt, required. This package speaks Version.
//	network  string ≤ MaxStringBytes, required. The node answers a peer of
//	         another network with CodeWrongNetwork.
//	agent    string ≤ MaxStringBytes, optional (""). Free-form, e.g. "wats/0.1.0".
//	features ≤ MaxFeatures strings ≤ MaxStringBytes each, optional (none).
//	         FeatureChallenge: the sender solves challenges (ADR 0014).
//	listen   ≤ MaxListenAddrs strings ≤ MaxAddrBytes each, optional (none):
//	         the sender's listen multiaddrs. Not parsed here, so that a peer
//	         with a newer multiaddr protocol is not refused; the node skips
//	         the ones it cannot parse.
//	head     cursor (decimal string), required: the sender's log cursor, the
//	         one after its last event ("0" for an empty log), which is the
//	         "next" a sync of the whole log would end with.
//	limits   HelloLimits object, optional, omitted when nil: the sender's
//	         rate limits (an extension of ADR 0024; older peers ignore it).
type Hello struct {
	Version  int         `json:"version" wire:"required"`
	Network  string      `json:"network" wire:"required"`
	Agent    string      `json:"agent"`
	Features []string    `json:"features"`
	Listen   []string    `json:"listen"`
	Head     core.Cursor `json:"head" wire:"required"`
	// Limits, optional (nil when absent): the sender's per-peer rate limits,
	// so that a peer can pace itself and waste no round trip on refusals.
	// An extension field (ADR 0024): older peers ignore it.
	Limits *HelloLimits `json:"limits,omitzero"`
}

// ListenAddrs parses the hello's listen multiaddrs, skipping bad ones.
func (h *Hello) ListenAddrs() []ma.Multiaddr {
	out := make([]ma.Multiaddr, 0, len(h.Listen))
	for _, s := range h.Listen {
		if a, err := ma.NewMultiaddr(s); err == nil {
			out = append(out, a)
		}
	}
	return out
}

// HelloLimits is the "limits" object of a Hello: the sender's ADR 0014 rate
// limits per peer, each in requests a minute, 0 meaning unlimited. Members
// are named as the config keys; unknown members are ignored.
//
//	{"hello_per_min":60,"sync_per_min":600,"replicate_per_min":120,"report_per_min":10}
//
// Each is an integer 0..core.MaxSafeInt, optional (0: unlimited, or not said).
type HelloLimits struct {
	HelloPerMin     int64 `json:"hello_per_min"`
	SyncPerMin      int64 `json:"sync_per_min"`
	ReplicatePerMin int64 `json:"replicate_per_min"`
	ReportPerMin    int64 `json:"report_per_min"`
}

// SyncRequest asks for a page of the responder's log (docs/design.md §4, §5).
//
//	{"type":"sync","after":"0","limit":256}
//
// Fields:
//
//	after  cursor (decimal string), required: return events after this
//	       position; "0" from the start. A cursor comes from the responder's
//	       own SyncResponse.Next or Hello.Head.
//	limit  integer 1..core.MaxSafeInt, optional (core.MaxPageEvents); above
//	       core.MaxPageEvents it is treated as core.MaxPageEvents.
//
//	ids    IDRange object, optional, omitted when nil: an extension (ADR
//	       0052), sent only to a peer that advertised FeatureSyncIDs (older
//	       peers ignore it, and would answer by position). Asks for the
//	       events whose ids fall in the range, in id order, in place of
//	       those after "after" (then sent as "0" and not read).
//	fingerprint  boolean, optional (false), with "ids" only: asks for the
//	       range's count and fingerprint (SyncResponse) in place of its
//	       events.
//	id_list  boolean, optional (false), with "ids" only and not with
//	       "fingerprint": asks for the ids the responder holds in the
//	       range (SyncResponse's "ids") in place of its events (ADR 0057),
//	       sent only to a peer that advertised FeatureSyncIDLists.
//
// In Go, Limit 0 means core.MaxPageEvents; a decoded SyncRequest always has
// Limit in 1..MaxPageEvents. Either form costs one sync token at the
// responder (ADR 0014), and a page of either is bounded alike.
type SyncRequest struct {
	After core.Cursor `json:"after" wire:"required"`
	Limit int         `json:"limit"`
	// IDs, optional (nil when absent): the id range asked for (ADR 0052).
	IDs *IDRange `json:"ids,omitzero"`
	// Fingerprint, with IDs: the range's fingerprint, not its events.
	Fingerprint bool `json:"fingerprint,omitzero"`
	// IDList, with IDs and not Fingerprint: the range's ids, not its
	// events (ADR 0057).
	IDList bool `json:"id_list,omitzero"`
}

// SyncResponse is a page of the responder's log (docs/design.md §4, §5).
//
//	{"type":"sync","events":[{…},{…}],"next":"2","more":false}
//
// Fields:
//
//	events ≤ core.MaxPageEvents JSON objects, ≤ MaxPageBytes in all, required (may be
//	       empty). Each is an event (docs/design.md §5); this package checks only
//	       that it is an object: the event log validates it. Decoded events are
//	       compacted copies (no whitespace, strings in their shortest form).
//	next   cursor (decimal string), required: the position after the last
//	       event returned; the "after" of the next page.
//	more   boolean, required: whether the log holds events after next.
//
// The answer to a request with "ids" (ADR 0052) has the same members with
// other meanings, and two more for a fingerprint:
//
//	events  the events whose ids fall in the range, in ascending id order,
//	        as bounded above (none for a fingerprint).
//	next    the responder's head (as Hello.Head): where its log stood.
//	more    whether the range holds events past the last one returned; for
//	        a fingerprint, whether it holds more than MaxFingerprintIDs
//	        ids, count and fingerprint then covering the first
//	        MaxFingerprintIDs.
//	count   integer 0..core.MaxSafeInt, optional (0): the ids counted.
//	fingerprint  string, optional (""): the sum of the ids counted, as
//	        256-bit big-endian numbers, modulo 2^256, in 64 lowercase hex
//	        digits (IDSum).
//
// The answer to an id list request (ADR 0057) has no events and one more
// member; "more" then says whether the range holds ids past the last one
// listed:
//
//	ids     ≤ MaxListIDs strings of 64 lowercase hex digits, optional
//	        (none), strictly ascending: the ids the responder holds in the
//	        range, from its start. Not with events.
type SyncResponse struct {
	Events []jsontext.Value `json:"events" wire:"required"`
	Next   core.Cursor      `json:"next" wire:"required"`
	More   bool             `json:"more" wire:"required"`
	// Count and Fingerprint answer a fingerprint request (ADR 0052).
	Count       int64  `json:"count,omitzero"`
	Fingerprint string `json:"fingerprint,omitzero"`
	// IDs answers an id list request (ADR 0057).
	IDs IDList `json:"ids,omitzero"`
}

// BlobRef names a blob to replicate.
//
//	{"cid":"bafk…","size":1048576}
//
//	cid   string ≤ MaxStringBytes, required: the blob's CIDv1 (docs/design.md §9); not
//	      parsed here.
//	size  integer 0..core.MaxSafeInt, required: the declared size in bytes.
type BlobRef struct {
	CID  string `json:"cid" wire:"required"`
	Size int64  `json:"size" wire:"required"`
}

// Provider is a peer that serves an event's blobs (docs/design.md §4, §6).
//
//	{"id":"12D3KooW…","addrs":["/ip4/192.0.2.1/tcp/4001"]}
//
//	id     string ≤ MaxStringBytes, required: the provider's peer id; not
//	       parsed here.
//	addrs  ≤ MaxProviderAddrs multiaddr strings ≤ MaxAddrBytes each, optional
//	       (none); not parsed here.
type Provider struct {
	ID    string   `json:"id" wire:"required"`
	Addrs []string `json:"addrs"`
}

// ProviderOf names peer p as a provider, with at most MaxProviderAddrs of
// addrs (never nil).
func ProviderOf(p peer.ID, addrs []ma.Multiaddr) Provider {
	return Provider{ID: p.String(), Addrs: Strings(addrs, MaxProviderAddrs)}
}

// Strings returns the first max of addrs as strings (never nil), as a
// hello's listen addresses and a provider's are sent.
func Strings(addrs []ma.Multiaddr, max int) []string {
	out := make([]string, 0, min(len(addrs), max))
	for _, a := range addrs[:min(len(addrs), max)] {
		out = append(out, a.String())
	}
	return out
}

// AddrInfos parses the providers of an envelope or a replicate request
// (strings as on the wire) into the one shape of a provider,
// peer.AddrInfo (ADR 0033): a provider whose id is not a peer id is
// dropped, an address that is not a multiaddr skipped. It is the one place
// the wire's providers are parsed.
func AddrInfos(ps []Provider) []peer.AddrInfo {
	out := make([]peer.AddrInfo, 0, len(ps))
	for _, p := range ps {
		id, err := peer.Decode(p.ID)
		if err != nil {
			continue
		}
		ai := peer.AddrInfo{ID: id}
		for _, s := range p.Addrs {
			if a, err := ma.NewMultiaddr(s); err == nil {
				ai.Addrs = append(ai.Addrs, a)
			}
		}
		out = append(out, ai)
	}
	return out
}

// ReplicateRequest asks the responder to keep copies of blobs, fetching
// them from the requester first and then from the providers (docs/design.md §4, §9).
//
//	{"type":"replicate","blobs":[{"cid":"bafk…","size":5}],"providers":[{…}]}
//
//	blobs      1..MaxReplicateBlobs BlobRef objects, required.
//	providers  ≤ MaxProviders Provider objects, optional (none).
type ReplicateRequest struct {
	Blobs     []BlobRef  `json:"blobs" wire:"required"`
	Providers []Provider `json:"providers"`
}

// FailedBlob is a blob that a replicate request could not store.
//
//	{"cid":"bafk…","reason":"size mismatch"}
//
//	cid     string ≤ MaxStringBytes, required.
//	reason  string ≤ MaxTextBytes, required.
type FailedBlob struct {
	CID    string `json:"cid" wire:"required"`
	Reason string `json:"reason" wire:"required"`
}

// ReplicateResponse says what became of each blob of a ReplicateRequest
// (docs/design.md §4, §9; ADR 0014: blobs beyond the per-peer fetch slots are skipped).
//
//	{"type":"replicate","stored":["bafk…"],"skipped":[],"failed":[{…}]}
//
//	stored   CID strings (≤ MaxStringBytes each), optional (none): complete here.
//	skipped  CID strings, optional (none): not fetched, e.g. over the fetch slots.
//	failed   FailedBlob objects, optional (none).
//
// The three lists hold at most MaxReplicateBlobs entries in all.
type ReplicateResponse struct {
	Stored  []string     `json:"stored"`
	Skipped []string     `json:"skipped"`
	Failed  []FailedBlob `json:"failed"`
}

// CrashReportRequest submits a crash report (docs/design.md §4, §5).
//
//	{"type":"crash_report","event":{…}}
//
//	event  JSON object, required: a signed event of kind "crash". This package
//	       checks only that it is an object; the event log validates it.
//	       Decoded, it is a compacted copy.
type CrashReportRequest struct {
	Event jsontext.Value `json:"event" wire:"required"`
}

// CrashReportResponse acknowledges a stored crash report.
//
//	{"type":"crash_report","id":"<64 hex>"}
//
//	id  string ≤ MaxStringBytes, required: the id of the stored event.
type CrashReportResponse struct {
	ID string `json:"id" wire:"required"`
}

// Error is the "error" response (docs/design.md §4): a clear error, after which the
// responder goes on serving. The decoders of this package also return their
// errors as *Error, with the Code the responder should send back.
//
//	{"type":"error","code":"bad_request","message":"sync: \"limit\" must be 1 or more"}
//
//	code     string ≤ MaxStringBytes, required: one of the Code constants;
//	         codes this package does not know are kept as they are.
//	message  string ≤ MaxTextBytes, optional (""): for people, not programs.
type Error struct {
	Code    Code   `json:"code" wire:"required"`
	Message string `json:"message"`
}

// Error implements error: "proto: <code>: <message>".
func (e *Error) Error() string {
	if e.Message == "" {
		return "proto: " + string(e.Code)
	}
	return "proto: " + string(e.Code) + ": " + e.Message
}

// Refused is the "refused" response: the requester is over a rate limit
// (ADR 0014: Refused { "rate limited (…): retry later" }).
//
//	{"type":"refused","reason":"rate limited (sync): retry later","retry_after_ms":1500}
//
//	reason          string ≤ MaxTextBytes, required.
//	retry_after_ms  integer 0..core.MaxSafeInt, optional, omitted when 0: a hint of
//	                when a retry may succeed, in milliseconds.
type Refused struct {
	Reason       string `json:"reason" wire:"required"`
	RetryAfterMs int64  `json:"retry_after_ms,omitzero"`
}

// Challenge is the "challenge" response (ADR 0014 addendum, load challenge):
// solve the puzzle and resubmit the same request once with a Solution.
//
//	{"type":"challenge","alg":"b3","seed":"<64 hex>","effort":8,"expires":1767225660}
//
//	alg      string ≤ MaxStringBytes, required: the puzzle, "b3" today.
//	seed     string ≤ MaxStringBytes, required: 64 hex digits for b3.
//	effort   integer 0..core.MaxSafeInt, required: leading zero bits to find.
//	expires  integer 0..core.MaxSafeInt, required: unix seconds.
//
// The decoder does not judge alg, effort or expires: the requester gives up
// when the alg is unknown, the effort is above 24 or the challenge has
// expired (ADR 0014), which is the solver's business.
type Challenge struct {
	Alg     string `json:"alg" wire:"required"`
	Seed    string `json:"seed" wire:"required"`
	Effort  int    `json:"effort" wire:"required"`
	Expires int64  `json:"expires" wire:"required"`
}

// Solution is the top-level "solution" object of a resubmitted request (ADR
// 0014 addendum). It is not a message of its own.
//
//	"solution":{"alg":"b3","seed":"<as received>","nonce":"<decimal>"}
//
//	alg, seed, nonce  strings ≤ MaxStringBytes, required.
//
// A malformed solution (not an object, a field missing, of the wrong type or
// too long) is ignored, as if absent (ADR 0014); whether it solves anything
// is the challenge package's business.
type Solution struct {
	Alg   string `json:"alg" wire:"required"`
	Seed  string `json:"seed" wire:"required"`
	Nonce string `json:"nonce" wire:"required"`
}

// Envelope is the gossip message of a new event (docs/design.md §6), published on
// Topic(network). It has no "type".
//
//	{"event":{…},"providers":[{"id":"12D3KooW…","addrs":["/ip4/…"]}]}
//
//	event      JSON object, required: the event. This package checks only that
//	           it is an object; the gossip validator checks the event itself.
//	           Decoded, it is a compacted copy.
//	providers  ≤ MaxProviders Provider objects, optional (none): peers that
//	           serve the event's blobs, the publisher first.
//
// An envelope is at most MaxEnvelopeBytes long.
type Envelope struct {
	Event     jsontext.Value `json:"event" wire:"required"`
	Providers []Provider     `json:"providers"`
}

// MessageType implements Message.
func (*Hello) MessageType() Type { return TypeHello }

// MessageType implements Message.
func (*SyncRequest) MessageType() Type { return TypeSync }

// MessageType implements Message.
func (*SyncResponse) MessageType() Type { return TypeSync }

// MessageType implements Message.
func (*ReplicateRequest) MessageType() Type { return TypeReplicate }

// MessageType implements Message.
func (*ReplicateResponse) MessageType() Type { return TypeReplicate }

// MessageType implements Message.
func (*CrashReportRequest) MessageType() Type { return TypeCrashReport }

// MessageType implements Message.
func (*CrashReportResponse) MessageType() Type { return TypeCrashReport }

// MessageType implements Message.
func (*Error) MessageType() Type { return TypeError }

// MessageType implements Message.
func (*Refused) MessageType() Type { return TypeRefused }

// MessageType implements Message.
func (*Challenge) MessageType() Type { return TypeChallenge }

// Sentinels that RefusedError and ChallengeError match with errors.Is.
var (
	ErrRefused    = errors.New("proto: refused")
	ErrChallenged = errors.New("proto: challenged")
)

// RefusedError is what Call returns for a "refused" response.
// errors.Is(err, ErrRefused) holds.
type RefusedError struct {
	Refused
}

// Error implements error.
func (e *RefusedError) Error() string { return "proto: refused: " + e.Reason }

// Is reports whether target is ErrRefused.
func (e *RefusedError) Is(target error) bool { return target == ErrRefused }

// ChallengeError is what Call returns for a "challenge" response.
// errors.Is(err, ErrChallenged) holds.
type ChallengeError struct {
	Challenge
	// Reason is why the requester gave up solving (CallSolving); nil when
	// it did not try.
	Reason error
}

// Error implements error.
func (e *ChallengeError) Error() string {
	msg := "proto: challenged: alg " + strconv.Quote(e.Alg) + ", effort " + strconv.Itoa(e.Effort)
	if e.Reason != nil {
		msg += ": gave up: " + e.Reason.Error()
	}
	return msg
}

// Unwrap returns the reason the requester gave up, if any.
func (e *ChallengeError) Unwrap() error { return e.Reason }

// Is reports whether target is ErrChallenged.
func (e *ChallengeError) Is(target error) bool { return target == ErrChallenged }
