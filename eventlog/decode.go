package eventlog

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/go-json-experiment/json/jsontext"
)

// Members of an event, as bits of a presence mask.
const (
	hasID = 1 << iota
	hasAuthor
	hasTime
	hasKind
	hasBody
	hasBlobs
	hasSig
	hasAll = hasID | hasAuthor | hasTime | hasKind | hasBody | hasBlobs | hasSig
)

// Members of a blob reference.
const (
	hasCID = 1 << iota
	hasSize
	hasName
	hasAllBlob = hasCID | hasSize | hasName
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
func Decode(raw []byte) (*Event, error) {
	if len(raw) > MaxEventBytes {
		return nil, invalid(ErrTooLarge, "", "%d bytes over %d", len(raw), MaxEventBytes)
	}
	d := decoderPool.Get().(*jsontext.Decoder)
	defer func() {
		d.Reset(emptyReader)
		decoderPool.Put(d)
	}()
	d.Reset(bytes.NewBuffer(raw))

	tok, err := d.ReadToken()
	if err != nil {
		return nil, syntaxErr("", err)
	}
	if tok.Kind() != '{' {
		return nil, invalid(ErrMalformed, "", "not a JSON object")
	}
	var e Event
	var seen int
	for {
		tok, err := d.ReadToken()
		if err != nil {
			return nil, syntaxErr("", err)
		}
		if tok.Kind() == '}' {
			break
		}
		name := tok.String()
		switch name {
		case "id":
			e.ID, err = readString(d, name)
			seen |= hasID
		case "author":
			e.Author, err = readString(d, name)
			seen |= hasAuthor
		case "kind":
			e.Kind, err = readString(d, name)
			seen |= hasKind
		case "sig":
			e.Sig, err = readString(d, name)
			seen |= hasSig
		case "time":
			e.Time, err = readInt(d, name)
			seen |= hasTime
		case "body":
			var v jsontext.Value
			if v, err = d.ReadValue(); err != nil {
				return nil, syntaxErr(name, err)
			}
			e.Body, err = canonicalBody(v)
			seen |= hasBody
		case "blobs":
			e.Blobs, err = readBlobs(d)
			seen |= hasBlobs
		default:
			return nil, invalid(ErrMalformed, name, "unknown member")
		}
		if err != nil {
			return nil, err
		}
	}
	if _, err := d.ReadToken(); !errors.Is(err, io.EOF) {
		if err == nil {
			return nil, invalid(ErrMalformed, "", "data after the event")
		}
		return nil, syntaxErr("", err)
	}
	if seen != hasAll {
		return nil, invalid(ErrMalformed, missing(seen), "missing")
	}
	return &e, nil
}

func missing(seen int) string {
	for _, m := range []struct {
		bit  int
		name string
	}{{hasID, "id"}, {hasAuthor, "author"}, {hasTime, "time"}, {hasKind, "kind"}, {hasBody, "body"}, {hasBlobs, "blobs"}, {hasSig, "sig"}} {
		if seen&m.bit == 0 {
			return m.name
		}
	}
	return ""
}

func syntaxErr(field string, err error) error {
	return invalid(ErrMalformed, field, "%v", err)
}

func readString(d *jsontext.Decoder, field string) (string, error) {
	tok, err := d.ReadToken()
	if err != nil {
		return "", syntaxErr(field, err)
	}
	if tok.Kind() != '"' {
		return "", invalid(ErrMalformed, field, "not a string")
	}
	return tok.String(), nil
}

func readInt(d *jsontext.Decoder, field string) (int64, error) {
	tok, err := d.ReadToken()
	if err != nil {
		return 0, syntaxErr(field, err)
	}
	if tok.Kind() != '0' {
		return 0, invalid(ErrMalformed, field, "not a number")
	}
	n, err := tok.Int()
	if err != nil {
		return 0, invalid(ErrMalformed, field, "not an integer within int64: %s", tok.String())
	}
	return n, nil
}

func readUint(d *jsontext.Decoder, field string) (uint64, error) {
	tok, err := d.ReadToken()
	if err != nil {
		return 0, syntaxErr(field, err)
	}
	if tok.Kind() != '0' {
		return 0, invalid(ErrMalformed, field, "not a number")
	}
	n, err := tok.Uint()
	if err != nil {
		return 0, invalid(ErrMalformed, field, "not a non-negative integer within uint64: %s", tok.String())
	}
	return n, nil
}

func readBlobs(d *jsontext.Decoder) ([]BlobRef, error) {
	tok, err := d.ReadToken()
	if err != nil {
		return nil, syntaxErr("blobs", err)
	}
	if tok.Kind() != '[' {
		return nil, invalid(ErrMalformed, "blobs", "not an array")
	}
	blobs := []BlobRef{}
	for i := 0; ; i++ {
		tok, err := d.ReadToken()
		if err != nil {
			return nil, syntaxErr("blobs", err)
		}
		if tok.Kind() == ']' {
			return blobs, nil
		}
		if i == MaxBlobs {
			return nil, invalid(ErrTooLarge, "blobs", "more than %d blobs", MaxBlobs)
		}
		prefix := fmt.Sprintf("blobs[%d]", i)
		if tok.Kind() != '{' {
			return nil, invalid(ErrMalformed, prefix, "not an object")
		}
		var b BlobRef
		var seen int
		for {
			tok, err := d.ReadToken()
			if err != nil {
				return nil, syntaxErr(prefix, err)
			}
			if tok.Kind() == '}' {
				break
			}
			name := tok.String()
			field := prefix + "." + name
			switch name {
			case "cid":
				b.CID, err = readString(d, field)
				seen |= hasCID
			case "name":
				b.Name, err = readString(d, field)
				seen |= hasName
			case "size":
				b.Size, err = readUint(d, field)
				seen |= hasSize
			default:
				return nil, invalid(ErrMalformed, field, "unknown member")
			}
			if err != nil {
				return nil, err
			}
		}
		if seen != hasAllBlob {
			for _, m := range []struct {
				bit  int
				name string
			}{{hasCID, "cid"}, {hasSize, "size"}, {hasName, "name"}} {
				if seen&m.bit == 0 {
					return nil, invalid(ErrMalformed, prefix+"."+m.name, "missing")
				}
			}
		}
		blobs = append(blobs, b)
	}
}
