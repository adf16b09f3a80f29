package proto

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

// codeOf is the Code of the *Error in err's chain, or "" if there is none.
func codeOf(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// wantCode fails t unless err carries code (and, if sub is not empty, its
// text contains sub).
func wantCode(t *testing.T, err error, code Code, sub string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want %s", code)
	}
	if got := codeOf(err); got != code {
		t.Fatalf("error %q has code %q, want %q", err, got, code)
	}
	if sub != "" && !strings.Contains(err.Error(), sub) {
		t.Fatalf("error %q does not mention %q", err, sub)
	}
}

// padded returns the JSON object whose members are head (without braces)
// plus a "pad" string member, exactly n bytes long.
func padded(head string, n int) []byte {
	s := "{" + head + `,"pad":""}`
	if len(s) > n {
		panic("padded: too short")
	}
	return []byte("{" + head + `,"pad":"` + strings.Repeat("x", n-len(s)) + `"}`)
}

// testEvent returns an event-shaped JSON object of exactly size bytes
// (at least 120), distinct for each i.
func testEvent(i, size int) jsontext.Value {
	head := fmt.Sprintf(`{"id":"%064x","author":"%s","time":%d,"kind":"note","body":{"text":"`, i, testPeer, 1767225600000+i)
	tail := `"},"blobs":[],"sig":"sig"}`
	fill := size - len(head) - len(tail)
	if fill < 0 {
		panic("testEvent: size too small")
	}
	return jsontext.Value(head + strings.Repeat("a", fill) + tail)
}

// eventsJSON joins events into a JSON array.
func eventsJSON(evs []jsontext.Value) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, ev := range evs {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(ev)
	}
	b.WriteByte(']')
	return b.String()
}

// quotedList returns a JSON array of n strings of size bytes each.
func quotedList(n, size int) string {
	var b strings.Builder
	b.WriteByte('[')
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`"` + strings.Repeat("a", size) + `"`)
	}
	b.WriteByte(']')
	return b.String()
}

// objList returns a JSON array of n copies of obj.
func objList(n int, obj string) string {
	return "[" + strings.TrimSuffix(strings.Repeat(obj+",", n), ",") + "]"
}
