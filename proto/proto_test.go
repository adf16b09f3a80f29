package proto

import (
	"testing"

	"github.com/wats-network/wats/core"
)

// TestRequestTypes: the four request types are exactly core's Requests,
// by wire name, in both directions; the response-only types are none.
func TestRequestTypes(t *testing.T) {
	want := map[Type]core.Request{TypeHello: core.Hello, TypeSync: core.Sync, TypeReplicate: core.Replicate, TypeCrashReport: core.CrashReport}
	for typ, r := range want {
		if got, ok := typ.Request(); !ok || got != r || !typ.IsRequest() || Type(r.String()) != typ {
			t.Errorf("%q: Request() = %v, %v; want %v", typ, got, ok, r)
		}
	}
	if len(want) != core.NumRequests {
		t.Fatalf("%d request types, core has %d", len(want), core.NumRequests)
	}
	for _, typ := range []Type{TypeError, TypeRefused, TypeChallenge, "", "Hello"} {
		if _, ok := typ.Request(); ok || typ.IsRequest() {
			t.Errorf("%q is a request type", typ)
		}
	}
}
