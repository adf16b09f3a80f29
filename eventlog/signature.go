package eventlog

import (
	"crypto/ed25519"

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
// are checked as one ZIP 215 batch (about half the cost of checking them
// one at a time, ADR 0034); only when the batch fails is each checked on
// its own, to find the bad ones. Batch and single checks follow the same
// rule, so valid is what verifySignature would say of each, except with
// probability at most 2^-128 per failing batch of accepting a bad signature
// (the batch's random 128-bit coefficients; ZIP 215).
func verifySignatures(ins []sigInput, msgs [][]byte, valid []bool) {
	switch len(ins) {
	case 0:
		return // an empty batch "fails" in ed25519consensus: nothing to check
	case 1:
		valid[0] = verifySignature(&ins[0], msgs[0])
		return
	}
	bv := ed25519consensus.NewPreallocatedBatchVerifier(len(ins))
	for i := range ins {
		bv.Add(ins[i].pub[:], msgs[i], ins[i].sig[:])
	}
	if bv.Verify() {
		for i := range valid[:len(ins)] {
			valid[i] = true
		}
		return
	}
	for i := range ins {
		valid[i] = verifySignature(&ins[i], msgs[i])
	}
}
