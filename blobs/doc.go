// Package blobs is the node's blobs (docs/design.md §9; ADR 0014 "Blob fetches";
// ADRs 0027 and 0029): the rules of the blob fetcher as deterministic code
// with no networking and no clock (the per-provider backoff, the Sources
// and the plan of one fetch, the hints, the auto-fetch scheduler, the
// declared-size checks made before any request); the blob
// Store (a boxo blockstore and pinner on the node's pebble DB, with
// reservations, reference-counted garbage collection and Complete); the
// Exchange (boxo's bitswap server held to complete blobs and admitted
// peers, wats's own block transfer served by the same rules, and a client
// held to one provider, a byte budget and a message cap that asks over
// the block transfer a provider that speaks it and over bitswap any
// other); and the Fetcher, which drives a Plan over the Exchange.
//
// It imports no other wats package but core (docs/design.md §2), only
// libp2p, boxo, go-ds-pebble, pebble and golang-lru.
//
// # Rules
//
//   - Declared size (ADR 0014): before any request, CheckBeforeFetch
//     refuses a size beyond 2^53 or above blobs.max_blob_bytes
//     (DefaultMaxBlobBytes, 64 MiB) with ErrTooLarge, and one that would
//     take the store past blobs.quota_bytes (DefaultQuotaBytes, 4 GiB)
//     with ErrQuota. Only ChunksFor(size, ChunkSize) chunks of 1 MiB are
//     requested.
//   - Sources (ADR 0033, "One shape for a fetch"): where one fetch looks,
//     built by its caller and handed unchanged to the plan: First (the
//     requester of a replicate request, docs/design.md §9; an operator's
//     peer, exempt from backoff with FirstExempt), then Named (the gossip
//     hints newest first, then a request's providers; at most
//     core.MaxHintsPerBlob, 16), then Guesses (never backed off). They are
//     de-duplicated in one place, Sources.candidates.
//   - Plan (ADR 0014): at most MaxAttempts (4) providers, one after the
//     other, AttemptTimeout (60 s) each and FetchTimeout (120 s) in all,
//     in the order of its Sources; providers under backoff are skipped.
//   - Hints (ADR 0014, docs/design.md §6): at most core.MaxHintsPerBlob
//     providers kept per blob, the newest, for DefaultMaxHintBlobs blobs
//     and DefaultMaxHintBytes of hints.
//   - Scheduler (ADR 0029, auto-fetch): at most QueueLen (1024) blobs
//     waiting, PeerShare (256) of one peer's events, a blob once; a fetch
//     that found no provider that served it retried after 30 s, 1, 2 and
//     4 min (MaxRetries), at most QueueLen retries waiting.
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
//	src := blobs.Sources{First: requester, Named: hints.Get(c)}
//	pl := blobs.NewPlan(src, self, backoff, time.Now())
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
// OpenStore(db, opts) opens the store on the node's one pebble
// DB (docs/design.md §9, §10), every key under KeyPrefix ("/blobs/"), disjoint
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
// (ErrSizeMismatch). Remove unpins and deletes at once the blocks no
// other pinned blob holds; blocks no pinned blob and no partial blob
// holds are deleted at open, and are never served.
//
// The leaves are not in pebble but in a data file per blob in
// StoreOptions.DataDir, indexed by location records under LocPrefix (ADR
// 0037); a blob's file is synced in the background after its pin, and
// checked at the next open if the store was not closed (Close) first.
//
// # Fetching
//
//	x := blobs.NewExchange(host, st, &blobs.ExchangeOptions{Node: node})
//	f := blobs.NewFetcher(x, st, &blobs.FetcherOptions{Backoff: b})
//	err := f.Fetch(ctx, blobs.Request{CID: c, Size: n, Sources: blobs.Sources{Named: hints.Get(c)}})
//
// Fetch reserves the declared size under the quota (ErrTooLarge, ErrQuota
// before any request), runs the Plan, each attempt an Exchange.FetchFrom
// that asks one provider for the blocks covering the declared size within
// Budget(size) bytes, and pins with Store.Complete only a complete blob of
// exactly the declared size. An attempt asks only for the blocks the store
// lacks: what an earlier provider delivered stays and is not asked again.
// With a provider that speaks BlocksProtocol (/wats/blocks/1, ADR 0053)
// the blocks come on one stream, back to back, each checked against its
// CID as it is read (a block that is not the one asked for is the
// provider's fault, ErrBadBlocks); with any other, over bitswap. Content faults (ErrSizeMismatch,
// ErrCollection, ErrBadBlob) end the plan without backing the provider off.
//
// A fetch that does not complete (its providers gone or failed, its
// caller gone, the node restarted or killed) leaves what it verified as a
// partial blob (ADR 0054): its leaves in its data file, its inner nodes
// and a partial record under PartialPrefix, never served, listed as a
// blob, exported or counted by the quota. The next Reserve of the blob
// goes on from it (Reservation.Resumed, Request.Resumed): after a reboot
// of the machine (StoreOptions.BootID) its leaves are first checked
// against their CIDs, hidden from readers until then, and a torn or
// damaged one is dropped and fetched again. StoreOptions.MaxPartialBytes and MaxPartialAge bound
// the partials no fetch runs for, the least recently progressed dropped
// first; a content fault drops the partial at once, and Remove removes
// one (Store.Partials lists them). ReadPartial reads one, every block
// checked against its CID, for `wats repo repair` to carry it into a new
// database's store by that store's Reserve, PutBlock and Release.
//
//	n, err := f.Stream(ctx, req, w)               // Fetch, and the file to w meanwhile (ADR 0035)
//
// Stream runs Fetch and, beside it, writes the blob's file bytes to w in
// order as the blocks land in the store (a depth-first walk of the DAG in
// file order, waiting for each block it lacks): each byte once, a leaf
// only when every byte before it is written, whichever provider sent it;
// nil only when the blob is complete and exactly its declared size was
// written. It holds one block besides the fetch's window.
//
//	st, err := blobs.OpenStore(db, &blobs.StoreOptions{MaxBlobBytes: max, QuotaBytes: quota, DataDir: dir})
//	defer st.Close()                              // before db.Close: the data files synced
//	c, size, err := st.Import(ctx, file)          // pinned, counted
//	err = st.Export(ctx, c, size, out)            // complete and exactly size, or an error
//
// Times are values passed in (style: time as a value), so the rules are
// tested by script (testdata/plan.txt, testdata/schedule.txt) without
// timers.
//
// # Auto-fetch
//
//	s := blobs.NewScheduler(&blobs.ScheduleOptions{})
//	v := s.Add(blobs.Job{CID: c, Size: n, From: relay, Guesses: []peer.ID{author, relay}})
//	// each of the node's workers:
//	for _, a := range s.Due(time.Now()) { count(a.Verdict) } // retries whose time came
//	j, ok := s.Next()                                         // else wait for an Add or s.Wait(now)
//	err := f.Fetch(ctx, blobs.Request{CID: j.CID, Size: j.Size,
//		Sources: blobs.Sources{Named: hints.Get(j.CID), Guesses: j.Guesses}})
//	s.Done(j, retry, time.Now()) // retry: err says no provider served it (not a content fault, the quota, a cancel)
//
// # Files
//
//   - backoff.go: Backoff and its bounds (BackoffBase, BackoffMax,
//     BackoffForget, MaxTracked).
//   - deadlines.go: the keyed min-heap by time that Backoff and the
//     Scheduler's retries share.
//   - sources.go: Sources, and candidates, the one de-duplication of a
//     fetch's providers.
//   - plan.go: Plan and the fetch bounds (MaxAttempts, AttemptTimeout,
//     FetchTimeout).
//   - hints.go: Hints, the providers gossip named per blob
//     (DefaultMaxHintBlobs).
//   - size.go: ChunkSize, the size defaults, ChunksFor, CheckBeforeFetch.
//   - store.go: Store, StoreOptions, BlobInfo, KeyPrefix, CIDBuilder,
//     ErrIncomplete; the reference counts and the sweep at open.
//   - storefetch.go: Reservation, Reserve, Referenced, the block access of
//     a fetch, Complete.
//   - partial.go: the partial blobs (ADR 0054): their records, the check
//     when a fetch resumes, the bounds, Partials, ReadPartial, their removal.
//   - exchange.go: Exchange (bitswap server and receiver), MaxMessageBytes.
//   - blocks.go: wats's block transfer (BlocksProtocol): its wire format
//     and bounds (MaxRequestCIDs, MaxCIDBytes), the provider's handler and
//     the fetcher's stream (ADR 0053).
//   - attempt.go: FetchFrom, the walk of one attempt, Budget, MaxDepth,
//     MaxLinks; parseNode, the checks of a block that the walk and the
//     stream share.
//   - fetcher.go: Fetcher, Request.
//   - stream.go: Fetcher.Stream, the in-order writer of a blob's bytes
//     during its fetch.
//   - schedule.go: Scheduler, Job, Verdict and the auto-fetch bounds
//     (QueueLen, PeerShare, MaxRetries).
//   - files.go: the data files (ADR 0037): location records, the
//     blockstore that reads leaves from them, the background sync, the
//     check of unsynced blobs and the sweep at open.
//   - pebble.go: TunePebble, the database options the store needs.
//   - errors.go: the sentinel errors.
package blobs
