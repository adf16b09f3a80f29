package proto

import (
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/wats-network/wats/core"
)

// What is ours. json v2 binds the wire types (messages.go): it matches
// member names exactly, refuses duplicate names at any depth (after
// unescaping), invalid UTF-8 and bad escapes, skips unknown members
// (GREASE's "_grease…" among them) and refuses a value of the wrong JSON
// type. The rest of the protocol's decoding rules are here:
//
//   - unmarshalers: no known member may be null; integers are plain digits
//     up to core.MaxSafeInt (json v2 would take -1 and -0); events are
//     objects, copied in their shortest form, at most core.MaxPageEvents and
//     MaxPageBytes a page; an id list stops at MaxListIDs (IDList), other
//     lists at maxListEntries; a request's
//     "solution" may hold anything.
//   - settle: members tagged wire:"required" are present.
//   - decoded: a sync request's limit is 1 or more, and above core.MaxPageEvents
//     is core.MaxPageEvents; then the bounds of the message's Go value.
//
// The validate methods check those bounds (string and list caps, integer
// ranges): the decoders call them on what they decoded, the encoders before
// they write, so both sides agree on what is valid. Event contents are the
// event log's business.

// unmarshalers are the type-specific unmarshalers of st's decodes, each
// tried in turn for a value of its type until one does not return
// errors.ErrUnsupported (then json v2's own binding runs).
func (st *decoder) unmarshalers() *json.Unmarshalers {
	return json.JoinUnmarshalers(
		json.UnmarshalFromFunc(unmarshalSolution), // first: a solution may even be null
		json.UnmarshalFromFunc(st.member),         // every other value
		json.UnmarshalFromFunc(unmarshalInt[int]),
		json.UnmarshalFromFunc(unmarshalInt[int64]),
		json.UnmarshalFromFunc(unmarshalObject),
		json.UnmarshalFromFunc(unmarshalEvents),
		json.UnmarshalFromFunc(unmarshalList[string]),
		json.UnmarshalFromFunc(unmarshalList[BlobRef]),
		json.UnmarshalFromFunc(unmarshalList[Provider]),
		json.UnmarshalFromFunc(unmarshalList[FailedBlob]),
		json.UnmarshalFromFunc(unmarshalList[core.ShortID]),
		json.UnmarshalFromFunc(unmarshalIDList),
	)
}

// member sees every value a decode binds to a Go value: it refuses null,
// which no known member may be (docs/design.md §4: a wrong type), and
// records the JSON pointer of each object member for settle.
func (st *decoder) member(d *jsontext.Decoder, v any) error {
	if d.PeekKind() == 'n' {
		return fmt.Errorf("want %s, got a null", article(wantOf(reflect.TypeOf(v).Elem())))
	}
	if kind, _ := d.StackIndex(d.StackDepth()); kind == '{' {
		st.present[string(d.StackPointer())] = struct{}{}
	}
	return errors.ErrUnsupported
}

// unmarshalInt reads an integer written as plain digits, without sign,
// fraction or exponent, at most core.MaxSafeInt (ADR 0016): never rounded
// or wrapped. Lower bounds are the validate methods'.
func unmarshalInt[T int | int64](d *jsontext.Decoder, n *T) error {
	if d.PeekKind() != '0' {
		return errors.ErrUnsupported // json v2 reports the wrong type
	}
	v, err := d.ReadValue()
	if err != nil {
		return err
	}
	if v[0] == '-' {
		return fmt.Errorf("negative number %.30s", v)
	}
	var x int64
	for _, c := range v {
		if c < '0' || c > '9' {
			return fmt.Errorf("%.30s is not an integer", v)
		}
		if x <= core.MaxSafeInt { // stop growing past the bound; never overflows
			x = x*10 + int64(c-'0')
		}
	}
	if x > core.MaxSafeInt {
		return fmt.Errorf("%.30s is beyond 2^53", v)
	}
	*n = T(x)
	return nil
}

// unmarshalObject reads a raw value (the event of a crash report or an
// envelope): a JSON object, kept as a compacted copy, strings in their
// shortest form (jsontext's Format).
func unmarshalObject(d *jsontext.Decoder, v *jsontext.Value) error {
	raw, err := d.ReadValue()
	if err != nil {
		return err
	}
	if raw.Kind() != '{' {
		return fmt.Errorf("want an object, got %s", article(kindName(raw.Kind())))
	}
	*v, err = jsontext.AppendFormat(nil, raw, jsontext.AllowDuplicateNames(true)) // ReadValue checked them
	return err
}

// unmarshalEvents reads the events of a sync page, the hot path of a sync:
// at most core.MaxPageEvents objects, of at most MaxPageBytes in all as
// received, each compacted as by unmarshalObject into one slab, so that a
// page costs one allocation for its events.
func unmarshalEvents(d *jsontext.Decoder, evs *[]jsontext.Value) error {
	var slab []byte
	var out []jsontext.Value
	total := 0
	err := eachEntry(d, core.MaxPageEvents, func() error {
		raw, err := d.ReadValue()
		if err != nil {
			return err
		}
		if raw.Kind() != '{' {
			return &json.SemanticError{JSONPointer: d.StackPointer(), Err: fmt.Errorf("want an object, got %s", article(kindName(raw.Kind())))}
		}
		if total += len(raw); total > MaxPageBytes {
			return &json.SemanticError{JSONPointer: d.StackPointer().Parent(), Err: fmt.Errorf("more than %d bytes in all", MaxPageBytes)}
		}
		if slab == nil {
			// The events take at most what is left of the message and at
			// most MaxPageBytes (compacting never lengthens a value).
			slab = make([]byte, 0, min(len(raw)+len(d.UnreadBuffer()), MaxPageBytes))
		}
		start := len(slab)
		if slab, err = jsontext.AppendFormat(slab, raw, jsontext.AllowDuplicateNames(true)); err != nil {
			return err
		}
		out = append(out, slab[start:len(slab):len(slab)])
		return nil
	})
	if err == nil {
		*evs = out
	}
	return err
}

// maxListEntries bounds every list but a page's events while it is read:
// the largest cap of any of them (MaxReplicateBlobs). json v2 would bind a
// whole list before the validate methods refuse it, and a 1 MiB request
// holds 250,000 strings: 10 to 20 times the CPU of reading it, and 20 MB
// allocated, for one refusal. Each list's own cap is its validate method's.
const maxListEntries = MaxReplicateBlobs

// unmarshalList reads a list, stopping at entry maxListEntries+1.
func unmarshalList[E any](d *jsontext.Decoder, list *[]E) error {
	var out []E
	err := eachEntry(d, maxListEntries, func() error {
		var e E
		err := json.UnmarshalDecode(d, &e)
		out = append(out, e)
		return err
	})
	if err == nil {
		*list = out
	}
	return err
}

// eachEntry reads the JSON array at d, calling read for each entry (read
// reads it from d), and fails at entry max+1 before reading it. It returns
// errors.ErrUnsupported, having read nothing, when the value is not an
// array: json v2 then reports the wrong type.
func eachEntry(d *jsontext.Decoder, max int, read func() error) error {
	if d.PeekKind() != '[' {
		return errors.ErrUnsupported
	}
	at := d.StackPointer()
	if _, err := d.ReadToken(); err != nil {
		return err
	}
	for n := 0; d.PeekKind() != ']'; n++ {
		if n == max {
			return &json.SemanticError{JSONPointer: at, Err: fmt.Errorf("more than %d entries", max)}
		}
		if err := read(); err != nil {
			return err
		}
	}
	_, err := d.ReadToken()
	return err
}

// unmarshalSolution keeps a request's "solution" as received, whatever it
// holds: ADR 0014 says a malformed solution is ignored, not that it spoils
// the request, so duplicate names in it are allowed here (decodeSolution
// refuses them). A syntax error in it is still the request's.
func unmarshalSolution(d *jsontext.Decoder, s *solutionValue) error {
	return json.UnmarshalDecode(d, (*jsontext.Value)(s), jsontext.AllowDuplicateNames(true), json.WithUnmarshalers(nil))
}

// settle walks the wire struct v, decoded at JSON pointer at: it returns
// the pointer of the first member tagged wire:"required" that the input did
// not have, or "" if none is missing, and makes empty lists nil (a decoded
// message has nil for an absent or empty list).
func (st *decoder) settle(v reflect.Value, at string) string {
	for _, f := range wireFieldsOf(v.Type()) {
		fv := v.Field(f.index)
		if f.embed { // withSolution's message: its members are v's
			if p := st.settle(fv.Elem(), at); p != "" {
				return p
			}
			continue
		}
		p := at + f.pointer
		if _, ok := st.present[p]; !ok {
			if f.required {
				return p
			}
			continue
		}
		switch {
		case fv.Kind() == reflect.Pointer && fv.Elem().Kind() == reflect.Struct:
			if p := st.settle(fv.Elem(), p); p != "" {
				return p
			}
		case fv.Kind() == reflect.Slice && fv.Len() == 0:
			fv.SetZero()
		case fv.Kind() == reflect.Slice && fv.Type().Elem().Kind() == reflect.Struct:
			for j := range fv.Len() {
				if p := st.settle(fv.Index(j), p+"/"+strconv.Itoa(j)); p != "" {
					return p
				}
			}
		}
	}
	return ""
}

// wireField is what settle needs of a field of a wire struct.
type wireField struct {
	index    int
	pointer  string // "/" and the member name
	required bool   // tagged wire:"required"
	embed    bool   // its members are the struct's (json v2's embed)
}

var wireFields sync.Map // reflect.Type -> []wireField

// wireFieldsOf returns the fields of struct type t, read from their tags
// once.
func wireFieldsOf(t reflect.Type) []wireField {
	if fs, ok := wireFields.Load(t); ok {
		return fs.([]wireField)
	}
	var fs []wireField
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		fs = append(fs, wireField{index: i, pointer: "/" + name, required: f.Tag.Get("wire") == "required", embed: opts == "embed"})
	}
	wireFields.Store(t, fs)
	return fs
}

// decoded finishes a decoded message: a sync request's limit must be 1 or
// more, and above core.MaxPageEvents it is core.MaxPageEvents (docs/design.md §4);
// then m's bounds.
func decoded(m Message) error {
	if r, ok := m.(*SyncRequest); ok {
		if r.Limit < 1 {
			return badRequest("sync: \"limit\" must be 1 or more")
		}
		r.Limit = min(r.Limit, core.MaxPageEvents)
	}
	return validate(m)
}

// badRequest is a CodeBadRequest error whose message is cut to
// MaxTextBytes, so that it can always be sent: a message quoting peer input
// (a long duplicate name, say) must not make the answer itself invalid.
func badRequest(format string, args ...any) *Error {
	return &Error{Code: CodeBadRequest, Message: TruncateText(fmt.Sprintf(format, args...))}
}

// TruncateText cuts s to at most MaxTextBytes, at a UTF-8 boundary, marking
// the cut with "…".
func TruncateText(s string) string {
	if len(s) <= MaxTextBytes {
		return s
	}
	const mark = "…"
	cut := MaxTextBytes - len(mark)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}

func checkString(field, s string, max int) error {
	if len(s) > max {
		return badRequest("%s: %d bytes, more than %d", field, len(s), max)
	}
	return nil
}

func checkStrings(field string, list []string, maxCount, maxBytes int) error {
	if len(list) > maxCount {
		return badRequest("%s: %d entries, more than %d", field, len(list), maxCount)
	}
	for i, s := range list {
		if len(s) > maxBytes {
			return badRequest("%s[%d]: %d bytes, more than %d", field, i, len(s), maxBytes)
		}
	}
	return nil
}

func checkInt(field string, n int64, min int64) error {
	if n < min || n > core.MaxSafeInt {
		return badRequest("%s: %d is outside %d..2^53", field, n, min)
	}
	return nil
}

// checkObject checks that v is a JSON object (by its first byte; the JSON
// itself is checked where it is parsed or written).
func checkObject(field string, v jsontext.Value) error {
	if v.Kind() != '{' {
		return badRequest("%s: not a JSON object", field)
	}
	return nil
}

func (m *Hello) validate() error {
	if err := checkInt("hello: \"version\"", int64(m.Version), 1); err != nil {
		return err
	}
	if err := checkString("hello: \"network\"", m.Network, MaxStringBytes); err != nil {
		return err
	}
	if err := checkString("hello: \"agent\"", m.Agent, MaxStringBytes); err != nil {
		return err
	}
	if err := checkStrings("hello: \"features\"", m.Features, MaxFeatures, MaxStringBytes); err != nil {
		return err
	}
	if err := checkStrings("hello: \"listen\"", m.Listen, MaxListenAddrs, MaxAddrBytes); err != nil {
		return err
	}
	if l := m.Limits; l != nil {
		for name, v := range map[string]int64{"hello_per_min": l.HelloPerMin, "sync_per_min": l.SyncPerMin,
			"replicate_per_min": l.ReplicatePerMin, "report_per_min": l.ReportPerMin} {
			if err := checkInt("hello: \"limits\"."+name, v, 0); err != nil {
				return err
			}
		}
	}
	return nil
}

func (m *SyncRequest) validate() error {
	if m.Limit < 0 || m.Limit > core.MaxPageEvents {
		return badRequest("sync: \"limit\": %d is outside 1..%d", m.Limit, core.MaxPageEvents)
	}
	if m.IDList && m.Fingerprint {
		return badRequest("sync: \"id_list\" with \"fingerprint\"")
	}
	if m.IDs != nil {
		return m.IDs.validate()
	}
	if m.Fingerprint {
		return badRequest("sync: \"fingerprint\" without \"ids\"")
	}
	if m.IDList {
		return badRequest("sync: \"id_list\" without \"ids\"")
	}
	return nil
}

func (m *SyncResponse) validate() error {
	if len(m.Events) > core.MaxPageEvents {
		return badRequest("sync: \"events\": %d entries, more than %d", len(m.Events), core.MaxPageEvents)
	}
	total := 0
	for i, ev := range m.Events {
		if ev.Kind() != '{' {
			return badRequest("sync: \"events\"[%d]: not a JSON object", i)
		}
		total += len(ev)
	}
	if total > MaxPageBytes {
		return badRequest("sync: \"events\": %d bytes in all, more than %d", total, MaxPageBytes)
	}
	if err := checkInt("sync: \"count\"", m.Count, 0); err != nil {
		return err
	}
	if m.Fingerprint != "" && !isID(m.Fingerprint) {
		return badRequest("sync: \"fingerprint\": not %d lowercase hex digits", IDHexLen)
	}
	if len(m.IDs) > 0 && len(m.Events) > 0 {
		return badRequest("sync: \"ids\" with \"events\"")
	}
	return m.IDs.validate()
}

func (m *BlobRef) validate(field string) error {
	if err := checkString(field+".cid", m.CID, MaxStringBytes); err != nil {
		return err
	}
	return checkInt(field+".size", m.Size, 0)
}

func (m *Provider) validate(field string) error {
	if err := checkString(field+".id", m.ID, MaxStringBytes); err != nil {
		return err
	}
	return checkStrings(field+".addrs", m.Addrs, MaxProviderAddrs, MaxAddrBytes)
}

func validateProviders(field string, ps []Provider) error {
	if len(ps) > MaxProviders {
		return badRequest("%s: %d entries, more than %d", field, len(ps), MaxProviders)
	}
	for i := range ps {
		if err := ps[i].validate(fmt.Sprintf("%s[%d]", field, i)); err != nil {
			return err
		}
	}
	return nil
}

func (m *ReplicateRequest) validate() error {
	if len(m.Blobs) == 0 || len(m.Blobs) > MaxReplicateBlobs {
		return badRequest("replicate: \"blobs\": %d entries, want 1..%d", len(m.Blobs), MaxReplicateBlobs)
	}
	for i := range m.Blobs {
		if err := m.Blobs[i].validate(fmt.Sprintf("replicate: \"blobs\"[%d]", i)); err != nil {
			return err
		}
	}
	return validateProviders("replicate: \"providers\"", m.Providers)
}

func (m *ReplicateResponse) validate() error {
	if n := len(m.Stored) + len(m.Skipped) + len(m.Failed); n > MaxReplicateBlobs {
		return badRequest("replicate: %d entries in stored, skipped and failed, more than %d", n, MaxReplicateBlobs)
	}
	if err := checkStrings("replicate: \"stored\"", m.Stored, MaxReplicateBlobs, MaxStringBytes); err != nil {
		return err
	}
	if err := checkStrings("replicate: \"skipped\"", m.Skipped, MaxReplicateBlobs, MaxStringBytes); err != nil {
		return err
	}
	for i, f := range m.Failed {
		field := fmt.Sprintf("replicate: \"failed\"[%d]", i)
		if err := checkString(field+".cid", f.CID, MaxStringBytes); err != nil {
			return err
		}
		if err := checkString(field+".reason", f.Reason, MaxTextBytes); err != nil {
			return err
		}
	}
	return nil
}

func (m *CrashReportRequest) validate() error {
	return checkObject("crash_report: \"event\"", m.Event)
}

func (m *CrashReportResponse) validate() error {
	return checkString("crash_report: \"id\"", m.ID, MaxStringBytes)
}

func (m *Error) validate() error {
	if err := checkString("error: \"code\"", string(m.Code), MaxStringBytes); err != nil {
		return err
	}
	return checkString("error: \"message\"", m.Message, MaxTextBytes)
}

func (m *Refused) validate() error {
	if err := checkString("refused: \"reason\"", m.Reason, MaxTextBytes); err != nil {
		return err
	}
	return checkInt("refused: \"retry_after_ms\"", m.RetryAfterMs, 0)
}

func (m *Challenge) validate() error {
	if err := checkString("challenge: \"alg\"", m.Alg, MaxStringBytes); err != nil {
		return err
	}
	if err := checkString("challenge: \"seed\"", m.Seed, MaxStringBytes); err != nil {
		return err
	}
	if err := checkInt("challenge: \"effort\"", int64(m.Effort), 0); err != nil {
		return err
	}
	return checkInt("challenge: \"expires\"", m.Expires, 0)
}

func (s *Solution) validate() error {
	if err := checkString("solution.alg", s.Alg, MaxStringBytes); err != nil {
		return err
	}
	if err := checkString("solution.seed", s.Seed, MaxStringBytes); err != nil {
		return err
	}
	return checkString("solution.nonce", s.Nonce, MaxStringBytes)
}

func (m *Envelope) validate() error {
	if err := checkObject("envelope: \"event\"", m.Event); err != nil {
		return err
	}
	return validateProviders("envelope: \"providers\"", m.Providers)
}

// validate dispatches to m's validate method.
func validate(m Message) error {
	switch m := m.(type) {
	case *Hello:
		return m.validate()
	case *SyncRequest:
		return m.validate()
	case *SyncResponse:
		return m.validate()
	case *ReplicateRequest:
		return m.validate()
	case *ReplicateResponse:
		return m.validate()
	case *CrashReportRequest:
		return m.validate()
	case *CrashReportResponse:
		return m.validate()
	case *Error:
		return m.validate()
	case *Refused:
		return m.validate()
	case *Challenge:
		return m.validate()
	}
	return fmt.Errorf("proto: unknown message type %T", m)
}
