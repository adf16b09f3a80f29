package challenge

import (
	"crypto/subtle"
	"encoding/binary"
	"encoding/hex"
	"time"

	"lukechampine.com/blake3/guts"
)

// SeedLen is the length of a seed. ADR 0014, "Seeds are stateless": 32
// bytes.
const SeedLen = 32

// SeedHexLen is the length of a seed on the wire: lowercase hex.
const SeedHexLen = 2 * SeedLen

// Seed layout, ADR 0014, "Seeds are stateless":
//
//	offset  size  field
//	0       8     expires, unix seconds, big endian
//	8       1     effort, leading zero bits
//	9       7     random
//	16      16    MAC = BLAKE3 keyed hash (process key) of seed[0:16] ‖ requester id, first 16 bytes
const (
	seedExpiresOff = 0
	seedEffortOff  = 8
	seedRandomOff  = 9
	seedMACOff     = 16
	// RandomLen is the number of random bytes in a seed.
	RandomLen = seedMACOff - seedRandomOff
	// MACLen is the length of the seed MAC.
	MACLen = SeedLen - seedMACOff
	// KeyLen is the length of the MAC key.
	KeyLen = 32
)

// SeedLifetime is how long a seed is valid after it is issued. ADR 0014,
// "Seeds are stateless": "A seed is valid for 60 s and once".
const SeedLifetime = 60 * time.Second

// Seed is a b3 seed: 32 bytes laid out as above. It is opaque to a
// requester, which echoes it as received; the responder reads its expiry
// and effort back from it once the MAC is checked, and keeps nothing per
// challenge.
type Seed [SeedLen]byte

// Expires returns the expiry of s, unix seconds (not checked against the
// MAC: call only on a verified seed, or for display).
func (s Seed) Expires() int64 {
	return int64(binary.BigEndian.Uint64(s[seedExpiresOff:]))
}

// Effort returns the effort of s in leading zero bits, 0..255 (not checked
// against the MAC).
func (s Seed) Effort() int { return int(s[seedEffortOff]) }

// String returns s as 64 lowercase hex digits, its wire form.
func (s Seed) String() string { return hex.EncodeToString(s[:]) }

// ParseSeed decodes the wire form of a seed: exactly SeedHexLen lowercase
// hex digits (the form this package issues; the requester echoes it "as
// received"). Anything else gives ErrBadSeed. It does not allocate.
func ParseSeed(s string) (Seed, error) {
	var seed Seed
	if len(s) != SeedHexLen {
		return seed, ErrBadSeed
	}
	for i := range SeedLen {
		hi, ok1 := fromHex(s[2*i])
		lo, ok2 := fromHex(s[2*i+1])
		if !ok1 || !ok2 {
			return Seed{}, ErrBadSeed
		}
		seed[i] = hi<<4 | lo
	}
	return seed, nil
}

// fromHex decodes one lowercase hex digit.
func fromHex(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}

// macKey is the per-process key of the seed MAC, as BLAKE3 key words.
type macKey [8]uint32

func newMACKey(key *[KeyLen]byte) macKey {
	var k macKey
	for i := range k {
		k[i] = binary.LittleEndian.Uint32(key[4*i:])
	}
	return k
}

// mac computes the 16-byte MAC of ADR 0014: the BLAKE3 keyed hash of
// seed[0:16] ‖ requester (48 bytes, one block), first 16 bytes.
func (k *macKey) mac(seed *Seed, requester *[IDLen]byte) [MACLen]byte {
	var n guts.Node
	n.CV = *k
	for i := range 4 {
		n.Block[i] = binary.LittleEndian.Uint32(seed[4*i:])
	}
	for i := range 8 {
		n.Block[4+i] = binary.LittleEndian.Uint32(requester[4*i:])
	}
	n.BlockLen = seedMACOff + IDLen
	n.Flags = guts.FlagChunkStart | guts.FlagChunkEnd | guts.FlagRoot | guts.FlagKeyedHash
	out := guts.CompressNode(n)
	var m [MACLen]byte
	for i := range 4 {
		binary.LittleEndian.PutUint32(m[4*i:], out[i])
	}
	return m
}

// mint builds a seed for requester from its fields and signs it.
func (k *macKey) mint(requester *[IDLen]byte, expires int64, effort int, random [RandomLen]byte) Seed {
	var s Seed
	binary.BigEndian.PutUint64(s[seedExpiresOff:], uint64(expires))
	s[seedEffortOff] = byte(effort)
	copy(s[seedRandomOff:], random[:])
	m := k.mac(&s, requester)
	copy(s[seedMACOff:], m[:])
	return s
}

// valid reports whether the MAC of s is the one this key gives for
// requester, in constant time.
func (k *macKey) valid(s *Seed, requester *[IDLen]byte) bool {
	m := k.mac(s, requester)
	return subtle.ConstantTimeCompare(m[:], s[seedMACOff:]) == 1
}

// expired reports whether a seed expiring at unix second exp has expired
// at now: it is valid while now <= exp (ADR 0014). No overflow for any exp.
func expired(exp int64, now time.Time) bool {
	s := now.Unix()
	return s > exp || (s == exp && now.Nanosecond() > 0)
}
