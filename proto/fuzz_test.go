package proto

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// addGoldenSeeds adds every golden file, framed if frame is true, to f's
// seed corpus.
func addGoldenSeeds(f *testing.F, framed bool) {
	paths, err := filepath.Glob(filepath.Join("testdata", "golden", "*.json"))
	if err != nil || len(paths) == 0 {
		f.Fatalf("no golden files: %v", err)
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		if framed {
			b = frame(b)
		}
		f.Add(b)
	}
}

// checkDecodeError fails t unless err is a *Error with a code.
func checkDecodeError(t *testing.T, err error) {
	if codeOf(err) == "" {
		t.Fatalf("decode error without a code: %v", err)
	}
}

func FuzzDecodeRequest(f *testing.F) {
	addGoldenSeeds(f, false)
	for _, s := range []string{
		`{"type":"sync","after":"18446744073709551615","limit":257}`,
		`{"type":"sync","after":"1","solution":{"alg":"b3","seed":"x","nonce":1}}`,
		`{"_grease1":[],"type":"hello","version":1,"network":"\u00e9","head":"0","listen":["/x"]}`,
		`{"type":"crash_report","event":{ "a" : "\u0041" }}`,
		`{"type":"replicate","blobs":[{"cid":"c","size":0}],"providers":[{"id":"p"}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := DecodeRequest(b)
		if err != nil {
			checkDecodeError(t, err)
			return
		}
		if r.Message() == nil || r.Message().MessageType() != r.Type {
			t.Fatalf("request %+v has no message of its type", r)
		}
		for _, g := range []*rand.Rand{nil, rand.New(rand.NewPCG(uint64(len(b)), 7))} {
			enc, err := marshal(r.Message(), r.Solution, g)
			if err != nil {
				t.Fatalf("accepted %q but cannot encode it: %v", b, err)
			}
			r2, err := DecodeRequest(enc)
			if err != nil {
				t.Fatalf("re-encoded %q does not decode: %v", enc, err)
			}
			if !reflect.DeepEqual(r.Message(), r2.Message()) || !reflect.DeepEqual(r.Solution, r2.Solution) {
				t.Fatalf("round trip differs:\n%#v %#v\n%#v %#v", r.Message(), r.Solution, r2.Message(), r2.Solution)
			}
		}
	})
}

func FuzzDecodeResponse(f *testing.F) {
	addGoldenSeeds(f, false)
	for _, s := range []string{
		`{"type":"sync","events":[{"a":[1,{"b":"\/"}]}],"next":"0","more":false}`,
		`{"type":"refused","reason":"r","retry_after_ms":0}`,
		`{"type":"error","code":"new_code"}`,
		`{"type":"replicate","failed":[{"cid":"c","reason":"r"}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := DecodeResponse(b)
		if err != nil {
			checkDecodeError(t, err)
			return
		}
		if r.Message() == nil || r.Message().MessageType() != r.Type {
			t.Fatalf("response %+v has no message of its type", r)
		}
		for _, g := range []*rand.Rand{nil, rand.New(rand.NewPCG(uint64(len(b)), 9))} {
			enc, err := marshal(r.Message(), nil, g)
			if err != nil {
				t.Fatalf("accepted %q but cannot encode it: %v", b, err)
			}
			r2, err := DecodeResponse(enc)
			if err != nil {
				t.Fatalf("re-encoded %q does not decode: %v", enc, err)
			}
			if !reflect.DeepEqual(r, r2) {
				t.Fatalf("round trip differs:\n%#v\n%#v", r.Message(), r2.Message())
			}
		}
	})
}

func FuzzDecodeEnvelope(f *testing.F) {
	addGoldenSeeds(f, false)
	f.Add([]byte(`{"event":{},"providers":[{"id":"p","addrs":["/a","/b"]}],"_grease":0}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := DecodeEnvelope(b)
		if err != nil {
			checkDecodeError(t, err)
			return
		}
		enc, err := MarshalEnvelope(e)
		if err != nil {
			t.Fatalf("accepted %q but cannot encode it: %v", b, err)
		}
		e2, err := DecodeEnvelope(enc)
		if err != nil {
			t.Fatalf("re-encoded %q does not decode: %v", enc, err)
		}
		if !reflect.DeepEqual(e, e2) {
			t.Fatalf("round trip differs:\n%#v\n%#v", e, e2)
		}
	})
}

func FuzzDecodeHeads(f *testing.F) {
	addGoldenSeeds(f, false)
	f.Add([]byte(`{"head":"3","ids":["0123456789abcdef","0123456789abcdee"],"_grease":[1]}`))
	f.Add([]byte(`{"head":"0","ids":[]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := DecodeHeads(b)
		if err != nil {
			checkDecodeError(t, err)
			return
		}
		enc, err := MarshalHeads(h)
		if err != nil {
			t.Fatalf("accepted %q but cannot encode it: %v", b, err)
		}
		h2, err := DecodeHeads(enc)
		if err != nil {
			t.Fatalf("re-encoded %q does not decode: %v", enc, err)
		}
		if h.Head != h2.Head || len(h.IDs) != len(h2.IDs) || (len(h.IDs) > 0 && !reflect.DeepEqual(h.IDs, h2.IDs)) {
			t.Fatalf("round trip differs:\n%#v\n%#v", h, h2)
		}
	})
}

func FuzzReadFrame(f *testing.F) {
	addGoldenSeeds(f, true)
	for _, s := range [][]byte{nil, {0}, {0x80}, {0x81, 0}, {5, 'a'}, uvarint(1 << 20), bytes.Repeat([]byte{0xff}, 12)} {
		f.Add(s)
	}
	const max = 4096
	f.Fuzz(func(t *testing.T, b []byte) {
		r := bytes.NewReader(b)
		payload, err := ReadFrame(r, max)
		if err != nil {
			if strings.Contains(err.Error(), "panic") {
				t.Fatal(err)
			}
			return
		}
		if len(payload) > max {
			t.Fatalf("payload of %d bytes past the cap", len(payload))
		}
		consumed := len(b) - r.Len()
		if again := frame(payload); !bytes.Equal(again, b[:consumed]) {
			t.Fatalf("frame %x re-encodes as %x", b[:consumed], again)
		}
	})
}
