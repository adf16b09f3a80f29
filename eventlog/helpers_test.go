package eventlog

import (
	"crypto/ed25519"
	"encoding/hex"
	"errors"
	"log"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/libp2p/go-libp2p/core/crypto"
	"lukechampine.com/blake3"
)

// testNow is a fixed clock for tests: 2026-01-01T00:00:00Z.
var testNow = time.UnixMilli(1767225600000)

// testKey returns a deterministic Ed25519 key from one seed byte.
func testKey(tb testing.TB, b byte) crypto.PrivKey {
	tb.Helper()
	seed := make([]byte, ed25519.SeedSize)
	for i := range seed {
		seed[i] = b + byte(i)
	}
	k, err := crypto.UnmarshalEd25519PrivateKey(ed25519.NewKeyFromSeed(seed))
	if err != nil {
		tb.Fatal(err)
	}
	return k
}

// testCID is the blob CID of the vectors (CIDv1, raw, BLAKE3).
const testCID = "bafkr4ihdkvcmlrvr2mbxsgvofyvjnqcz3wwb5gd5yhqn4t4zr5qinjqfbu"

func mustNew(tb testing.TB, key crypto.PrivKey, now time.Time, kind, body string, blobs []BlobRef) *Event {
	tb.Helper()
	e, err := New(key, now, kind, jsontext.Value(body), blobs)
	if err != nil {
		tb.Fatalf("New: %v", err)
	}
	return e
}

// forceSign sets ID and Sig of e from its current fields, bypassing the caps
// New enforces, so that tests can show Verify enforcing them.
func forceSign(tb testing.TB, key crypto.PrivKey, e *Event) {
	tb.Helper()
	sb, err := e.SigningBytes()
	if err != nil {
		tb.Fatalf("SigningBytes: %v", err)
	}
	sig, err := key.Sign(sb)
	if err != nil {
		tb.Fatal(err)
	}
	sum := blake3.Sum256(sb)
	e.ID = hex.EncodeToString(sum[:])
	e.Sig = sigEncoding.EncodeToString(sig)
}

// reID recomputes only the id, as a forger without the key could.
func reID(tb testing.TB, e *Event) {
	tb.Helper()
	sb, err := e.SigningBytes()
	if err != nil {
		tb.Fatalf("SigningBytes: %v", err)
	}
	sum := blake3.Sum256(sb)
	e.ID = hex.EncodeToString(sum[:])
}

func wantErr(tb testing.TB, err, sentinel error) {
	tb.Helper()
	if !errors.Is(err, sentinel) {
		tb.Fatalf("error %v, want %v", err, sentinel)
	}
	if sentinel != nil && sentinel != ErrNotFound {
		var ve *ValidationError
		if !errors.As(err, &ve) {
			tb.Fatalf("error %T %v is not a *ValidationError", err, err)
		}
	}
}

// quietLogger drops pebble's informational messages ("Found 0 WALs") and
// keeps its errors.
type quietLogger struct{}

func (quietLogger) Infof(string, ...any)         {}
func (quietLogger) Errorf(f string, args ...any) { log.Printf("pebble: "+f, args...) }
func (quietLogger) Fatalf(f string, args ...any) { log.Fatalf("pebble: "+f, args...) }

// testOptions are the pebble options of the tests, fs nil for the disk.
func testOptions(fs vfs.FS) *pebble.Options {
	return &pebble.Options{FS: fs, Logger: quietLogger{}}
}

// memDB opens a pebble DB on an in-memory file system.
func memDB(tb testing.TB) *pebble.DB {
	tb.Helper()
	db, err := pebble.Open("", testOptions(vfs.NewMem()))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

func openLog(tb testing.TB, db *pebble.DB) *Log {
	tb.Helper()
	l, err := Open(db)
	if err != nil {
		tb.Fatal(err)
	}
	return l
}

func clone(e *Event) *Event {
	c := *e
	c.Body = e.Body.Clone()
	c.Blobs = append([]BlobRef(nil), e.Blobs...)
	return &c
}

// mustMarshal returns e's stored form.
func (e *Event) mustMarshal(tb testing.TB) []byte {
	tb.Helper()
	m, err := e.Marshal()
	if err != nil {
		tb.Fatal(err)
	}
	return m
}
