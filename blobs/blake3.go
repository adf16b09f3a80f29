package blobs

import (
	"hash"

	zeebo "github.com/zeebo/blake3"

	mhcore "github.com/multiformats/go-multihash/core"
	_ "github.com/multiformats/go-multihash/register/blake3" // registered first, replaced below
)

// The BLAKE3 multihash (code 0x1e) of every CID this process builds or
// checks (a leaf verified as it arrives, a leaf read back with verify, an
// import's leaves and nodes) is computed by github.com/zeebo/blake3:
// docs/adr/0058. go-multihash registers lukechampine.com/blake3, which
// hashes a 1 MiB leaf at about 1.8 GB/s on this project's machines against
// zeebo's 3.0 GB/s; the digests are the same (TestBLAKE3DigestsAgree).
// The register package above is imported so that its registration comes
// first and this one replaces it (Go runs a package's init after those of
// every package it imports).
func init() {
	mhcore.RegisterVariableSize(mhcore.BLAKE3, newBLAKE3)
}

// maxBLAKE3Size is the longest BLAKE3 multihash digest, in bytes, that
// go-multihash accepts (its register package's MaxSize).
const maxBLAKE3Size = 128

// newBLAKE3 returns a BLAKE3 hash whose Sum appends size bytes of output
// (32 when size is -1, the multihash default); false when size is out of
// 1..maxBLAKE3Size.
func newBLAKE3(size int) (hash.Hash, bool) {
	switch {
	case size == -1 || size == 32:
		return zeebo.New(), true
	case size <= 0 || size > maxBLAKE3Size:
		return nil, false
	}
	return sizedBLAKE3{zeebo.New(), size}, true
}

// sizedBLAKE3 is BLAKE3 with an output of n bytes other than 32, read from
// the extendable output (the first n bytes of it, as the reference and
// lukechampine.com/blake3 give).
type sizedBLAKE3 struct {
	*zeebo.Hasher
	n int
}

func (s sizedBLAKE3) Size() int { return s.n }

func (s sizedBLAKE3) Sum(b []byte) []byte {
	out := make([]byte, s.n)
	if _, err := s.Digest().Read(out); err != nil {
		panic(err) // a Digest reads without error up to 2^64 bytes
	}
	return append(b, out...)
}
