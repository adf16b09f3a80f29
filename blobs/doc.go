// Package blobs holds the rules of the blob fetcher of ADR 0014 ("Blob
// fetches" addendum; design §9; issue 6), as deterministic code with no
// networking and no clock: the per-provider backoff, the plan of one
// fetch (which providers, in which order, with which deadlines), and the
// declared-size checks made before any request. The store (a boxo
// blockstore on the node's pebble DB), the exchange (bitswap) and the
// fetcher proper, which drives these rules over the network, come with
// the rest of the blobs issue.
//
// It imports no other wats package (design §2), only libp2p's peer.ID.
//
// # Rules
//
//   - Declared size (ADR 0014): before any request, CheckBeforeFetch
//     refuses a size beyond 2^53 or above blobs.max_blob_bytes
//     (DefaultMaxBlobBytes, 64 MiB) with ErrTooLarge, and one that would
//     take the store past blobs.quota_bytes (DefaultQuotaBytes, 4 GiB)
//     with ErrQuota. Only ChunksFor(size, ChunkSize) chunks of 1 MiB are
//     requested.
//   - Plan (ADR 0014): at most MaxAttempts (4) providers, one after the
//     other, AttemptTimeout (60 s) each and FetchTimeout (120 s) in all;
//     the requester of a replicate request first (design §9), then the
//     hints newest first, at most MaxHints (16); providers under backoff
//     are skipped.
//   - Backoff (ADR 0014): a provider whose fetch fails or times out is
//     skipped for BackoffBase (30 s), doubling with each further failure
//     up to BackoffMax (1 h); a success clears it. A size mismatch belongs
//     to the CID, not the provider: it never backs a provider off.
//
// # Use
//
//	backoff := blobs.NewBackoff()                 // one per node, shared
//	if err := blobs.CheckBeforeFetch(size, maxBlob, used, quota); err != nil {
//		return err                                // before any request
//	}
//	pl := blobs.NewPlan(hints, requester, backoff, time.Now())
//	for {
//		p, deadline, ok := pl.Next(time.Now())
//		if !ok {
//			return pl.Err()                       // ErrAttempts, ErrFetchTimeout, ErrNoProvider, a mismatch
//		}
//		err := fetchFrom(ctx, p, deadline)        // wraps ErrSizeMismatch when the size is wrong
//		pl.Report(p, err, time.Now())
//		if pl.Done() {
//			return pl.Err()                       // nil: the blob is complete
//		}
//	}
//
// Times are values passed in (style: time as a value), so the rules are
// tested by script (testdata/plan.txt) without timers.
//
// # Files
//
//   - backoff.go: Backoff and its bounds (BackoffBase, BackoffMax,
//     BackoffForget, MaxTracked).
//   - plan.go: Plan and the fetch bounds (MaxAttempts, AttemptTimeout,
//     FetchTimeout, MaxHints).
//   - size.go: ChunkSize, the size defaults, ChunksFor, CheckBeforeFetch.
//   - errors.go: the sentinel errors.
package blobs
