package proto

import (
	"bytes"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/wats-network/wats/core"
)

// TestRoundTripGreased encodes every golden message with GREASE from many
// seeds and checks that it decodes to the same value and carries exactly one
// _grease member, at every position.
func TestRoundTripGreased(t *testing.T) {
	for _, g := range goldens() {
		if g.kind == "envelope" || g.kind == "heads" { // sent without GREASE
			continue
		}
		positions := map[int]bool{}
		for seed := range uint64(64) {
			b, err := marshal(g.msg, g.sol, rand.New(rand.NewPCG(seed, 1)))
			if err != nil {
				t.Fatalf("%s: %v", g.name, err)
			}
			names := topNames(t, b)
			n := 0
			for i, name := range names {
				if strings.HasPrefix(name, GreasePrefix) {
					n++
					positions[i] = true
				}
			}
			if n != 1 {
				t.Fatalf("%s: %d grease members in %s", g.name, n, b)
			}
			got, err := g.decode(b)
			if err != nil {
				t.Fatalf("%s: decode greased %s: %v", g.name, b, err)
			}
			if !reflect.DeepEqual(got, g.want()) {
				t.Fatalf("%s: greased %s decodes to %#v", g.name, b, got)
			}
		}
		if !positions[0] || !positions[2] {
			t.Errorf("%s: grease never first or third: positions %v", g.name, positions)
		}
	}
}

// topNames returns the member names of the JSON object b, in order.
func topNames(t *testing.T, b []byte) []string {
	t.Helper()
	var names []string
	d := jsontext.NewDecoder(bytes.NewReader(b))
	if _, err := d.ReadToken(); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	for d.PeekKind() != '}' {
		name, err := d.ReadToken()
		if err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		names = append(names, name.String())
		if err := d.SkipValue(); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
	}
	return names
}

func TestMarshalGreasedIsCanonicalWithoutGrease(t *testing.T) {
	m := &SyncRequest{After: 9, Limit: 10}
	for range 50 {
		b, err := MarshalGreased(m, false)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != `{"type":"sync","after":"9","limit":10}` {
			t.Fatalf("got %s", b)
		}
		b, err = MarshalGreased(m, true)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(b, []byte(`"`+GreasePrefix)) {
			t.Fatalf("no grease in %s", b)
		}
	}
}

// TestMarshalGreasesSometimes checks that Marshal greases about one message
// in GreaseOneIn (binomial: mean 1000, sd 30 for 8000 messages; the bounds
// are ten sd away).
func TestMarshalGreasesSometimes(t *testing.T) {
	const n = 8000
	greased := 0
	for range n {
		b, err := Marshal(&Refused{Reason: "r"})
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte(GreasePrefix)) {
			greased++
		}
		if r, err := DecodeResponse(b); err != nil || r.Refused.Reason != "r" {
			t.Fatalf("%s: %v", b, err)
		}
	}
	if want := n / GreaseOneIn; greased < want-300 || greased > want+300 {
		t.Fatalf("%d of %d greased, want about %d", greased, n, want)
	}
}

func TestMarshalSyncRequestDefaultLimit(t *testing.T) {
	b, err := MarshalGreased(&SyncRequest{After: 3}, false)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `{"type":"sync","after":"3","limit":256}` {
		t.Fatalf("got %s", b)
	}
}

func TestMarshalWithSolution(t *testing.T) {
	s := &Solution{Alg: "b3", Seed: testSeed, Nonce: "77"}
	b, err := MarshalWithSolution(&Hello{Version: 1, Network: "n", Head: 0}, s)
	if err != nil {
		t.Fatal(err)
	}
	r, err := DecodeRequest(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(r.Solution, s) || r.Hello.Network != "n" {
		t.Fatalf("got %+v %+v", r.Solution, r.Hello)
	}
	if _, err := MarshalWithSolution(&Refused{Reason: "r"}, s); err == nil {
		t.Fatal("a solution on a response must be refused")
	}
	if _, err := MarshalWithSolution(&SyncRequest{}, &Solution{Nonce: strings.Repeat("1", MaxStringBytes+1)}); codeOf(err) != CodeBadRequest {
		t.Fatalf("oversized solution: %v", err)
	}
}

// TestMarshalRefusesInvalid checks that the encoders refuse what the
// decoders would refuse.
func TestMarshalRefusesInvalid(t *testing.T) {
	long := strings.Repeat("x", MaxStringBytes+1)
	hello := func(f func(*Hello)) *Hello {
		h := &Hello{Version: 1, Network: "n", Head: 0}
		f(h)
		return h
	}
	for _, tc := range []struct {
		name string
		m    Message
	}{
		{"nil hello", (*Hello)(nil)},
		{"hello version 0", hello(func(h *Hello) { h.Version = 0 })},
		{"hello network long", hello(func(h *Hello) { h.Network = long })},
		{"hello agent long", hello(func(h *Hello) { h.Agent = long })},
		{"hello features", hello(func(h *Hello) { h.Features = make([]string, MaxFeatures+1) })},
		{"hello listen", hello(func(h *Hello) { h.Listen = make([]string, MaxListenAddrs+1) })},
		{"hello listen long", hello(func(h *Hello) { h.Listen = []string{strings.Repeat("/", MaxAddrBytes+1)} })},
		{"hello bad utf8", hello(func(h *Hello) { h.Agent = "\xff" })},
		{"sync limit -1", &SyncRequest{Limit: -1}},
		{"sync limit 257", &SyncRequest{Limit: 257}},
		{"sync events", &SyncResponse{Events: make([]jsontext.Value, core.MaxPageEvents+1)}},
		{"sync event not object", &SyncResponse{Events: []jsontext.Value{jsontext.Value(`[]`)}}},
		{"sync event nil", &SyncResponse{Events: []jsontext.Value{nil}}},
		{"sync event bad JSON", &SyncResponse{Events: []jsontext.Value{jsontext.Value(`{"a":}`)}}},
		{"sync event dup", &SyncResponse{Events: []jsontext.Value{jsontext.Value(`{"a":1,"a":1}`)}}},
		{"replicate no blobs", &ReplicateRequest{}},
		{"replicate blobs", &ReplicateRequest{Blobs: make([]BlobRef, MaxReplicateBlobs+1)}},
		{"replicate size", &ReplicateRequest{Blobs: []BlobRef{{CID: "c", Size: core.MaxSafeInt + 1}}}},
		{"replicate size -1", &ReplicateRequest{Blobs: []BlobRef{{CID: "c", Size: -1}}}},
		{"replicate providers", &ReplicateRequest{Blobs: []BlobRef{{CID: "c"}}, Providers: make([]Provider, MaxProviders+1)}},
		{"replicate addrs", &ReplicateRequest{Blobs: []BlobRef{{CID: "c"}}, Providers: []Provider{{ID: "p", Addrs: make([]string, MaxProviderAddrs+1)}}}},
		{"replicate response", &ReplicateResponse{Stored: make([]string, 40), Skipped: make([]string, 25)}},
		{"crash no event", &CrashReportRequest{}},
		{"crash event array", &CrashReportRequest{Event: jsontext.Value(`[1]`)}},
		{"crash event too big", &CrashReportRequest{Event: jsontext.Value(`{"a":"` + strings.Repeat("a", MaxRequestBytes) + `"}`)}},
		{"crash id", &CrashReportResponse{ID: long}},
		{"error code", &Error{Code: Code(long)}},
		{"error message", &Error{Code: CodeInternal, Message: strings.Repeat("m", MaxTextBytes+1)}},
		{"refused retry", &Refused{Reason: "r", RetryAfterMs: -1}},
		{"refused reason", &Refused{Reason: strings.Repeat("r", MaxTextBytes+1)}},
		{"challenge effort", &Challenge{Alg: "b3", Seed: "s", Effort: -1}},
		{"challenge expires", &Challenge{Alg: "b3", Seed: "s", Expires: core.MaxSafeInt + 1}},
		{"challenge seed", &Challenge{Alg: "b3", Seed: long}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if b, err := MarshalGreased(tc.m, false); err == nil {
				t.Fatalf("encoded %.100s", b)
			}
		})
	}
	if _, err := Marshal(nil); err == nil {
		t.Fatal("Marshal(nil) succeeded")
	}
	if _, err := MarshalEnvelope(&Envelope{Event: jsontext.Value(`{}`), Providers: make([]Provider, MaxProviders+1)}); codeOf(err) != CodeBadRequest {
		t.Fatalf("envelope with 9 providers: %v", err)
	}
	big := &Envelope{Event: jsontext.Value(`{"a":"` + strings.Repeat("a", MaxEnvelopeBytes) + `"}`)}
	if _, err := MarshalEnvelope(big); err == nil {
		t.Fatal("envelope over MaxEnvelopeBytes encoded")
	}
}

// TestMarshalEnvelopeCaps checks the envelope caps at the bound.
func TestMarshalEnvelopeCaps(t *testing.T) {
	p := Provider{ID: testPeer, Addrs: []string{"/a", "/b", "/c", "/d"}}
	e := &Envelope{Event: jsontext.Value(`{"kind":"note"}`), Providers: []Provider{p, p, p, p, p, p, p, p}}
	b, err := MarshalEnvelope(e)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeEnvelope(b)
	if err != nil || !reflect.DeepEqual(got, e) {
		t.Fatalf("got %+v, %v", got, err)
	}
}

// TestMarshalCompactsRawValues: events given with whitespace or long string
// escapes are written in their shortest form, which decodes to itself.
func TestMarshalCompactsRawValues(t *testing.T) {
	m := &CrashReportRequest{Event: jsontext.Value("{ \"a\" : \"\\u0041\\/\" ,\n \"b\":[ 1 ] }")}
	b, err := MarshalGreased(m, false)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `{"type":"crash_report","event":{"a":"A/","b":[1]}}` {
		t.Fatalf("got %s", b)
	}
	if string(m.Event) != "{ \"a\" : \"\\u0041\\/\" ,\n \"b\":[ 1 ] }" {
		t.Fatalf("Marshal changed its input: %s", m.Event)
	}
}
