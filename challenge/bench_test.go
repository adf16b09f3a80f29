package challenge

import (
	"context"
	"fmt"
	"testing"
)

// BenchmarkVerify is the responder's hot path: a valid solution, verified
// and recorded. Target (ADR 0025): at most 1 µs and 0 allocs.
func BenchmarkVerify(b *testing.B) {
	is := newTestIssuer(b, func(c *Options) { c.SolvedPerMin = NoCeiling })
	req := id(1)
	const n = 1024
	sols := make([]Solution, n)
	for i := range sols {
		seed := mintFor(is, req, t0.Unix()+60, 8, byte(i))
		seed[10], seed[11] = byte(i>>8), byte(i) // distinct
		seed = is.key.Load().mac.mint(&req, seed.Expires(), seed.Effort(), [RandomLen]byte(seed[seedRandomOff:seedMACOff]))
		sols[i] = Solution{Alg: Alg, Seed: seed.String(), Nonce: smallest(b, seed, req, is.self, 8, 1<<20)}
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if i%n == 0 {
			b.StopTimer()
			is.mu.used = newReplayMemory(MaxUsedSeeds)
			b.StartTimer()
		}
		if err := is.Verify(sols[i%n], req, t0, monoAt(t0)); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkVerifyReject is a solution with too little work: everything
// but the replay memory.
func BenchmarkVerifyReject(b *testing.B) {
	is := newTestIssuer(b, nil)
	req := id(1)
	seed := mintFor(is, req, t0.Unix()+60, 24, 1)
	sol := Solution{Alg: Alg, Seed: seed.String(), Nonce: "12345678901234567890"}
	b.ReportAllocs()
	for b.Loop() {
		if err := is.Verify(sol, req, t0, monoAt(t0)); err != ErrInsufficientWork {
			b.Fatal(err)
		}
	}
}

// BenchmarkAttempts measures the solver's inner loop on one core; an op
// is one attempt (one nonce). Target: at least 8 M attempts/s per core.
func BenchmarkAttempts(b *testing.B) {
	seed, req, resp := Seed{1}, id(1), id(2)
	p := newPuzzle(&seed, &req, &resp)
	b.ReportAllocs()
	b.ResetTimer()
	// Effort 33 is never met (the check reads one 32-bit word), so every
	// nonce is tried.
	if _, ok := p.search(1_000_000, 1_000_000+uint64(b.N), 33); ok {
		b.Fatal("effort 33 met")
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds()/1e6, "Mattempts/s")
}

// BenchmarkDigestReference is the library's one-shot DeriveKey, for
// comparison with BenchmarkAttempts.
func BenchmarkDigestReference(b *testing.B) {
	seed, req, resp := Seed{1}, id(1), id(2)
	b.ReportAllocs()
	for b.Loop() {
		referenceDigest(seed, req, resp, "1234567")
	}
}

// BenchmarkSolve reports the mean time to solve at each effort on all
// cores (GOMAXPROCS); each op (ns/op) is one solve of a fresh seed. Effort 24 is
// long (about 1 s an op on 2 cores): run it with -benchtime=Nx.
func BenchmarkSolve(b *testing.B) {
	for _, effort := range []int{8, 16, 20, 24} {
		b.Run(fmt.Sprintf("effort=%d", effort), func(b *testing.B) {
			req, resp := id(1), id(2)
			i := 0
			for b.Loop() {
				seed := Seed{byte(i), byte(i >> 8), byte(effort)}
				i++
				if _, err := Solve(context.Background(), seed, req, resp, effort); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
