package eventlog

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha512"

	"filippo.io/edwards25519"
	"github.com/hdevalence/ed25519consensus"
)

// The signature rule (ADR 0034). An event's sig is valid when it verifies
// under ZIP 215 (https://zips.z.cash/zip-0215), the Ed25519 validation
// criteria of Zcash, implemented by github.com/hdevalence/ed25519consensus
// for one signature (Verify) and for a batch (BatchVerifier):
//
//   - A (the author's key) and R (sig[:32]) are decoded as RFC 8032 §5.1.3
//     says, except that non-canonical encodings are accepted: a y
//     coordinate ≥ p (taken mod p), and x = 0 with the sign bit set;
//   - S (sig[32:]) must be canonical, S < ℓ (RFC 8032 §5.1.7; a signature
//     with any of the top three bits of sig[63] set is refused before
//     anything else);
//   - k = SHA-512(R ‖ A ‖ signing bytes) mod ℓ, over the bytes as sent;
//   - the check is the cofactored equation [8][S]B = [8]R + [8][k]A
//     (RFC 8032 §5.1.7 allows it; crypto/ed25519 checks the cofactorless
//     [S]B = R + [k]A and compares R's encoding byte for byte).
//
// Every signature crypto/ed25519 accepts, ZIP 215 accepts too; ZIP 215
// accepts more only for signatures no RFC 8032 signer produces: a key or an
// R with a small-order component, or a non-canonical R. What the two rules
// have in common is what matters: ZIP 215 is the one rule under which a
// batch check and a check one at a time give the same verdict, which the
// tests hold for crafted edge cases (signature_test.go).

// sigInput is what the signature check of one event needs besides its
// signing bytes: the author's raw Ed25519 key (A) and the raw signature
// (R ‖ S).
type sigInput struct {
	pub [ed25519.PublicKeySize]byte
	sig [ed25519.SignatureSize]byte
}

// verifySignature reports whether in.sig is a valid signature of msg by
// in.pub under the rule above (ZIP 215, one at a time). It asks
// crypto/ed25519 first, whose every accept ZIP 215 accepts too (the same
// decoding of A, hash and S bound; R = [S]B - [k]A implies [8]R =
// [8]([S]B - [k]A)), and which is faster here (BenchmarkSignatures256);
// only what it refuses goes to ed25519consensus.Verify for the verdict.
func verifySignature(in *sigInput, msg []byte) bool {
	return ed25519.Verify(in.pub[:], msg, in.sig[:]) || ed25519consensus.Verify(in.pub[:], msg, in.sig[:])
}

// verifySignatures checks the signatures of ins over msgs (msgs[i] is the
// signing bytes of ins[i]) and reports each one's verdict in valid. They
// are checked as one ZIP 215 batch (batchVerify: about half the cost of
// checking them one at a time, ADR 0034); only when the batch fails is
// each checked on its own, to find the bad ones. Batch and single checks
// follow the same rule, so valid is what verifySignature would say of
// each, but for the chance, about 2^-128, that a batch holding a bad
// signature passes (the batch's random 128-bit coefficients; ZIP 215).
func verifySignatures(ins []sigInput, msgs [][]byte, valid []bool) {
	switch len(ins) {
	case 0:
		return
	case 1:
		valid[0] = verifySignature(&ins[0], msgs[0])
		return
	}
	if batchVerify(ins, msgs) {
		for i := range valid[:len(ins)] {
			valid[i] = true
		}
		return
	}
	for i := range ins {
		valid[i] = verifySignature(&ins[i], msgs[i])
	}
}

// batchVerify reports whether every signature of ins over msgs is valid
// under ZIP 215, as one check; false for an empty batch. It checks
// ed25519consensus.BatchVerifier's equation,
//
//	[8]([-Σ z_i·S_i]B + Σ [z_i]R_i + Σ [z_i·k_i]A_i) = 0
//
// with z_i random 128-bit scalars and k_i = SHA-512(R_i ‖ A_i ‖ M_i) mod ℓ,
// but with one term per distinct key encoding instead of one per
// signature: the A_i of one encoding are one point, so their coefficients
// z_i·k_i add up, and each key is decoded once. The sum is the same point;
// a page by 16 authors has 16 key terms, not 256, which takes about 40% of
// the batch's cost off (BenchmarkSignatures256).
func batchVerify(ins []sigInput, msgs [][]byte) bool {
	n := len(ins)
	if n == 0 {
		return false
	}
	random := make([]byte, 16*n)
	if _, err := rand.Read(random); err != nil {
		return false
	}
	// The terms: [0] is B, then one per signature (R_i), then one per key.
	scalars := make([]edwards25519.Scalar, 1+n, 1+n+16)
	points := make([]edwards25519.Point, 1+n, 1+n+16)
	points[0].Set(edwards25519.NewGeneratorPoint())
	keyTerm := make(map[[ed25519.PublicKeySize]byte]int, 16)
	h := sha512.New()
	var digest [sha512.Size]byte
	var zBytes [32]byte
	var s, k, zk edwards25519.Scalar
	for i := range ins {
		in := &ins[i]
		if _, err := points[1+i].SetBytes(in.sig[:32]); err != nil {
			return false
		}
		if _, err := s.SetCanonicalBytes(in.sig[32:]); err != nil {
			return false
		}
		h.Reset()
		h.Write(in.sig[:32])
		h.Write(in.pub[:])
		h.Write(msgs[i])
		if _, err := k.SetUniformBytes(h.Sum(digest[:0])); err != nil {
			return false
		}
		copy(zBytes[:16], random[16*i:])
		z := &scalars[1+i]
		if _, err := z.SetCanonicalBytes(zBytes[:]); err != nil {
			return false
		}
		scalars[0].MultiplyAdd(z, &s, &scalars[0])
		j, ok := keyTerm[in.pub]
		if !ok {
			j = len(points)
			points = append(points, edwards25519.Point{})
			if _, err := points[j].SetBytes(in.pub[:]); err != nil {
				return false
			}
			scalars = append(scalars, edwards25519.Scalar{})
			keyTerm[in.pub] = j
		}
		zk.Multiply(z, &k)
		scalars[j].Add(&scalars[j], &zk)
	}
	scalars[0].Negate(&scalars[0])
	sp := make([]*edwards25519.Scalar, len(scalars))
	pp := make([]*edwards25519.Point, len(points))
	for i := range scalars {
		sp[i], pp[i] = &scalars[i], &points[i]
	}
	check := new(edwards25519.Point).VarTimeMultiScalarMult(sp, pp)
	check.MultByCofactor(check)
	return check.Equal(edwards25519.NewIdentityPoint()) == 1
}
