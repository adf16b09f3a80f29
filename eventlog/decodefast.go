package eventlog

import (
	"bytes"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// The fast path of Decode. Nearly every event a node decodes was written by
// Event.Marshal, its own or a peer's: compact, its strings without
// escapes but in the body, its integers plain, its body canonical already. decodeFast reads
// exactly that form in one pass over the bytes, where the general path
// binds the members through json v2 and then parses the body three times
// more (the number check, the copy, the canonical form): a fifth of a sync
// page's verification (ADR 0038, docs/performance.md).
//
// It decides nothing on its own. Any input outside the simple form below,
// valid or not, makes it return nil, and Decode then takes the general
// path, which alone reports errors; what it does accept, the general path
// would decode to the same Event (FuzzDecodeFast holds it to that). The
// simple form:
//
//   - no whitespace anywhere; nothing after the event's closing brace;
//   - the event an object of exactly the members id, author, time, kind,
//     body, blobs, sig, in any order, each once; a blob an object of
//     exactly cid, size, name, each once; at most MaxBlobs blobs;
//   - member names (the body's too) of printable ASCII, 0x20 to 0x7e,
//     without '"' or '\'; the string members (id, author, kind, sig, cid,
//     name) valid UTF-8 without escapes or control characters;
//   - time and sizes "0" or up to fastMaxDigits digits without a leading
//     zero: no sign, fraction or exponent;
//   - the body already in its RFC 8785 form, of these values only:
//     strings of valid UTF-8, escaped only as RFC 8785 escapes (\n, \u001f;
//     never \/ or \u0041), integers of at most fastMaxBodyDigits digits (optionally
//     negative, never "-0"), true, false, null, arrays, and objects whose
//     member names strictly increase (byte order, which for ASCII is RFC
//     8785's UTF-16 order, and which rules out duplicates), at most
//     fastMaxDepth deep.

const (
	// fastMaxDigits bounds time and sizes on the fast path: 18 digits
	// never overflow an int64.
	fastMaxDigits = 18
	// fastMaxBodyDigits bounds a body's integers on the fast path: 15
	// digits stay below 2^53, where an IEEE double, and so RFC 8785's
	// number form, holds every integer exactly as written.
	fastMaxBodyDigits = 15
	// fastMaxDepth bounds the nesting of a body on the fast path (the
	// general path allows jsontext's 10,000).
	fastMaxDepth = 32
)

// The bits of decodeFast's member set.
const (
	fastID = 1 << iota
	fastAuthor
	fastTime
	fastKind
	fastBody
	fastBlobs
	fastSig
	fastAll = 1<<iota - 1
)

// fastScanner reads the simple form; ok turns false at the first byte
// outside it, after which every method returns zero values.
type fastScanner struct {
	b  []byte
	i  int
	ok bool
}

// decodeFast returns the event raw holds when raw is in the simple form
// above, nil otherwise.
func decodeFast(raw []byte) *Event {
	s := fastScanner{b: raw, ok: true}
	var e Event
	var body []byte
	seen := 0
	if !s.byte('{') {
		return nil
	}
	for s.ok {
		name := s.str(strName)
		s.byte(':')
		var bit int
		switch string(name) {
		case "id":
			bit, e.ID = fastID, string(s.str(strValue))
		case "author":
			bit, e.Author = fastAuthor, string(s.str(strValue))
		case "time":
			bit = fastTime
			e.Time = int64(s.uint())
		case "kind":
			bit, e.Kind = fastKind, string(s.str(strValue))
		case "body":
			bit = fastBody
			start := s.i
			if s.peek() != '{' {
				return nil
			}
			s.value(0)
			body = s.b[start:s.i]
		case "blobs":
			bit = fastBlobs
			e.Blobs = s.blobs()
		case "sig":
			bit, e.Sig = fastSig, string(s.str(strValue))
		default:
			return nil
		}
		if seen&bit != 0 {
			return nil
		}
		seen |= bit
		if s.peek() == '}' {
			s.i++
			break
		}
		s.byte(',')
	}
	if !s.ok || seen != fastAll || s.i != len(raw) {
		return nil
	}
	e.Body = jsontext.Value(bytes.Clone(body))
	return &e
}

// peek returns the next byte, or 0 at the end or after a failure.
func (s *fastScanner) peek() byte {
	if !s.ok || s.i >= len(s.b) {
		return 0
	}
	return s.b[s.i]
}

// byte consumes c, or fails.
func (s *fastScanner) byte(c byte) bool {
	if s.peek() != c {
		s.ok = false
		return false
	}
	s.i++
	return true
}

// The kinds of string of the simple form.
const (
	// strName is a member name: printable ASCII, no escapes.
	strName = iota
	// strValue is a string member of the event or of a blob: valid UTF-8,
	// no control characters, no escapes, so that its bytes are its value.
	strValue
	// strBody is a string within the body: valid UTF-8 in RFC 8785's
	// form, escapes included (canonicalEscape).
	strBody
)

// str consumes a string of the given kind and returns its contents (a
// slice of the input, escapes as written), or fails.
func (s *fastScanner) str(kind int) []byte {
	if !s.byte('"') {
		return nil
	}
	start := s.i
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			s.i++
			return s.b[start : s.i-1]
		case c >= 0x20 && c < 0x7f && c != '\\':
			s.i++
		case c == '\\' && kind == strBody:
			n := canonicalEscape(s.b[s.i:])
			if n == 0 {
				s.ok = false
				return nil
			}
			s.i += n
		case c >= utf8.RuneSelf && kind != strName:
			r, n := utf8.DecodeRune(s.b[s.i:])
			if r == utf8.RuneError && n == 1 {
				s.ok = false
				return nil
			}
			s.i += n
		case c == 0x7f && kind != strName:
			s.i++
		default:
			s.ok = false
			return nil
		}
	}
	s.ok = false
	return nil
}

// canonicalEscape returns the length of the escape sequence b starts with
// when RFC 8785 writes it so (\b \t \n \f \r \" \\, and \u00xx in
// lowercase hex for the other control characters), else 0.
func canonicalEscape(b []byte) int {
	if len(b) < 2 {
		return 0
	}
	switch b[1] {
	case 'b', 't', 'n', 'f', 'r', '"', '\\':
		return 2
	case 'u':
		if len(b) < 6 || b[2] != '0' || b[3] != '0' {
			return 0
		}
		hi, lo := b[4], b[5]
		var v byte
		switch {
		case hi == '0' || hi == '1':
			v = (hi - '0') << 4
		default:
			return 0
		}
		switch {
		case lo >= '0' && lo <= '9':
			v |= lo - '0'
		case lo >= 'a' && lo <= 'f':
			v |= lo - 'a' + 10
		default:
			return 0
		}
		switch v {
		case '\b', '\t', '\n', '\f', '\r': // written in their short forms
			return 0
		}
		return 6
	}
	return 0
}

// digits consumes "0" or 1 to max digits without a leading zero, or fails.
// It returns their value, which max ≤ 18 keeps within an int64.
func (s *fastScanner) digits(max int) uint64 {
	c := s.peek()
	if c == '0' {
		s.i++
		if c := s.peek(); c >= '0' && c <= '9' {
			s.ok = false
		}
		return 0
	}
	var v uint64
	n := 0
	for ; s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9'; s.i++ {
		v = v*10 + uint64(s.b[s.i]-'0')
		n++
	}
	if n == 0 || n > max {
		s.ok = false
		return 0
	}
	return v
}

// uint consumes an integer member (time, a size): digits only, nothing
// that could continue a number after them.
func (s *fastScanner) uint() uint64 {
	v := s.digits(fastMaxDigits)
	if c := s.peek(); c == '.' || c == 'e' || c == 'E' {
		s.ok = false
	}
	return v
}

// blobs consumes an array of at most MaxBlobs blob objects.
func (s *fastScanner) blobs() []BlobRef {
	if !s.byte('[') {
		return nil
	}
	out := []BlobRef{} // never nil, as the general path
	if s.peek() == ']' {
		s.i++
		return out
	}
	for s.ok {
		if len(out) == MaxBlobs {
			s.ok = false
			return nil
		}
		out = append(out, s.blob())
		if s.peek() == ']' {
			s.i++
			return out
		}
		s.byte(',')
	}
	return nil
}

// blob consumes one blob object: cid, size and name, each once.
func (s *fastScanner) blob() BlobRef {
	var b BlobRef
	seen := 0
	if !s.byte('{') {
		return b
	}
	for s.ok {
		name := s.str(strName)
		s.byte(':')
		var bit int
		switch string(name) {
		case "cid":
			bit, b.CID = 1, string(s.str(strValue))
		case "size":
			bit, b.Size = 2, s.uint()
		case "name":
			bit, b.Name = 4, string(s.str(strValue))
		default:
			s.ok = false
		}
		if seen&bit != 0 {
			s.ok = false
		}
		seen |= bit
		if s.peek() == '}' {
			s.i++
			break
		}
		s.byte(',')
	}
	if seen != 7 {
		s.ok = false
	}
	return b
}

// value consumes one body value in its canonical simple form, depth being
// the nesting of the arrays and objects around it.
func (s *fastScanner) value(depth int) {
	if depth >= fastMaxDepth {
		s.ok = false
		return
	}
	switch c := s.peek(); {
	case c == '{':
		s.i++
		if s.peek() == '}' {
			s.i++
			return
		}
		var prev []byte
		for s.ok {
			name := s.str(strName)
			if prev != nil && bytes.Compare(prev, name) >= 0 {
				s.ok = false // out of RFC 8785's order, or a duplicate
				return
			}
			prev = name
			s.byte(':')
			s.value(depth + 1)
			if s.peek() == '}' {
				s.i++
				return
			}
			s.byte(',')
		}
	case c == '[':
		s.i++
		if s.peek() == ']' {
			s.i++
			return
		}
		for s.ok {
			s.value(depth + 1)
			if s.peek() == ']' {
				s.i++
				return
			}
			s.byte(',')
		}
	case c == '"':
		s.str(strBody)
	case c == '-':
		s.i++
		if s.peek() == '0' { // "-0": RFC 8785 writes 0
			s.ok = false
			return
		}
		s.number()
	case c >= '0' && c <= '9':
		s.number()
	case c == 't':
		s.literal("true")
	case c == 'f':
		s.literal("false")
	case c == 'n':
		s.literal("null")
	default:
		s.ok = false
	}
}

// number consumes a body's integer of at most fastMaxBodyDigits digits,
// its sign consumed: RFC 8785 writes such an integer as it is.
func (s *fastScanner) number() {
	s.digits(fastMaxBodyDigits)
	if c := s.peek(); c == '.' || c == 'e' || c == 'E' {
		s.ok = false
	}
}

// literal consumes lit.
func (s *fastScanner) literal(lit string) {
	if !s.ok || !bytes.HasPrefix(s.b[s.i:], []byte(lit)) {
		s.ok = false
		return
	}
	s.i += len(lit)
}
