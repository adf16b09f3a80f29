package blobs

import (
	"fmt"

	"github.com/wats-network/wats/core"
	"github.com/wats-network/wats/internal/humanize"
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
		return fmt.Errorf("%w: declared size %d bytes is beyond 2^53", ErrTooLarge, size)
	}
	if maxBlobBytes != 0 && size > maxBlobBytes {
		return fmt.Errorf("%w: declared size %s, more than %s", ErrTooLarge, sizeText(size), boundText("blobs.max_blob_bytes", maxBlobBytes))
	}
	if quotaBytes != 0 && (quotaUsed > quotaBytes || size > quotaBytes-quotaUsed) {
		return fmt.Errorf("%w: declared size %s, with %s stored, more than %s", ErrQuota, sizeText(size),
			humanize.Bytes(quotaUsed), boundText("blobs.quota_bytes", quotaBytes))
	}
	return nil
}

// sizeText says a byte count n in a binary unit with its exact bytes,
// "400.0 MiB (419430400 bytes)", as the CLI shows sizes; "512 bytes"
// below a KiB. A refusal for a size says both: the unit for the reader,
// the bytes for what may have to be typed.
func sizeText(n uint64) string {
	if n < 1<<10 {
		return fmt.Sprintf("%d bytes", n)
	}
	return fmt.Sprintf("%s (%d bytes)", humanize.Bytes(n), n)
}

// boundText says a config key of bytes and its value as it is set, with
// the value in a binary unit: "blobs.max_blob_bytes = 67108864 (64.0
// MiB)".
func boundText(key string, n uint64) string {
	return fmt.Sprintf("%s = %d (%s)", key, n, humanize.Bytes(n))
}
