package proto

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/wats-network/wats/core"
)

func TestDecodeRequestSyncCursorsAndLimits(t *testing.T) {
	for _, tc := range []struct {
		in    string
		after core.Cursor
		limit int
		code  Code
	}{
		{in: `{"type":"sync","after":"0"}`, after: 0, limit: 256},
		{in: `{"type":"sync","after":"18446744073709551615","limit":1}`, after: 1<<64 - 1, limit: 1},
		{in: `{"type":"sync","after":"7","limit":256}`, after: 7, limit: 256},
		{in: `{"type":"sync","after":"7","limit":257}`, after: 7, limit: 256},
		{in: `{"type":"sync","after":"7","limit":9007199254740992}`, after: 7, limit: 256},
		{in: `{"type":"sync","after":"18446744073709551616"}`, code: CodeBadRequest},
		{in: `{"type":"sync","after":"99999999999999999999"}`, code: CodeBadRequest},
		{in: `{"type":"sync","after":"-1"}`, code: CodeBadRequest},
		{in: `{"type":"sync","after":"1.0"}`, code: CodeBadRequest},
		{in: `{"type":"sync","after":"0x10"}`, code: CodeBadRequest},
		{in: `{"type":"sync","after":""}`, code: CodeBadRequest},
		{in: `{"type":"sync","after":" 1"}`, code: CodeBadRequest},
		{in: `{"type":"sync","after":"1 "}`, code: CodeBadRequest},
		{in: `{"type":"sync","after":"01"}`, code: CodeBadRequest},
		{in: `{"type":"sync","after":"+1"}`, code: CodeBadRequest},
		{in: `{"type":"sync","after":"1e3"}`, code: CodeBadRequest},
		{in: `{"type":"sync","after":1}`, code: CodeBadRequest},
		{in: `{"type":"sync","after":null}`, code: CodeBadRequest},
		{in: `{"type":"sync"}`, code: CodeBadRequest},
		{in: `{"type":"sync","after":"1","limit":0}`, code: CodeBadRequest},
		{in: `{"type":"sync","after":"1","limit":-1}`, code: CodeBadRequest},
		{in: `{"type":"sync","after":"1","limit":-0}`, code: CodeBadRequest},
		{in: `{"type":"sync","after":"1","limit":1.0}`, code: CodeBadRequest},
		{in: `{"type":"sync","after":"1","limit":1.5}`, code: CodeBadRequest},
		{in: `{"type":"sync","after":"1","limit":1e2}`, code: CodeBadRequest},
		{in: `{"type":"sync","after":"1","limit":9007199254740993}`, code: CodeBadRequest},
		{in: `{"type":"sync","after":"1","limit":100000000000000000000000}`, code: CodeBadRequest},
		{in: `{"type":"sync","after":"1","limit":"5"}`, code: CodeBadRequest},
		{in: `{"type":"sync","after":"1","limit":null}`, code: CodeBadRequest},
		{in: `{"type":"sync","after":"1","limit":true}`, code: CodeBadRequest},
	} {
		t.Run(tc.in, func(t *testing.T) {
			r, err := DecodeRequest([]byte(tc.in))
			if tc.code != "" {
				wantCode(t, err, tc.code, "")
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if r.Type != TypeSync || r.Sync == nil || r.Sync.After != tc.after || r.Sync.Limit != tc.limit {
				t.Fatalf("got %+v %+v, want after %d limit %d", r, r.Sync, tc.after, tc.limit)
			}
		})
	}
}

// TestDecodeNames covers docs/design.md §4's name rules: exact, case-sensitive
// matching; unknown and _grease fields ignored; duplicates refused at any
// depth, after unescaping.
func TestDecodeNames(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		code     Code
		limit    int
	}{
		{"unknown fields", `{"type":"sync","after":"5","x":{"y":[1,{"z":null}]},"limit2":3}`, "", 256},
		{"LIMIT is unknown", `{"type":"sync","after":"5","LIMIT":3,"Limit":4}`, "", 256},
		{"limit with LIMIT", `{"type":"sync","after":"5","LIMIT":3,"limit":4}`, "", 4},
		{"grease", `{"_grease":1,"type":"sync","_grease0a1b":{"k":[true]},"after":"5","_greaseX":null}`, "", 256},
		{"type last", `{"after":"5","limit":9,"type":"sync"}`, "", 9},
		{"escaped names", `{"\u0074ype":"sync","\u0061fter":"5"}`, "", 256},
		{"whitespace", " \n{ \"type\" : \"sync\" ,\t\"after\":\"5\" }\r\n", "", 256},
		{"Type is not type", `{"Type":"sync","after":"5"}`, CodeBadRequest, 0},
		{"After is not after", `{"type":"sync","After":"5"}`, CodeBadRequest, 0},
		{"SYNC is not sync", `{"type":"SYNC","after":"5"}`, CodeUnsupported, 0},
		{"dup top-level", `{"type":"sync","after":"1","after":"2"}`, CodeBadRequest, 0},
		{"dup type", `{"type":"sync","type":"sync","after":"1"}`, CodeBadRequest, 0},
		{"dup after unescaping", `{"type":"sync","after":"1","\u0061fter":"1"}`, CodeBadRequest, 0},
		{"dup unknown", `{"type":"sync","after":"1","x":1,"x":1}`, CodeBadRequest, 0},
		{"dup grease", `{"type":"sync","after":"1","_grease1":1,"_grease1":2}`, CodeBadRequest, 0},
		{"dup nested in unknown", `{"type":"sync","after":"1","x":{"a":1,"a":2}}`, CodeBadRequest, 0},
		{"dup deep in array", `{"type":"sync","after":"1","x":[[{"b":{"a":1,"a":2}}]]}`, CodeBadRequest, 0},
		{"dup in grease value", `{"type":"sync","after":"1","_grease9":{"a":1,"a":2}}`, CodeBadRequest, 0},
		{"dup after unknown type", `{"type":"nope","x":{"a":1,"a":2}}`, CodeBadRequest, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := DecodeRequest([]byte(tc.in))
			if tc.code != "" {
				wantCode(t, err, tc.code, "")
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if r.Sync == nil || r.Sync.After != 5 || r.Sync.Limit != tc.limit {
				t.Fatalf("got %+v, want after 5 limit %d", r.Sync, tc.limit)
			}
		})
	}
}

func TestDecodeMalformed(t *testing.T) {
	for _, tc := range []struct{ name, in, sub string }{
		{"empty", ``, "empty"},
		{"blank", " \n", "empty"},
		{"array", `[]`, "not an object"},
		{"string", `"sync"`, "not an object"},
		{"null", `null`, "not an object"},
		{"truncated", `{"type":"sync","after":"1"`, "malformed"},
		{"trailing value", `{"type":"sync","after":"1"}{}`, "after the message"},
		{"trailing garbage", `{"type":"sync","after":"1"} x`, "malformed"},
		{"trailing comma", `{"type":"sync","after":"1",}`, "malformed"},
		{"single quotes", `{'type':'sync'}`, "malformed"},
		{"bad utf8", "{\"type\":\"sync\",\"after\":\"1\",\"x\":\"\xff\"}", "malformed"},
		{"bad escape", `{"type":"sync","after":"1","x":"\ud800"}`, "malformed"},
		{"no type", `{"after":"1"}`, `no "type"`},
		{"too deep", `{"type":"sync","after":"1","x":` + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + `}`, "depth"},
		{"type number", `{"type":1}`, "want a string, got a number"},
		{"type null", `{"type":null}`, "got a null"},
		{"type object", `{"type":{}}`, "got an object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeRequest([]byte(tc.in))
			wantCode(t, err, CodeBadRequest, tc.sub)
			_, err = DecodeResponse([]byte(tc.in))
			wantCode(t, err, CodeBadRequest, tc.sub)
		})
	}
}

func TestDecodeUnsupported(t *testing.T) {
	for _, in := range []string{
		`{"type":"foo"}`,
		`{"type":""}`,
		`{"type":"error","code":"internal"}`,
		`{"type":"refused","reason":"r"}`,
		`{"type":"challenge","alg":"b3","seed":"s","effort":1,"expires":1}`,
	} {
		_, err := DecodeRequest([]byte(in))
		wantCode(t, err, CodeUnsupported, "unknown request type")
	}
	_, err := DecodeResponse([]byte(`{"type":"foo","x":1}`))
	wantCode(t, err, CodeUnsupported, "unknown response type")
}

func TestDecodeHello(t *testing.T) {
	const base = `"type":"hello","version":1,"network":"n","head":"0"`
	r, err := DecodeRequest([]byte("{" + base + "}"))
	if err != nil {
		t.Fatal(err)
	}
	want := &Hello{Version: 1, Network: "n", Head: 0}
	if !reflect.DeepEqual(r.Hello, want) {
		t.Fatalf("got %+v, want %+v", r.Hello, want)
	}
	// A hello is a request and a response: both decoders read it alike.
	resp, err := DecodeResponse([]byte("{" + base + "}"))
	if err != nil || !reflect.DeepEqual(resp.Hello, want) {
		t.Fatalf("as a response: %+v, %v", resp, err)
	}

	long := strings.Repeat("n", MaxStringBytes)
	for _, tc := range []struct {
		name, in string
		code     Code
	}{
		{"version 2 decodes", `"type":"hello","version":2,"network":"n","head":"0"`, ""},
		{"features at cap", base + `,"features":` + quotedList(MaxFeatures, MaxStringBytes), ""},
		{"features past cap", base + `,"features":` + quotedList(MaxFeatures+1, 1), CodeBadRequest},
		{"feature too long", base + `,"features":` + quotedList(1, MaxStringBytes+1), CodeBadRequest},
		{"listen at cap", base + `,"listen":` + quotedList(MaxListenAddrs, MaxAddrBytes), ""},
		{"listen past cap", base + `,"listen":` + quotedList(MaxListenAddrs+1, 10), CodeBadRequest},
		{"listen addr too long", base + `,"listen":` + quotedList(1, MaxAddrBytes+1), CodeBadRequest},
		{"network at cap", `"type":"hello","version":1,"head":"0","network":"` + long + `"`, ""},
		{"network past cap", `"type":"hello","version":1,"head":"0","network":"` + long + `n"`, CodeBadRequest},
		{"network escaped at cap", `"type":"hello","version":1,"head":"0","network":"` + long[6:] + `\u00e9"`, ""},
		{"agent past cap", base + `,"agent":"` + long + `a"`, CodeBadRequest},
		{"version 0", `"type":"hello","version":0,"network":"n","head":"0"`, CodeBadRequest},
		{"version -1", `"type":"hello","version":-1,"network":"n","head":"0"`, CodeBadRequest},
		{"version 1.0", `"type":"hello","version":1.0,"network":"n","head":"0"`, CodeBadRequest},
		{"version string", `"type":"hello","version":"1","network":"n","head":"0"`, CodeBadRequest},
		{"version missing", `"type":"hello","network":"n","head":"0"`, CodeBadRequest},
		{"network missing", `"type":"hello","version":1,"head":"0"`, CodeBadRequest},
		{"network number", `"type":"hello","version":1,"network":5,"head":"0"`, CodeBadRequest},
		{"network null", `"type":"hello","version":1,"network":null,"head":"0"`, CodeBadRequest},
		{"head missing", `"type":"hello","version":1,"network":"n"`, CodeBadRequest},
		{"head bad", `"type":"hello","version":1,"network":"n","head":"x"`, CodeBadRequest},
		{"head number", `"type":"hello","version":1,"network":"n","head":0`, CodeBadRequest},
		{"features null", base + `,"features":null`, CodeBadRequest},
		{"features object", base + `,"features":{}`, CodeBadRequest},
		{"feature number", base + `,"features":["a",1]`, CodeBadRequest},
		{"listen string", base + `,"listen":"/ip4/1.2.3.4/tcp/1"`, CodeBadRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeRequest([]byte("{" + tc.in + "}"))
			if tc.code == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			wantCode(t, err, tc.code, "hello")
		})
	}
}

func TestDecodeSolution(t *testing.T) {
	const seed = `"` + testSeed + `"`
	for _, tc := range []struct {
		name, sol string
		want      *Solution
	}{
		{"valid", `{"alg":"b3","seed":` + seed + `,"nonce":"12"}`, &Solution{"b3", testSeed, "12"}},
		{"greased", `{"_grease77":[1],"alg":"b3","seed":` + seed + `,"nonce":"12","extra":{}}`, &Solution{"b3", testSeed, "12"}},
		{"unknown alg kept", `{"alg":"x9","seed":"s","nonce":"n"}`, &Solution{"x9", "s", "n"}},
		{"not an object", `"b3"`, nil},
		{"array", `[]`, nil},
		{"null", `null`, nil},
		{"empty", `{}`, nil},
		{"no nonce", `{"alg":"b3","seed":` + seed + `}`, nil},
		{"nonce number", `{"alg":"b3","seed":` + seed + `,"nonce":12}`, nil},
		{"alg null", `{"alg":null,"seed":` + seed + `,"nonce":"12"}`, nil},
		{"Nonce", `{"alg":"b3","seed":` + seed + `,"Nonce":"12"}`, nil},
		{"nonce too long", `{"alg":"b3","seed":` + seed + `,"nonce":"` + strings.Repeat("1", MaxStringBytes+1) + `"}`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := DecodeRequest([]byte(`{"type":"sync","after":"3","solution":` + tc.sol + `}`))
			if err != nil {
				t.Fatalf("a malformed solution must be ignored, got %v", err)
			}
			if !reflect.DeepEqual(r.Solution, tc.want) {
				t.Fatalf("solution %+v, want %+v", r.Solution, tc.want)
			}
			if r.Sync == nil || r.Sync.After != 3 {
				t.Fatalf("request %+v", r.Sync)
			}
		})
	}
	// In a response, "solution" is just an unknown field.
	resp, err := DecodeResponse([]byte(`{"type":"refused","reason":"r","solution":5}`))
	if err != nil || resp.Refused.Reason != "r" {
		t.Fatalf("%+v %v", resp, err)
	}
}

func TestDecodeReplicateRequest(t *testing.T) {
	blob := `{"cid":"c","size":1}`
	prov := `{"id":"p","addrs":["/a"]}`
	for _, tc := range []struct {
		name, in string
		code     Code
	}{
		{"one blob", `"blobs":[` + blob + `]`, ""},
		{"blobs at cap", `"blobs":` + objList(MaxReplicateBlobs, blob), ""},
		{"blobs past cap", `"blobs":` + objList(MaxReplicateBlobs+1, blob), CodeBadRequest},
		{"no blobs", `"blobs":[]`, CodeBadRequest},
		{"blobs missing", `"providers":[]`, CodeBadRequest},
		{"size 2^53", `"blobs":[{"cid":"c","size":9007199254740992}]`, ""},
		{"size 2^53+1", `"blobs":[{"cid":"c","size":9007199254740993}]`, CodeBadRequest},
		{"size -1", `"blobs":[{"cid":"c","size":-1}]`, CodeBadRequest},
		{"size 1.5", `"blobs":[{"cid":"c","size":1.5}]`, CodeBadRequest},
		{"size string", `"blobs":[{"cid":"c","size":"1"}]`, CodeBadRequest},
		{"size missing", `"blobs":[{"cid":"c"}]`, CodeBadRequest},
		{"cid missing", `"blobs":[{"size":1}]`, CodeBadRequest},
		{"cid too long", `"blobs":[{"cid":"` + strings.Repeat("c", MaxStringBytes+1) + `","size":1}]`, CodeBadRequest},
		{"blob not object", `"blobs":["c"]`, CodeBadRequest},
		{"blob dup", `"blobs":[{"cid":"c","size":1,"size":1}]`, CodeBadRequest},
		{"providers at cap", `"blobs":[` + blob + `],"providers":` + objList(MaxProviders, prov), ""},
		{"providers past cap", `"blobs":[` + blob + `],"providers":` + objList(MaxProviders+1, prov), CodeBadRequest},
		{"addrs at cap", `"blobs":[` + blob + `],"providers":[{"id":"p","addrs":` + quotedList(MaxProviderAddrs, 8) + `}]`, ""},
		{"addrs past cap", `"blobs":[` + blob + `],"providers":[{"id":"p","addrs":` + quotedList(MaxProviderAddrs+1, 8) + `}]`, CodeBadRequest},
		{"provider no id", `"blobs":[` + blob + `],"providers":[{"addrs":[]}]`, CodeBadRequest},
		{"provider ID", `"blobs":[` + blob + `],"providers":[{"ID":"p"}]`, CodeBadRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := DecodeRequest([]byte(`{"type":"replicate",` + tc.in + `}`))
			if tc.code != "" {
				sub := "replicate"
				if strings.Contains(tc.name, "dup") {
					sub = "duplicate"
				}
				wantCode(t, err, tc.code, sub)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Replicate.Blobs) == 0 || r.Replicate.Blobs[0].CID != "c" {
				t.Fatalf("got %+v", r.Replicate)
			}
		})
	}
}

func TestDecodeCrashReport(t *testing.T) {
	r, err := DecodeRequest([]byte("{\"type\":\"crash_report\",\"event\": {\n \"kind\" : \"crash\", \"s\":\"\\u00e9\\/\" } }"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(r.CrashReport.Event), `{"kind":"crash","s":"é/"}`; got != want {
		t.Fatalf("event %s, want the compact shortest form %s", got, want)
	}
	for _, in := range []string{
		`{"type":"crash_report"}`,
		`{"type":"crash_report","event":[]}`,
		`{"type":"crash_report","event":"{}"}`,
		`{"type":"crash_report","event":null}`,
		`{"type":"crash_report","event":{"kind":"crash","kind":"crash"}}`,
		`{"type":"crash_report","event":{"body":{"a":{"b":1,"b":2}}}}`,
	} {
		_, err := DecodeRequest([]byte(in))
		wantCode(t, err, CodeBadRequest, "")
	}
	resp, err := DecodeResponse([]byte(`{"type":"crash_report","id":"abc"}`))
	if err != nil || resp.CrashReport.ID != "abc" {
		t.Fatalf("%+v %v", resp, err)
	}
	_, err = DecodeResponse([]byte(`{"type":"crash_report","id":7}`))
	wantCode(t, err, CodeBadRequest, "id")
}

func TestDecodeSyncResponse(t *testing.T) {
	ev := string(testEvent(0, 300))
	for _, tc := range []struct {
		name, in string
		code     Code
		n        int
	}{
		{"empty page", `"events":[],"next":"0","more":false`, "", 0},
		{"events at cap", `"events":` + objList(core.MaxPageEvents, ev) + `,"next":"256","more":true`, "", core.MaxPageEvents},
		{"events past cap", `"events":` + objList(core.MaxPageEvents+1, ev) + `,"next":"257","more":true`, CodeBadRequest, 0},
		{"event not object", `"events":[1],"next":"1","more":false`, CodeBadRequest, 0},
		{"event dup nested", `"events":[{"body":{"a":1,"a":1}}],"next":"1","more":false`, CodeBadRequest, 0},
		{"event dup", `"events":[{"id":"1","id":"1"}],"next":"1","more":false`, CodeBadRequest, 0},
		{"events missing", `"next":"1","more":false`, CodeBadRequest, 0},
		{"events null", `"events":null,"next":"1","more":false`, CodeBadRequest, 0},
		{"next missing", `"events":[],"more":false`, CodeBadRequest, 0},
		{"next number", `"events":[],"next":1,"more":false`, CodeBadRequest, 0},
		{"next past 2^64-1", `"events":[],"next":"18446744073709551616","more":false`, CodeBadRequest, 0},
		{"more missing", `"events":[],"next":"1"`, CodeBadRequest, 0},
		{"more string", `"events":[],"next":"1","more":"false"`, CodeBadRequest, 0},
		{"more null", `"events":[],"next":"1","more":null`, CodeBadRequest, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := DecodeResponse([]byte(`{"type":"sync",` + tc.in + `}`))
			if tc.code != "" {
				sub := "sync"
				if strings.Contains(tc.name, "dup") {
					sub = "duplicate"
				}
				wantCode(t, err, tc.code, sub)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Sync.Events) != tc.n {
				t.Fatalf("%d events, want %d", len(r.Sync.Events), tc.n)
			}
			for i, e := range r.Sync.Events {
				if string(e) != ev {
					t.Fatalf("event %d = %s", i, e)
				}
			}
		})
	}
}

// TestDecodeSyncResponsePageBytes checks MaxPageBytes: events of exactly 4
// MiB in all pass, one byte more does not.
func TestDecodeSyncResponsePageBytes(t *testing.T) {
	const n = 128
	size := MaxPageBytes / n
	evs := make([]jsontext.Value, n)
	for i := range evs {
		evs[i] = testEvent(i, size)
	}
	in := `{"type":"sync","events":` + eventsJSON(evs) + `,"next":"128","more":false}`
	r, err := DecodeResponse([]byte(in))
	if err != nil {
		t.Fatalf("4 MiB of events: %v", err)
	}
	total := 0
	for i, e := range r.Sync.Events {
		if !reflect.DeepEqual(e, evs[i]) {
			t.Fatalf("event %d differs", i)
		}
		total += len(e)
	}
	if total != MaxPageBytes {
		t.Fatalf("test built %d bytes of events, want %d", total, MaxPageBytes)
	}
	if _, err := Marshal(r.Sync); err != nil {
		t.Fatalf("encode 4 MiB of events: %v", err)
	}

	evs[n-1] = testEvent(n-1, size+1)
	in = `{"type":"sync","events":` + eventsJSON(evs) + `,"next":"128","more":false}`
	_, err = DecodeResponse([]byte(in))
	wantCode(t, err, CodeBadRequest, "bytes in all")
	if _, err := Marshal(&SyncResponse{Events: evs, Next: 128}); codeOf(err) != CodeBadRequest {
		t.Fatalf("encode 4 MiB + 1 of events: %v", err)
	}
}

func TestDecodeSyncResponseCompactsEvents(t *testing.T) {
	in := "{\"type\":\"sync\",\"events\":[ {\"a\" : [1, 2],\n\"b\":\"\\u0041\"} , {}],\"next\":\"2\",\"more\":false}"
	r, err := DecodeResponse([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprintf("%s %s", r.Sync.Events[0], r.Sync.Events[1]); got != `{"a":[1,2],"b":"A"} {}` {
		t.Fatalf("events %s", got)
	}
	// The events do not alias the input.
	b := []byte(in)
	r, _ = DecodeResponse(b)
	for i := range b {
		b[i] = 'x'
	}
	if string(r.Sync.Events[1]) != `{}` {
		t.Fatalf("event aliases the input: %s", r.Sync.Events[1])
	}
}

func TestDecodeReplicateResponse(t *testing.T) {
	r, err := DecodeResponse([]byte(`{"type":"replicate"}`))
	if err != nil || r.Replicate == nil || r.Replicate.Stored != nil {
		t.Fatalf("all lists are optional: %+v %v", r, err)
	}
	half := MaxReplicateBlobs / 2
	ok := fmt.Sprintf(`{"type":"replicate","stored":%s,"skipped":%s,"failed":%s}`,
		quotedList(half, 4), quotedList(half-1, 4), objList(1, `{"cid":"c","reason":"r"}`))
	if _, err := DecodeResponse([]byte(ok)); err != nil {
		t.Fatalf("%d entries: %v", MaxReplicateBlobs, err)
	}
	over := fmt.Sprintf(`{"type":"replicate","stored":%s,"skipped":%s,"failed":%s}`,
		quotedList(half, 4), quotedList(half, 4), objList(1, `{"cid":"c","reason":"r"}`))
	_, err = DecodeResponse([]byte(over))
	wantCode(t, err, CodeBadRequest, "more than 64")
	for _, in := range []string{
		`{"type":"replicate","stored":` + quotedList(MaxReplicateBlobs+1, 4) + `}`,
		`{"type":"replicate","failed":[{"cid":"c"}]}`,
		`{"type":"replicate","failed":[{"reason":"r"}]}`,
		`{"type":"replicate","failed":["c"]}`,
		`{"type":"replicate","stored":[1]}`,
		`{"type":"replicate","failed":[{"cid":"c","reason":"` + strings.Repeat("r", MaxTextBytes+1) + `"}]}`,
	} {
		_, err := DecodeResponse([]byte(in))
		wantCode(t, err, CodeBadRequest, "replicate")
	}
}

func TestDecodeOtherResponses(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Message
		code Code
	}{
		{in: `{"type":"error","code":"not_found","message":"no such blob"}`, want: &Error{CodeNotFound, "no such blob"}},
		{in: `{"type":"error","code":"brand_new"}`, want: &Error{Code: "brand_new"}},
		{in: `{"type":"error","message":"m"}`, code: CodeBadRequest},
		{in: `{"type":"error","code":1}`, code: CodeBadRequest},
		{in: `{"type":"error","code":"x","message":"` + strings.Repeat("m", MaxTextBytes) + `"}`, want: &Error{"x", strings.Repeat("m", MaxTextBytes)}},
		{in: `{"type":"error","code":"x","message":"` + strings.Repeat("m", MaxTextBytes+1) + `"}`, code: CodeBadRequest},
		{in: `{"type":"refused","reason":"rate limited (hello): retry later"}`, want: &Refused{Reason: "rate limited (hello): retry later"}},
		{in: `{"type":"refused","reason":"r","retry_after_ms":0}`, want: &Refused{Reason: "r"}},
		{in: `{"type":"refused","reason":"r","retry_after_ms":9007199254740992}`, want: &Refused{"r", core.MaxSafeInt}},
		{in: `{"type":"refused","reason":"r","retry_after_ms":-5}`, code: CodeBadRequest},
		{in: `{"type":"refused","reason":"r","retry_after_ms":9007199254740993}`, code: CodeBadRequest},
		{in: `{"type":"refused"}`, code: CodeBadRequest},
		{in: `{"type":"challenge","alg":"b3","seed":"s","effort":25,"expires":1,"_grease":"x"}`, want: &Challenge{"b3", "s", 25, 1}},
		{in: `{"type":"challenge","alg":"b3","seed":"s","effort":8}`, code: CodeBadRequest},
		{in: `{"type":"challenge","alg":"b3","seed":"s","effort":8.5,"expires":1}`, code: CodeBadRequest},
		{in: `{"type":"challenge","alg":"b3","seed":"s","effort":-8,"expires":1}`, code: CodeBadRequest},
		{in: `{"type":"challenge","alg":"b3","seed":"s","effort":8,"expires":-1}`, code: CodeBadRequest},
		{in: `{"type":"challenge","seed":"s","effort":8,"expires":1}`, code: CodeBadRequest},
		{in: `{"type":"challenge","alg":"b3","effort":8,"expires":1}`, code: CodeBadRequest},
		{in: `{"type":"challenge","alg":"b3","seed":1,"effort":8,"expires":1}`, code: CodeBadRequest},
	} {
		t.Run(tc.in[:min(len(tc.in), 60)], func(t *testing.T) {
			r, err := DecodeResponse([]byte(tc.in))
			if tc.code != "" {
				wantCode(t, err, tc.code, "")
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(r.Message(), tc.want) || r.Type != tc.want.MessageType() {
				t.Fatalf("got %#v, want %#v", r.Message(), tc.want)
			}
		})
	}
}

func TestDecodeEnvelope(t *testing.T) {
	prov := `{"id":"p","addrs":["/a"]}`
	for _, tc := range []struct {
		name, in string
		code     Code
	}{
		{"event only", `{"event":{"kind":"note"}}`, ""},
		{"event not validated", `{"event":{}}`, ""},
		{"greased", `{"_grease1":1,"event":{"kind":"note"},"type":"x","providers":[]}`, ""},
		{"providers at cap", `{"event":{},"providers":` + objList(MaxProviders, prov) + `}`, ""},
		{"providers past cap", `{"event":{},"providers":` + objList(MaxProviders+1, prov) + `}`, CodeBadRequest},
		{"addrs at cap", `{"event":{},"providers":[{"id":"p","addrs":` + quotedList(MaxProviderAddrs, 20) + `}]}`, ""},
		{"addrs past cap", `{"event":{},"providers":[{"id":"p","addrs":` + quotedList(MaxProviderAddrs+1, 20) + `}]}`, CodeBadRequest},
		{"no event", `{"providers":[]}`, CodeBadRequest},
		{"event array", `{"event":[]}`, CodeBadRequest},
		{"Event", `{"Event":{}}`, CodeBadRequest},
		{"dup top-level", `{"event":{},"event":{}}`, CodeBadRequest},
		{"dup in event", `{"event":{"kind":"a","kind":"b"}}`, CodeBadRequest},
		{"dup deep in event", `{"event":{"body":{"x":[{"a":1,"a":1}]}}}`, CodeBadRequest},
		{"dup in provider", `{"event":{},"providers":[{"id":"p","id":"p"}]}`, CodeBadRequest},
		{"providers null", `{"event":{},"providers":null}`, CodeBadRequest},
		{"not object", `[{"event":{}}]`, CodeBadRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := DecodeEnvelope([]byte(tc.in))
			if tc.code != "" {
				wantCode(t, err, tc.code, "")
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if e.Event.Kind() != '{' {
				t.Fatalf("event %s", e.Event)
			}
		})
	}
}

// TestDecodeSizeCaps checks the whole-message caps at and one byte past
// the cap.
func TestDecodeSizeCaps(t *testing.T) {
	req := padded(`"type":"sync","after":"1"`, MaxRequestBytes)
	if r, err := DecodeRequest(req); err != nil || r.Sync.After != 1 {
		t.Fatalf("request of exactly MaxRequestBytes: %v", err)
	}
	_, err := DecodeRequest(padded(`"type":"sync","after":"1"`, MaxRequestBytes+1))
	wantCode(t, err, CodeTooLarge, "")

	resp := padded(`"type":"refused","reason":"r"`, MaxResponseBytes)
	if r, err := DecodeResponse(resp); err != nil || r.Refused.Reason != "r" {
		t.Fatalf("response of exactly MaxResponseBytes: %v", err)
	}
	_, err = DecodeResponse(padded(`"type":"refused","reason":"r"`, MaxResponseBytes+1))
	wantCode(t, err, CodeTooLarge, "")

	env := padded(`"event":{"kind":"note"}`, MaxEnvelopeBytes)
	if _, err := DecodeEnvelope(env); err != nil {
		t.Fatalf("envelope of exactly MaxEnvelopeBytes: %v", err)
	}
	_, err = DecodeEnvelope(padded(`"event":{"kind":"note"}`, MaxEnvelopeBytes+1))
	wantCode(t, err, CodeTooLarge, "")
}

func TestDecodeRequestRaw(t *testing.T) {
	b := []byte(`{"type":"hello","version":1,"network":"n","head":"0","features":["challenge"]}`)
	r, err := DecodeRequest(b)
	if err != nil {
		t.Fatal(err)
	}
	if &r.Raw[0] != &b[0] || len(r.Raw) != len(b) {
		t.Fatal("Raw is not the input")
	}
	if r.Message() != Message(r.Hello) {
		t.Fatal("Message() is not Hello")
	}
	for i := range b {
		b[i] = 'x'
	}
	if r.Hello.Network != "n" || r.Hello.Features[0] != "challenge" {
		t.Fatalf("decoded strings alias the input: %+v", r.Hello)
	}
}

// TestLongDuplicateNameGetsBadRequest: the error quoting a duplicate name
// longer than MaxTextBytes is cut so that it can be sent (ADR 0023, "Error
// messages"; before, the answer was a reset).
func TestLongDuplicateNameGetsBadRequest(t *testing.T) {
	name := strings.Repeat("n", 2000)
	_, err := DecodeRequest([]byte(`{"type":"sync","after":"0","` + name + `":1,"` + name + `":2}`))
	var perr *Error
	if !errors.As(err, &perr) || perr.Code != CodeBadRequest {
		t.Fatalf("err = %v, want bad_request", err)
	}
	if len(perr.Message) > MaxTextBytes || !utf8.ValidString(perr.Message) {
		t.Fatalf("message of %d bytes (valid UTF-8: %v), want at most %d", len(perr.Message), utf8.ValidString(perr.Message), MaxTextBytes)
	}
	if _, err := Marshal(perr); err != nil {
		t.Fatalf("the error cannot be sent: %v", err)
	}
	if got := TruncateText(strings.Repeat("é", MaxTextBytes)); len(got) > MaxTextBytes || !utf8.ValidString(got) {
		t.Fatalf("TruncateText: %d bytes, valid %v", len(got), utf8.ValidString(got))
	}
	exact := strings.Repeat("x", MaxTextBytes)
	if TruncateText(exact) != exact {
		t.Fatal("a text of exactly MaxTextBytes was cut")
	}
}

// TestHelloLimits: the limits extension of hello decodes when present,
// stays nil when absent, ignores unknown members and refuses what does not
// fit (docs/design.md §4).
func TestHelloLimits(t *testing.T) {
	base := `{"type":"hello","version":1,"network":"n","head":"0"`
	ok := map[string]*HelloLimits{
		base + `}`:             nil,
		base + `,"limits":{}}`: {},
		base + `,"limits":{"sync_per_min":600,"future_per_min":5}}`:               {SyncPerMin: 600},
		base + `,"limits":{"hello_per_min":0,"report_per_min":9007199254740992}}`: {ReportPerMin: 1 << 53},
	}
	for in, want := range ok {
		req, err := DecodeRequest([]byte(in))
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		if !reflect.DeepEqual(req.Hello.Limits, want) {
			t.Fatalf("%s: limits %+v, want %+v", in, req.Hello.Limits, want)
		}
	}
	for _, in := range []string{
		base + `,"limits":{"sync_per_min":-1}}`,
		base + `,"limits":{"sync_per_min":1.5}}`,
		base + `,"limits":{"sync_per_min":9007199254740993}}`,
		base + `,"limits":{"sync_per_min":"600"}}`,
		base + `,"limits":{"sync_per_min":1,"sync_per_min":2}}`,
		base + `,"limits":[600]}`,
		base + `,"limits":null}`,
	} {
		_, err := DecodeRequest([]byte(in))
		var perr *Error
		if !errors.As(err, &perr) || perr.Code != CodeBadRequest {
			t.Errorf("%s: %v, want bad_request", in, err)
		}
	}
}

// TestDuplicateInSolutionIsIgnored: ADR 0014 says a malformed solution is
// ignored; one with a duplicate name inside is malformed, and the request is
// handled as if it had none (it used to be a bad_request). A duplicate
// "solution" member itself is still a duplicate top-level name.
func TestDuplicateInSolutionIsIgnored(t *testing.T) {
	for _, doc := range []string{
		`{"type":"sync","after":"1","solution":{"alg":"b3","alg":"b3","seed":"s","nonce":"1"}}`,
		`{"type":"sync","after":"1","solution":{"alg":"b3","seed":"s","nonce":"1","x":{"a":1,"a":2}}}`,
	} {
		req, err := DecodeRequest([]byte(doc))
		if err != nil || req.Sync == nil || req.Sync.After != 1 || req.Solution != nil {
			t.Errorf("%s: %+v, %v; want the sync request without a solution", doc, req, err)
		}
	}
	req, err := DecodeRequest([]byte(`{"type":"sync","after":"1","solution":{"alg":"b3","seed":"s","nonce":"1"}}`))
	if err != nil || req.Solution == nil || req.Solution.Nonce != "1" {
		t.Fatalf("a well-formed solution: %+v, %v", req, err)
	}
	_, err = DecodeRequest([]byte(`{"type":"sync","after":"1","solution":{},"solution":{}}`))
	var perr *Error
	if !errors.As(err, &perr) || perr.Code != CodeBadRequest || !strings.Contains(perr.Message, "duplicate") {
		t.Fatalf("two solution members: %v, want a bad_request naming the duplicate", err)
	}
}

// TestDecodeEdges pins the number and string edges where json v2's own
// binding would differ from the protocol's rules (ADR 0016), or where the
// library's checks decide: each input decodes, or fails with the code, as
// it did before the wire types were bound by json v2.
func TestDecodeEdges(t *testing.T) {
	const sync = `{"type":"sync","after":"1"`
	for _, tc := range []struct {
		name, in string
		code     Code
	}{
		{"limit -0", sync + `,"limit":-0}`, CodeBadRequest},       // json v2 takes -0 for an int
		{"limit -1", sync + `,"limit":-1}`, CodeBadRequest},       // and -1
		{"limit 0.0", sync + `,"limit":0.0}`, CodeBadRequest},     // no fraction, even a zero one
		{"limit 256e0", sync + `,"limit":256e0}`, CodeBadRequest}, // no exponent, even one that fits
		{"limit huge exponent", sync + `,"limit":1e999999999}`, CodeBadRequest},
		{"limit 2^64", sync + `,"limit":18446744073709551616}`, CodeBadRequest},
		{"cursor escaped", `{"type":"sync","after":"\u0031"}`, ""}, // a string, unescaped first
		{"unknown null", sync + `,"x":null}`, ""},
		{"unknown huge exponent", sync + `,"x":1e999999999}`, ""},
		{"unknown bad utf8", sync + ",\"x\":\"\xc3\x28\"}", CodeBadRequest},
		{"name bad utf8", sync + ",\"\xff\":1}", CodeBadRequest},
		{"unknown lone surrogate", sync + `,"x":"\udc00"}`, CodeBadRequest},
		{"unknown surrogate pair", sync + `,"x":"\ud83d\ude00"}`, ""},
		{"dup by escape, unknown", sync + `,"x\u0031":1,"x1":2}`, CodeBadRequest},
		{"solution bad utf8", sync + ",\"solution\":{\"alg\":\"\xff\"}}", CodeBadRequest},   // ignored only when well-formed JSON
		{"solution lone surrogate", sync + `,"solution":{"alg":"\ud800"}}`, CodeBadRequest}, // likewise
		{"solution dup by escape", sync + `,"solution":{"alg":"b3","\u0061lg":"b3","seed":"s","nonce":"1"}}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := DecodeRequest([]byte(tc.in))
			if tc.code != "" {
				wantCode(t, err, tc.code, "")
				return
			}
			if err != nil || r.Sync.After != 1 || r.Solution != nil {
				t.Fatalf("%+v, %v", r, err)
			}
		})
	}

	// Surrogate pairs in a field are one code point, counted in UTF-8 bytes.
	long := strings.Repeat("n", MaxStringBytes-4)
	r, err := DecodeRequest([]byte(`{"type":"hello","version":1,"head":"0","network":"` + long + `\ud83d\ude00"}`))
	if err != nil || r.Hello.Network != long+"😀" {
		t.Fatalf("network with a surrogate pair at the cap: %v", err)
	}
	_, err = DecodeRequest([]byte(`{"type":"hello","version":1,"head":"0","network":"n` + long + `\ud83d\ude00"}`))
	wantCode(t, err, CodeBadRequest, "more than 256")

	// retry_after_ms is an int64 field: -0 is refused there too.
	_, err = DecodeResponse([]byte(`{"type":"refused","reason":"r","retry_after_ms":-0}`))
	wantCode(t, err, CodeBadRequest, "negative")

	// Events are JSON objects and nothing more here: numbers stay as sent,
	// strings take their shortest form.
	resp, err := DecodeResponse([]byte(`{"type":"sync","events":[{"n":1e999999999,"m":-0,"s":"\ud83d\ude00"}],"next":"1","more":false}`))
	if err != nil || string(resp.Sync.Events[0]) != `{"n":1e999999999,"m":-0,"s":"😀"}` {
		t.Fatalf("%+v, %v", resp, err)
	}
	_, err = DecodeResponse([]byte(`{"type":"sync","events":[{"s":"\udc00"}],"next":"1","more":false}`))
	wantCode(t, err, CodeBadRequest, "malformed")
	_, err = DecodeResponse([]byte(`{"type":"sync","events":[null],"next":"1","more":false}`))
	wantCode(t, err, CodeBadRequest, `sync: "events"[0]: want an object, got a null`)
}

// TestLongListsStopEarly: a list far past its cap is refused after a few
// entries, not bound whole (a 1 MiB request holds 250,000 strings; json
// v2 alone would allocate 20 MB to refuse it).
func TestLongListsStopEarly(t *testing.T) {
	fill := func(head, entry, tail string, limit int) []byte {
		n := (limit - len(head) - len(tail)) / (len(entry) + 1)
		return []byte(head + strings.TrimSuffix(strings.Repeat(entry+",", n), ",") + tail)
	}
	for _, tc := range []struct {
		name   string
		in     []byte
		decode func([]byte) error
	}{
		{"features", fill(`{"type":"hello","version":1,"network":"n","head":"0","features":[`, `"a"`, `]}`, MaxRequestBytes),
			func(b []byte) error { _, err := DecodeRequest(b); return err }},
		{"blobs", fill(`{"type":"replicate","blobs":[`, `{"cid":"c","size":1}`, `]}`, MaxRequestBytes),
			func(b []byte) error { _, err := DecodeRequest(b); return err }},
		{"addrs", fill(`{"event":{},"providers":[{"id":"p","addrs":[`, `"/a"`, `]}]}`, MaxEnvelopeBytes),
			func(b []byte) error { _, err := DecodeEnvelope(b); return err }},
		{"stored", fill(`{"type":"replicate","stored":[`, `"c"`, `]}`, MaxResponseBytes),
			func(b []byte) error { _, err := DecodeResponse(b); return err }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantCode(t, tc.decode(tc.in), CodeBadRequest, "more than")
			if allocs := testing.AllocsPerRun(3, func() { _ = tc.decode(tc.in) }); allocs > 2000 {
				t.Fatalf("%.0f allocations to refuse %d bytes", allocs, len(tc.in))
			}
		})
	}
}
