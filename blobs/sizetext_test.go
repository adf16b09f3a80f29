package blobs

import (
	"bytes"
	"context"
	"testing"
)

// TestRefusalsSaySizesInUnits: a refusal for a blob's size says each size
// in a binary unit with its exact bytes, and each bound as its key is set
// (the bytes, which config set takes) with the unit (docs/adr/0051, second
// addendum).
func TestRefusalsSaySizesInUnits(t *testing.T) {
	s, _, _ := newStore(t, StoreOptions{MaxBlobBytes: 64 << 20, QuotaBytes: 64<<20 + 2*ChunkSize})
	if err := s.CheckImport(400 << 20); err == nil || err.Error() !=
		"blobs: blob too large: 400.0 MiB (419430400 bytes), more than blobs.max_blob_bytes = 67108864 (64.0 MiB)" {
		t.Errorf("CheckImport over max_blob_bytes: %v", err)
	}
	if _, _, err := s.Import(context.Background(), bytes.NewReader(make([]byte, 64<<20+1))); err == nil || err.Error() !=
		"blobs: blob too large: more than blobs.max_blob_bytes = 67108864 (64.0 MiB)" {
		t.Errorf("Import over max_blob_bytes: %v", err)
	}
	if _, _, err := s.Import(context.Background(), bytes.NewReader(randBytes(64<<20, 1))); err != nil {
		t.Fatal(err)
	}
	if err := s.CheckImport(3 * ChunkSize); err == nil || err.Error() !=
		"blobs: blob quota exceeded: 3.0 MiB (3145728 bytes), more than the 2.0 MiB left of blobs.quota_bytes = 69206016 (66.0 MiB), 64.0 MiB being in use or reserved" {
		t.Errorf("CheckImport over the quota: %v", err)
	}
	for _, tc := range []struct {
		size, max, used, quota uint64
		want                   string
	}{
		{400 << 20, 64 << 20, 0, 0, "blobs: blob too large: declared size 400.0 MiB (419430400 bytes), more than blobs.max_blob_bytes = 67108864 (64.0 MiB)"},
		{1000, 512, 0, 0, "blobs: blob too large: declared size 1000 bytes, more than blobs.max_blob_bytes = 512 (512 B)"},
		{3 << 20, 0, 1 << 30, 1<<30 + 1<<20, "blobs: blob quota exceeded: declared size 3.0 MiB (3145728 bytes), with 1.0 GiB stored, more than blobs.quota_bytes = 1074790400 (1.0 GiB)"},
	} {
		if err := CheckBeforeFetch(tc.size, tc.max, tc.used, tc.quota); err == nil || err.Error() != tc.want {
			t.Errorf("CheckBeforeFetch(%d, %d, %d, %d) = %v\nwant %s", tc.size, tc.max, tc.used, tc.quota, err, tc.want)
		}
	}
}
