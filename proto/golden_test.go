package proto

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/wats-network/wats/core"
)

var update = flag.Bool("update", false, "rewrite testdata/golden/*.json from the Go values in golden_test.go")

// The two signed events of eventlog/testdata/events.json (an
// independent implementation), in their shortest compact form.
const (
	vectorNote  = `{"id":"32eacf574f511cbd9f083456265f57f3c734c4cde90c8203b25d8ed024340ea7","author":"12D3KooWJ1TsijH7H5F74hfAD5XishQz3sxrmAtVY37GtNd9CqYf","time":1767225600000,"kind":"note","body":{"text":"héllo ✓ \"quoted\" \u0007","n":42,"nested":{"b":1,"a":[true,null,1.5,1e+21,0]}},"blobs":[],"sig":"_uMw5mRAF1i3EaVVsCZCPm2O-PilKupNzUjS3WKJYtGYG8Nrhd3bYtsLVvdKqKl8AP8F8J8xQbqySxK31jB5Cg"}`
	vectorCrash = `{"id":"4de7bbcd60d0e0778b106afe31753a7ef1cfc73bc419599860f6cb05eeab6a33","author":"12D3KooWJ1TsijH7H5F74hfAD5XishQz3sxrmAtVY37GtNd9CqYf","time":1767225601234,"kind":"crash","body":{"program":"demo","version":"1.0.0","os":"linux","arch":"amd64","reason":"panic: runtime error: index out of range [3] with length 3","stack":"goroutine 1 [running]:\nmain.main()\n\t/src/main.go:7 +0x1d","fingerprint":"7d03808275d2ebb59eac377ca710d266454947332cc13d62c22bf7d5f85967bc"},"blobs":[{"cid":"bafkr4ihdkvcmlrvr2mbxsgvofyvjnqcz3wwb5gd5yhqn4t4zr5qinjqfbu","size":5,"name":"core.dmp"}],"sig":"3kE1uff_RQO7i3oaU07ccwy5z1E13iAWEhL-QXM4y-BVr4fZFtx5QxrEcQLp3R2LEn8wI2br1wBwS2CJkeAWCg"}`
	testCID     = "bafkr4ihdkvcmlrvr2mbxsgvofyvjnqcz3wwb5gd5yhqn4t4zr5qinjqfbu"
	testPeer    = "12D3KooWJ1TsijH7H5F74hfAD5XishQz3sxrmAtVY37GtNd9CqYf"
	testSeed    = "00000000692d72bc08a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6e7f8091a2b3c4d"
)

// golden is one file of testdata/golden: a message in its canonical
// encoding.
type golden struct {
	name string // file name without ".json"
	kind string // "request", "response", "envelope" or "heads"
	msg  Message
	sol  *Solution // request only
	env  *Envelope // envelope only
	hd   *Heads    // heads only
}

func goldens() []golden {
	provider := Provider{ID: testPeer, Addrs: []string{"/ip4/127.0.0.1/tcp/4001", "/ip4/127.0.0.1/udp/4001/quic-v1"}}
	return []golden{
		{name: "hello", kind: "request", msg: &Hello{
			Version: 1, Network: "devnet", Agent: "wats/0.1.0",
			Features: []string{FeatureChallenge},
			Listen:   []string{"/ip4/127.0.0.1/tcp/4001", "/ip4/127.0.0.1/udp/4001/quic-v1"},
			Head:     42,
		}},
		{name: "hello_response", kind: "response", msg: &Hello{
			Version: 1, Network: "devnet", Agent: "wats/0.1.0", Head: 0,
		}},
		{name: "hello_limits", kind: "request", msg: &Hello{
			Version: 1, Network: "devnet", Agent: "wats/0.1.0", Head: 7,
			Limits: &HelloLimits{HelloPerMin: 60, SyncPerMin: 600, ReplicatePerMin: 120, ReportPerMin: 0},
		}},
		{name: "sync_request", kind: "request", msg: &SyncRequest{After: 41, Limit: 100}},
		{name: "sync_request_ids", kind: "request", msg: &SyncRequest{Limit: core.MaxPageEvents,
			IDs: &IDRange{From: "4000000000000000000000000000000000000000000000000000000000000000",
				To: "8000000000000000000000000000000000000000000000000000000000000000"}}},
		{name: "sync_request_fingerprint", kind: "request", msg: &SyncRequest{Limit: core.MaxPageEvents,
			IDs: &IDRange{From: "c000000000000000000000000000000000000000000000000000000000000000"}, Fingerprint: true}},
		{name: "sync_response_fingerprint", kind: "response", msg: &SyncResponse{Next: 90000,
			Count: 5512, Fingerprint: "0f3a5c0000000000000000000000000000000000000000000000000000000042"}},
		{name: "sync_request_id_list", kind: "request", msg: &SyncRequest{Limit: core.MaxPageEvents,
			IDs: &IDRange{From: "c000000000000000000000000000000000000000000000000000000000000000",
				To: "c010000000000000000000000000000000000000000000000000000000000000"}, IDList: true}},
		{name: "sync_response_id_list", kind: "response", msg: &SyncResponse{Next: 90000, More: true,
			IDs: []string{"c0003a5c00000000000000000000000000000000000000000000000000000042",
				"c00f000000000000000000000000000000000000000000000000000000000001"}}},
		{name: "sync_request_solution", kind: "request", msg: &SyncRequest{After: 0, Limit: core.MaxPageEvents},
			sol: &Solution{Alg: "b3", Seed: testSeed, Nonce: "18446744073709551615"}},
		{name: "sync_response", kind: "response", msg: &SyncResponse{
			Events: []jsontext.Value{jsontext.Value(vectorNote), jsontext.Value(vectorCrash)},
			Next:   2, More: true,
		}},
		{name: "replicate_request", kind: "request", msg: &ReplicateRequest{
			Blobs:     []BlobRef{{CID: testCID, Size: 5}, {CID: "bafkr4ifakecidtwo", Size: core.MaxSafeInt}},
			Providers: []Provider{provider},
		}},
		{name: "replicate_response", kind: "response", msg: &ReplicateResponse{
			Stored:  []string{testCID},
			Skipped: []string{"bafkr4ifakecidthree"},
			Failed:  []FailedBlob{{CID: "bafkr4ifakecidtwo", Reason: "declared size 9007199254740992 over max_blob_bytes"}},
		}},
		{name: "crash_report_request", kind: "request", msg: &CrashReportRequest{Event: jsontext.Value(vectorCrash)}},
		{name: "crash_report_response", kind: "response", msg: &CrashReportResponse{
			ID: "4de7bbcd60d0e0778b106afe31753a7ef1cfc73bc419599860f6cb05eeab6a33",
		}},
		{name: "error", kind: "response", msg: &Error{Code: CodeWrongNetwork, Message: `network "devnet", not "main"`}},
		{name: "refused", kind: "response", msg: &Refused{Reason: "rate limited (sync): retry later", RetryAfterMs: 1500}},
		{name: "challenge", kind: "response", msg: &Challenge{Alg: "b3", Seed: testSeed, Effort: 8, Expires: 1764422332}},
		{name: "envelope", kind: "envelope", env: &Envelope{Event: jsontext.Value(vectorCrash), Providers: []Provider{provider}}},
		{name: "heads", kind: "heads", hd: &Heads{Head: 42, IDs: []core.ShortID{
			{0x32, 0xea, 0xcf, 0x57, 0x4f, 0x51, 0x1c, 0xbd}, {0x4d, 0xe7, 0xbb, 0xcd, 0x60, 0xd0, 0xe0, 0x77}}}},
	}
}

func (g golden) path() string { return filepath.Join("testdata", "golden", g.name+".json") }

func (g golden) encode() ([]byte, error) {
	switch g.kind {
	case "envelope":
		return MarshalEnvelope(g.env)
	case "heads":
		return MarshalHeads(g.hd)
	}
	return marshal(g.msg, g.sol, nil)
}

// decode decodes b as g's kind and returns what compares to g.want().
func (g golden) decode(b []byte) (any, error) {
	switch g.kind {
	case "request":
		r, err := DecodeRequest(b)
		if err != nil {
			return nil, err
		}
		return [2]any{r.Message(), r.Solution}, nil
	case "response":
		r, err := DecodeResponse(b)
		if err != nil {
			return nil, err
		}
		return [2]any{r.Message(), (*Solution)(nil)}, nil
	case "heads":
		return DecodeHeads(b)
	}
	return DecodeEnvelope(b)
}

func (g golden) want() any {
	switch g.kind {
	case "envelope":
		return g.env
	case "heads":
		return g.hd
	}
	return [2]any{g.msg, g.sol}
}

// TestGolden decodes every golden file to its Go value and re-encodes that
// byte for byte (docs/design.md §4: golden vectors of every message). With -update
// it first rewrites the files from the Go values.
func TestGolden(t *testing.T) {
	for _, g := range goldens() {
		t.Run(g.name, func(t *testing.T) {
			if *update {
				b, err := g.encode()
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(g.path(), b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			file, err := os.ReadFile(g.path())
			if err != nil {
				t.Fatalf("%v (run go test -run TestGolden -update)", err)
			}
			got, err := g.decode(file)
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			if !reflect.DeepEqual(got, g.want()) {
				t.Fatalf("decode:\n got %#v\nwant %#v", got, g.want())
			}
			enc, err := g.encode()
			if err != nil {
				t.Fatalf("encode: %v", err)
			}
			if !bytes.Equal(enc, file) {
				t.Fatalf("encode differs from the golden file:\n got %s\nwant %s", enc, file)
			}
		})
	}
}

// TestGoldenCoversEveryMessage checks that every message type has a golden
// file, and every golden file an entry.
func TestGoldenCoversEveryMessage(t *testing.T) {
	all := []any{
		&Hello{}, &SyncRequest{}, &SyncResponse{}, &ReplicateRequest{}, &ReplicateResponse{},
		&CrashReportRequest{}, &CrashReportResponse{}, &Error{}, &Refused{}, &Challenge{},
		&Envelope{}, &Solution{}, &Heads{},
	}
	have := map[reflect.Type]bool{}
	names := map[string]bool{}
	for _, g := range goldens() {
		names[g.name+".json"] = true
		if g.env != nil {
			have[reflect.TypeOf(g.env)] = true
		}
		if g.hd != nil {
			have[reflect.TypeOf(g.hd)] = true
		}
		if g.msg != nil {
			have[reflect.TypeOf(g.msg)] = true
		}
		if g.sol != nil {
			have[reflect.TypeOf(g.sol)] = true
		}
	}
	for _, v := range all {
		if !have[reflect.TypeOf(v)] {
			t.Errorf("no golden file for %T", v)
		}
	}
	entries, err := os.ReadDir(filepath.Join("testdata", "golden"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !names[e.Name()] && strings.HasSuffix(e.Name(), ".json") {
			t.Errorf("testdata/golden/%s has no entry in goldens()", e.Name())
		}
	}
}
