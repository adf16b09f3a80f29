// Package core is the vocabulary every wats package shares, as go-libp2p's
// core is: the bounds and rules that the wire protocol (docs/design.md §4,
// §5) and ADR 0014 set, each under one name (ADR 0033). It imports no other
// wats package, and every wats package may import it (internal/layering),
// so that a number is written once and its uses cannot drift apart.
package core

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

const (
	// MaxSafeInt (2^53) is the largest size-like integer on the wire, in
	// events and in the configuration: a blob's declared size, a sync
	// cursor, a quota in bytes. docs/design.md §4: sizes beyond 2^53 are a
	// bad_request, since a peer that reads JSON numbers as IEEE doubles
	// sees them exactly only up to 2^53. It also keeps every sum of sizes
	// far from overflowing an int64.
	MaxSafeInt = 1 << 53

	// MaxHintsPerBlob is how many provider hints a node keeps per blob.
	// ADR 0014: "a node keeps at most 16 hints per blob".
	MaxHintsPerBlob = 16

	// MaxChallengeEffort is the largest effort of a b3 challenge, in
	// leading zero bits, that a requester solves; above it, it gives up as
	// for a refusal, so a node never asks for more (the ceiling of
	// limits.challenge_max_bits). ADR 0014, "Messages": "the effort is
	// above 24 bits".
	MaxChallengeEffort = 24

	// MaxPerMin is the largest rate of any per-minute key of the [limits]
	// table, 0 being unlimited: 1,000 requests a second from one peer is
	// far beyond what the /wats/1 handlers serve, and it keeps the exact
	// GCRA remainders within 16 bits. It bounds solved_per_min too (ADR
	// 0014: 1,200 by default), the global ceiling of solved requests a
	// minute, whose memory it also bounds (8 bytes a request, 480 KB).
	MaxPerMin = 60_000

	// MaxPageEvents is the most events of one sync page (docs/design.md
	// §4: events ≤ 256, limit 1..256), and the most the control API's
	// GET /v1/events returns at once.
	MaxPageEvents = 256

	// MaxReplicateBlobs is the most blobs one replicate request names
	// (docs/design.md §4: 1..64), which the CLI checks before it asks the
	// daemon and the daemon again before it asks a peer.
	MaxReplicateBlobs = 64

	// DefaultChallengeBaseBits and DefaultChallengeMaxBits are the efforts
	// of the b3 challenge, in leading zero bits, that a node starts at and
	// rises to at most under sustained pressure. ADR 0014, "Adaptive
	// effort": limits.challenge_base_bits (8), limits.challenge_max_bits
	// (24).
	DefaultChallengeBaseBits = 8
	DefaultChallengeMaxBits  = 24

	// DefaultSolvedPerMin is the global ceiling of solved requests a
	// minute, all peers together. ADR 0014, "What a solution buys":
	// solved_per_min (1,200), a Limits field without a config key.
	DefaultSolvedPerMin = 1200

	// MaxKindLen is the longest event kind, in bytes; a kind is 1 to
	// MaxKindLen characters for which IsKindChar holds (docs/design.md §5).
	MaxKindLen = 32
)

// ReputationAge is how long ago a peer must have first completed hello
// with this node to be reputed without a record of an earlier run. ADR
// 0014, "Load challenge": "it completed hello with this node at least 10
// minutes ago".
const ReputationAge = 10 * time.Minute

// IsKindChar reports whether r may appear in an event's kind: a-z, 0-9,
// '.', '_' or '-' (docs/design.md §5).
func IsKindChar(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-'
}

// Request is a request type of /wats/1 (docs/design.md §4), the types that
// ADR 0014 gives each peer a token bucket of: "token buckets per peer and
// request type on /wats: hello, sync, replicate, crash_report". The zero
// Request is Hello. Requests index arrays: a valid Request is below
// NumRequests. Its wire name, the value of a message's "type" field, is
// String.
type Request uint8

// The request types, in the order of ADR 0014's table.
const (
	Hello       Request = iota // "hello"
	Sync                       // "sync", pages of up to 256 events
	Replicate                  // "replicate"
	CrashReport                // "crash_report"

	// NumRequests is the number of Requests; arrays indexed by Request
	// have this length.
	NumRequests = 4
)

var requestNames = [NumRequests]string{"hello", "sync", "replicate", "crash_report"}

// Requests returns every Request, in order.
func Requests() [NumRequests]Request {
	return [NumRequests]Request{Hello, Sync, Replicate, CrashReport}
}

// ParseRequest returns the Request whose wire name is s ("hello", "sync",
// "replicate", "crash_report"), and false for any other string, a
// response type ("error") included.
func ParseRequest(s string) (Request, bool) {
	for r, name := range requestNames {
		if name == s {
			return Request(r), true
		}
	}
	return 0, false
}

// Valid reports whether r is one of the NumRequests request types.
func (r Request) Valid() bool { return r < NumRequests }

// String returns the wire name of r ("crash_report" for CrashReport), or
// "request(N)" for an invalid Request.
func (r Request) String() string {
	if !r.Valid() {
		return "request(" + strconv.Itoa(int(r)) + ")"
	}
	return requestNames[r]
}

// Cursor is a position in a node's event log: 0 is before the first event,
// and each stored event takes the next position (docs/design.md §5). On the
// wire it is an opaque decimal string (docs/design.md §4): the canonical
// decimal form of a uint64, which MarshalText writes and UnmarshalText and
// ParseCursor accept, and nothing else.
type Cursor uint64

// ErrCursor is wrapped by every error of ParseCursor.
var ErrCursor = errors.New("cursor is not a canonical decimal uint64")

// ParseCursor parses the wire form of a cursor. It accepts exactly the
// canonical decimal form of a uint64: "0", or 1..20 digits without a
// leading zero, at most 18446744073709551615. Anything else ("", "-1",
// "1.0", "0x10", " 1", "01", "18446744073709551616") is an error wrapping
// ErrCursor that quotes at most 24 bytes of s.
func ParseCursor(s string) (Cursor, error) {
	if s == "" {
		return 0, fmt.Errorf("%w: it is empty", ErrCursor)
	}
	if len(s) > 20 || (s[0] == '0' && len(s) > 1) {
		return 0, fmt.Errorf("%w: %.24q", ErrCursor, s)
	}
	var n uint64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("%w: %.24q", ErrCursor, s)
		}
		d := uint64(c - '0')
		if n > (1<<64-1-d)/10 {
			return 0, fmt.Errorf("%w: %.24q is beyond 2^64-1", ErrCursor, s)
		}
		n = n*10 + d
	}
	return Cursor(n), nil
}

// String is the wire form of c: its decimal digits.
func (c Cursor) String() string { return strconv.FormatUint(uint64(c), 10) }

// AppendText appends the wire form of c to b (encoding.TextAppender).
func (c Cursor) AppendText(b []byte) ([]byte, error) {
	return strconv.AppendUint(b, uint64(c), 10), nil
}

// MarshalText returns the wire form of c (encoding.TextMarshaler).
func (c Cursor) MarshalText() ([]byte, error) { return c.AppendText(nil) }

// UnmarshalText sets c from its wire form, as ParseCursor
// (encoding.TextUnmarshaler); on error c is unchanged.
func (c *Cursor) UnmarshalText(b []byte) error {
	n, err := ParseCursor(string(b))
	if err != nil {
		return err
	}
	*c = n
	return nil
}

// PrefixEnd returns the least key greater than every key that starts with
// p, the exclusive upper bound of a prefix scan (pebble's
// IterOptions.UpperBound): p with its trailing 0xff bytes dropped and its
// last byte incremented. It returns nil, no upper bound, for a p of 0xff
// bytes only (or empty). docs/design.md §10: each package keeps its keys
// under a prefix of its own, and scans them with this bound.
func PrefixEnd(p []byte) []byte {
	end := bytes.Clone(p)
	for len(end) > 0 && end[len(end)-1] == 0xff {
		end = end[:len(end)-1]
	}
	if len(end) == 0 {
		return nil
	}
	end[len(end)-1]++
	return end
}

// ShortIDBytes is the length of a ShortID: the first 8 bytes (16 hex
// digits) of an event id.
const ShortIDBytes = 8

// ShortID names an event by the first ShortIDBytes of its id, as a heads
// announcement does (docs/adr/0041): a node checks that it holds each
// event a peer announced at a fraction of the bytes of the whole id. Two
// events of one log share a ShortID with odds of about n²/2^65 for n
// events: 3·10^-6 for 10 million. The cost of a collision is one event a
// node takes for held when it is not, which a later sync brings.
type ShortID [ShortIDBytes]byte

// ErrShortID is wrapped by every error of ParseShortID.
var ErrShortID = errors.New("short id is not 16 lowercase hex digits")

// ParseShortID parses the wire form of a short id: exactly 16 lowercase
// hex digits. Anything else is an error wrapping ErrShortID that quotes at
// most 24 bytes of s.
func ParseShortID(s string) (ShortID, error) {
	var id ShortID
	if len(s) != 2*ShortIDBytes || strings.ContainsAny(s, "ABCDEF") {
		return id, fmt.Errorf("%w: %.24q", ErrShortID, s)
	}
	if _, err := hex.Decode(id[:], []byte(s)); err != nil {
		return ShortID{}, fmt.Errorf("%w: %.24q", ErrShortID, s)
	}
	return id, nil
}

// String is the wire form of id: 16 lowercase hex digits.
func (id ShortID) String() string { return hex.EncodeToString(id[:]) }

// MarshalText returns the wire form of id (encoding.TextMarshaler).
func (id ShortID) MarshalText() ([]byte, error) { return []byte(id.String()), nil }

// UnmarshalText sets id from its wire form, as ParseShortID
// (encoding.TextUnmarshaler); on error id is unchanged.
func (id *ShortID) UnmarshalText(b []byte) error {
	v, err := ParseShortID(string(b))
	if err != nil {
		return err
	}
	*id = v
	return nil
}
