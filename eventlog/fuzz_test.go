package eventlog

import (
	"bytes"
	"os"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// FuzzDecode: Decode never panics; what it accepts re-encodes to a form that
// decodes to the same event (a fixed point), and Verify and VerifyBatch
// never panic on it and give it the same verdict.
func FuzzDecode(f *testing.F) {
	if raw, err := os.ReadFile("testdata/events.json"); err == nil {
		var v struct {
			Events []struct {
				Event jsontext.Value `json:"event"`
			} `json:"events"`
		}
		if json.Unmarshal(raw, &v) == nil {
			for _, e := range v.Events {
				f.Add([]byte(e.Event))
			}
		}
	}
	e := mustNew(f, testKey(f, 1), testNow, "crash", string(crashBody("stack")), blobsN(2))
	m, _ := e.Marshal()
	f.Add(m)
	f.Add([]byte(`{"id":"","author":"","time":0,"kind":"","body":{},"blobs":[],"sig":""}`))
	f.Add([]byte(`{"body":{"a":1e400}}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		e, err := Decode(raw)
		if err != nil {
			return
		}
		verr := e.Verify(testNow)
		ok, rejected := VerifyBatch([]jsontext.Value{raw}, testNow)
		if (verr == nil) != (len(ok) == 1) || len(ok)+len(rejected) != 1 {
			t.Fatalf("Verify: %v; VerifyBatch: %d ok, %v", verr, len(ok), rejected)
		}
		if verr != nil && rejected[0].(*BatchError).Err.Error() != verr.Error() {
			t.Fatalf("Verify: %v; VerifyBatch: %v", verr, rejected[0])
		}
		m, err := e.Marshal()
		if err != nil {
			t.Fatalf("Marshal of a decoded event: %v", err)
		}
		e2, err := Decode(m)
		if err != nil {
			t.Fatalf("Decode(Marshal): %v\n%s", err, m)
		}
		m2, err := e2.Marshal()
		if err != nil || !bytes.Equal(m, m2) {
			t.Fatalf("Marshal not a fixed point:\n%s\n%s", m, m2)
		}
		sb1, err1 := e.SigningBytes()
		sb2, err2 := e2.SigningBytes()
		if (err1 == nil) != (err2 == nil) || !bytes.Equal(sb1, sb2) {
			t.Fatalf("signing bytes changed by a round trip")
		}
	})
}
