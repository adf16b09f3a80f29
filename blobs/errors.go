package blobs

import "errors"

// Errors of the size checks (CheckBeforeFetch). The returned errors wrap
// these sentinels with the figures; compare with errors.Is.
var (
	// ErrTooLarge: the declared size is above max_blob_bytes, or beyond
	// MaxDeclaredSize (2^53). ADR 0014: checked before any request.
	ErrTooLarge = errors.New("blobs: blob too large")
	// ErrQuota: storing the blob would take the store past
	// blobs.quota_bytes. ADR 0014: checked before any request.
	ErrQuota = errors.New("blobs: blob quota exceeded")
)

// ErrSizeMismatch is the error a fetcher wraps (with %w) when a blob turns
// out not to be exactly of its declared size. It belongs to the CID, not
// to the provider (issue 6, ADR 0014): Plan.Report does not back the
// provider off for it, and it ends the plan, since every provider would
// serve the same content for that CID.
var ErrSizeMismatch = errors.New("blobs: size differs from the declared size")

// Why a Plan ended without a success; Plan.Err wraps one of them together
// with the last provider's error, if any.
var (
	// ErrNoProvider: no candidate is left (none named, all tried, or the
	// rest skipped under backoff).
	ErrNoProvider = errors.New("blobs: no provider left")
	// ErrAttempts: MaxAttempts providers were tried.
	ErrAttempts = errors.New("blobs: all attempts used")
	// ErrFetchTimeout: FetchTimeout since the plan began has passed.
	ErrFetchTimeout = errors.New("blobs: fetch time spent")
)
