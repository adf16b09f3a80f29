package challenge

import (
	"encoding/hex"
	"os"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"lukechampine.com/blake3"
)

// vectors is testdata/b3.json, produced
// by an independent implementation (@noble/hashes BLAKE3).
type vectors struct {
	Context      string `json:"context"`
	MACKeyHex    string `json:"mac_key_hex"`
	RequesterHex string `json:"requester_hex"`
	ResponderHex string `json:"responder_hex"`
	Seeds        []struct {
		Expires    int64  `json:"expires"`
		Effort     int    `json:"effort"`
		Random7Hex string `json:"random7_hex"`
		SeedHex    string `json:"seed_hex"`
	} `json:"seeds"`
	Digests []struct {
		SeedHex         string `json:"seed_hex"`
		Nonce           string `json:"nonce"`
		DigestHex       string `json:"digest_hex"`
		LeadingZeroBits int    `json:"leading_zero_bits"`
	} `json:"digests"`
	Solutions []struct {
		SeedHex         string `json:"seed_hex"`
		Effort          int    `json:"effort"`
		SmallestNonce   string `json:"smallest_nonce"`
		DigestHex       string `json:"digest_hex"`
		LeadingZeroBits int    `json:"leading_zero_bits"`
	} `json:"solutions"`
}

func loadVectors(t testing.TB) *vectors {
	t.Helper()
	b, err := os.ReadFile("testdata/b3.json")
	if err != nil {
		t.Fatal(err)
	}
	var v vectors
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Seeds) == 0 || len(v.Digests) == 0 || len(v.Solutions) == 0 {
		t.Fatal("testdata/b3.json: empty vector lists")
	}
	return &v
}

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatalf("hex %q: %v", s, err)
	}
	return b
}

func unhex32(t testing.TB, s string) [32]byte {
	t.Helper()
	b := unhex(t, s)
	if len(b) != 32 {
		t.Fatalf("hex %q: %d bytes, want 32", s, len(b))
	}
	return [32]byte(b)
}

// referenceDigest is the plain, slow b3 digest: the library's one-shot
// DeriveKey over the concatenated input.
func referenceDigest(seed Seed, requester, responder [IDLen]byte, nonce string) [DigestLen]byte {
	in := make([]byte, 0, prefixLen+len(nonce))
	in = append(in, seed[:]...)
	in = append(in, requester[:]...)
	in = append(in, responder[:]...)
	in = append(in, nonce...)
	var out [DigestLen]byte
	blake3.DeriveKey(out[:], Context, in)
	return out
}

// referenceMAC is the plain seed MAC: the library's keyed hash.
func referenceMAC(key [KeyLen]byte, seed Seed, requester [IDLen]byte) [MACLen]byte {
	h := blake3.New(32, key[:])
	h.Write(seed[:16])
	h.Write(requester[:])
	var out [MACLen]byte
	copy(out[:], h.Sum(nil))
	return out
}

// id returns a test id filled with b.
func id(b byte) [IDLen]byte {
	var x [IDLen]byte
	for i := range x {
		x[i] = b + byte(i)
	}
	return x
}

// testKey is a fixed MAC key for tests.
var testKey = [KeyLen]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}

// t0 is a fixed time for tests: 2026-01-01T00:00:00Z.
var t0 = time.Unix(1767225600, 0)

// newTestIssuer returns an Issuer with self id(0xa0), testKey and the
// default Options with the overrides applied.
func newTestIssuer(t testing.TB, edit func(*Options)) *Issuer {
	t.Helper()
	var opts Options
	k := testKey
	opts.Key = &k
	if edit != nil {
		edit(&opts)
	}
	is, err := NewIssuer(id(0xa0), &opts)
	if err != nil {
		t.Fatal(err)
	}
	return is
}

// mintFor mints a seed of is for requester with the given fields.
func mintFor(is *Issuer, requester [IDLen]byte, expires int64, effort int, random byte) Seed {
	return is.key.Load().mac.mint(&requester, expires, effort, [RandomLen]byte{random, random >> 1, 7})
}

// smallest returns the smallest nonce of at most limit that meets effort.
func smallest(t testing.TB, seed Seed, requester, responder [IDLen]byte, effort int, limit uint64) string {
	t.Helper()
	p := newPuzzle(&seed, &requester, &responder)
	n, ok := p.search(0, limit, effort)
	if !ok {
		t.Fatalf("no nonce below %d meets effort %d", limit, effort)
	}
	return n
}

// monoAt is the monotonic reading the tests pass with wall time t: the time
// since t0, as if the monotonic clock and the wall clock agreed.
func monoAt(t time.Time) time.Duration { return t.Sub(t0) }
