package challenge

import (
	"crypto/rand"
	"errors"
	"strings"
	"testing"
	"time"
)

// solved issues a challenge of is to req at now and solves it.
func solved(t testing.TB, is *Issuer, req [IDLen]byte, now time.Time) Solution {
	t.Helper()
	c := is.Issue(req, now)
	seed, err := ParseSeed(c.Seed)
	if err != nil {
		t.Fatal(err)
	}
	return Solution{Alg: Alg, Seed: c.Seed, Nonce: smallest(t, seed, req, is.self, c.Effort, 1<<24)}
}

func TestFastPathMatchesReference(t *testing.T) {
	for i := range 2000 {
		var seed Seed
		var req, resp [IDLen]byte
		rand.Read(seed[:])
		rand.Read(req[:])
		rand.Read(resp[:])
		var nb [MaxNonceDigits]byte
		rand.Read(nb[:])
		n := 1 + i%MaxNonceDigits
		for j := range n {
			nb[j] = '0' + nb[j]%10
		}
		nonce := string(nb[:n])
		got, err := Digest(seed, req, resp, nonce)
		if err != nil {
			t.Fatal(err)
		}
		if want := referenceDigest(seed, req, resp, nonce); got != want {
			t.Fatalf("seed %x nonce %q: fast %x, reference %x", seed, nonce, got, want)
		}
	}
}

// TestSearchMatchesReference checks the solver's incremental nonce
// encoding (carries, length changes) against the reference digest.
func TestSearchMatchesReference(t *testing.T) {
	seed, req, resp := Seed{9}, id(1), id(2)
	p := newPuzzle(&seed, &req, &resp)
	for _, r := range [][2]uint64{{0, 200}, {990, 1010}, {99_995, 100_005}, {9_999_999_999_999_999_990, 10_000_000_000_000_000_010}} {
		for effort := range 7 {
			got, ok := p.search(r[0], r[1], effort)
			want, wantOK := "", false
			for n := r[0]; n < r[1]; n++ {
				s := uitoa(n)
				if LeadingZeroBits(referenceDigest(seed, req, resp, s)) >= effort {
					want, wantOK = s, true
					break
				}
			}
			if got != want || ok != wantOK {
				t.Errorf("search(%d, %d, %d) = %q %v, reference %q %v", r[0], r[1], effort, got, ok, want, wantOK)
			}
		}
	}
}

func uitoa(n uint64) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			return string(b[i:])
		}
	}
}

func TestLeadingZeroBits(t *testing.T) {
	for k := 0; k <= 256; k++ {
		var d [DigestLen]byte
		for i := range d {
			d[i] = 0xff
		}
		for b := range k {
			d[b/8] &^= 0x80 >> (b % 8)
		}
		if got := LeadingZeroBits(d); got != k {
			t.Errorf("%d zero bits: got %d", k, got)
		}
	}
}

// TestEffortBoundaries: for every effort from 8 to 24, a digest with
// exactly that many leading zero bits passes and one with one bit fewer
// fails. The real puzzle is used where a scan finds a nonce with exactly
// k bits (k up to about 18 in 2^20 attempts); constructed digests cover
// the decision for all k.
func TestEffortBoundaries(t *testing.T) {
	for k := 8; k <= MaxEffort; k++ {
		var exact, fewer [DigestLen]byte
		exact[k/8] = 0x80 >> (k % 8)
		fewer[(k-1)/8] = 0x80 >> ((k - 1) % 8)
		if !meetsEffort(exact, k) || meetsEffort(fewer, k) {
			t.Errorf("effort %d: exact passes %v, one fewer passes %v", k, meetsEffort(exact, k), meetsEffort(fewer, k))
		}
	}

	// End to end through Verify for efforts 8..16 (a scan of about
	// 2^(k+1) nonces finds one with exactly k bits).
	is := newTestIssuer(t, func(c *Config) { c.SolvedPerMin = 0 })
	req := id(1)
	for k := 8; k <= 16; k++ {
		seed := mintFor(is, req, t0.Unix()+60, k, byte(k))
		p := newPuzzle(&seed, &req, &is.self)
		var exact, fewer string
		for n := uint64(0); n < 1<<22 && (exact == "" || fewer == ""); n++ {
			s := uitoa(n)
			switch LeadingZeroBits(p.digest(s)) {
			case k:
				if exact == "" {
					exact = s
				}
			case k - 1:
				if fewer == "" {
					fewer = s
				}
			}
		}
		if exact == "" || fewer == "" {
			t.Fatalf("effort %d: no nonce with exactly %d or %d bits", k, k, k-1)
		}
		if err := is.Verify(Solution{Alg, seed.String(), fewer}, req, t0); !errors.Is(err, ErrInsufficientWork) {
			t.Errorf("effort %d, %d bits: %v, want ErrInsufficientWork", k, k-1, err)
		}
		if err := is.Verify(Solution{Alg, seed.String(), exact}, req, t0); err != nil {
			t.Errorf("effort %d, %d bits: %v", k, k, err)
		}
	}
}
