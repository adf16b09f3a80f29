package proto

import (
	"bytes"
	"encoding"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"sync"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/wats-network/wats/core"
)

// Request is a decoded /wats/1 request. Exactly one of Hello, Sync,
// Replicate and CrashReport is set, the one of Type.
type Request struct {
	Type        Type
	Hello       *Hello
	Sync        *SyncRequest
	Replicate   *ReplicateRequest
	CrashReport *CrashReportRequest

	// Solution is the request's top-level "solution" (ADR 0014), or nil if it
	// had none or a malformed one: a malformed solution is ignored.
	Solution *Solution

	// Raw is the request as received: the slice given to DecodeRequest, not a
	// copy. Nothing else in Request aliases it.
	Raw []byte
}

// Message is the request's message, the one of r.Type: r.Hello, r.Sync,
// r.Replicate or r.CrashReport.
func (r *Request) Message() Message {
	switch r.Type {
	case TypeHello:
		return r.Hello
	case TypeSync:
		return r.Sync
	case TypeReplicate:
		return r.Replicate
	case TypeCrashReport:
		return r.CrashReport
	}
	return nil
}

// Response is a decoded /wats/1 response. Exactly one of the pointer fields
// is set, the one of Type: for TypeHello Hello, TypeSync Sync, TypeReplicate
// Replicate, TypeCrashReport CrashReport, TypeError Error, TypeRefused
// Refused, TypeChallenge Challenge.
type Response struct {
	Type        Type
	Hello       *Hello
	Sync        *SyncResponse
	Replicate   *ReplicateResponse
	CrashReport *CrashReportResponse
	Error       *Error
	Refused     *Refused
	Challenge   *Challenge
}

// Message is the response's message, the one non-nil pointer field.
func (r *Response) Message() Message {
	switch {
	case r.Hello != nil:
		return r.Hello
	case r.Sync != nil:
		return r.Sync
	case r.Replicate != nil:
		return r.Replicate
	case r.CrashReport != nil:
		return r.CrashReport
	case r.Error != nil:
		return r.Error
	case r.Refused != nil:
		return r.Refused
	case r.Challenge != nil:
		return r.Challenge
	}
	return nil
}

// DecodeRequest decodes one request, the payload of a frame (docs/design.md §4; the
// rules are in this package's protocol description). Errors are *Error:
// CodeTooLarge for more than MaxRequestBytes, CodeUnsupported for a "type"
// that is not a request type, CodeBadRequest for everything else that is
// wrong. The returned Request does not alias b, except Raw.
func DecodeRequest(b []byte) (*Request, error) {
	if err := tooLarge("request", len(b), MaxRequestBytes); err != nil {
		return nil, err
	}
	if req, ok := decodeCanonicalSync(b); ok {
		return req, nil
	}
	return decodeRequest(b)
}

// decodeRequest is DecodeRequest through the general decoder, for any
// request of at most MaxRequestBytes.
func decodeRequest(b []byte) (*Request, error) {
	st := getDecoder()
	defer putDecoder(st)
	whole := func() error { _, err := decodeRequestAs(st, b, "request", &struct{}{}); return err }
	t, err := st.messageType(b, whole)
	if err != nil {
		return nil, err
	}
	req := &Request{Type: t, Raw: b}
	var sol solutionValue
	switch t {
	case TypeHello:
		req.Hello = &Hello{}
		sol, err = decodeRequestAs(st, b, t, req.Hello)
	case TypeSync:
		req.Sync = &SyncRequest{Limit: core.MaxPageEvents} // the default when absent
		sol, err = decodeRequestAs(st, b, t, req.Sync)
	case TypeReplicate:
		req.Replicate = &ReplicateRequest{}
		sol, err = decodeRequestAs(st, b, t, req.Replicate)
	case TypeCrashReport:
		req.CrashReport = &CrashReportRequest{}
		sol, err = decodeRequestAs(st, b, t, req.CrashReport)
	default:
		return nil, unsupported(whole, "request", t)
	}
	if err == nil {
		err = decoded(req.Message())
	}
	if err != nil {
		return nil, err
	}
	req.Solution = st.decodeSolution(sol)
	return req, nil
}

// DecodeResponse decodes one response, the payload of a frame. Errors are
// *Error as for DecodeRequest (CodeTooLarge past MaxResponseBytes,
// CodeUnsupported for an unknown type). An "error" response decodes without
// error, into Response.Error. The returned Response does not alias b.
func DecodeResponse(b []byte) (*Response, error) {
	if err := tooLarge("response", len(b), MaxResponseBytes); err != nil {
		return nil, err
	}
	st := getDecoder()
	defer putDecoder(st)
	whole := func() error { return st.decode(b, "response", &struct{}{}) }
	t, err := st.messageType(b, whole)
	if err != nil {
		return nil, err
	}
	resp := &Response{Type: t}
	switch t {
	case TypeHello:
		resp.Hello = &Hello{}
	case TypeSync:
		resp.Sync = &SyncResponse{}
	case TypeReplicate:
		resp.Replicate = &ReplicateResponse{}
	case TypeCrashReport:
		resp.CrashReport = &CrashReportResponse{}
	case TypeError:
		resp.Error = &Error{}
	case TypeRefused:
		resp.Refused = &Refused{}
	case TypeChallenge:
		resp.Challenge = &Challenge{}
	default:
		return nil, unsupported(whole, "response", t)
	}
	m := resp.Message()
	if err := st.decode(b, string(t), m); err != nil {
		return nil, err
	}
	if err := decoded(m); err != nil {
		return nil, err
	}
	return resp, nil
}

// DecodeEnvelope decodes a gossip envelope (docs/design.md §6). It rejects, with a
// *Error, an envelope over MaxEnvelopeBytes (CodeTooLarge), with more than
// MaxProviders providers or more than MaxProviderAddrs addresses for one,
// with duplicate names anywhere, or otherwise malformed (CodeBadRequest). It
// does not validate the event beyond its being a JSON object: the gossip
// package does, with the event log. The result does not alias b.
func DecodeEnvelope(b []byte) (*Envelope, error) {
	return decodeValid(b, "envelope", MaxEnvelopeBytes, &Envelope{})
}

// decodeValid decodes b, one message of kind what of at most max bytes
// (CodeTooLarge past it), into m and validates it.
func decodeValid[M interface{ validate() error }](b []byte, what string, max int, m M) (M, error) {
	var none M
	if err := tooLarge(what, len(b), max); err != nil {
		return none, err
	}
	st := getDecoder()
	defer putDecoder(st)
	if err := st.open(b); err != nil {
		return none, err
	}
	if err := st.decode(b, what, m); err != nil {
		return none, err
	}
	if err := m.validate(); err != nil {
		return none, err
	}
	return m, nil
}

// unsupported is the error of a message of an unknown type t: the
// message's own error if it is malformed as a whole (whole), else
// CodeUnsupported.
func unsupported(whole func() error, what string, t Type) error {
	if err := whole(); err != nil {
		return err
	}
	return &Error{Code: CodeUnsupported, Message: fmt.Sprintf("unknown %s type %.40q", what, t)}
}

// tooLarge is the CodeTooLarge error of a message of kind what of n
// bytes, more than max; nil within max.
func tooLarge(what string, n, max int) error {
	if n > max {
		return &Error{Code: CodeTooLarge, Message: fmt.Sprintf("%s of %d bytes, more than %d", what, n, max)}
	}
	return nil
}

// withSolution is what a request of Go type M is decoded into: M's
// members, and the top-level "solution" (ADR 0014), which only requests have.
type withSolution[M any] struct {
	Msg      *M            `json:",embed"`
	Solution solutionValue `json:"solution"`
}

// solutionValue is a request's "solution" member as received: any JSON
// value, duplicate names inside included (unmarshalSolution), so that a
// malformed solution does not spoil its request; decodeSolution reads it.
type solutionValue jsontext.Value

// decodeRequestAs decodes request b, of type t, into m and returns its raw
// "solution" (nil when absent).
func decodeRequestAs[M any](st *decoder, b []byte, t Type, m *M) (solutionValue, error) {
	w := withSolution[M]{Msg: m}
	err := st.decode(b, string(t), &w)
	return w.Solution, err
}

// decodeSolution reads a request's "solution", or returns nil if it is
// absent or malformed (ADR 0014: a malformed solution is ignored): not an
// object, a duplicate name in it, a member missing, null, of the wrong type
// or too long.
func (st *decoder) decodeSolution(v solutionValue) *Solution {
	if v == nil {
		return nil
	}
	s := &Solution{}
	if st.decode(v, "solution", s) != nil || s.validate() != nil {
		return nil
	}
	return s
}

// decoder decodes messages: a reusable jsontext.Decoder, the json v2
// options that bind the wire types (unmarshalers, in validate.go), and the
// JSON pointers of the known members met by the last decode. A decoder is
// used by one goroutine at a time (getDecoder, putDecoder).
type decoder struct {
	d       jsontext.Decoder
	in      bytes.Buffer // what d reads: a message, not copied
	opts    json.Options
	present map[string]struct{}
}

var decoders = sync.Pool{New: func() any {
	st := &decoder{present: make(map[string]struct{}, 16)}
	st.opts = json.WithUnmarshalers(st.unmarshalers())
	return st
}}

// noInput is what a pooled decoder reads between uses, so that it does not
// keep the last message alive. It is never read.
var noInput = bytes.NewReader(nil)

func getDecoder() *decoder { return decoders.Get().(*decoder) }

func putDecoder(st *decoder) {
	st.d.Reset(noInput)
	st.in = bytes.Buffer{}
	decoders.Put(st)
}

// reset makes st.d read b from the start, with opts.
func (st *decoder) reset(b []byte, opts ...jsontext.Options) {
	st.in = *bytes.NewBuffer(b)
	st.d.Reset(&st.in, opts...) // jsontext reads a *bytes.Buffer in place
}

// open starts reading message b, which must be a JSON object. It leaves
// st.d after the opening brace, reading with duplicate names allowed (decode
// checks them).
func (st *decoder) open(b []byte) error {
	st.reset(b, jsontext.AllowDuplicateNames(true))
	tok, err := st.d.ReadToken()
	switch {
	case errors.Is(err, io.EOF):
		return badRequest("empty message")
	case err != nil:
		return badRequest("malformed JSON: %v", err)
	case tok.Kind() != '{':
		return badRequest("message is %s, not an object", article(kindName(tok.Kind())))
	}
	return nil
}

// messageType returns the "type" of message b, reading only the members
// before it: decode reads the whole message once its Go type is known.
// When the type is missing, not a string or too long, or the members before
// it are malformed, it reports what whole (b decoded as a message without
// members) finds first, so that a malformed message is a bad_request
// whatever its type, as for an unknown type.
func (st *decoder) messageType(b []byte, whole func() error) (Type, error) {
	if err := st.open(b); err != nil {
		return "", err
	}
	d := &st.d
	var typeErr *Error // nil: no "type"
	for d.PeekKind() == '"' {
		name, err := d.ReadToken()
		if err != nil {
			break // whole reports it
		}
		if name.String() != "type" {
			if d.SkipValue() != nil {
				break
			}
			continue
		}
		tok, err := d.ReadToken()
		switch {
		case err != nil:
		case tok.Kind() != '"':
			typeErr = wrongType("\"type\"", "string", tok.Kind())
		case len(tok.String()) > MaxStringBytes:
			typeErr = badRequest("\"type\": %d bytes, more than %d", len(tok.String()), MaxStringBytes)
		default:
			return Type(tok.String()), nil
		}
		break
	}
	if err := whole(); err != nil {
		return "", err
	}
	if typeErr == nil {
		typeErr = badRequest("no \"type\"")
	}
	return "", typeErr
}

// decode decodes message b into v, a pointer to a wire struct, with json v2
// and the unmarshalers of validate.go: b must be exactly one JSON object
// without duplicate names at any depth, each known member of the right type
// and not null, every required one present. Errors are bad_request *Error
// values naming the field, prefixed with what (the message type).
func (st *decoder) decode(b []byte, what string, v any) error {
	clear(st.present)
	st.reset(b)
	if err := json.UnmarshalDecode(&st.d, v, st.opts); err != nil {
		return wireError(what, err)
	}
	if _, err := st.d.ReadToken(); err != io.EOF {
		if err == nil {
			return badRequest("malformed JSON: data after the message")
		}
		return badRequest("malformed JSON: %v", err)
	}
	if p := st.settle(reflect.ValueOf(v).Elem(), ""); p != "" {
		return missing(fieldName(what, jsontext.Pointer(p)))
	}
	return nil
}

// wireError is the bad_request for an error of json v2: a syntax error
// (duplicate names included) is malformed JSON; a semantic one names the
// member at fault.
func wireError(what string, err error) *Error {
	var serr *json.SemanticError
	if !errors.As(err, &serr) {
		return badRequest("malformed JSON: %v", err)
	}
	field := fieldName(what, serr.JSONPointer)
	if want := wantOf(serr.GoType); serr.Err == nil || serr.JSONKind != 0 && kindName(serr.JSONKind) != want {
		return wrongType(field, want, serr.JSONKind) // e.g. a number for a cursor
	}
	return badRequest("%s: %v", field, serr.Err)
}

// fieldName names the member at JSON pointer p of a message of type what,
// as errors do: `sync: "events"[3]`, `hello: "limits".sync_per_min`, or
// what alone for the message itself.
func fieldName(what string, p jsontext.Pointer) string {
	var b strings.Builder
	b.WriteString(what)
	first := true
	for tok := range p.Tokens() {
		switch {
		case first:
			b.WriteString(": " + strconv.Quote(tok))
		case tok != "" && strings.Trim(tok, "0123456789") == "":
			b.WriteString("[" + tok + "]")
		default:
			b.WriteString("." + tok)
		}
		first = false
	}
	return b.String()
}

// wantOf is the JSON kind a Go field of type t holds on the wire.
func wantOf(t reflect.Type) string {
	switch {
	case t == nil:
		return "value"
	case t == reflect.TypeFor[jsontext.Value]():
		return "object" // the raw values of this package are events
	case reflect.PointerTo(t).Implements(reflect.TypeFor[encoding.TextUnmarshaler]()):
		return "string" // core.Cursor
	}
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Int, reflect.Int64, reflect.Uint64:
		return "number"
	case reflect.Bool:
		return "boolean"
	case reflect.Slice:
		return "array"
	case reflect.Struct:
		return "object"
	case reflect.Pointer:
		return wantOf(t.Elem())
	}
	return "value"
}

func kindName(k jsontext.Kind) string {
	switch k {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case '0':
		return "number"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "invalid value"
}

func wrongType(field, want string, got jsontext.Kind) *Error {
	return badRequest("%s: want %s, got %s", field, article(want), article(kindName(got)))
}

func article(noun string) string {
	switch noun[0] {
	case 'a', 'e', 'i', 'o', 'u':
		return "an " + noun
	}
	return "a " + noun
}

func missing(field string) *Error { return badRequest("%s is missing", field) }
