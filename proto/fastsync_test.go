package proto

import (
	"reflect"
	"strconv"
	"testing"

	"github.com/wats-network/wats/core"
)

// TestCanonicalSync: what Marshal writes for a sync request takes the fast
// path, to the value the general decoder gives; each bound at and just past
// it, and every other form, falls back to the general decoder, which gives
// its own answer.
func TestCanonicalSync(t *testing.T) {
	for _, m := range []*SyncRequest{{After: 0, Limit: 1}, {After: 5, Limit: 256}, {After: 1<<64 - 1, Limit: 100}, {After: 42}} {
		b, err := MarshalGreased(m, false)
		if err != nil {
			t.Fatal(err)
		}
		fast, ok := decodeCanonicalSync(b)
		if !ok {
			t.Fatalf("%s did not take the fast path", b)
		}
		agree(t, b, fast)
	}
	for in, fastOK := range map[string]bool{
		`{"type":"sync","after":"7"}`:                                               true,
		`{"type":"sync","after":"7","limit":1}`:                                     true,
		`{"type":"sync","after":"7","limit":257}`:                                   true,
		`{"type":"sync","after":"7","limit":9007199254740992}`:                      true, // 2^53
		`{"type":"sync","after":"7","limit":9007199254740993}`:                      false,
		`{"type":"sync","after":"7","limit":10000000000000000}`:                     false, // 17 digits
		`{"type":"sync","after":"7","limit":0}`:                                     false,
		`{"type":"sync","after":"7","limit":01}`:                                    false,
		`{"type":"sync","after":"7","limit":-1}`:                                    false,
		`{"type":"sync","after":"7","limit":1.0}`:                                   false,
		`{"type":"sync","after":"7","limit":"1"}`:                                   false,
		`{"type":"sync","after":"01"}`:                                              false,
		`{"type":"sync","after":""}`:                                                false,
		`{"type":"sync","after":"18446744073709551615"}`:                            true,
		`{"type":"sync","after":"18446744073709551616"}`:                            false,
		`{"type":"sync","after":"\u0037"}`:                                          false,
		`{"type":"sync","after":"7"} `:                                              false,
		`{"type":"sync","after":"7"}{}`:                                             false,
		`{"type":"sync", "after":"7"}`:                                              false,
		`{"type":"sync","after":"7","limit":2,"_grease_x":1}`:                       false,
		`{"type":"sync","after":"7","limit":2}}`:                                    false,
		`{"type":"sync","after":"7","solution":{"alg":"b3"}}`:                       false,
		`{"type":"sync","after":"7","after":"8"}`:                                   false,
		`{"type":"sync","after":"7","limit":2,"limit":3}`:                           false,
		`{"type":"sync","after":"7","limit":` + strconv.Itoa(core.MaxSafeInt) + `}`: true,
	} {
		fast, ok := decodeCanonicalSync([]byte(in))
		if ok != fastOK {
			t.Errorf("%s: fast path %v, want %v", in, ok, fastOK)
		}
		if ok {
			agree(t, []byte(in), fast)
		}
	}
}

// agree fails t unless the general decoder decodes b to fast.
func agree(t *testing.T, b []byte, fast *Request) {
	t.Helper()
	slow, err := decodeRequest(b)
	if err != nil {
		t.Fatalf("%s: the fast path accepted what the general decoder refuses: %v", b, err)
	}
	if !reflect.DeepEqual(fast, slow) {
		t.Fatalf("%s: fast path %+v (%+v), general %+v (%+v)", b, fast, fast.Sync, slow, slow.Sync)
	}
}

// FuzzCanonicalSyncAgrees: whatever the fast path accepts, the general
// decoder accepts too, to the same request.
func FuzzCanonicalSyncAgrees(f *testing.F) {
	for _, s := range []string{`{"type":"sync","after":"0","limit":256}`, `{"type":"sync","after":"18446744073709551615"}`,
		`{"type":"sync","after":"1","limit":9007199254740992}`, `{"type":"sync","after":"1","limit":0}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if fast, ok := decodeCanonicalSync(b); ok {
			agree(t, b, fast)
		}
	})
}
