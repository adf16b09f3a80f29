package proto

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strconv"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	pool "github.com/libp2p/go-buffer-pool"

	"github.com/wats-network/wats/core"
)

// GreaseOneIn is how often Marshal adds a GREASE field: to one message in
// GreaseOneIn on average (docs/design.md §4: "a node sends one now and
// then", so that peers keep tolerating unknown fields; ADR 0016,
// "GREASE"; ADR 0015 records the GREASE rule ADR 0014 cites).
const GreaseOneIn = 8

// GreasePrefix starts the name of every GREASE field. Decoders ignore such
// fields like any unknown field.
const GreasePrefix = "_grease"

// Marshal encodes m canonically, except that with probability 1/GreaseOneIn
// it adds one GREASE field. See MarshalGreased.
func Marshal(m Message) ([]byte, error) {
	return MarshalWithSolution(m, nil)
}

// MarshalWithSolution is Marshal for a resubmitted request: it adds s as the
// top-level "solution" field (ADR 0014). s nil is Marshal; s with a response
// message is an error.
func MarshalWithSolution(m Message, s *Solution) ([]byte, error) {
	var g *rand.Rand
	if rand.IntN(GreaseOneIn) == 0 {
		g = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}
	return marshal(m, s, g)
}

// MarshalGreased encodes m, with one GREASE field if grease is true (its
// name, value and position random; left out if it alone would take m past
// its cap) and canonically if not.
//
// The canonical encoding is compact JSON: "type" first, then m's fields in
// the order of m's doc comment, every field written (empty lists as [],
// except Refused's retry_after_ms, omitted when 0), strings and raw JSON
// values in their shortest form, no trailing newline. It is what
// testdata/golden holds.
//
// Errors: m fails the bounds that the decoders check (a *Error with
// CodeBadRequest, wrapped), a string is not valid UTF-8 or a raw value not
// valid JSON, or the result exceeds the frame cap of m's kind
// (MaxRequestBytes for hello and the requests, MaxResponseBytes for the
// other responses).
func MarshalGreased(m Message, grease bool) ([]byte, error) {
	var g *rand.Rand
	if grease {
		g = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}
	return marshal(m, nil, g)
}

// MarshalEnvelope encodes a gossip envelope canonically (no GREASE): "event"
// then "providers". Errors as for MarshalGreased; the cap is MaxEnvelopeBytes.
func MarshalEnvelope(e *Envelope) ([]byte, error) {
	if e == nil {
		return nil, errors.New("proto: encode envelope: nil")
	}
	if err := e.validate(); err != nil {
		return nil, fmt.Errorf("proto: encode envelope: %w", err)
	}
	b, err := json.Marshal(e)
	if err != nil {
		return nil, fmt.Errorf("proto: encode envelope: %w", err)
	}
	if len(b) > MaxEnvelopeBytes {
		return nil, fmt.Errorf("proto: encode envelope: %d bytes, more than %d", len(b), MaxEnvelopeBytes)
	}
	return b, nil
}

// marshal encodes m with solution s (nil: none) and, if g is not nil, one
// GREASE member drawn from g.
func marshal(m Message, s *Solution, g *rand.Rand) ([]byte, error) {
	if m == nil || reflect.ValueOf(m).IsNil() {
		return nil, errors.New("proto: encode: nil message")
	}
	t := m.MessageType()
	if err := validate(m); err != nil {
		return nil, fmt.Errorf("proto: encode %s: %w", t, err)
	}
	if s != nil {
		if !isRequest(m) {
			return nil, fmt.Errorf("proto: encode %s: a solution goes only with a request", t)
		}
		if err := s.validate(); err != nil {
			return nil, fmt.Errorf("proto: encode %s: %w", t, err)
		}
	}
	limit := MaxResponseBytes
	if isRequest(m) {
		limit = MaxRequestBytes
	}
	b, err := encode(m, s)
	if err != nil {
		return nil, fmt.Errorf("proto: encode %s: %w", t, err)
	}
	if len(b) > limit {
		return nil, fmt.Errorf("proto: encode %s: %d bytes, more than %d", t, len(b), limit)
	}
	if g != nil {
		if greased := grease(b, g); len(greased) <= limit {
			b = greased
		} // else the GREASE member would tip it over: send the message without
	}
	return b, nil
}

// sizeHint is about the encoded size of m, to allocate once.
func sizeHint(m Message) int {
	const base = 512 // the fields besides raw values, GREASE, a solution
	switch m := m.(type) {
	case *SyncResponse:
		n := base
		for _, ev := range m.Events {
			n += len(ev) + 1
		}
		return n
	case *CrashReportRequest:
		return base + len(m.Event)
	}
	return base
}

// isRequest reports whether m is of a request type (Hello counts).
func isRequest(m Message) bool {
	switch m.(type) {
	case *Hello, *SyncRequest, *ReplicateRequest, *CrashReportRequest:
		return true
	}
	return false
}

// encode writes m canonically: "type", m's members as json v2 marshals
// them (in declaration order, raw values in their shortest form), then the
// solution if s is not nil.
func encode(m Message, s *Solution) ([]byte, error) {
	if r, ok := m.(*SyncRequest); ok && r.Limit == 0 {
		c := *r
		c.Limit = core.MaxPageEvents // Limit 0 means the default, sent as such
		m = &c
	}
	// jsontext writes into a *bytes.Buffer in place, keeping a quarter of
	// its length free: room for that, so that the buffer is allocated once.
	// It comes from go-buffer-pool, where WriteMessage puts it back once
	// written (a sync page is 100 KB and more; other callers of Marshal
	// leave theirs to the garbage collector).
	n := sizeHint(m)
	buf := bytes.NewBuffer(pool.Get(n + n/4)[:0])
	buf.WriteString(`{"type":`)
	buf.Write(strconv.AppendQuote(nil, string(m.MessageType())))
	at := buf.Len()
	if err := json.MarshalWrite(buf, m); err != nil {
		return nil, err
	}
	b := buf.Bytes()
	b[at] = ',' // m's opening brace: its members follow "type"
	if s != nil {
		b = append(b[:len(b)-1], `,"solution":`...)
		sol, err := json.Marshal(s)
		if err != nil {
			return nil, err
		}
		b = append(append(b, sol...), '}')
	}
	return b, nil
}

// grease returns the canonical message b with one top-level GREASE member:
// "_grease" and 8 hex digits, with a value of a random JSON kind, before
// the member g.IntN(4) of b (0: before "type"; last when b has fewer).
func grease(b []byte, g *rand.Rand) []byte {
	before := g.IntN(4)
	member := strconv.AppendQuote(nil, fmt.Sprintf("%s%08x", GreasePrefix, g.Uint32()))
	member = append(member, ':')
	switch g.IntN(6) {
	case 0:
		member = strconv.AppendInt(member, int64(g.IntN(1<<20)), 10)
	case 1:
		member = strconv.AppendQuote(member, fmt.Sprintf("%x", g.Uint64()))
	case 2:
		member = strconv.AppendBool(member, g.IntN(2) == 0)
	case 3:
		member = append(member, "null"...)
	case 4:
		member = fmt.Appendf(member, `{"x":%d}`, g.IntN(100))
	default:
		member = append(member, "[]"...)
	}
	// Find where member number before starts (after its comma), or the
	// closing brace.
	d := jsontext.NewDecoder(bytes.NewReader(b), jsontext.AllowDuplicateNames(true))
	if _, err := d.ReadToken(); err != nil {
		return b
	}
	for i := 0; i < before && d.PeekKind() != '}'; i++ {
		if _, err := d.ReadToken(); err != nil {
			return b
		}
		if err := d.SkipValue(); err != nil {
			return b
		}
	}
	at := int(d.InputOffset()) // after '{' or after a member's value
	out := make([]byte, 0, len(b)+len(member)+1)
	out = append(out, b[:at]...)
	if before == 0 {
		out = append(append(out, member...), ',')
	} else {
		out = append(append(out, ','), member...)
	}
	return append(out, b[at:]...)
}
