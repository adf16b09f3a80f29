package proto

import (
	"strings"
	"testing"
)

// TestDecodeSyncByIDs checks the "ids" extension of a sync request (ADR
// 0052): its ids are exactly 64 lowercase hex digits (at and past the
// length), "to" above "from", and a fingerprint only with a range.
func TestDecodeSyncByIDs(t *testing.T) {
	lo, hi := strings.Repeat("0", 63)+"1", strings.Repeat("f", 64)
	for _, tc := range []struct {
		in   string
		want *IDRange
		fp   bool
		code Code
	}{
		{in: `{"type":"sync","after":"0","ids":{"from":"` + lo + `","to":"` + hi + `"}}`, want: &IDRange{From: lo, To: hi}},
		{in: `{"type":"sync","after":"0","ids":{"from":"` + lo + `"},"fingerprint":true}`, want: &IDRange{From: lo}, fp: true},
		{in: `{"type":"sync","after":"0","ids":{"from":"` + lo + `","to":""}}`, want: &IDRange{From: lo}},
		{in: `{"type":"sync","after":"0","ids":{"from":"` + lo + `","to":"` + lo + `"}}`, code: CodeBadRequest},
		{in: `{"type":"sync","after":"0","ids":{"from":"` + hi + `","to":"` + lo + `"}}`, code: CodeBadRequest},
		{in: `{"type":"sync","after":"0","ids":{"from":"` + lo + `0"}}`, code: CodeBadRequest},
		{in: `{"type":"sync","after":"0","ids":{"from":"` + lo[1:] + `"}}`, code: CodeBadRequest},
		{in: `{"type":"sync","after":"0","ids":{"from":"` + strings.ToUpper(hi) + `"}}`, code: CodeBadRequest},
		{in: `{"type":"sync","after":"0","ids":{"from":"` + lo + `","to":"` + hi + `0"}}`, code: CodeBadRequest},
		{in: `{"type":"sync","after":"0","ids":{"to":"` + hi + `"}}`, code: CodeBadRequest},
		{in: `{"type":"sync","after":"0","ids":"` + lo + `"}`, code: CodeBadRequest},
		{in: `{"type":"sync","after":"0","fingerprint":true}`, code: CodeBadRequest},
		{in: `{"type":"sync","after":"0","ids":{"from":"` + lo + `"},"fingerprint":1}`, code: CodeBadRequest},
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
			if *r.Sync.IDs != *tc.want || r.Sync.Fingerprint != tc.fp {
				t.Fatalf("decoded %+v %v, want %+v %v", r.Sync.IDs, r.Sync.Fingerprint, tc.want, tc.fp)
			}
			// What Marshal writes decodes to the same request.
			b, err := Marshal(r.Sync)
			if err != nil {
				t.Fatal(err)
			}
			again, err := DecodeRequest(b)
			if err != nil || *again.Sync.IDs != *tc.want || again.Sync.Fingerprint != tc.fp {
				t.Fatalf("%s decoded as %+v, %v", b, again, err)
			}
		})
	}
}

// TestDecodeSyncResponseFingerprint checks a fingerprint answer's members
// (ADR 0052): a count of 0..2^53 and a fingerprint of 64 lowercase hex
// digits, at and past each bound; an answer without them decodes as
// before.
func TestDecodeSyncResponseFingerprint(t *testing.T) {
	fp := strings.Repeat("a", 64)
	for _, tc := range []struct {
		in    string
		count int64
		fp    string
		bad   bool
	}{
		{in: `{"type":"sync","events":[],"next":"5","more":false}`},
		{in: `{"type":"sync","events":[],"next":"5","more":false,"count":9007199254740992,"fingerprint":"` + fp + `"}`, count: 1 << 53, fp: fp},
		{in: `{"type":"sync","events":[],"next":"5","more":false,"count":9007199254740993}`, bad: true},
		{in: `{"type":"sync","events":[],"next":"5","more":false,"count":-1}`, bad: true},
		{in: `{"type":"sync","events":[],"next":"5","more":false,"fingerprint":"` + fp + `a"}`, bad: true},
		{in: `{"type":"sync","events":[],"next":"5","more":false,"fingerprint":"` + fp[1:] + `"}`, bad: true},
		{in: `{"type":"sync","events":[],"next":"5","more":false,"fingerprint":"` + strings.ToUpper(fp) + `"}`, bad: true},
	} {
		t.Run(tc.in, func(t *testing.T) {
			r, err := DecodeResponse([]byte(tc.in))
			if tc.bad {
				wantCode(t, err, CodeBadRequest, "")
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if r.Sync.Count != tc.count || r.Sync.Fingerprint != tc.fp {
				t.Fatalf("decoded %+v", r.Sync)
			}
		})
	}
}

func TestIDRangeContains(t *testing.T) {
	a, b, c := strings.Repeat("1", 64), strings.Repeat("5", 64), strings.Repeat("9", 64)
	r := IDRange{From: b, To: c}
	if r.Contains(a) || !r.Contains(b) || r.Contains(c) {
		t.Fatal("[from, to) not kept")
	}
	if open := (IDRange{From: b}); !open.Contains(c) || open.Contains(a) {
		t.Fatal("an open range not kept")
	}
}
