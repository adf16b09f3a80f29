package blobs

import (
	"errors"
	"fmt"

	"github.com/ipfs/go-cid"
)

// Errors of the size checks (CheckBeforeFetch). The returned errors wrap
// these sentinels with the figures; compare with errors.Is.
var (
	// ErrTooLarge: the declared size is above max_blob_bytes, or beyond
	// core.MaxSafeInt (2^53). ADR 0014: checked before any request.
	ErrTooLarge = errors.New("blobs: blob too large")
	// ErrQuota: storing the blob would take the store past
	// blobs.quota_bytes. ADR 0014: checked before any request.
	ErrQuota = errors.New("blobs: blob quota exceeded")
	// ErrInvalidOptions: an option of OpenStore is out of its range.
	ErrInvalidOptions = errors.New("blobs: invalid options")
	// ErrBadName: the name an import gives a blob breaks the rule of an
	// event's blob name (eventlog.CheckBlobName); nothing is read.
	ErrBadName = errors.New("blobs: bad blob name")
)

// ErrSizeMismatch is the error a fetcher wraps (with %w) when a blob turns
// out not to be exactly of its declared size. It belongs to the CID, not
// to the provider (ADR 0014, ADR 0029): Plan.Report does not back the
// provider off for it, and it ends the plan, since every provider would
// serve the same content for that CID.
var ErrSizeMismatch = errors.New("blobs: size differs from the declared size")

// Faults of the content a CID names, found while fetching it. Like
// ErrSizeMismatch they belong to the CID, not to the provider (every
// provider serves the same bytes for a CID): Plan.Report ends the plan on
// them without backing the provider off (ADR 0029).
var (
	// ErrCollection: the root is not a UnixFS file but a collection (a
	// directory or HAMT shard) or another kind of node (a symlink,
	// metadata): its children are never followed (ADR 0014
	// "Collections"), so it cost no more than its root, and it is not
	// used.
	ErrCollection = errors.New("blobs: a collection, children not followed")
	// ErrBadBlob: the DAG is not a blob of docs/design.md §9's format within the
	// fetch bounds (a leaf larger than ChunkSize or than its parent
	// claims, sizes that do not add up, too deep, more bytes than the
	// declared size plus one chunk).
	ErrBadBlob = errors.New("blobs: not a well-formed blob")
)

// ErrStore wraps the error of this node's own store while it writes what
// a fetch received (a full disk, ADR 0044): not the provider's fault, so
// Plan.Report ends the plan on it without backing the provider off, as
// every other provider would meet the same store.
var ErrStore = errors.New("blobs: the local store could not write the blob")

// cidFault reports whether err is a fault of the content (ErrSizeMismatch,
// ErrCollection, ErrBadBlob), which ends a plan without backing off.
func ContentFault(err error) bool {
	return errors.Is(err, ErrSizeMismatch) || errors.Is(err, ErrCollection) || errors.Is(err, ErrBadBlob)
}

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

// ErrRelayedOnly is an attempt's error when its provider could be reached
// only through a circuit relay and no direct connection came within
// DirectWait: blobs are never sent over a relay (docs/adr/0040). It is a
// provider fault like a failed dial: the provider is backed off.
var ErrRelayedOnly = errors.New("reachable only through a relay, and blobs are not sent over relays")

// exactSize is ADR 0014's rule on a blob's size, in one place: "The blob
// is used (pinned, exported, shown) only when it is complete and exactly
// of the declared size". It returns nil when got, what c is (is) or gave
// (yielded, wrote), is declared; else an error wrapping ErrSizeMismatch
// that says both.
func exactSize(c cid.Cid, verb string, got, declared uint64) error {
	if got == declared {
		return nil
	}
	return fmt.Errorf("%w: %s %s %d bytes, declared %d", ErrSizeMismatch, c, verb, got, declared)
}
