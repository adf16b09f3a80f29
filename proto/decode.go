package proto

import (
	"bytes"
	"errors"
	"fmt"
	"io"

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

// Message is the request's message: r.Hello, r.Sync, r.Replicate or
// r.CrashReport.
func (r *Request) Message() Message {
	switch {
	case r.Hello != nil:
		return r.Hello
	case r.Sync != nil:
		return r.Sync
	case r.Replicate != nil:
		return r.Replicate
	case r.CrashReport != nil:
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
	if len(b) > MaxRequestBytes {
		return nil, &Error{Code: CodeTooLarge, Message: fmt.Sprintf("request of %d bytes, more than %d", len(b), MaxRequestBytes)}
	}
	f, err := parseTop(b, true)
	if err != nil {
		return nil, err
	}
	t, err := f.messageType()
	if err != nil {
		return nil, err
	}
	req := &Request{Type: t, Raw: b}
	switch t {
	case TypeHello:
		req.Hello, err = decodeHello(&f)
	case TypeSync:
		req.Sync, err = decodeSyncRequest(&f)
	case TypeReplicate:
		req.Replicate, err = decodeReplicateRequest(&f)
	case TypeCrashReport:
		req.CrashReport, err = decodeCrashReportRequest(&f)
	default:
		return nil, &Error{Code: CodeUnsupported, Message: fmt.Sprintf("unknown request type %.40q", t)}
	}
	if err != nil {
		return nil, err
	}
	if f.solution != nil {
		req.Solution = decodeSolution(f.solution)
	}
	return req, nil
}

// DecodeResponse decodes one response, the payload of a frame. Errors are
// *Error as for DecodeRequest (CodeTooLarge past MaxResponseBytes,
// CodeUnsupported for an unknown type). An "error" response decodes without
// error, into Response.Error. The returned Response does not alias b.
func DecodeResponse(b []byte) (*Response, error) {
	if len(b) > MaxResponseBytes {
		return nil, &Error{Code: CodeTooLarge, Message: fmt.Sprintf("response of %d bytes, more than %d", len(b), MaxResponseBytes)}
	}
	f, err := parseTop(b, false)
	if err != nil {
		return nil, err
	}
	t, err := f.messageType()
	if err != nil {
		return nil, err
	}
	resp := &Response{Type: t}
	switch t {
	case TypeHello:
		resp.Hello, err = decodeHello(&f)
	case TypeSync:
		resp.Sync, err = decodeSyncResponse(&f)
	case TypeReplicate:
		resp.Replicate, err = decodeReplicateResponse(&f)
	case TypeCrashReport:
		resp.CrashReport, err = decodeCrashReportResponse(&f)
	case TypeError:
		resp.Error, err = decodeError(&f)
	case TypeRefused:
		resp.Refused, err = decodeRefused(&f)
	case TypeChallenge:
		resp.Challenge, err = decodeChallenge(&f)
	default:
		return nil, &Error{Code: CodeUnsupported, Message: fmt.Sprintf("unknown response type %.40q", t)}
	}
	if err != nil {
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
	if len(b) > MaxEnvelopeBytes {
		return nil, &Error{Code: CodeTooLarge, Message: fmt.Sprintf("envelope of %d bytes, more than %d", len(b), MaxEnvelopeBytes)}
	}
	f, err := parseTop(b, false)
	if err != nil {
		return nil, err
	}
	e := &Envelope{}
	if e.Event, err = rawObject(f.event, "envelope: \"event\""); err != nil {
		return nil, err
	}
	if e.Providers, err = decodeProviders(f.providers, "envelope: \"providers\""); err != nil {
		return nil, err
	}
	if err := e.validate(); err != nil {
		return nil, err
	}
	return e, nil
}

// fields holds the raw values of the top-level members whose names some
// message knows, as slices of the input; nil when absent. Which ones a
// message reads depends on its type: the others are unknown to it and
// ignored.
type fields struct {
	typ, solution                                []byte
	version, network, agent, features, listen    []byte
	head, after, limit, events, next, more       []byte
	blobs, providers, stored, skipped, failed    []byte
	event, id, code, message, reason, retryAfter []byte
	alg, seed, effort, expires                   []byte
	limits                                       []byte
}

func (f *fields) slot(name string) *[]byte {
	switch name {
	case "type":
		return &f.typ
	case "solution":
		return &f.solution
	case "version":
		return &f.version
	case "network":
		return &f.network
	case "agent":
		return &f.agent
	case "features":
		return &f.features
	case "listen":
		return &f.listen
	case "head":
		return &f.head
	case "after":
		return &f.after
	case "limit":
		return &f.limit
	case "events":
		return &f.events
	case "next":
		return &f.next
	case "more":
		return &f.more
	case "blobs":
		return &f.blobs
	case "providers":
		return &f.providers
	case "stored":
		return &f.stored
	case "skipped":
		return &f.skipped
	case "failed":
		return &f.failed
	case "event":
		return &f.event
	case "id":
		return &f.id
	case "code":
		return &f.code
	case "message":
		return &f.message
	case "reason":
		return &f.reason
	case "retry_after_ms":
		return &f.retryAfter
	case "alg":
		return &f.alg
	case "seed":
		return &f.seed
	case "effort":
		return &f.effort
	case "expires":
		return &f.expires
	case "limits":
		return &f.limits
	}
	return nil // unknown, _grease… included
}

// parseTop checks that b is exactly one JSON object, valid as a whole (UTF-8,
// escapes, no duplicate name in any object at any depth: jsontext's default
// checks), and collects its known members. With request set, the top-level
// "solution" member is exempt from the duplicate-name check: ADR 0014 says
// a malformed solution is ignored, not that it spoils the request
// (decodeSolution then finds it malformed).
func parseTop(b []byte, request bool) (fields, error) {
	var f fields
	var d *jsontext.Decoder
	var names map[string]struct{} // the top-level names, when request
	if request {
		d = jsontext.NewDecoder(bytes.NewBuffer(b), jsontext.AllowDuplicateNames(true))
		names = make(map[string]struct{}, 8)
	} else {
		d = jsontext.NewDecoder(bytes.NewBuffer(b))
	}
	tok, err := d.ReadToken()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return f, badRequest("empty message")
		}
		return f, badRequest("malformed JSON: %v", err)
	}
	if tok.Kind() != '{' {
		return f, badRequest("message is %s, not an object", article(kindName(tok.Kind())))
	}
	for d.PeekKind() != '}' {
		tok, err := d.ReadToken()
		if err != nil {
			return f, badRequest("malformed JSON: %v", err)
		}
		name := tok.String() // before the next read voids tok
		v, err := d.ReadValue()
		if err != nil {
			return f, badRequest("malformed JSON: %v", err)
		}
		if request {
			if _, dup := names[name]; dup {
				return f, badRequest("malformed JSON: duplicate name %.40q", name)
			}
			names[name] = struct{}{}
			if name != "solution" && !v.IsValid() {
				return f, badRequest("malformed JSON: a duplicate name in %.40q", name)
			}
		}
		if p := f.slot(name); p != nil {
			end := int(d.InputOffset())
			*p = b[end-len(v) : end : end]
		}
	}
	if _, err := d.ReadToken(); err != nil { // '}'
		return f, badRequest("malformed JSON: %v", err)
	}
	if _, err := d.ReadToken(); err != io.EOF {
		return f, badRequest("malformed JSON: data after the message")
	}
	return f, nil
}

// messageType reads the "type" member.
func (f *fields) messageType() (Type, error) {
	if f.typ == nil {
		return "", badRequest("no \"type\"")
	}
	s, err := asString(f.typ, "\"type\"", MaxStringBytes)
	return Type(s), err
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

func wrongType(field string, want string, v []byte) *Error {
	return badRequest("%s: want %s, got %s", field, article(want), article(kindName(jsontext.Value(v).Kind())))
}

func article(noun string) string {
	switch noun[0] {
	case 'a', 'e', 'i', 'o', 'u':
		return "an " + noun
	}
	return "a " + noun
}

func missing(field string) *Error { return badRequest("%s is missing", field) }

// The as… helpers convert a raw member value (a valid JSON value without
// surrounding whitespace, as parseTop and eachMember produce) to Go.

// asString reads a JSON string of at most max bytes once unescaped.
func asString(v []byte, field string, max int) (string, error) {
	if len(v) == 0 || v[0] != '"' {
		return "", wrongType(field, "string", v)
	}
	if bytes.IndexByte(v, '\\') < 0 { // no escapes: the content is the string
		if len(v)-2 > max {
			return "", badRequest("%s: %d bytes, more than %d", field, len(v)-2, max)
		}
		return string(v[1 : len(v)-1]), nil
	}
	s, err := jsontext.AppendUnquote(nil, v)
	if err != nil {
		return "", badRequest("%s: %v", field, err)
	}
	if len(s) > max {
		return "", badRequest("%s: %d bytes, more than %d", field, len(s), max)
	}
	return string(s), nil
}

// asInt reads a JSON integer in min..core.MaxSafeInt, written without sign,
// fraction or exponent.
func asInt(v []byte, field string, min int64) (int64, error) {
	if len(v) == 0 || (v[0] != '-' && (v[0] < '0' || v[0] > '9')) {
		return 0, wrongType(field, "number", v)
	}
	if v[0] == '-' {
		return 0, badRequest("%s: negative number %.30s", field, v)
	}
	var n int64
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0, badRequest("%s: %.30s is not an integer", field, v)
		}
		if n <= core.MaxSafeInt { // stop growing past the bound; never overflows
			n = n*10 + int64(c-'0')
		}
	}
	if n > core.MaxSafeInt {
		return 0, badRequest("%s: %.30s is beyond 2^53", field, v)
	}
	if n < min {
		return 0, badRequest("%s: %d is less than %d", field, n, min)
	}
	return n, nil
}

func asBool(v []byte, field string) (bool, error) {
	switch string(v) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, wrongType(field, "boolean", v)
}

func asCursor(v []byte, field string) (core.Cursor, error) {
	s, err := asString(v, field, 20)
	if err != nil {
		return 0, err
	}
	n, err := core.ParseCursor(s)
	if err != nil {
		return 0, badRequest("%s: %v", field, err)
	}
	return n, nil
}

// rawObject returns a compacted copy of the JSON object v: no whitespace,
// strings in their shortest form (jsontext.Value.Format).
func rawObject(v []byte, field string) (jsontext.Value, error) {
	if v == nil {
		return nil, missing(field)
	}
	if v[0] != '{' {
		return nil, wrongType(field, "object", v)
	}
	out := jsontext.Value(bytes.Clone(v))
	if err := out.Format(); err != nil {
		return nil, badRequest("%s: %v", field, err)
	}
	return out, nil
}

// eachMember calls fn for each member of the JSON object v, in order.
func eachMember(v []byte, field string, fn func(name string, val []byte) error) error {
	if len(v) == 0 || v[0] != '{' {
		return wrongType(field, "object", v)
	}
	d := jsontext.NewDecoder(bytes.NewBuffer(v))
	if _, err := d.ReadToken(); err != nil {
		return badRequest("%s: %v", field, err)
	}
	for d.PeekKind() != '}' {
		tok, err := d.ReadToken()
		if err != nil {
			return badRequest("%s: %v", field, err)
		}
		name := tok.String() // before the next read voids tok
		val, err := d.ReadValue()
		if err != nil {
			return badRequest("%s: %v", field, err)
		}
		end := int(d.InputOffset())
		if err := fn(name, v[end-len(val):end:end]); err != nil {
			return err
		}
	}
	return nil
}

// eachElem calls fn for each element of the JSON array v, in order, and
// fails on element max+1 before reading it.
func eachElem(v []byte, field string, max int, fn func(i int, val []byte) error) error {
	if len(v) == 0 || v[0] != '[' {
		return wrongType(field, "array", v)
	}
	d := jsontext.NewDecoder(bytes.NewBuffer(v))
	if _, err := d.ReadToken(); err != nil {
		return badRequest("%s: %v", field, err)
	}
	for i := 0; d.PeekKind() != ']'; i++ {
		if i == max {
			return badRequest("%s: more than %d entries", field, max)
		}
		val, err := d.ReadValue()
		if err != nil {
			return badRequest("%s: %v", field, err)
		}
		end := int(d.InputOffset())
		if err := fn(i, v[end-len(val):end:end]); err != nil {
			return err
		}
	}
	return nil
}

// stringList reads an optional array of at most maxCount strings of at most
// maxBytes each; absent is nil.
func stringList(v []byte, field string, maxCount, maxBytes int) ([]string, error) {
	if v == nil {
		return nil, nil
	}
	var out []string
	err := eachElem(v, field, maxCount, func(i int, val []byte) error {
		s, err := asString(val, fmt.Sprintf("%s[%d]", field, i), maxBytes)
		out = append(out, s)
		return err
	})
	return out, err
}

func decodeHello(f *fields) (*Hello, error) {
	m := &Hello{}
	if f.version == nil {
		return nil, missing("hello: \"version\"")
	}
	v, err := asInt(f.version, "hello: \"version\"", 1)
	if err != nil {
		return nil, err
	}
	m.Version = int(v)
	if f.network == nil {
		return nil, missing("hello: \"network\"")
	}
	if m.Network, err = asString(f.network, "hello: \"network\"", MaxStringBytes); err != nil {
		return nil, err
	}
	if f.agent != nil {
		if m.Agent, err = asString(f.agent, "hello: \"agent\"", MaxStringBytes); err != nil {
			return nil, err
		}
	}
	if m.Features, err = stringList(f.features, "hello: \"features\"", MaxFeatures, MaxStringBytes); err != nil {
		return nil, err
	}
	if m.Listen, err = stringList(f.listen, "hello: \"listen\"", MaxListenAddrs, MaxAddrBytes); err != nil {
		return nil, err
	}
	if f.head == nil {
		return nil, missing("hello: \"head\"")
	}
	if m.Head, err = asCursor(f.head, "hello: \"head\""); err != nil {
		return nil, err
	}
	if f.limits != nil {
		if m.Limits, err = decodeHelloLimits(f.limits); err != nil {
			return nil, err
		}
	}
	if err := m.validate(); err != nil {
		return nil, err
	}
	return m, nil
}

// decodeHelloLimits decodes the "limits" object of a hello: known members
// are non-negative integers, unknown ones are ignored.
func decodeHelloLimits(v []byte) (*HelloLimits, error) {
	const field = "hello: \"limits\""
	l := &HelloLimits{}
	err := eachMember(v, field, func(name string, val []byte) error {
		var dst *int64
		switch name {
		case "hello_per_min":
			dst = &l.HelloPerMin
		case "sync_per_min":
			dst = &l.SyncPerMin
		case "replicate_per_min":
			dst = &l.ReplicatePerMin
		case "report_per_min":
			dst = &l.ReportPerMin
		default:
			return nil
		}
		n, err := asInt(val, field+"."+name, 0)
		*dst = n
		return err
	})
	if err != nil {
		return nil, err
	}
	return l, nil
}

func decodeSyncRequest(f *fields) (*SyncRequest, error) {
	m := &SyncRequest{Limit: MaxPageEvents}
	if f.after == nil {
		return nil, missing("sync: \"after\"")
	}
	var err error
	if m.After, err = asCursor(f.after, "sync: \"after\""); err != nil {
		return nil, err
	}
	if f.limit != nil {
		n, err := asInt(f.limit, "sync: \"limit\"", 1)
		if err != nil {
			return nil, err
		}
		m.Limit = int(min(n, MaxPageEvents)) // docs/design.md §4: above 256 is 256
	}
	return m, m.validate()
}

func decodeSyncResponse(f *fields) (*SyncResponse, error) {
	m := &SyncResponse{}
	if f.events == nil {
		return nil, missing("sync: \"events\"")
	}
	// The events are copied, in their shortest form, into one slab: the
	// array's length bounds their total.
	slab := make([]byte, 0, len(f.events))
	total := 0
	err := eachElem(f.events, "sync: \"events\"", MaxPageEvents, func(i int, val []byte) error {
		if val[0] != '{' {
			return wrongType(fmt.Sprintf("sync: \"events\"[%d]", i), "object", val)
		}
		if total += len(val); total > MaxPageBytes {
			return badRequest("sync: \"events\": more than %d bytes in all", MaxPageBytes)
		}
		start := len(slab)
		slab = append(slab, val...)
		ev := jsontext.Value(slab[start:len(slab):len(slab)])
		if err := ev.Format(); err != nil {
			return badRequest("sync: \"events\"[%d]: %v", i, err)
		}
		if len(ev) <= len(val) { // formatted in place, the usual case
			slab = slab[:start+len(ev)]
		} else { // a longer form lives elsewhere: free the room in slab
			slab = slab[:start]
		}
		m.Events = append(m.Events, ev)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if f.next == nil {
		return nil, missing("sync: \"next\"")
	}
	if m.Next, err = asCursor(f.next, "sync: \"next\""); err != nil {
		return nil, err
	}
	if f.more == nil {
		return nil, missing("sync: \"more\"")
	}
	if m.More, err = asBool(f.more, "sync: \"more\""); err != nil {
		return nil, err
	}
	return m, m.validate()
}

func decodeProvider(v []byte, field string) (Provider, error) {
	var p Provider
	var id, addrs []byte
	err := eachMember(v, field, func(name string, val []byte) error {
		switch name {
		case "id":
			id = val
		case "addrs":
			addrs = val
		}
		return nil
	})
	if err != nil {
		return p, err
	}
	if id == nil {
		return p, missing(field + ".id")
	}
	if p.ID, err = asString(id, field+".id", MaxStringBytes); err != nil {
		return p, err
	}
	p.Addrs, err = stringList(addrs, field+".addrs", MaxProviderAddrs, MaxAddrBytes)
	return p, err
}

func decodeProviders(v []byte, field string) ([]Provider, error) {
	if v == nil {
		return nil, nil
	}
	var out []Provider
	err := eachElem(v, field, MaxProviders, func(i int, val []byte) error {
		p, err := decodeProvider(val, fmt.Sprintf("%s[%d]", field, i))
		out = append(out, p)
		return err
	})
	return out, err
}

func decodeReplicateRequest(f *fields) (*ReplicateRequest, error) {
	m := &ReplicateRequest{}
	if f.blobs == nil {
		return nil, missing("replicate: \"blobs\"")
	}
	err := eachElem(f.blobs, "replicate: \"blobs\"", MaxReplicateBlobs, func(i int, val []byte) error {
		field := fmt.Sprintf("replicate: \"blobs\"[%d]", i)
		var cid, size []byte
		err := eachMember(val, field, func(name string, val []byte) error {
			switch name {
			case "cid":
				cid = val
			case "size":
				size = val
			}
			return nil
		})
		if err != nil {
			return err
		}
		var b BlobRef
		if cid == nil {
			return missing(field + ".cid")
		}
		if b.CID, err = asString(cid, field+".cid", MaxStringBytes); err != nil {
			return err
		}
		if size == nil {
			return missing(field + ".size")
		}
		if b.Size, err = asInt(size, field+".size", 0); err != nil {
			return err
		}
		m.Blobs = append(m.Blobs, b)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if m.Providers, err = decodeProviders(f.providers, "replicate: \"providers\""); err != nil {
		return nil, err
	}
	return m, m.validate()
}

func decodeReplicateResponse(f *fields) (*ReplicateResponse, error) {
	m := &ReplicateResponse{}
	var err error
	if m.Stored, err = stringList(f.stored, "replicate: \"stored\"", MaxReplicateBlobs, MaxStringBytes); err != nil {
		return nil, err
	}
	if m.Skipped, err = stringList(f.skipped, "replicate: \"skipped\"", MaxReplicateBlobs, MaxStringBytes); err != nil {
		return nil, err
	}
	if f.failed != nil {
		err = eachElem(f.failed, "replicate: \"failed\"", MaxReplicateBlobs, func(i int, val []byte) error {
			field := fmt.Sprintf("replicate: \"failed\"[%d]", i)
			var cid, reason []byte
			err := eachMember(val, field, func(name string, val []byte) error {
				switch name {
				case "cid":
					cid = val
				case "reason":
					reason = val
				}
				return nil
			})
			if err != nil {
				return err
			}
			var fb FailedBlob
			if cid == nil {
				return missing(field + ".cid")
			}
			if fb.CID, err = asString(cid, field+".cid", MaxStringBytes); err != nil {
				return err
			}
			if reason == nil {
				return missing(field + ".reason")
			}
			if fb.Reason, err = asString(reason, field+".reason", MaxTextBytes); err != nil {
				return err
			}
			m.Failed = append(m.Failed, fb)
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return m, m.validate()
}

func decodeCrashReportRequest(f *fields) (*CrashReportRequest, error) {
	ev, err := rawObject(f.event, "crash_report: \"event\"")
	if err != nil {
		return nil, err
	}
	return &CrashReportRequest{Event: ev}, nil
}

func decodeCrashReportResponse(f *fields) (*CrashReportResponse, error) {
	if f.id == nil {
		return nil, missing("crash_report: \"id\"")
	}
	id, err := asString(f.id, "crash_report: \"id\"", MaxStringBytes)
	if err != nil {
		return nil, err
	}
	return &CrashReportResponse{ID: id}, nil
}

func decodeError(f *fields) (*Error, error) {
	m := &Error{}
	if f.code == nil {
		return nil, missing("error: \"code\"")
	}
	code, err := asString(f.code, "error: \"code\"", MaxStringBytes)
	if err != nil {
		return nil, err
	}
	m.Code = Code(code)
	if f.message != nil {
		if m.Message, err = asString(f.message, "error: \"message\"", MaxTextBytes); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func decodeRefused(f *fields) (*Refused, error) {
	m := &Refused{}
	if f.reason == nil {
		return nil, missing("refused: \"reason\"")
	}
	var err error
	if m.Reason, err = asString(f.reason, "refused: \"reason\"", MaxTextBytes); err != nil {
		return nil, err
	}
	if f.retryAfter != nil {
		if m.RetryAfterMs, err = asInt(f.retryAfter, "refused: \"retry_after_ms\"", 0); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func decodeChallenge(f *fields) (*Challenge, error) {
	m := &Challenge{}
	var err error
	if f.alg == nil {
		return nil, missing("challenge: \"alg\"")
	}
	if m.Alg, err = asString(f.alg, "challenge: \"alg\"", MaxStringBytes); err != nil {
		return nil, err
	}
	if f.seed == nil {
		return nil, missing("challenge: \"seed\"")
	}
	if m.Seed, err = asString(f.seed, "challenge: \"seed\"", MaxStringBytes); err != nil {
		return nil, err
	}
	if f.effort == nil {
		return nil, missing("challenge: \"effort\"")
	}
	effort, err := asInt(f.effort, "challenge: \"effort\"", 0)
	if err != nil {
		return nil, err
	}
	m.Effort = int(effort)
	if f.expires == nil {
		return nil, missing("challenge: \"expires\"")
	}
	if m.Expires, err = asInt(f.expires, "challenge: \"expires\"", 0); err != nil {
		return nil, err
	}
	return m, nil
}

// decodeSolution reads the "solution" member, or returns nil if it is
// malformed (ADR 0014: a malformed solution is ignored), duplicate names in
// it included.
func decodeSolution(v []byte) *Solution {
	if !jsontext.Value(v).IsValid() {
		return nil
	}
	var alg, seed, nonce []byte
	err := eachMember(v, "solution", func(name string, val []byte) error {
		switch name {
		case "alg":
			alg = val
		case "seed":
			seed = val
		case "nonce":
			nonce = val
		}
		return nil
	})
	if err != nil || alg == nil || seed == nil || nonce == nil {
		return nil
	}
	s := &Solution{}
	if s.Alg, err = asString(alg, "solution.alg", MaxStringBytes); err != nil {
		return nil
	}
	if s.Seed, err = asString(seed, "solution.seed", MaxStringBytes); err != nil {
		return nil
	}
	if s.Nonce, err = asString(nonce, "solution.nonce", MaxStringBytes); err != nil {
		return nil
	}
	return s
}
