package blobs

import (
	"errors"
	"math"
	"testing"

	"github.com/wats-network/wats/core"
)

func TestChunksFor(t *testing.T) {
	const MiB = 1 << 20
	for _, c := range []struct {
		size, chunk, want uint64
	}{
		{0, ChunkSize, 0},
		{1, ChunkSize, 1},
		{MiB - 1, ChunkSize, 1},
		{MiB, ChunkSize, 1},
		{MiB + 1, ChunkSize, 2},
		{64 * MiB, ChunkSize, 64},
		{64*MiB + 1, ChunkSize, 65},
		{1 << 53, ChunkSize, 1 << 33},
		{1<<53 + 1, ChunkSize, 1<<33 + 1},
		{math.MaxUint64, ChunkSize, 1 << 44},    // 2^64-1 over 2^20, rounded up
		{math.MaxUint64, 1, math.MaxUint64},     // no size+chunk-1 overflow
		{math.MaxUint64, math.MaxUint64, 1},     //
		{math.MaxUint64 - 1, math.MaxUint64, 1}, //
		{MiB + 1, 0, 2},                         // 0 means ChunkSize
		{10, 3, 4},
		{9, 3, 3},
	} {
		if got := ChunksFor(c.size, c.chunk); got != c.want {
			t.Errorf("ChunksFor(%d, %d) = %d, want %d", c.size, c.chunk, got, c.want)
		}
	}
}

func TestCheckBeforeFetch(t *testing.T) {
	const max, quota = DefaultMaxBlobBytes, DefaultQuotaBytes
	for _, c := range []struct {
		name                       string
		size, maxBlob, used, quota uint64
		want                       error
	}{
		{"size 0", 0, max, 0, quota, nil},
		{"size 1", 1, max, 0, quota, nil},
		{"at max_blob_bytes", max, max, 0, quota, nil},
		{"max_blob_bytes + 1", max + 1, max, 0, quota, ErrTooLarge},
		{"quota exact", max, max, quota - max, quota, nil},
		{"quota + 1", max, max, quota - max + 1, quota, ErrQuota},
		{"quota full, size 0", 0, max, quota, quota, nil},
		{"quota full, size 1", 1, max, quota, quota, ErrQuota},
		{"already over the quota", 0, max, quota + 1, quota, ErrQuota},
		{"2^53 unlimited", 1 << 53, 0, 0, 0, nil},
		{"2^53 + 1 unlimited", 1<<53 + 1, 0, 0, 0, ErrTooLarge},
		{"2^64-1 unlimited", math.MaxUint64, 0, 0, 0, ErrTooLarge},
		{"2^64-1 against max 2^64-1", math.MaxUint64, math.MaxUint64, 0, math.MaxUint64, ErrTooLarge},
		{"used near 2^64, sum overflows", 1 << 53, math.MaxUint64, math.MaxUint64 - 10, math.MaxUint64, ErrQuota},
		{"used near 2^64, sum fits", 10, math.MaxUint64, math.MaxUint64 - 10, math.MaxUint64, nil},
		{"used near 2^64, one over", 11, math.MaxUint64, math.MaxUint64 - 10, math.MaxUint64, ErrQuota},
		{"used 2^64-1 of a small quota", 1, max, math.MaxUint64, quota, ErrQuota},
		{"max checked before quota", max + 1, max, quota, quota, ErrTooLarge},
		{"quota 0 unlimited", max, max, math.MaxUint64, 0, nil},
	} {
		err := CheckBeforeFetch(c.size, c.maxBlob, c.used, c.quota)
		if c.want == nil && err != nil || c.want != nil && !errors.Is(err, c.want) {
			t.Errorf("%s: CheckBeforeFetch(%d, %d, %d, %d) = %v, want %v", c.name, c.size, c.maxBlob, c.used, c.quota, err, c.want)
		}
		if errors.Is(err, ErrTooLarge) && errors.Is(err, ErrQuota) {
			t.Errorf("%s: both sentinels", c.name)
		}
	}
}

// TestDefaults pins the figures of ADR 0029 and docs/design.md §9.
func TestDefaults(t *testing.T) {
	if ChunkSize != 1048576 || DefaultMaxBlobBytes != 67108864 || DefaultQuotaBytes != 4294967296 || core.MaxSafeInt != 9007199254740992 {
		t.Fatalf("ChunkSize %d DefaultMaxBlobBytes %d DefaultQuotaBytes %d core.MaxSafeInt %d",
			ChunkSize, DefaultMaxBlobBytes, DefaultQuotaBytes, uint64(core.MaxSafeInt))
	}
	if MaxAttempts != 4 || AttemptTimeout.Seconds() != 60 || FetchTimeout.Seconds() != 120 || core.MaxHintsPerBlob != 16 {
		t.Fatal("fetch bounds differ from ADR 0014")
	}
	if BackoffBase.Seconds() != 30 || BackoffMax.Seconds() != 3600 || MaxTracked != 65536 {
		t.Fatal("backoff bounds differ from ADR 0014")
	}
}
