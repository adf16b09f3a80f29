// Package blobs holds the rules of the blob fetcher of ADR 0014 ("Blob
// fetches" addendum; design §9; issue 6), as deterministic code with no
// networking and no clock: the per-provider backoff, the plan of one
// fetch (which providers, in which order, with which deadlines), and the
// declared-size checks made before any request; and the blob Store (a
// boxo blockstore and pinner on the node's pebble DB). The exchange
// (bitswap) and the fetcher proper, which drives these rules over the
// network, come with the rest of the blobs issue.
//
// It imports no other wats package (design §2), only libp2p's peer.ID,
// boxo, go-ds-pebble and pebble.
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
// # Store
//
// OpenStore(db, StoreOptions{}) opens the store on the node's one pebble
// DB (design §9, §10), every key under KeyPrefix ("/blobs/"), disjoint
// from the event log's "ev/" and the peer cache's "p/". Blobs are UnixFS
// v1 files, CIDv1, raw leaves, BLAKE3, ChunkSize chunks, balanced layout;
// a blob of one chunk is a single raw block ("bafkr4…"). A blob is
// complete when pinned (recursively, by boxo's dspinner over an offline
// DAG service: the store never fetches). Import reads at most
// min(max_blob_bytes, quota left)+1 bytes and, past the bound, fails with
// ErrTooLarge or ErrQuota, deleting the blocks it wrote; the quota counts
// the file sizes of the pinned blobs exactly, from a size record per blob
// ("/blobs/meta/<cid>") summed at open. Export writes a blob only if it is
// pinned (ErrIncomplete) and exactly of the declared size
// (ErrSizeMismatch). Remove unpins; the blocks stay until a garbage
// collection, which is not written yet.
//
//	st, err := blobs.OpenStore(db, blobs.StoreOptions{MaxBlobBytes: max, QuotaBytes: quota})
//	c, size, err := st.Import(ctx, file)          // pinned, counted
//	err = st.Export(ctx, c, size, out)            // complete and exactly size, or an error
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
//   - store.go: Store, StoreOptions, BlobInfo, KeyPrefix, CIDBuilder,
//     ErrIncomplete.
//   - errors.go: the sentinel errors.
package blobs
