package challenge

import (
	"encoding/hex"
	"errors"
	"testing"
)

func FuzzParseSeed(f *testing.F) {
	f.Add("000000006955b93c0c01020304050607196f7da4c57d18453b3064acc35197c4")
	f.Add("000000006955B93C0C01020304050607196F7DA4C57D18453B3064ACC35197C4")
	f.Add("")
	f.Add("0g")
	f.Fuzz(func(t *testing.T, s string) {
		seed, err := ParseSeed(s)
		if err != nil {
			if err != ErrBadSeed {
				t.Fatalf("error %v", err)
			}
			return
		}
		// Accepted: exactly the lowercase hex of 32 bytes, round trip.
		b, herr := hex.DecodeString(s)
		if herr != nil || len(b) != SeedLen || seed.String() != s || [SeedLen]byte(b) != seed {
			t.Fatalf("accepted %q as %x", s, seed)
		}
	})
}

func FuzzCheckNonce(f *testing.F) {
	for _, s := range []string{"0", "00000000000000000001", "12345678901234567890", "123456789012345678901", "+1", "-1", "1a", "", "١"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		err := CheckNonce(s)
		ok := len(s) >= 1 && len(s) <= MaxNonceDigits
		for _, c := range []byte(s) {
			ok = ok && '0' <= c && c <= '9'
		}
		if (err == nil) != ok || (err != nil && err != ErrBadNonce) {
			t.Fatalf("CheckNonce(%q) = %v", s, err)
		}
		if err == nil {
			// The fast path agrees with the reference on every valid nonce.
			seed, req, resp := Seed{7}, id(1), id(2)
			d, derr := Digest(seed, req, resp, s)
			if derr != nil || d != referenceDigest(seed, req, resp, s) {
				t.Fatalf("Digest(%q) = %x, %v", s, d, derr)
			}
		}
	})
}

// FuzzVerify feeds arbitrary solutions to Verify: it never panics, returns
// one of its sentinels, and accepts only a solution that meets all rules.
func FuzzVerify(f *testing.F) {
	is := newTestIssuer(f, func(c *Options) { c.SolvedPerMin = NoCeiling })
	req := id(1)
	for i := range 3 {
		seed := mintFor(is, req, t0.Unix()+60, i, byte(i))
		f.Add(Alg, seed.String(), "1")
	}
	f.Add("b3", "zz", "1")
	f.Add("", "", "")
	f.Fuzz(func(t *testing.T, alg, seedHex, nonce string) {
		err := is.Verify(Solution{alg, seedHex, nonce}, req, t0, monoAt(t0))
		for _, s := range []error{ErrUnknownAlg, ErrBadSeed, ErrBadMAC, ErrExpired, ErrBadNonce, ErrInsufficientWork, ErrReplayed, ErrCeiling} {
			if errors.Is(err, s) {
				return
			}
		}
		if err != nil {
			t.Fatalf("unexpected error %v", err)
		}
		seed, perr := ParseSeed(seedHex)
		if alg != Alg || perr != nil || !is.key.Load().mac.valid(&seed, &req) || CheckNonce(nonce) != nil ||
			!meetsEffort(referenceDigest(seed, req, is.self, nonce), seed.Effort()) {
			t.Fatalf("accepted %q %q %q", alg, seedHex, nonce)
		}
	})
}
