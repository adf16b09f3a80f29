package eventlog

import (
	"bytes"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// sameAsGeneral fails unless decodeFast of raw is nil or exactly what the
// general path decodes raw to; it reports whether the fast path took raw.
func sameAsGeneral(tb testing.TB, raw []byte) bool {
	tb.Helper()
	in := bytes.Clone(raw)
	fast := decodeFast(in)
	if fast == nil {
		return false
	}
	clear(in) // the event must not alias its input
	general, err := decodeGeneral(raw)
	if err != nil {
		tb.Fatalf("the fast path accepted what the general path refuses (%v):\n%s", err, raw)
	}
	if !reflect.DeepEqual(fast, general) {
		tb.Fatalf("the two paths disagree on\n%s\nfast:    %+v\ngeneral: %+v", raw, fast, general)
	}
	return true
}

// TestDecodeFastTakesTheMarshalForm: events as Marshal writes them, with the
// bodies and blobs nodes send (notes, crash reports, nested values, the
// bounds of the simple form), take the fast path and decode as the general
// path does. A change that sent them to the general path would lose the
// speed silently; this fails instead.
func TestDecodeFastTakesTheMarshalForm(t *testing.T) {
	deep := strings.Repeat(`{"a":`, fastMaxDepth-1) + "1" + strings.Repeat("}", fastMaxDepth-1)
	bodies := []string{
		`{}`,
		`{"n":1,"text":"benchmark event 1"}`,
		`{"a":[1,-2,true,false,null,"x",[],{}],"b":{"c":{"d":[[]]}}}`,
		`{"max":999999999999999,"min":-999999999999999,"zero":0}`, // fastMaxBodyDigits
		`{"sym":" !#$%&'()*+,-./:;<=>?@[]^_{|}~"}`,
		`{"esc":"\b\t\n\f\r\"\\\u0000\u001f\u007f/","utf8":"é 😀 \u2028"}`,
		string(crashBody("goroutine 1 [running]:")),
		deep, // fastMaxDepth: the body at depth 0, the 1 at fastMaxDepth-1
	}
	blobs := [][]BlobRef{nil, blobsN(1), blobsN(MaxBlobs), {{CID: testCID, Size: 999999999999999999, Name: ""}}}
	for i, body := range bodies {
		for j, bl := range blobs {
			kind := "note"
			if strings.Contains(body, "fingerprint") {
				kind = KindCrash
			}
			e := mustNew(t, testKey(t, 1), testNow, kind, body, nil)
			e.Blobs = bl // the size of 18 digits is past what New signs; Decode does not care
			raw := e.mustMarshal(t)
			if !sameAsGeneral(t, raw) {
				t.Errorf("body %d, blobs %d: the fast path declined\n%s", i, j, raw)
			}
		}
	}
	// The events of the independent implementation, pretty-printed in
	// the vectors, take the general path, and their stored form the fast
	// one (a crash's stack has escapes: \n, \t) unless its body has a
	// number with a fraction or an exponent.
	fraction := regexp.MustCompile(`[:,[]-?[0-9]+[.eE]`)
	for i, raw := range vectorEvents(t) {
		if sameAsGeneral(t, raw) {
			t.Errorf("vector %d: the fast path took whitespace", i)
		}
		e, err := Decode(raw)
		if err != nil {
			t.Fatal(err)
		}
		m := e.mustMarshal(t)
		if took, want := sameAsGeneral(t, m), !fraction.Match(e.Body); took != want {
			t.Errorf("vector %d: the fast path took its stored form: %v, want %v\n%s", i, took, want, m)
		}
	}
}

// vectorEvents returns the raw events of testdata/events.json.
func vectorEvents(tb testing.TB) []jsontext.Value {
	tb.Helper()
	raw, err := os.ReadFile("testdata/events.json")
	if err != nil {
		tb.Fatal(err)
	}
	var v struct {
		Events []struct {
			Event jsontext.Value `json:"event"`
		} `json:"events"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		tb.Fatal(err)
	}
	out := make([]jsontext.Value, len(v.Events))
	for i, e := range v.Events {
		out[i] = e.Event
	}
	return out
}

// TestDecodeFastDeclines: each input just outside the simple form, valid
// or not, goes to the general path, whose verdict Decode returns: the
// bounds of the form at and just past, and every rule of it.
func TestDecodeFastDeclines(t *testing.T) {
	e := mustNew(t, testKey(t, 1), testNow, "note", `{"a":1}`, blobsN(1))
	good := string(e.mustMarshal(t))
	if !sameAsGeneral(t, []byte(good)) {
		t.Fatalf("the base case declined: %s", good)
	}
	sub := func(old, new string) string {
		if !strings.Contains(good, old) {
			t.Fatalf("%q not in %s", old, good)
		}
		return strings.Replace(good, old, new, 1)
	}
	body := func(b string) string { return sub(`"body":{"a":1}`, `"body":`+b) }
	deep := func(depth int) string {
		return body(strings.Repeat(`{"a":`, depth) + "1" + strings.Repeat("}", depth))
	}
	manyBlobs := func(n int) string {
		var parts []string
		for i := range n {
			parts = append(parts, fmt.Sprintf(`{"cid":%q,"size":%d,"name":"f%d"}`, testCID, i, i))
		}
		from, to := strings.Index(good, `"blobs":[`), strings.Index(good, `],"sig"`)
		return good[:from] + `"blobs":[` + strings.Join(parts, ",") + good[to:]
	}
	cases := map[string]string{
		"whitespace after {":       sub(`{"id"`, `{ "id"`),
		"whitespace after :":       sub(`"kind":"note"`, `"kind": "note"`),
		"trailing whitespace":      good + " ",
		"trailing data":            good + "{}",
		"escape in a string":       sub(`"kind":"note"`, `"kind":"no\u0074e"`),
		"escaped member name":      sub(`"kind":`, `"\u006bind":`),
		"invalid UTF-8 name":       sub(`"name":"f0"`, "\"name\":\"f\xff\""),
		"surrogate in UTF-8":       sub(`"name":"f0"`, "\"name\":\"f\xed\xa0\x80\""),
		"control byte":             sub(`"name":"f0"`, "\"name\":\"f\x01\""),
		"non-ASCII member name":    sub(`"kind":`, `"kïnd":`),
		"unknown member":           sub(`{"id"`, `{"x":1,"id"`),
		"member twice":             sub(`"kind":"note"`, `"kind":"note","kind":"note"`),
		"member missing":           sub(`"kind":"note",`, ``),
		"null member":              sub(`"kind":"note"`, `"kind":null`),
		"number for a string":      sub(`"kind":"note"`, `"kind":1`),
		"blob member twice":        sub(`"name":"f0"`, `"name":"f0","name":"f0"`),
		"blob member missing":      sub(`,"name":"f0"`, ``),
		"blob unknown member":      sub(`"name":"f0"`, `"name":"f0","x":1`),
		"blobs not an array":       sub(`"blobs":[`, `"blobs":{"a":[`),
		"negative time":            sub(fmt.Sprintf(`"time":%d`, e.Time), `"time":-1`),
		"time with a fraction":     sub(fmt.Sprintf(`"time":%d`, e.Time), `"time":1.5`),
		"time with an exponent":    sub(fmt.Sprintf(`"time":%d`, e.Time), `"time":1e3`),
		"time with a leading zero": sub(fmt.Sprintf(`"time":%d`, e.Time), `"time":01`),
		"time of 19 digits":        sub(fmt.Sprintf(`"time":%d`, e.Time), `"time":1000000000000000000`),
		"size of 19 digits":        sub(`"size":0`, `"size":1000000000000000000`),
		"body keys out of order":   body(`{"b":1,"a":2}`),
		"body key twice":           body(`{"a":1,"a":2}`),
		"body -0":                  body(`{"a":-0}`),
		"body fraction":            body(`{"a":1.5}`),
		"body 1.0":                 body(`{"a":1.0}`),
		"body exponent":            body(`{"a":1e2}`),
		"body 16 digits":           body(`{"a":1000000000000000}`),
		"body -16 digits":          body(`{"a":-1000000000000000}`),
		"body leading zero":        body(`{"a":01}`),
		"body overflow":            body(`{"a":1e400}`),
		"body not an object":       body(`[1]`),
		"body escape \\/":          body(`{"a":"\/"}`),
		"body escape \\u0041":      body(`{"a":"\u0041"}`),
		"body escape \\u000a":      body(`{"a":"\u000a"}`),
		"body escape \\u001F":      body(`{"a":"\u001F"}`),
		"body escape \\u0020":      body(`{"a":"\u0020"}`),
		"body escape \\ud800":      body(`{"a":"\ud800"}`),
		"body raw control":         body("{\"a\":\"\x1f\"}"),
		"body invalid UTF-8":       body("{\"a\":\"\xc3\"}"),
		"body non-ASCII key":       body(`{"é":1}`),
		"body escaped key":         body(`{"\n":1}`),
		"body whitespace":          body(`{"a": 1}`),
		"body bad literal":         body(`{"a":nul}`),
		"body deeper than the cap": deep(fastMaxDepth),
		"blobs past MaxBlobs":      manyBlobs(MaxBlobs + 1),
		"not an object":            `[]`,
		"empty":                    ``,
		"truncated":                good[:len(good)-1],
	}
	for name, raw := range cases {
		t.Run(name, func(t *testing.T) {
			if raw == good {
				t.Fatalf("the case changed nothing")
			}
			if decodeFast([]byte(raw)) != nil {
				t.Fatalf("the fast path took\n%s", raw)
			}
			got, gotErr := Decode([]byte(raw))
			want, wantErr := decodeGeneral([]byte(raw))
			if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) || !reflect.DeepEqual(got, want) {
				t.Fatalf("Decode: %v %v; the general path: %v %v", got, gotErr, want, wantErr)
			}
		})
	}
	// At the bounds the fast path takes: 16 blobs, depth fastMaxDepth-1.
	for name, raw := range map[string]string{"MaxBlobs blobs": manyBlobs(MaxBlobs), "deep": deep(fastMaxDepth - 1)} {
		if !sameAsGeneral(t, []byte(raw)) {
			t.Errorf("%s: the fast path declined at its bound", name)
		}
	}
}

// FuzzDecodeFast: whatever the fast path accepts, the general path decodes
// to the same event.
func FuzzDecodeFast(f *testing.F) {
	for _, raw := range vectorEvents(f) {
		f.Add([]byte(raw))
	}
	for _, body := range []string{`{}`, `{"a":[1,-2,true,null,"x"],"b":{"c":{}}}`, `{"a":999999999999999}`} {
		f.Add(mustNew(f, testKey(f, 2), testNow, "note", body, blobsN(2)).mustMarshal(f))
	}
	f.Add(mustNew(f, testKey(f, 1), testNow, KindCrash, string(crashBody("s")), blobsN(1)).mustMarshal(f))
	f.Fuzz(func(t *testing.T, raw []byte) {
		if len(raw) > MaxEventBytes {
			return
		}
		if sameAsGeneral(t, raw) && bytes.ContainsAny(raw, "\t\n\r\\") {
			t.Fatalf("the fast path took whitespace or an escape:\n%s", raw)
		}
	})
}
