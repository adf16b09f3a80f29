package challenge

import (
	"encoding/binary"
	"math/bits"

	"lukechampine.com/blake3/guts"
)

// Alg is the id of the only puzzle this package knows, in the "alg" field
// of a challenge and of a solution. ADR 0014, "Algorithm ids": another
// puzzle would be added under a new id.
const Alg = "b3"

// Context is the BLAKE3 derive_key context string of the b3 puzzle.
// ADR 0014, "Algorithm b3".
const Context = "wats challenge v1"

// IDLen is the length of an endpoint id in the puzzle input: the raw
// 32-byte Ed25519 public key of the peer (docs/design.md §3).
const IDLen = 32

// MaxNonceDigits bounds the decimal nonce of a solution. ADR 0014,
// "Algorithm b3": "a decimal nonce (at most 20 digits)". It keeps the puzzle
// input within two BLAKE3 blocks (96 + 20 = 116 bytes) and every nonce a
// solver can reach within a uint64 (whose largest value has 20 digits).
const MaxNonceDigits = 20

// DigestLen is the length of a b3 digest: the 32-byte derive_key output.
const DigestLen = 32

// prefixLen is the part of the puzzle input before the nonce: seed ‖
// requester id ‖ responder id. Its first 64 bytes (seed ‖ requester) are
// exactly one BLAKE3 block, so their chaining value is computed once per
// challenge and each attempt compresses only the second block (responder
// id ‖ nonce, 33..52 bytes).
const prefixLen = SeedLen + 2*IDLen

// contextKey is the derive_key context key: BLAKE3 of Context in
// DERIVE_KEY_CONTEXT mode. Context fits in one block, so it is one
// compression with CHUNK_START | CHUNK_END | ROOT.
var contextKey = func() [8]uint32 {
	var block [guts.BlockSize]byte
	n := copy(block[:], Context)
	out := guts.CompressNode(guts.Node{
		CV:       guts.IV,
		Block:    guts.BytesToWords(block),
		BlockLen: uint32(n),
		Flags:    guts.FlagChunkStart | guts.FlagChunkEnd | guts.FlagRoot | guts.FlagDeriveKeyContext,
	})
	var cv [8]uint32
	copy(cv[:], out[:8])
	return cv
}()

// puzzle holds the per-challenge precomputation of the b3 fast path: the
// chaining value after the first block (seed ‖ requester id) and the words
// of the responder id, which open the second block.
type puzzle struct {
	cv        [8]uint32 // chaining value after block 0
	responder [8]uint32 // block 1, words 0..7
}

// newPuzzle runs the first-block compression for seed and requester.
func newPuzzle(seed *Seed, requester, responder *[IDLen]byte) puzzle {
	var p puzzle
	var n guts.Node
	n.CV = contextKey
	for i := range 8 {
		n.Block[i] = binary.LittleEndian.Uint32(seed[4*i:])
		n.Block[8+i] = binary.LittleEndian.Uint32(requester[4*i:])
		p.responder[i] = binary.LittleEndian.Uint32(responder[4*i:])
	}
	n.BlockLen = guts.BlockSize
	n.Flags = guts.FlagChunkStart | guts.FlagDeriveKeyMaterial
	out := guts.CompressNode(n)
	copy(p.cv[:], out[:8])
	return p
}

// lastNode returns the second (final, root) block with the nonce bytes
// already packed into words 8..12 by the caller.
func (p *puzzle) lastNode(nonceLen int) guts.Node {
	var n guts.Node
	n.CV = p.cv
	copy(n.Block[:8], p.responder[:])
	n.BlockLen = uint32(IDLen + nonceLen)
	n.Flags = guts.FlagChunkEnd | guts.FlagRoot | guts.FlagDeriveKeyMaterial
	return n
}

// digest computes the b3 digest for a nonce that is already known to be
// 1..MaxNonceDigits bytes long.
//
// REQUIRES: 1 <= len(nonce) <= MaxNonceDigits.
func (p *puzzle) digest(nonce string) [DigestLen]byte {
	var tail [20]byte // nonce bytes, zero padded: words 8..12
	copy(tail[:], nonce)
	n := p.lastNode(len(nonce))
	for i := range 5 {
		n.Block[8+i] = binary.LittleEndian.Uint32(tail[4*i:])
	}
	out := guts.CompressNode(n)
	var d [DigestLen]byte
	for i := range 8 {
		binary.LittleEndian.PutUint32(d[4*i:], out[i])
	}
	return d
}

// Digest returns the b3 digest of ADR 0014, "Algorithm b3":
// BLAKE3 derive_key(Context, seed ‖ requester ‖ responder ‖ nonce), 32
// bytes, where requester and responder are raw Ed25519 public keys and
// nonce is the decimal nonce as sent. It uses the two-compression fast
// path; it is equal to the plain blake3.DeriveKey of the same input (the
// tests check both on the vectors and on random inputs).
//
// A nonce that is not 1..MaxNonceDigits decimal digits gives ErrBadNonce.
func Digest(seed Seed, requester, responder [IDLen]byte, nonce string) ([DigestLen]byte, error) {
	if err := CheckNonce(nonce); err != nil {
		return [DigestLen]byte{}, err
	}
	p := newPuzzle(&seed, &requester, &responder)
	return p.digest(nonce), nil
}

// LeadingZeroBits counts the leading zero bits of a digest, most
// significant bit of byte 0 first (0..256).
func LeadingZeroBits(d [DigestLen]byte) int {
	for i := 0; i < DigestLen; i += 8 {
		if w := binary.BigEndian.Uint64(d[i:]); w != 0 {
			return 8*i + bits.LeadingZeros64(w)
		}
	}
	return 8 * DigestLen
}

// meetsEffort reports whether digest d has at least effort leading zero
// bits: the work check of ADR 0014.
func meetsEffort(d [DigestLen]byte, effort int) bool { return LeadingZeroBits(d) >= effort }

// CheckNonce reports whether nonce has the shape of ADR 0014, "Algorithm
// b3": 1 to MaxNonceDigits ASCII decimal digits, no sign, no space, no
// other character. Leading zeros are allowed (the digest is over the bytes
// as sent, so "01" and "1" are different nonces). It returns ErrBadNonce
// otherwise.
func CheckNonce(nonce string) error {
	if len(nonce) == 0 || len(nonce) > MaxNonceDigits {
		return ErrBadNonce
	}
	for i := 0; i < len(nonce); i++ {
		if c := nonce[i]; c < '0' || c > '9' {
			return ErrBadNonce
		}
	}
	return nil
}
