package eventlog

import (
	"bytes"
	"crypto/ed25519"
	"encoding/hex"
	"os"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
)

// vectors mirrors testdata/events.json (vectors
// produced by an independent JavaScript implementation; docs/design.md §5).
type vectors struct {
	Seed      string `json:"ed25519_private_seed_hex"`
	PeerID    string `json:"author_peer_id"`
	PublicKey string `json:"author_public_key_hex"`
	Events    []struct {
		SigningBytes string         `json:"signing_bytes_utf8"`
		Event        jsontext.Value `json:"event"`
	} `json:"events"`
}

func loadVectors(t *testing.T) (vectors, crypto.PrivKey) {
	t.Helper()
	raw, err := os.ReadFile("testdata/events.json")
	if err != nil {
		t.Fatal(err)
	}
	var v vectors
	if err := json.Unmarshal(raw, &v, json.RejectUnknownMembers(false)); err != nil {
		t.Fatal(err)
	}
	if len(v.Events) != 2 {
		t.Fatalf("%d vector events, want 2", len(v.Events))
	}
	seed, err := hex.DecodeString(v.Seed)
	if err != nil {
		t.Fatal(err)
	}
	key, err := crypto.UnmarshalEd25519PrivateKey(ed25519.NewKeyFromSeed(seed))
	if err != nil {
		t.Fatal(err)
	}
	return v, key
}

func TestVectorsKey(t *testing.T) {
	v, key := loadVectors(t)
	id, err := peer.IDFromPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	if id.String() != v.PeerID {
		t.Errorf("peer ID %s, want %s", id, v.PeerID)
	}
	raw, err := key.GetPublic().Raw()
	if err != nil {
		t.Fatal(err)
	}
	if hex.EncodeToString(raw) != v.PublicKey {
		t.Errorf("public key %x, want %s", raw, v.PublicKey)
	}
}

// TestVectorsNew signs the vector events afresh with New and compares signing
// bytes, id and signature byte for byte.
func TestVectorsNew(t *testing.T) {
	v, key := loadVectors(t)
	for i, ve := range v.Events {
		var fields struct {
			ID    string         `json:"id"`
			Time  int64          `json:"time"`
			Kind  string         `json:"kind"`
			Body  jsontext.Value `json:"body"`
			Blobs []BlobRef      `json:"blobs"`
			Sig   string         `json:"sig"`
		}
		if err := json.Unmarshal(ve.Event, &fields); err != nil {
			t.Fatal(err)
		}
		// The vector body is pretty-printed and unordered: New must
		// canonicalize it (1.5, 1e+21, \u0007, "héllo ✓").
		e, err := New(key, time.UnixMilli(fields.Time), fields.Kind, fields.Body, fields.Blobs)
		if err != nil {
			t.Fatalf("vector %d: New: %v", i, err)
		}
		sb, err := e.SigningBytes()
		if err != nil {
			t.Fatal(err)
		}
		if string(sb) != ve.SigningBytes {
			t.Errorf("vector %d: signing bytes\n got %s\nwant %s", i, sb, ve.SigningBytes)
		}
		if e.ID != fields.ID {
			t.Errorf("vector %d: id %s, want %s", i, e.ID, fields.ID)
		}
		if e.Sig != fields.Sig {
			t.Errorf("vector %d: sig %s, want %s", i, e.Sig, fields.Sig)
		}
		if e.Author != v.PeerID {
			t.Errorf("vector %d: author %s, want %s", i, e.Author, v.PeerID)
		}
		if err := e.Verify(time.UnixMilli(fields.Time)); err != nil {
			t.Errorf("vector %d: Verify of New's event: %v", i, err)
		}
	}
}

// TestVectorsDecodeVerify decodes the vector events as a peer would send them
// and verifies them.
func TestVectorsDecodeVerify(t *testing.T) {
	v, _ := loadVectors(t)
	for i, ve := range v.Events {
		e, err := Decode(ve.Event)
		if err != nil {
			t.Fatalf("vector %d: Decode: %v", i, err)
		}
		if err := e.Verify(time.UnixMilli(e.Time)); err != nil {
			t.Errorf("vector %d: Verify: %v", i, err)
		}
		sb, err := e.SigningBytes()
		if err != nil {
			t.Fatal(err)
		}
		if string(sb) != ve.SigningBytes {
			t.Errorf("vector %d: signing bytes\n got %s\nwant %s", i, sb, ve.SigningBytes)
		}
		// Stored form: compact, canonical body, and it decodes to the same.
		m, err := e.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		e2, err := Decode(m)
		if err != nil {
			t.Fatalf("vector %d: Decode(Marshal): %v", i, err)
		}
		m2, _ := e2.Marshal()
		if !bytes.Equal(m, m2) {
			t.Errorf("vector %d: Marshal not stable:\n%s\n%s", i, m, m2)
		}
		// The full JCS of the stored object without id and sig equals the
		// signing bytes without the prefix.
		if got := fullJCS(t, e); got != ve.SigningBytes {
			t.Errorf("vector %d: full JCS\n got %s\nwant %s", i, got, ve.SigningBytes)
		}
	}
}

func TestVectorsTextIsCanonical(t *testing.T) {
	// The vector signing bytes are their own JCS: a check of the vectors
	// and of jsontext's Canonicalize against the independent implementation.
	v, _ := loadVectors(t)
	for i, ve := range v.Events {
		j := jsontext.Value(ve.SigningBytes[len(SigningPrefix):]).Clone()
		if err := j.Canonicalize(); err != nil {
			t.Fatal(err)
		}
		if SigningPrefix+string(j) != ve.SigningBytes {
			t.Errorf("vector %d: Canonicalize changed the signing bytes:\n%s", i, j)
		}
	}
}
