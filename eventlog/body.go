package eventlog

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/wats-network/wats/core"
	"lukechampine.com/blake3"
)

// signBufPool recycles the buffers Verify builds signing bytes in.
var signBufPool = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// decoderPool recycles the token decoders of checkNumbers and Decode.
var decoderPool = sync.Pool{New: func() any { return new(jsontext.Decoder) }}

// emptyReader is what pooled decoders are reset to, so that they do not keep
// the last input alive. It is never read.
var emptyReader = bytes.NewReader(nil)

// canonicalBody checks that body is a JSON object that JCS can represent
// exactly and returns its RFC 8785 canonical form in a new slice. It does not
// check MaxBodyBytes (the callers do, on the result).
//
// Errors (ErrMalformed): not valid JSON (RFC 7493: duplicate names, invalid
// UTF-8, lone surrogates are refused), not an object, or a number that
// overflows an IEEE double (JCS cannot represent it; RFC 8785 §3.2.2.3).
func canonicalBody(body jsontext.Value) (jsontext.Value, error) {
	if len(body) == 0 {
		return nil, invalid(ErrMalformed, "body", "missing")
	}
	if body.Kind() != '{' {
		return nil, invalid(ErrMalformed, "body", "not a JSON object")
	}
	if err := checkNumbers(body); err != nil {
		return nil, err
	}
	c := body.Clone()
	if err := c.Canonicalize(); err != nil {
		return nil, invalid(ErrMalformed, "body", "%v", err)
	}
	return c, nil
}

// errOverflow marks a number beyond the range of an IEEE double.
var errOverflow = errors.New("number overflows a double")

// checkNumbers walks body (exactly one JSON value) and fails on a syntax
// error or on a number whose magnitude exceeds the largest double: jsontext
// would saturate it to ±1.7976931348623157e+308 while other JCS
// implementations fail or print null, so such a body has no agreed signing
// bytes and is refused.
func checkNumbers(body []byte) error {
	d := decoderPool.Get().(*jsontext.Decoder)
	defer func() {
		d.Reset(emptyReader)
		decoderPool.Put(d)
	}()
	d.Reset(bytes.NewBuffer(body))
	for depth := 0; ; {
		tok, err := d.ReadToken()
		if err != nil {
			if errors.Is(err, io.EOF) && depth == 0 {
				return nil
			}
			return invalid(ErrMalformed, "body", "%v", err)
		}
		switch tok.Kind() {
		case '{', '[':
			depth++
		case '}', ']':
			depth--
		case '0':
			if _, err := tok.Float(); err != nil {
				return invalid(ErrMalformed, "body", "%v: %s", errOverflow, tok.String())
			}
		}
		if depth == 0 {
			// One top-level value only.
			if _, err := d.ReadToken(); !errors.Is(err, io.EOF) {
				return invalid(ErrMalformed, "body", "data after the object")
			}
			return nil
		}
	}
}

// Crash is the body of an event of kind "crash" (docs/design.md §5): all seven
// members are required strings; Stack is at most MaxStackBytes bytes. Other
// members are allowed and ignored, so that the body can grow. The
// fingerprint's format (ADR 0028) is not checked: a reporter may send its
// own.
type Crash struct {
	core.CrashInfo `json:",inline"`
	Fingerprint    string `json:"fingerprint"`
}

// members are c's members by their names in a body, in the order of
// docs/design.md §5.
func (c *Crash) members() []crashMember {
	return []crashMember{
		{"program", &c.Program}, {"version", &c.Version}, {"os", &c.OS}, {"arch", &c.Arch},
		{"reason", &c.Reason}, {"stack", &c.Stack}, {"fingerprint", &c.Fingerprint},
	}
}

// crashMember is a member of a crash body and where Crash holds it.
type crashMember struct {
	name string
	v    *string
}

// Fingerprint is the fingerprint of a crash: the lowercase hex BLAKE3-256
// of its program, its reason and the first line of its stack, each
// followed by a newline. Reports of the same failure in the same place group
// together across versions and machines. ADR 0028 chose the format
// (docs/design.md §5).
func Fingerprint(program, reason, stack string) string {
	first, _, _ := strings.Cut(strings.TrimSpace(stack), "\n")
	sum := blake3.Sum256([]byte(program + "\n" + reason + "\n" + first + "\n"))
	return hex.EncodeToString(sum[:])
}

// DecodeCrash decodes a crash event a peer submits (crash_report) and
// verifies it at now: Decode's and Verify's errors, or one for an event
// of another kind than KindCrash.
func DecodeCrash(raw []byte, now time.Time) (*Event, error) {
	ev, err := Decode(raw)
	if err == nil {
		err = ev.Verify(now)
	}
	if err == nil && ev.Kind != KindCrash {
		err = fmt.Errorf("event of kind %q, want %q", ev.Kind, KindCrash)
	}
	if err != nil {
		return nil, err
	}
	return ev, nil
}

// ParseCrash decodes and checks a crash body. Errors are *ValidationError
// with ErrMalformed (not an object, a member missing, null or not a string)
// or ErrTooLarge (stack over MaxStackBytes).
func ParseCrash(body jsontext.Value) (*Crash, error) {
	var members map[string]jsontext.Value
	if err := json.Unmarshal(body, &members); err != nil {
		return nil, invalid(ErrMalformed, "body", "crash body: %v", err)
	}
	c := new(Crash)
	for _, m := range c.members() {
		raw, ok := members[m.name]
		if !ok || raw.Kind() == 'n' {
			return nil, invalid(ErrMalformed, "body."+m.name, "missing from crash body")
		}
		if err := json.Unmarshal(raw, m.v); err != nil {
			return nil, invalid(ErrMalformed, "body."+m.name, "crash body: %v", err)
		}
	}
	if len(c.Stack) > MaxStackBytes {
		return nil, invalid(ErrTooLarge, "body.stack", "%d bytes over %d", len(c.Stack), MaxStackBytes)
	}
	return c, nil
}

// Body returns c as a JSON object for New, its fingerprint computed
// (Fingerprint) when it has none.
func (c *Crash) Body() (jsontext.Value, error) {
	if c.Fingerprint == "" {
		c.Fingerprint = Fingerprint(c.Program, c.Reason, c.Stack)
	}
	b, err := json.Marshal(c)
	if err != nil {
		return nil, err
	}
	return jsontext.Value(b), nil
}
