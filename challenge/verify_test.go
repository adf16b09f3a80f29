package challenge

import (
	"crypto/rand"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/wats-network/wats/core"
)

// solved issues a challenge of is to req at now and solves it.
func solved(t testing.TB, is *Issuer, req [IDLen]byte, now time.Time) Solution {
	t.Helper()
	c := is.Issue(req, now, monoAt(now))
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
	for k := 8; k <= core.MaxChallengeEffort; k++ {
		var exact, fewer [DigestLen]byte
		exact[k/8] = 0x80 >> (k % 8)
		fewer[(k-1)/8] = 0x80 >> ((k - 1) % 8)
		if !meetsEffort(exact, k) || meetsEffort(fewer, k) {
			t.Errorf("effort %d: exact passes %v, one fewer passes %v", k, meetsEffort(exact, k), meetsEffort(fewer, k))
		}
	}

	// End to end through Verify for efforts 8..16 (a scan of about
	// 2^(k+1) nonces finds one with exactly k bits).
	is := newTestIssuer(t, func(c *Options) { c.SolvedPerMin = NoCeiling })
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
		if err := is.Verify(Solution{Alg, seed.String(), fewer}, req, t0, monoAt(t0)); !errors.Is(err, ErrInsufficientWork) {
			t.Errorf("effort %d, %d bits: %v, want ErrInsufficientWork", k, k-1, err)
		}
		if err := is.Verify(Solution{Alg, seed.String(), exact}, req, t0, monoAt(t0)); err != nil {
			t.Errorf("effort %d, %d bits: %v", k, k, err)
		}
	}
}

func TestVerifyTamperedSeed(t *testing.T) {
	is := newTestIssuer(t, nil)
	req := id(1)
	c := is.Issue(req, t0, monoAt(t0))
	seed, _ := ParseSeed(c.Seed)
	for _, tc := range []struct {
		name string
		edit func(*Seed)
	}{
		{"effort lowered", func(s *Seed) { s[seedEffortOff]-- }},
		{"effort zeroed", func(s *Seed) { s[seedEffortOff] = 0 }},
		{"expiry extended", func(s *Seed) { s[7]++ }},
		{"expiry high byte", func(s *Seed) { s[0] ^= 1 }},
		{"random byte", func(s *Seed) { s[seedRandomOff] ^= 0x80 }},
		{"MAC byte", func(s *Seed) { s[SeedLen-1] ^= 1 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := seed
			tc.edit(&s)
			// Solve the tampered seed honestly: only the MAC can refuse it.
			nonce := smallest(t, s, req, is.self, s.Effort(), 1<<24)
			if err := is.Verify(Solution{Alg, s.String(), nonce}, req, t0, monoAt(t0)); err != ErrBadMAC {
				t.Fatalf("got %v, want ErrBadMAC", err)
			}
		})
	}
	// Untampered, it passes.
	nonce := smallest(t, seed, req, is.self, seed.Effort(), 1<<24)
	if err := is.Verify(Solution{Alg, c.Seed, nonce}, req, t0, monoAt(t0)); err != nil {
		t.Fatal(err)
	}
}

func TestVerifySwappedIDs(t *testing.T) {
	// Node A (requester) is challenged by node B (the issuer).
	b := newTestIssuer(t, nil)
	a := id(1)
	c := b.Issue(a, t0, monoAt(t0))
	seed, _ := ParseSeed(c.Seed)

	// B presenting A's seed to ... B: the MAC is bound to A.
	nonce := smallest(t, seed, b.self, a, c.Effort, 1<<24)
	if err := b.Verify(Solution{Alg, c.Seed, nonce}, b.self, t0, monoAt(t0)); err != ErrBadMAC {
		t.Errorf("seed used by another requester: %v, want ErrBadMAC", err)
	}
	// A solving with the ids swapped (requester B, responder A): find a
	// nonce that solves the swapped puzzle and not the right one.
	swapped := newPuzzle(&seed, &b.self, &a)
	right := newPuzzle(&seed, &a, &b.self)
	var wrong string
	for n := uint64(0); n < 1<<24; n++ {
		s := uitoa(n)
		if meetsEffort(swapped.digest(s), c.Effort) && !meetsEffort(right.digest(s), c.Effort) {
			wrong = s
			break
		}
	}
	if wrong == "" {
		t.Fatal("no nonce solves only the swapped puzzle")
	}
	if err := b.Verify(Solution{Alg, c.Seed, wrong}, a, t0, monoAt(t0)); err != ErrInsufficientWork {
		t.Errorf("swapped ids: %v, want ErrInsufficientWork", err)
	}
	// And the same seed at another responder fails its MAC.
	other := newTestIssuer(t, func(c *Options) { k := [KeyLen]byte{42}; c.Key = &k })
	good := smallest(t, seed, a, b.self, c.Effort, 1<<24)
	if err := other.Verify(Solution{Alg, c.Seed, good}, a, t0, monoAt(t0)); err != ErrBadMAC {
		t.Errorf("seed at another node: %v, want ErrBadMAC", err)
	}
	if err := b.Verify(Solution{Alg, c.Seed, good}, a, t0, monoAt(t0)); err != nil {
		t.Errorf("right ids: %v", err)
	}
}

func TestVerifyExpiry(t *testing.T) {
	is := newTestIssuer(t, nil)
	req := id(1)
	sol := solved(t, is, req, t0)
	exp := t0.Add(SeedLifetime)
	if err := is.Verify(sol, req, exp.Add(time.Nanosecond), monoAt(exp.Add(time.Nanosecond))); err != ErrExpired {
		t.Errorf("1 ns after expiry: %v, want ErrExpired", err)
	}
	if err := is.Verify(sol, req, exp.Add(time.Hour), monoAt(exp.Add(time.Hour))); err != ErrExpired {
		t.Errorf("1 h after expiry: %v, want ErrExpired", err)
	}
	if err := is.Verify(sol, req, exp, monoAt(exp)); err != nil {
		t.Errorf("at expiry: %v", err)
	}
	// Issue rounds the expiry down to the second.
	c := is.Issue(req, t0.Add(999*time.Millisecond), monoAt(t0.Add(999*time.Millisecond)))
	if c.Expires != t0.Unix()+60 {
		t.Errorf("expires %d, want %d", c.Expires, t0.Unix()+60)
	}
}

func TestVerifyReplay(t *testing.T) {
	is := newTestIssuer(t, nil)
	req := id(1)
	sol := solved(t, is, req, t0)
	if err := is.Verify(sol, req, t0, monoAt(t0)); err != nil {
		t.Fatal(err)
	}
	for _, now := range []time.Time{t0, t0.Add(time.Second), t0.Add(SeedLifetime)} {
		if err := is.Verify(sol, req, now, monoAt(now)); err != ErrReplayed {
			t.Errorf("replay at %v: %v, want ErrReplayed", now.Sub(t0), err)
		}
	}
	// Another nonce for the same seed is a replay too.
	seed, _ := ParseSeed(sol.Seed)
	p := newPuzzle(&seed, &req, &is.self)
	n, ok := p.search(1_000_000, 1<<30, seed.Effort())
	if !ok {
		t.Fatal("no second nonce")
	}
	if err := is.Verify(Solution{Alg, sol.Seed, n}, req, t0, monoAt(t0)); err != ErrReplayed {
		t.Errorf("second nonce: %v, want ErrReplayed", err)
	}
	if got := is.UsedSeeds(t0); got != 1 {
		t.Errorf("UsedSeeds = %d, want 1", got)
	}
	if got := is.UsedSeeds(t0.Add(SeedLifetime + time.Nanosecond)); got != 0 {
		t.Errorf("UsedSeeds after expiry = %d, want 0", got)
	}
}

func TestVerifyShapes(t *testing.T) {
	is := newTestIssuer(t, nil)
	req := id(1)
	sol := solved(t, is, req, t0)
	upper := strings.ToUpper(sol.Seed)
	if upper == sol.Seed {
		upper = "A" + sol.Seed[1:]
	}
	for _, tc := range []struct {
		name string
		sol  Solution
		want error
	}{
		{"alg empty", Solution{"", sol.Seed, sol.Nonce}, ErrUnknownAlg},
		{"alg other", Solution{"equix", sol.Seed, sol.Nonce}, ErrUnknownAlg},
		{"alg case", Solution{"B3", sol.Seed, sol.Nonce}, ErrUnknownAlg},
		{"seed empty", Solution{Alg, "", sol.Nonce}, ErrBadSeed},
		{"seed 63 hex", Solution{Alg, sol.Seed[:63], sol.Nonce}, ErrBadSeed},
		{"seed 65 hex", Solution{Alg, sol.Seed + "0", sol.Nonce}, ErrBadSeed},
		{"seed uppercase", Solution{Alg, upper, sol.Nonce}, ErrBadSeed},
		{"seed non-hex", Solution{Alg, "g" + sol.Seed[1:], sol.Nonce}, ErrBadSeed},
		{"nonce empty", Solution{Alg, sol.Seed, ""}, ErrBadNonce},
		{"nonce 21 digits", Solution{Alg, sol.Seed, strings.Repeat("0", 21)}, ErrBadNonce},
		{"nonce plus", Solution{Alg, sol.Seed, "+" + sol.Nonce}, ErrBadNonce},
		{"nonce minus", Solution{Alg, sol.Seed, "-" + sol.Nonce}, ErrBadNonce},
		{"nonce space", Solution{Alg, sol.Seed, " " + sol.Nonce}, ErrBadNonce},
		{"nonce trailing", Solution{Alg, sol.Seed, sol.Nonce + "a"}, ErrBadNonce},
		{"nonce hex", Solution{Alg, sol.Seed, "0x1f"}, ErrBadNonce},
		{"nonce unicode digit", Solution{Alg, sol.Seed, "١"}, ErrBadNonce},
		{"nonce NUL", Solution{Alg, sol.Seed, sol.Nonce + "\x00"}, ErrBadNonce},
	} {
		if err := is.Verify(tc.sol, req, t0, monoAt(t0)); err != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	// Nothing was consumed: the good solution still passes.
	if err := is.Verify(sol, req, t0, monoAt(t0)); err != nil {
		t.Fatal(err)
	}
}

func TestCheckNonceBounds(t *testing.T) {
	for _, tc := range []struct {
		nonce string
		ok    bool
	}{
		{"0", true},
		{"00000000000000000001", true},
		{strings.Repeat("9", MaxNonceDigits), true},
		{strings.Repeat("9", MaxNonceDigits+1), false},
		{strings.Repeat("0", MaxNonceDigits+1), false},
		{"", false},
		{"/", false}, // '0'-1
		{":", false}, // '9'+1
		{"1e3", false},
		{"1.0", false},
	} {
		if err := CheckNonce(tc.nonce); (err == nil) != tc.ok {
			t.Errorf("CheckNonce(%q) = %v, want ok %v", tc.nonce, err, tc.ok)
		}
	}
	// A 20-digit nonce with leading zeros is verified end to end; a
	// 21-digit one is refused before any hashing.
	is := newTestIssuer(t, nil)
	req := id(1)
	seed := mintFor(is, req, t0.Unix()+60, 0, 3)
	if err := is.Verify(Solution{Alg, seed.String(), "00000000000000000001"}, req, t0, monoAt(t0)); err != nil {
		t.Errorf("20 digits: %v", err)
	}
	seed = mintFor(is, req, t0.Unix()+60, 0, 4)
	if err := is.Verify(Solution{Alg, seed.String(), "000000000000000000001"}, req, t0, monoAt(t0)); err != ErrBadNonce {
		t.Errorf("21 digits: %v, want ErrBadNonce", err)
	}
}

func TestVerifyDoesNotAllocate(t *testing.T) {
	is := newTestIssuer(t, func(c *Options) { c.SolvedPerMin = NoCeiling })
	req := id(1)
	// Fill the replay memory past its bound so that the eviction path runs
	// too: effort-0 seeds, distinct random bytes.
	sols := make([]Solution, MaxUsedSeeds+512)
	for i := range sols {
		seed := is.key.Load().mac.mint(&req, t0.Unix()+60+int64(i), 0, [RandomLen]byte{byte(i), byte(i >> 8)})
		sols[i] = Solution{Alg, seed.String(), "7"}
	}
	i := 0
	allocs := testing.AllocsPerRun(len(sols)-1, func() {
		if err := is.Verify(sols[i], req, t0, monoAt(t0)); err != nil {
			t.Fatal(err)
		}
		i++
	})
	if allocs != 0 {
		t.Errorf("Verify allocates %.2f times a call", allocs)
	}
	bad := Solution{Alg, sols[0].Seed, "x"}
	if a := testing.AllocsPerRun(100, func() { _ = is.Verify(bad, req, t0, monoAt(t0)) }); a != 0 {
		t.Errorf("a refused Verify allocates %.2f times a call", a)
	}
}
