package eventlog

import (
	"crypto/ed25519"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	"lukechampine.com/blake3"

	"github.com/wats-network/wats/core"
)

// Caps on events. Every event that comes from a peer is checked against all
// of them by Verify; New refuses to sign an event that breaks one.
const (
	// MaxBodyBytes caps the body, measured on its canonical (RFC 8785) form,
	// the form that is signed and stored. docs/design.md §5: body ≤ 16 KiB.
	MaxBodyBytes = 16 << 10
	// MaxBlobs caps the blob references of one event. docs/design.md §5: ≤ 16 blobs.
	MaxBlobs = 16
	// MaxFutureSkew is how far past the verifier's clock an event's time may
	// be. docs/design.md §5: "time is no more than 10 minutes in the future". Exactly
	// now+MaxFutureSkew is accepted.
	MaxFutureSkew = 10 * time.Minute
	// MaxStackBytes caps the "stack" string of a crash body (UTF-8 bytes of
	// the decoded string). docs/design.md §5: stack ≤ 8 KiB.
	MaxStackBytes = 8 << 10
	// MaxBlobNameBytes caps a blob's name (UTF-8 bytes). Names become file
	// names when a blob is exported, and 255 bytes is the common file-name
	// limit (ext4, APFS, NTFS in UTF-16 units). Our choice (docs/design.md
	// §5).
	MaxBlobNameBytes = 255
	// MaxCIDLen caps a blob CID string before it is parsed. A CIDv1 in
	// base32 with a 64-byte digest is 113 characters; blobs use 32-byte
	// BLAKE3 digests (59 characters, docs/design.md §9). Our choice.
	MaxCIDLen = 128
	// MaxEventBytes caps a whole encoded event as received (Decode) and as
	// stored (Log.Append). The largest valid event in canonical form is a
	// 16 KiB body plus 16 blobs of at most ~670 bytes each (a 128-byte CID,
	// a 255-byte name whose quotes and backslashes are escaped, a 16-digit
	// size, member names) plus ~400 bytes of id, author, time, kind and sig:
	// about 27.5 KiB. 32 KiB leaves headroom for whitespace in what a peer
	// sends, and keeps 256 events of a sync page (8 MiB) within the
	// response cap of docs/design.md §4 and an event within the 64 KiB gossip
	// envelope of docs/design.md §6. Our choice.
	MaxEventBytes = 32 << 10
	// MaxTime is the largest event time (unix milliseconds); times are
	// 0..MaxTime. 2^53 keeps the time exact in JCS, which treats numbers
	// as IEEE doubles (RFC 8785 §3.2.2.3). Our choice; the 10-minute rule
	// bounds real times far below it.
	MaxTime = 1 << 53
)

// KindCrash is the kind of a crash report; its body is a Crash (docs/design.md §5).
const KindCrash = "crash"

// SigningPrefix precedes the canonical JSON in the signing bytes (docs/design.md §5).
const SigningPrefix = "wats-event-v1:"

const (
	idHexLen  = 64 // hex of a 32-byte BLAKE3-256 digest
	sigRawLen = 64 // Ed25519 signature
	sigB64Len = 86 // base64url without padding of 64 bytes
)

// sigEncoding is base64url without padding, strict: the unused low bits of
// the last character must be zero, so a signature has one encoding only.
var sigEncoding = base64.RawURLEncoding.Strict()

// BlobRef names a content-addressed blob carried by an event (docs/design.md §5, §9).
type BlobRef struct {
	// CID is a CIDv1 in its canonical string form (base32, lowercase,
	// multibase prefix 'b'), at most MaxCIDLen characters.
	CID string `json:"cid"`
	// Size is the declared size in bytes, 0..core.MaxSafeInt.
	Size uint64 `json:"size"`
	// Name is a file name: valid UTF-8 without control characters, at most
	// MaxBlobNameBytes bytes; may be empty.
	Name string `json:"name"`
}

// Event is a signed entry of the log (docs/design.md §5). Its JSON form is
// {"id","author","time","kind","body","blobs","sig"}; blobs is always an
// array ([] when empty). Use New to create one, Decode to parse one from a
// peer, and Verify before trusting it.
type Event struct {
	// ID is the lowercase hex BLAKE3-256 of the signing bytes (64 chars).
	ID string `json:"id"`
	// Author is the libp2p peer ID (base58 "12D3KooW…") of the Ed25519 key
	// that signed the event.
	Author string `json:"author"`
	// Time is the author's clock at creation, unix milliseconds, 0..MaxTime.
	Time int64 `json:"time"`
	// Kind is 1..core.MaxKindLen characters of [a-z0-9._-], e.g. "note", "crash".
	Kind string `json:"kind"`
	// Body is a JSON object of at most MaxBodyBytes in canonical form. New
	// and Decode leave it canonical (RFC 8785).
	Body jsontext.Value `json:"body"`
	// Blobs lists at most MaxBlobs blob references; nil encodes as [].
	Blobs []BlobRef `json:"blobs"`
	// Sig is the Ed25519 signature of the signing bytes, base64url without
	// padding (86 chars).
	Sig string `json:"sig"`
}

// New creates and signs an event by key at time now (truncated to the
// millisecond). The body is canonicalized (RFC 8785) and copied; blobs are
// copied. key must be an Ed25519 key (docs/design.md §3). It returns a
// *ValidationError when a cap or syntax rule of Verify would be broken, so
// that New never signs an event peers would refuse (except for the 10-minute
// rule, which depends on the verifier's clock).
func New(key crypto.PrivKey, now time.Time, kind string, body jsontext.Value, blobs []BlobRef) (*Event, error) {
	if key == nil || key.Type() != crypto.Ed25519 {
		return nil, invalid(ErrMalformed, "author", "signing key is not Ed25519")
	}
	id, err := peer.IDFromPrivateKey(key)
	if err != nil {
		return nil, invalid(ErrMalformed, "author", "peer ID of signing key: %v", err)
	}
	canon, err := canonicalBody(body)
	if err != nil {
		return nil, err
	}
	e := &Event{
		Author: id.String(),
		Time:   now.UnixMilli(),
		Kind:   kind,
		Body:   canon,
		Blobs:  append([]BlobRef{}, blobs...),
	}
	if _, err := e.checkFields(canon, false, nil); err != nil {
		return nil, err
	}
	sb, err := e.appendSigningBytes(nil, canon)
	if err != nil {
		return nil, err
	}
	sig, err := key.Sign(sb)
	if err != nil {
		return nil, fmt.Errorf("eventlog: sign: %w", err)
	}
	sum := blake3.Sum256(sb)
	e.ID = hex.EncodeToString(sum[:])
	e.Sig = sigEncoding.EncodeToString(sig)
	return e, nil
}

// SigningBytes returns SigningPrefix followed by the RFC 8785 canonical JSON
// of the event without id and sig (docs/design.md §5). It is built directly in
// sorted member order (author, blobs, body, kind, time; in a blob cid, name,
// size), canonicalizing only the body; the tests cross-check it against a
// full JCS of the object. It fails with ErrMalformed when the body is not
// valid JSON, a string is not valid UTF-8, or time or a size lies outside
// the range where JCS numbers are exact.
func (e *Event) SigningBytes() ([]byte, error) {
	canon, err := canonicalBody(e.Body)
	if err != nil {
		return nil, err
	}
	return e.appendSigningBytes(nil, canon)
}

func (e *Event) appendSigningBytes(dst []byte, canonBody []byte) ([]byte, error) {
	if e.Time < 0 || e.Time > MaxTime {
		return nil, invalid(ErrMalformed, "time", "%d outside 0..2^53", e.Time)
	}
	dst = append(dst, SigningPrefix...)
	dst = append(dst, `{"author":`...)
	dst, err := appendString(dst, e.Author, "author")
	if err != nil {
		return nil, err
	}
	dst = append(dst, `,"blobs":[`...)
	for i, b := range e.Blobs {
		if b.Size > core.MaxSafeInt {
			return nil, invalid(ErrTooLarge, fmt.Sprintf("blobs[%d].size", i), "%d beyond 2^53", b.Size)
		}
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"cid":`...)
		if dst, err = appendString(dst, b.CID, "cid"); err != nil {
			return nil, err
		}
		dst = append(dst, `,"name":`...)
		if dst, err = appendString(dst, b.Name, "name"); err != nil {
			return nil, err
		}
		dst = append(dst, `,"size":`...)
		dst = strconv.AppendUint(dst, b.Size, 10)
		dst = append(dst, '}')
	}
	dst = append(dst, `],"body":`...)
	dst = append(dst, canonBody...)
	dst = append(dst, `,"kind":`...)
	if dst, err = appendString(dst, e.Kind, "kind"); err != nil {
		return nil, err
	}
	dst = append(dst, `,"time":`...)
	dst = strconv.AppendInt(dst, e.Time, 10)
	dst = append(dst, '}')
	return dst, nil
}

// appendString appends s as a JSON string in its RFC 8785 form (minimal
// escaping: only '"', '\\' and control characters, \b \t \n \f \r short
// forms, lowercase \u00xx for the rest).
func appendString(dst []byte, s, field string) ([]byte, error) {
	out, err := jsontext.AppendQuote(dst, s)
	if err != nil {
		return nil, invalid(ErrMalformed, field, "not valid UTF-8")
	}
	return out, nil
}

// Marshal returns the event as compact JSON, members in the order id,
// author, time, kind, body, blobs, sig, the body canonical and blobs always
// an array. This is the form stored by Log and sent to peers. It fails with
// ErrMalformed when the body is not valid JSON or a string not valid UTF-8;
// it does not check the caps (Verify does).
func (e *Event) Marshal() ([]byte, error) {
	canon, err := canonicalBody(e.Body)
	if err != nil {
		return nil, err
	}
	return e.appendJSON(make([]byte, 0, len(canon)+256+len(e.Blobs)*160), canon)
}

func (e *Event) appendJSON(dst, canonBody []byte) ([]byte, error) {
	var err error
	dst = append(dst, `{"id":`...)
	if dst, err = appendString(dst, e.ID, "id"); err != nil {
		return nil, err
	}
	dst = append(dst, `,"author":`...)
	if dst, err = appendString(dst, e.Author, "author"); err != nil {
		return nil, err
	}
	dst = append(dst, `,"time":`...)
	dst = strconv.AppendInt(dst, e.Time, 10)
	dst = append(dst, `,"kind":`...)
	if dst, err = appendString(dst, e.Kind, "kind"); err != nil {
		return nil, err
	}
	dst = append(dst, `,"body":`...)
	dst = append(dst, canonBody...)
	dst = append(dst, `,"blobs":[`...)
	for i, b := range e.Blobs {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"cid":`...)
		if dst, err = appendString(dst, b.CID, "cid"); err != nil {
			return nil, err
		}
		dst = append(dst, `,"size":`...)
		dst = strconv.AppendUint(dst, b.Size, 10)
		dst = append(dst, `,"name":`...)
		if dst, err = appendString(dst, b.Name, "name"); err != nil {
			return nil, err
		}
		dst = append(dst, '}')
	}
	dst = append(dst, `],"sig":`...)
	if dst, err = appendString(dst, e.Sig, "sig"); err != nil {
		return nil, err
	}
	dst = append(dst, '}')
	return dst, nil
}

// MarshalJSON implements json.Marshaler with Marshal, so that an *Event can
// be embedded in other messages.
func (e *Event) MarshalJSON() ([]byte, error) { return e.Marshal() }

// UnmarshalJSON implements json.Unmarshaler with Decode (strict; no
// signature check).
func (e *Event) UnmarshalJSON(b []byte) error {
	d, err := Decode(b)
	if err != nil {
		return err
	}
	*e = *d
	return nil
}

// Verify checks everything a node requires before storing an event (design
// §5), cheapest first: field syntax and caps (ErrMalformed, ErrTooLarge:
// kind syntax, body a JSON object of at most MaxBodyBytes, crash body shape
// for kind "crash", blobs, author an Ed25519 peer ID, id and sig syntax),
// then time ≤ now+MaxFutureSkew (ErrFuture), then id = BLAKE3-256 of the
// signing bytes (ErrBadID), then the Ed25519 signature under ZIP 215
// (ErrBadSignature; ADR 0034, signature.go). Every error is a
// *ValidationError naming the field. VerifyBatch gives the same verdict
// for each event of a page.
func (e *Event) Verify(now time.Time) error {
	buf := signBufPool.Get().(*[]byte)
	defer signBufPool.Put(buf)
	var in sigInput
	sb, err := e.checkAllButSignature(now, (*buf)[:0], &in, nil, false)
	if err != nil {
		return err
	}
	*buf = sb
	if !verifySignature(&in, sb) {
		return errBadSignature()
	}
	return nil
}

// checkAllButSignature is Verify without the signature check: it appends
// the signing bytes to dst and returns the extended slice (the signing
// bytes are its tail from len(dst)), and fills in with the author's key
// and the raw signature. keys, if not nil, remembers parsed authors.
// decoded says e is as Decode returned it, its body canonical already (a
// second canonicalization was 5% of a catch-up's CPU).
func (e *Event) checkAllButSignature(now time.Time, dst []byte, in *sigInput, keys authorKeys, decoded bool) ([]byte, error) {
	canon := e.Body
	if !decoded {
		var err error
		if canon, err = canonicalBody(e.Body); err != nil {
			return nil, err
		}
	}
	c, err := e.checkFields(canon, true, keys)
	if err != nil {
		return nil, err
	}
	if limit := now.Add(MaxFutureSkew).UnixMilli(); e.Time > limit {
		return nil, invalid(ErrFuture, "time", "%d is more than %v after now (%d)", e.Time, MaxFutureSkew, now.UnixMilli())
	}
	sb, err := e.appendSigningBytes(dst, canon)
	if err != nil {
		return nil, err
	}
	sum := blake3.Sum256(sb[len(dst):])
	var want [idHexLen]byte
	hex.Encode(want[:], sum[:])
	if subtle.ConstantTimeCompare(want[:], []byte(e.ID)) != 1 {
		return nil, invalid(ErrBadID, "id", "is not the BLAKE3-256 of the signing bytes")
	}
	*in = c.sigInput
	return sb, nil
}

func errBadSignature() error {
	return invalid(ErrBadSignature, "sig", "not a valid signature by the author")
}

// checked holds what checkFields parsed on the way: the author's raw key
// and, when it checked the sig, the raw signature.
type checked struct {
	sigInput
}

// checkFields checks syntax and caps of every field except the body's
// canonical form (done by canonicalBody) and, when withIDSig is false, the
// id and sig (New fills them last). keys, if not nil, remembers parsed
// authors.
func (e *Event) checkFields(canonBody []byte, withIDSig bool, keys authorKeys) (*checked, error) {
	var c checked
	if withIDSig {
		if len(e.ID) != idHexLen || !isLowerHex(e.ID) {
			return nil, invalid(ErrMalformed, "id", "not 64 lowercase hex digits")
		}
		if len(e.Sig) != sigB64Len {
			return nil, invalid(ErrMalformed, "sig", "not 86 base64url characters")
		}
		n, err := sigEncoding.Decode(c.sig[:], []byte(e.Sig))
		if err != nil || n != sigRawLen {
			return nil, invalid(ErrMalformed, "sig", "not base64url (no padding) of 64 bytes")
		}
	}
	if err := keys.key(e.Author, &c.pub); err != nil {
		return nil, err
	}
	if e.Time < 0 || e.Time > MaxTime {
		return nil, invalid(ErrMalformed, "time", "%d outside 0..2^53", e.Time)
	}
	if err := checkKind(e.Kind); err != nil {
		return nil, err
	}
	if len(canonBody) > MaxBodyBytes {
		return nil, invalid(ErrTooLarge, "body", "%d bytes (canonical) over %d", len(canonBody), MaxBodyBytes)
	}
	if e.Kind == KindCrash {
		if _, err := ParseCrash(canonBody); err != nil {
			return nil, err
		}
	}
	if len(e.Blobs) > MaxBlobs {
		return nil, invalid(ErrTooLarge, "blobs", "%d blobs over %d", len(e.Blobs), MaxBlobs)
	}
	for i := range e.Blobs {
		if err := checkBlob(i, &e.Blobs[i]); err != nil {
			return nil, err
		}
	}
	return &c, nil
}

// authorKeys remembers the raw keys of authors authorKey parsed: a page
// by a few authors then parses each once (the base58 decode and the
// canonical re-encode cost about 4 µs). nil remembers nothing.
type authorKeys map[string][ed25519.PublicKeySize]byte

// key is authorKey through the memory of k.
func (k authorKeys) key(author string, raw *[ed25519.PublicKeySize]byte) error {
	if r, ok := k[author]; ok {
		*raw = r
		return nil
	}
	if err := authorKey(author, raw); err != nil {
		return err
	}
	if k != nil {
		k[author] = *raw
	}
	return nil
}

// authorKey parses an author, the canonical string of an Ed25519 peer ID,
// into its raw 32-byte key.
func authorKey(author string, raw *[ed25519.PublicKeySize]byte) error {
	id, err := peer.Decode(author)
	if err != nil {
		return invalid(ErrMalformed, "author", "not a peer ID")
	}
	if id.String() != author {
		return invalid(ErrMalformed, "author", "not in canonical (base58) form")
	}
	pub, err := id.ExtractPublicKey()
	if err != nil || pub.Type() != crypto.Ed25519 {
		return invalid(ErrMalformed, "author", "not the peer ID of an Ed25519 key")
	}
	b, err := pub.Raw()
	if err != nil || len(b) != ed25519.PublicKeySize {
		return invalid(ErrMalformed, "author", "not the peer ID of an Ed25519 key")
	}
	copy(raw[:], b)
	return nil
}

// checkKind: 1..core.MaxKindLen of core.IsKindChar (docs/design.md §5).
func checkKind(kind string) error {
	if kind == "" {
		return invalid(ErrMalformed, "kind", "empty")
	}
	if len(kind) > core.MaxKindLen {
		return invalid(ErrTooLarge, "kind", "%d characters over %d", len(kind), core.MaxKindLen)
	}
	for i := 0; i < len(kind); i++ {
		if ch := kind[i]; !core.IsKindChar(rune(ch)) {
			return invalid(ErrMalformed, "kind", "character %q not in [a-z0-9._-]", ch)
		}
	}
	return nil
}

func checkBlob(i int, b *BlobRef) error {
	field := func(name string) string { return fmt.Sprintf("blobs[%d].%s", i, name) }
	if len(b.CID) > MaxCIDLen {
		return invalid(ErrTooLarge, field("cid"), "%d characters over %d", len(b.CID), MaxCIDLen)
	}
	c, err := cid.Decode(b.CID)
	if err != nil {
		return invalid(ErrMalformed, field("cid"), "not a CID: %v", err)
	}
	if c.Version() != 1 || c.String() != b.CID {
		return invalid(ErrMalformed, field("cid"), "not a CIDv1 in canonical base32 form")
	}
	if b.Size > core.MaxSafeInt {
		return invalid(ErrTooLarge, field("size"), "%d beyond 2^53", b.Size)
	}
	if err := checkBlobName(field("name"), b.Name); err != nil {
		return err
	}
	return nil
}

// CheckBlobName checks name by the rule of a blob's name in an event
// (BlobRef.Name, docs/design.md §5): valid UTF-8 without control
// characters (U+0000–U+001F, U+007F), at most MaxBlobNameBytes bytes; ""
// is valid. The error is a *ValidationError of field "name" wrapping
// ErrTooLarge (too long) or ErrMalformed. The blob store checks the name
// a local add gives a blob by the same rule.
func CheckBlobName(name string) error {
	if err := checkBlobName("name", name); err != nil {
		return err
	}
	return nil
}

// checkBlobName is CheckBlobName with the error's field given; nil (a
// nil pointer) when name is valid.
func checkBlobName(field, name string) *ValidationError {
	if len(name) > MaxBlobNameBytes {
		return invalid(ErrTooLarge, field, "%d bytes over %d", len(name), MaxBlobNameBytes)
	}
	if !utf8.ValidString(name) {
		return invalid(ErrMalformed, field, "not valid UTF-8")
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f {
			return invalid(ErrMalformed, field, "control character %U", r)
		}
	}
	return nil
}

// isLowerHex reports whether s is made of lowercase hex digits only.
func isLowerHex(s string) bool {
	var bad byte
	for i := 0; i < len(s); i++ {
		bad |= lowerHexValue[s[i]]
	}
	return bad&0xf0 == 0
}

// lowerHexValue is the value of each lowercase hex digit, and 0xff for
// every other byte: one lookup a byte, no branch, for the 64-digit ids
// checked several times per event.
var lowerHexValue = func() (t [256]byte) {
	for i := range t {
		t[i] = 0xff
	}
	for i, ch := range "0123456789abcdef" {
		t[ch] = byte(i)
	}
	return t
}()
