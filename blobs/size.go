package blobs

import (
	"fmt"

	"github.com/wats-network/wats/core"
)

// Declared size bounds (ADR 0014 "Declared size"; docs/design.md §9; ADR 0027 keys
// blobs.max_blob_bytes and blobs.quota_bytes).
const (
	// ChunkSize is the UnixFS chunk size of a blob, in bytes (docs/design.md §9:
	// 1 MiB chunks). A fetcher requests only the ChunksFor(size, ChunkSize)
	// leaves covering the declared size.
	ChunkSize = 1 << 20

	// DefaultMaxBlobBytes is the default of blobs.max_blob_bytes (64 MiB):
	// the largest declared size a node fetches.
	DefaultMaxBlobBytes = 64 << 20

	// DefaultQuotaBytes is the default of blobs.quota_bytes (4 GiB): the
	// most bytes of blobs a node stores.
	DefaultQuotaBytes = 4 << 30
)

// ChunksFor returns how many chunks of chunkSize bytes cover size bytes,
// rounded up: 0 for size 0, 1 for 1..chunkSize, 2 for chunkSize+1, and so
// on. It never overflows (no size+chunkSize-1 is computed). A chunkSize of
// 0 means ChunkSize. The count is of the data leaves; a fetcher fetches
// the root block in any case (for a blob of one chunk the root is that
// chunk, docs/design.md §9).
func ChunksFor(size, chunkSize uint64) uint64 {
	if chunkSize == 0 {
		chunkSize = ChunkSize
	}
	n := size / chunkSize
	if size%chunkSize != 0 {
		n++
	}
	return n
}

// CheckBeforeFetch checks a declared size against the bounds that ADR
// 0014 checks before any request: size (bytes) at most core.MaxSafeInt
// and at most maxBlobBytes, and quotaUsed+size at most quotaBytes, where
// quotaUsed is the bytes the store already accounts. It returns nil, or an
// error wrapping ErrTooLarge or ErrQuota with the figures. The sum is
// computed without overflow, so any uint64 inputs are safe. A maxBlobBytes
// or quotaBytes of 0 means unlimited (core.MaxSafeInt still holds); the
// configuration layer decides whether 0 is an allowed setting.
func CheckBeforeFetch(size, maxBlobBytes, quotaUsed, quotaBytes uint64) error {
	if size > core.MaxSafeInt {
		return fmt.Errorf("%w: declared size %d is beyond 2^53", ErrTooLarge, size)
	}
	if maxBlobBytes != 0 && size > maxBlobBytes {
		return fmt.Errorf("%w: declared size %d > blobs.max_blob_bytes %d", ErrTooLarge, size, maxBlobBytes)
	}
	if quotaBytes != 0 && (quotaUsed > quotaBytes || size > quotaBytes-quotaUsed) {
		return fmt.Errorf("%w: %d bytes stored + %d declared > blobs.quota_bytes %d", ErrQuota, quotaUsed, size, quotaBytes)
	}
	return nil
}
