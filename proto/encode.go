package proto

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strconv"

	"github.com/go-json-experiment/json/jsontext"
)

// GreaseOneIn is how often Marshal adds a GREASE field: to one message in
// GreaseOneIn on average (docs/design.md §4: "a node sends one now and then", so that
// peers keep tolerating unknown fields; ADR 0016, "GREASE": ADR 0015 maps ADR
// 0014's "GREASE (ADR 0010, A8)", a record of the original node, to it).
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
	w := newWriter(nil, len(e.Event)+512)
	w.member("event")
	w.raw(e.Event)
	w.member("providers")
	w.providers(e.Providers)
	b, err := w.finish()
	if err != nil {
		return nil, fmt.Errorf("proto: encode envelope: %w", err)
	}
	if len(b) > MaxEnvelopeBytes {
		return nil, fmt.Errorf("proto: encode envelope: %d bytes, more than %d", len(b), MaxEnvelopeBytes)
	}
	return b, nil
}

// marshal encodes m with solution s (nil: none) and, if g is not nil, one
// GREASE field drawn from g.
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
	for {
		b, err := encode(m, s, g)
		if err != nil {
			return nil, fmt.Errorf("proto: encode %s: %w", t, err)
		}
		if len(b) <= limit {
			return b, nil
		}
		if g == nil {
			return nil, fmt.Errorf("proto: encode %s: %d bytes, more than %d", t, len(b), limit)
		}
		g = nil // the GREASE field tipped it over: send the message without
	}
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

func encode(m Message, s *Solution, g *rand.Rand) ([]byte, error) {
	w := newWriter(g, sizeHint(m))
	w.member("type")
	w.str(string(m.MessageType()))
	switch m := m.(type) {
	case *Hello:
		w.member("version")
		w.int(int64(m.Version))
		w.member("network")
		w.str(m.Network)
		w.member("agent")
		w.str(m.Agent)
		w.member("features")
		w.strs(m.Features)
		w.member("listen")
		w.strs(m.Listen)
		w.member("head")
		w.str(m.Head.String())
		if l := m.Limits; l != nil {
			w.member("limits")
			w.open('{')
			for _, kv := range []struct {
				name string
				v    int64
			}{{"hello_per_min", l.HelloPerMin}, {"sync_per_min", l.SyncPerMin},
				{"replicate_per_min", l.ReplicatePerMin}, {"report_per_min", l.ReportPerMin}} {
				w.name(kv.name) // str adds the separating comma
				w.int(kv.v)
			}
			w.close('}')
		}
	case *SyncRequest:
		w.member("after")
		w.str(m.After.String())
		w.member("limit")
		if m.Limit == 0 {
			w.int(MaxPageEvents)
		} else {
			w.int(int64(m.Limit))
		}
	case *SyncResponse:
		w.member("events")
		w.open('[')
		total := 0
		for _, ev := range m.Events {
			total += w.raw(ev)
		}
		w.close(']')
		if total > MaxPageBytes && w.err == nil {
			w.err = badRequest("sync: \"events\": %d bytes in all, more than %d", total, MaxPageBytes)
		}
		w.member("next")
		w.str(m.Next.String())
		w.member("more")
		w.bool(m.More)
	case *ReplicateRequest:
		w.member("blobs")
		w.open('[')
		for _, b := range m.Blobs {
			w.open('{')
			w.name("cid")
			w.str(b.CID)
			w.name("size")
			w.int(b.Size)
			w.close('}')
		}
		w.close(']')
		w.member("providers")
		w.providers(m.Providers)
	case *ReplicateResponse:
		w.member("stored")
		w.strs(m.Stored)
		w.member("skipped")
		w.strs(m.Skipped)
		w.member("failed")
		w.open('[')
		for _, f := range m.Failed {
			w.open('{')
			w.name("cid")
			w.str(f.CID)
			w.name("reason")
			w.str(f.Reason)
			w.close('}')
		}
		w.close(']')
	case *CrashReportRequest:
		w.member("event")
		w.raw(m.Event)
	case *CrashReportResponse:
		w.member("id")
		w.str(m.ID)
	case *Error:
		w.member("code")
		w.str(string(m.Code))
		w.member("message")
		w.str(m.Message)
	case *Refused:
		w.member("reason")
		w.str(m.Reason)
		if m.RetryAfterMs != 0 {
			w.member("retry_after_ms")
			w.int(m.RetryAfterMs)
		}
	case *Challenge:
		w.member("alg")
		w.str(m.Alg)
		w.member("seed")
		w.str(m.Seed)
		w.member("effort")
		w.int(int64(m.Effort))
		w.member("expires")
		w.int(m.Expires)
	}
	if s != nil {
		w.member("solution")
		w.open('{')
		w.name("alg")
		w.str(s.Alg)
		w.name("seed")
		w.str(s.Seed)
		w.name("nonce")
		w.str(s.Nonce)
		w.close('}')
	}
	return w.finish()
}

// writer appends compact JSON to b. The first error sticks and ends the
// writing; finish reports it.
type writer struct {
	b        []byte
	err      error
	members  int        // top-level members written
	g        *rand.Rand // nil: no GREASE
	greaseAt int        // the top-level member index before which GREASE goes
}

// newWriter starts a top-level object in a buffer of size bytes (a hint).
func newWriter(g *rand.Rand, size int) *writer {
	w := &writer{b: make([]byte, 0, size), g: g, greaseAt: -1}
	if g != nil {
		w.greaseAt = g.IntN(4) // 0 puts it before "type"
	}
	w.b = append(w.b, '{')
	return w
}

// sep appends the comma that separates a value or member from the one
// before, if there is one before.
func (w *writer) sep() {
	if n := len(w.b); n > 0 {
		switch w.b[n-1] {
		case '{', '[', ':':
			return
		}
	}
	w.b = append(w.b, ',')
}

// member starts a top-level member, with GREASE before it if its turn has come.
func (w *writer) member(name string) {
	if w.members == w.greaseAt {
		w.grease()
	}
	w.members++
	w.name(name)
}

func (w *writer) name(name string) {
	w.str(name)
	w.b = append(w.b, ':')
}

func (w *writer) str(s string) {
	w.sep()
	var err error
	w.b, err = jsontext.AppendQuote(w.b, s)
	if err != nil && w.err == nil {
		w.err = fmt.Errorf("string %.40q: %w", s, err)
	}
}

func (w *writer) strs(list []string) {
	w.open('[')
	for _, s := range list {
		w.str(s)
	}
	w.close(']')
}

func (w *writer) int(n int64) {
	w.sep()
	w.b = strconv.AppendInt(w.b, n, 10)
}

func (w *writer) bool(v bool) {
	w.sep()
	w.b = strconv.AppendBool(w.b, v)
}

func (w *writer) open(c byte) {
	w.sep()
	w.b = append(w.b, c)
}

func (w *writer) close(c byte) { w.b = append(w.b, c) }

// raw appends the JSON value v in its shortest form (jsontext.Value.Format:
// no whitespace, shortest strings), checking it (syntax, UTF-8, duplicate
// names), and returns the length written.
func (w *writer) raw(v jsontext.Value) int {
	w.sep()
	start := len(w.b)
	w.b = append(w.b, v...)
	out := jsontext.Value(w.b[start:len(w.b):len(w.b)])
	if err := out.Format(); err != nil {
		if w.err == nil {
			w.err = fmt.Errorf("raw JSON value: %w", err)
		}
		w.b = w.b[:start]
		return 0
	}
	if len(out) <= len(v) { // formatted in place, the usual case
		w.b = w.b[:start+len(out)]
	} else {
		w.b = append(w.b[:start], out...)
	}
	return len(out)
}

func (w *writer) providers(ps []Provider) {
	w.open('[')
	for _, p := range ps {
		w.open('{')
		w.name("id")
		w.str(p.ID)
		w.name("addrs")
		w.strs(p.Addrs)
		w.close('}')
	}
	w.close(']')
}

// grease appends one top-level GREASE member: _grease followed by 8 hex
// digits, with a value of a random JSON kind.
func (w *writer) grease() {
	name := GreasePrefix + fmt.Sprintf("%08x", w.g.Uint32())
	w.name(name)
	switch w.g.IntN(6) {
	case 0:
		w.int(int64(w.g.IntN(1 << 20)))
	case 1:
		w.str(fmt.Sprintf("%x", w.g.Uint64()))
	case 2:
		w.bool(w.g.IntN(2) == 0)
	case 3:
		w.sep()
		w.b = append(w.b, "null"...)
	case 4:
		w.open('{')
		w.name("x")
		w.int(int64(w.g.IntN(100)))
		w.close('}')
	default:
		w.open('[')
		w.close(']')
	}
	w.g = nil
}

// finish closes the top-level object, with GREASE last if it is still due.
func (w *writer) finish() ([]byte, error) {
	if w.g != nil {
		w.grease()
	}
	w.b = append(w.b, '}')
	if w.err != nil {
		return nil, w.err
	}
	return w.b, nil
}
