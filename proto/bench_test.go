package proto

import (
	"bytes"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/wats-network/wats/core"
)

// benchPage is a full sync page: core.MaxPageEvents events of 300 bytes.
func benchPage() *SyncResponse {
	evs := make([]jsontext.Value, core.MaxPageEvents)
	for i := range evs {
		evs[i] = testEvent(i, 300)
	}
	return &SyncResponse{Events: evs, Next: core.MaxPageEvents, More: true}
}

func BenchmarkEncodeSyncPage(b *testing.B) {
	page := benchPage()
	enc, _ := MarshalGreased(page, false)
	b.SetBytes(int64(len(enc)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := MarshalGreased(page, false); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeSyncPage(b *testing.B) {
	enc, err := MarshalGreased(benchPage(), false)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(enc)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeResponse(enc); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeSyncRequest(b *testing.B) {
	enc := []byte(`{"type":"sync","after":"123456","limit":256}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeRequest(enc); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeSyncRequestGreased is a sync request in a form the fast
// path leaves to the general decoder (a GREASE member, as a node sends now
// and then).
func BenchmarkDecodeSyncRequestGreased(b *testing.B) {
	enc := []byte(`{"type":"sync","_grease_7f":1,"after":"123456","limit":256}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeRequest(enc); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkReadFrame(b *testing.B) {
	enc, err := MarshalGreased(benchPage(), false)
	if err != nil {
		b.Fatal(err)
	}
	f := frame(enc)
	r := bytes.NewReader(f)
	b.SetBytes(int64(len(f)))
	b.ReportAllocs()
	for b.Loop() {
		r.Reset(f)
		if _, err := ReadFrame(r, MaxResponseBytes); err != nil {
			b.Fatal(err)
		}
	}
}
