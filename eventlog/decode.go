package eventlog

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Decode parses one event from raw JSON, strictly: raw must be at most
// MaxEventBytes and hold exactly one JSON object with exactly the members
// id, author, time, kind, body, blobs, sig (matched case-sensitively), each
// once and of the right type: strings; time an integer (no fraction or
// exponent) within int64; body an object; blobs an array of at most MaxBlobs
// objects with exactly cid (string), size (non-negative integer) and name
// (string). An unknown member is refused rather than ignored: the signing
// bytes cover every member but id and sig, so a member this version does
// not know could not be verified.
//
// The body is stored in canonical (RFC 8785) form. Decode does not check the
// other caps, the syntax of the strings, the id or the signature: call
// Verify. Errors are *ValidationError with ErrMalformed or ErrTooLarge.
//
// An event in the simple form Event.Marshal writes is read in one pass
// (decodeFast); any other input takes the general path: json v2 binds the
// members (exact names, duplicates and unknown members refused, types,
// integer forms), and the wire types below add what it does not check:
// presence, null, the body's canonical form and the blob cap.
func Decode(raw []byte) (*Event, error) {
	if len(raw) > MaxEventBytes {
		return nil, invalid(ErrTooLarge, "", "%d bytes over %d", len(raw), MaxEventBytes)
	}
	if e := decodeFast(raw); e != nil {
		return e, nil
	}
	return decodeGeneral(raw)
}

// decodeGeneral is Decode's general path, for any input of at most
// MaxEventBytes.
func decodeGeneral(raw []byte) (*Event, error) {
	d := decoderPool.Get().(*jsontext.Decoder)
	defer func() {
		d.Reset(emptyReader)
		decoderPool.Put(d)
	}()
	d.Reset(bytes.NewBuffer(raw))
	var w wireEvent
	if err := json.UnmarshalDecode(d, &w, json.RejectUnknownMembers(true)); err != nil {
		return nil, decodeError(err)
	}
	if _, err := d.ReadToken(); !errors.Is(err, io.EOF) {
		if err == nil {
			return nil, invalid(ErrMalformed, "", "data after the event")
		}
		return nil, invalid(ErrMalformed, "", "%v", err)
	}
	if name := unset(eventMembers, w.ID.set, w.Author.set, w.Time.set, w.Kind.set, w.Body.set, w.Blobs.set, w.Sig.set); name != "" {
		return nil, invalid(ErrMalformed, name, "missing")
	}
	return &Event{ID: w.ID.v, Author: w.Author.v, Time: w.Time.v, Kind: w.Kind.v, Body: jsontext.Value(w.Body.v), Blobs: w.Blobs.v, Sig: w.Sig.v}, nil
}

// wireEvent is an event as Decode reads it: Event's members, each required.
type wireEvent struct {
	ID     member[string]   `json:"id"`
	Author member[string]   `json:"author"`
	Time   member[int64]    `json:"time"`
	Kind   member[string]   `json:"kind"`
	Body   member[body]     `json:"body"`
	Blobs  member[blobList] `json:"blobs"`
	Sig    member[string]   `json:"sig"`
}

// wireBlob is a blob reference as Decode reads it: BlobRef's members, each
// required.
type wireBlob struct {
	CID  member[string] `json:"cid"`
	Size member[uint64] `json:"size"`
	Name member[string] `json:"name"`
}

// The member names of wireEvent and wireBlob, in order.
var (
	eventMembers = []string{"id", "author", "time", "kind", "body", "blobs", "sig"}
	blobMembers  = []string{"cid", "size", "name"}
)

// unset returns the first of names whose member was not set, or "".
func unset(names []string, set ...bool) string {
	for i, ok := range set {
		if !ok {
			return names[i]
		}
	}
	return ""
}

// member is a member of an event as Decode reads it: set records that it
// was present; null is refused, as any value of the wrong type.
type member[T any] struct {
	v   T
	set bool
}

func (m *member[T]) UnmarshalJSONFrom(d *jsontext.Decoder) error {
	if d.PeekKind() == 'n' {
		return invalid(ErrMalformed, fieldOf(d.StackPointer()), "not %s", kindOf(reflect.TypeFor[T]()))
	}
	m.set = true
	return json.UnmarshalDecode(d, &m.v)
}

// body is an event's body as Decode reads it: in canonical form.
type body jsontext.Value

func (b *body) UnmarshalJSONFrom(d *jsontext.Decoder) error {
	v, err := d.ReadValue()
	if err != nil {
		return err
	}
	c, err := canonicalBody(v)
	*b = body(c)
	return err
}

// blobList is an event's blobs as Decode reads them: at most MaxBlobs (it
// stops at the one past), never nil.
type blobList []BlobRef

func (l *blobList) UnmarshalJSONFrom(d *jsontext.Decoder) error {
	if d.PeekKind() != '[' {
		return invalid(ErrMalformed, "blobs", "not an array")
	}
	if _, err := d.ReadToken(); err != nil {
		return err
	}
	*l = blobList{}
	for i := 0; d.PeekKind() != ']'; i++ {
		if i == MaxBlobs {
			return invalid(ErrTooLarge, "blobs", "more than %d blobs", MaxBlobs)
		}
		var b wireBlob
		if err := json.UnmarshalDecode(d, &b); err != nil {
			return err
		}
		if name := unset(blobMembers, b.CID.set, b.Size.set, b.Name.set); name != "" {
			return invalid(ErrMalformed, fmt.Sprintf("blobs[%d].%s", i, name), "missing")
		}
		*l = append(*l, BlobRef{CID: b.CID.v, Size: b.Size.v, Name: b.Name.v})
	}
	_, err := d.ReadToken()
	return err
}

// decodeError is the *ValidationError for an error of Decode's json.UnmarshalDecode.
func decodeError(err error) error {
	var ve *ValidationError
	if errors.As(err, &ve) { // from the wire types above
		return ve
	}
	var serr *json.SemanticError
	if !errors.As(err, &serr) {
		// A syntax error (io.EOF: no event at all) names the member of the
		// event it is in, if any; the message says where in it.
		var syn *jsontext.SyntacticError
		member := ""
		if errors.As(err, &syn) {
			member, _, _ = strings.Cut(strings.TrimPrefix(string(syn.JSONPointer), "/"), "/")
		}
		if !slices.Contains(eventMembers, member) {
			member = ""
		}
		return invalid(ErrMalformed, member, "%v", err)
	}
	field := fieldOf(serr.JSONPointer)
	var kind reflect.Kind
	if serr.GoType != nil {
		kind = serr.GoType.Kind()
	}
	switch {
	case errors.Is(serr.Err, json.ErrUnknownName):
		return invalid(ErrMalformed, field, "unknown member")
	case field == "":
		return invalid(ErrMalformed, "", "not a JSON object")
	case serr.Err != nil && kind == reflect.Int64:
		return invalid(ErrMalformed, field, "not an integer within int64: %s", serr.JSONValue)
	case serr.Err != nil && kind == reflect.Uint64:
		return invalid(ErrMalformed, field, "not a non-negative integer within uint64: %s", serr.JSONValue)
	}
	return invalid(ErrMalformed, field, "not %s", kindOf(serr.GoType))
}

// kindOf names the JSON value a member of Go type t holds.
func kindOf(t reflect.Type) string {
	switch t {
	case reflect.TypeFor[body]():
		return "a JSON object"
	case reflect.TypeFor[blobList]():
		return "an array"
	case reflect.TypeFor[wireBlob]():
		return "an object"
	}
	if t != nil && t.Kind() == reflect.String {
		return "a string"
	}
	return "a number"
}

// fieldOf is the ValidationError.Field of the member at JSON pointer p:
// "/blobs/3/size" is "blobs[3].size".
func fieldOf(p jsontext.Pointer) string {
	var b strings.Builder
	for tok := range p.Tokens() {
		switch {
		case b.Len() == 0:
			b.WriteString(tok)
		case tok != "" && strings.Trim(tok, "0123456789") == "":
			b.WriteString("[" + tok + "]")
		default:
			b.WriteString("." + tok)
		}
	}
	return b.String()
}
