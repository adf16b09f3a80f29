package blobs

import (
	"bytes"
	"encoding/hex"
	"math/rand/v2"
	"testing"

	mh "github.com/multiformats/go-multihash"
	mhcore "github.com/multiformats/go-multihash/core"
	zeebo "github.com/zeebo/blake3"
	luke "lukechampine.com/blake3"
)

// TestBLAKE3DigestsAgree: the BLAKE3 multihash this process registers is
// zeebo's (docs/adr/0058), and its digests are lukechampine.com/blake3's,
// the one go-multihash registers, for every output size go-multihash
// accepts and inputs around BLAKE3's chunk (1 KiB) and this store's leaf
// (ChunkSize); sizes 0 and past 128 bytes are refused as go-multihash's
// own are.
func TestBLAKE3DigestsAgree(t *testing.T) {
	h, err := mhcore.GetVariableHasher(mhcore.BLAKE3, -1)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := h.(*zeebo.Hasher); !ok {
		t.Fatalf("the registered BLAKE3 is a %T, not zeebo's", h)
	}
	empty, _ := mh.Sum(nil, mh.BLAKE3, -1)
	if got, want := hex.EncodeToString(empty[2:]), "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262"; got != want {
		t.Fatalf("BLAKE3 of nothing: %s, want the reference's %s", got, want)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	data := make([]byte, ChunkSize+1)
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	for _, n := range []int{0, 1, 1023, 1024, 1025, 16 << 10, 64<<10 + 1, ChunkSize - 1, ChunkSize, ChunkSize + 1} {
		for _, size := range []int{-1, 1, 16, 31, 32, 33, 64, 100, maxBLAKE3Size} {
			got, err := mh.Sum(data[:n], mh.BLAKE3, size)
			if err != nil {
				t.Fatalf("%d bytes, size %d: %v", n, size, err)
			}
			dec, err := mh.Decode(got)
			if err != nil {
				t.Fatal(err)
			}
			l := size
			if l == -1 {
				l = 32
			}
			ref := luke.New(l, nil)
			ref.Write(data[:n])
			if !bytes.Equal(dec.Digest, ref.Sum(nil)) {
				t.Fatalf("%d bytes, size %d: digest %x, lukechampine's %x", n, size, dec.Digest, ref.Sum(nil))
			}
		}
	}
	for _, size := range []int{0, maxBLAKE3Size + 1} {
		if _, err := mh.Sum(data[:10], mh.BLAKE3, size); err == nil {
			t.Fatalf("a digest of %d bytes was made", size)
		}
	}
}

// BenchmarkLeafBLAKE3 is the BLAKE3 multihash of one leaf (ChunkSize
// bytes) as this process computes it (zeebo's, docs/adr/0058), against
// the anchor, lukechampine.com/blake3, which go-multihash registers.
func BenchmarkLeafBLAKE3(b *testing.B) {
	leaf := make([]byte, ChunkSize)
	for i := range leaf {
		leaf[i] = byte(i * 7)
	}
	b.Run("registered", func(b *testing.B) {
		b.SetBytes(ChunkSize)
		for b.Loop() {
			if _, err := mh.Sum(leaf, mh.BLAKE3, -1); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("lukechampine", func(b *testing.B) {
		b.SetBytes(ChunkSize)
		for b.Loop() {
			h := luke.New(32, nil)
			h.Write(leaf)
			h.Sum(nil)
		}
	})
}
