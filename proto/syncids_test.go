package proto

import (
	"fmt"
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

// TestDecodeSyncIDList checks the "id_list" extension of a sync request
// (ADR 0057): with a range only, and not with a fingerprint.
func TestDecodeSyncIDList(t *testing.T) {
	lo := strings.Repeat("0", 63) + "1"
	for _, tc := range []struct {
		in string
		ok bool
	}{
		{in: `{"type":"sync","after":"0","ids":{"from":"` + lo + `"},"id_list":true}`, ok: true},
		{in: `{"type":"sync","after":"0","ids":{"from":"` + lo + `"},"id_list":false}`, ok: true},
		{in: `{"type":"sync","after":"0","id_list":true}`},
		{in: `{"type":"sync","after":"0","ids":{"from":"` + lo + `"},"id_list":true,"fingerprint":true}`},
		{in: `{"type":"sync","after":"0","ids":{"from":"` + lo + `"},"id_list":1}`},
		{in: `{"type":"sync","after":"0","ids":{"from":"` + lo + `"},"id_list":null}`},
	} {
		t.Run(tc.in, func(t *testing.T) {
			r, err := DecodeRequest([]byte(tc.in))
			if !tc.ok {
				wantCode(t, err, CodeBadRequest, "")
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := strings.Contains(tc.in, `"id_list":true`)
			if r.Sync.IDList != want || r.Sync.IDs == nil {
				t.Fatalf("decoded %+v", r.Sync)
			}
			b, err := Marshal(r.Sync)
			if err != nil {
				t.Fatal(err)
			}
			if again, err := DecodeRequest(b); err != nil || again.Sync.IDList != want {
				t.Fatalf("%s decoded as %+v, %v", b, again, err)
			}
		})
	}
	for _, r := range []*SyncRequest{{IDList: true}, {IDs: &IDRange{From: lo}, IDList: true, Fingerprint: true}} {
		if _, err := Marshal(r); err == nil {
			t.Fatalf("%+v encoded", r)
		}
	}
}

// listIDs returns n ascending ids, 64 lowercase hex digits each.
func listIDs(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%064x", i+1)
	}
	return out
}

// idListResponse is the JSON of an answer listing ids.
func idListResponse(ids []string) string {
	q := make([]string, len(ids))
	for i, id := range ids {
		q[i] = `"` + id + `"`
	}
	return `{"type":"sync","events":[],"next":"5","more":true,"ids":[` + strings.Join(q, ",") + `]}`
}

// TestDecodeSyncResponseIDList checks an id list answer's "ids" (ADR
// 0057) at and just past each bound: MaxListIDs of them, 64 lowercase hex
// digits each, strictly ascending, none with events. Marshal refuses what
// the decoder refuses.
func TestDecodeSyncResponseIDList(t *testing.T) {
	full := listIDs(MaxListIDs)
	swapped := listIDs(3)
	swapped[1], swapped[2] = swapped[2], swapped[1]
	twice := listIDs(3)
	twice[2] = twice[1]
	for _, tc := range []struct {
		name string
		ids  []string
		ok   bool
	}{
		{name: "none", ids: nil, ok: true},
		{name: "one", ids: listIDs(1), ok: true},
		{name: "MaxListIDs", ids: full, ok: true},
		{name: "one past MaxListIDs", ids: listIDs(MaxListIDs + 1)},
		{name: "63 digits", ids: []string{full[0][1:]}},
		{name: "65 digits", ids: []string{full[0] + "0"}},
		{name: "uppercase", ids: []string{strings.Repeat("A", 64)}},
		{name: "not hex", ids: []string{strings.Repeat("g", 64)}},
		{name: "descending", ids: swapped},
		{name: "twice", ids: twice},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := idListResponse(tc.ids)
			r, err := DecodeResponse([]byte(in))
			if !tc.ok {
				wantCode(t, err, CodeBadRequest, "")
				if _, err := Marshal(&SyncResponse{Next: 5, More: true, IDs: tc.ids}); err == nil {
					t.Fatal("Marshal encoded what the decoder refuses")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Sync.IDs) != len(tc.ids) || (len(tc.ids) > 0 && r.Sync.IDs[len(tc.ids)-1] != tc.ids[len(tc.ids)-1]) {
				t.Fatalf("decoded %d ids, want %d", len(r.Sync.IDs), len(tc.ids))
			}
			b, err := Marshal(r.Sync)
			if err != nil {
				t.Fatal(err)
			}
			if len(tc.ids) == MaxListIDs && len(b) > len(full)*ListIDBytes+100 {
				t.Fatalf("a full list takes %d bytes, more than ListIDBytes an id", len(b))
			}
		})
	}
	withEvents := `{"type":"sync","events":[{"id":"x"}],"next":"5","more":false,"ids":["` + full[0] + `"]}`
	if _, err := DecodeResponse([]byte(withEvents)); err == nil {
		t.Fatal("ids with events decoded")
	}
}
