package challenge

import (
	"encoding/hex"
	"testing"
)

func TestVectorsContext(t *testing.T) {
	v := loadVectors(t)
	if v.Context != Context {
		t.Fatalf("context %q, want %q", v.Context, Context)
	}
}

func TestVectorsSeeds(t *testing.T) {
	v := loadVectors(t)
	key := newMACKey((*[KeyLen]byte)(unhex(t, v.MACKeyHex)))
	req := unhex32(t, v.RequesterHex)
	for _, s := range v.Seeds {
		random := [RandomLen]byte(unhex(t, s.Random7Hex))
		got := key.mint(&req, s.Expires, s.Effort, random)
		if got.String() != s.SeedHex {
			t.Errorf("mint(%d, %d, %s) = %s, want %s", s.Expires, s.Effort, s.Random7Hex, got, s.SeedHex)
		}
		parsed, err := ParseSeed(s.SeedHex)
		if err != nil {
			t.Fatalf("ParseSeed(%s): %v", s.SeedHex, err)
		}
		if parsed.Expires() != s.Expires || parsed.Effort() != s.Effort {
			t.Errorf("%s: expires %d effort %d, want %d %d", s.SeedHex, parsed.Expires(), parsed.Effort(), s.Expires, s.Effort)
		}
		if !key.valid(&parsed, &req) {
			t.Errorf("%s: MAC not valid", s.SeedHex)
		}
		ref := referenceMAC([KeyLen]byte(unhex(t, v.MACKeyHex)), parsed, req)
		if hex.EncodeToString(ref[:]) != s.SeedHex[32:] {
			t.Errorf("%s: reference MAC %x", s.SeedHex, ref)
		}
	}
}

func TestVectorsDigests(t *testing.T) {
	v := loadVectors(t)
	req, resp := unhex32(t, v.RequesterHex), unhex32(t, v.ResponderHex)
	for _, d := range v.Digests {
		seed, err := ParseSeed(d.SeedHex)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Digest(seed, req, resp, d.Nonce)
		if err != nil {
			t.Fatalf("Digest(nonce %q): %v", d.Nonce, err)
		}
		if hex.EncodeToString(got[:]) != d.DigestHex {
			t.Errorf("nonce %q: digest %x, want %s", d.Nonce, got, d.DigestHex)
		}
		if ref := referenceDigest(seed, req, resp, d.Nonce); ref != got {
			t.Errorf("nonce %q: reference digest %x, fast path %x", d.Nonce, ref, got)
		}
		if n := LeadingZeroBits(got); n != d.LeadingZeroBits {
			t.Errorf("nonce %q: %d leading zero bits, want %d", d.Nonce, n, d.LeadingZeroBits)
		}
	}
}

func TestVectorsSolutions(t *testing.T) {
	v := loadVectors(t)
	keyBytes := [KeyLen]byte(unhex(t, v.MACKeyHex))
	req, resp := unhex32(t, v.RequesterHex), unhex32(t, v.ResponderHex)
	is, err := NewIssuer(resp, &Options{BaseBits: 8, MaxBits: 24, SolvedPerMin: NoCeiling, Key: &keyBytes})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range v.Solutions {
		seed, err := ParseSeed(s.SeedHex)
		if err != nil {
			t.Fatal(err)
		}
		if seed.Effort() != s.Effort {
			t.Errorf("%s: seed effort %d, vector %d", s.SeedHex, seed.Effort(), s.Effort)
		}
		if got := smallest(t, seed, req, resp, s.Effort, 1<<20); got != s.SmallestNonce {
			t.Errorf("%s: smallest nonce %s, want %s", s.SeedHex, got, s.SmallestNonce)
		}
		d, err := Digest(seed, req, resp, s.SmallestNonce)
		if err != nil {
			t.Fatal(err)
		}
		if hex.EncodeToString(d[:]) != s.DigestHex || LeadingZeroBits(d) != s.LeadingZeroBits {
			t.Errorf("%s: digest %x (%d bits), want %s (%d)", s.SeedHex, d, LeadingZeroBits(d), s.DigestHex, s.LeadingZeroBits)
		}
		// The responder accepts it before expiry, once.
		now := t0.Add(30 * 1e9) // 2026-01-01T00:00:30Z, expiry is 00:01:00
		sol := Solution{Alg: Alg, Seed: s.SeedHex, Nonce: s.SmallestNonce}
		if err := is.Verify(sol, req, now, monoAt(now)); err != nil {
			t.Errorf("%s: Verify: %v", s.SeedHex, err)
		}
		if err := is.Verify(sol, req, now, monoAt(now)); err != ErrReplayed {
			t.Errorf("%s: replay: %v, want ErrReplayed", s.SeedHex, err)
		}
	}
}
