// Package limits holds the per-peer rate limits of ADR 0014 ("Decision"):
// a token bucket per peer and request type on /wats/1 (hello, sync,
// replicate, crash_report), the refusal those requests get over their
// limit, the caps on the "peer throttled" log lines, the counters, the
// per-peer blob fetch slots, the client-side Pacer that keeps a node's own
// requests within a peer's advertised rate, and the [limits] table of
// config.toml with its validation.
//
// It imports no other wats package (design §2), only libp2p's peer.ID and
// the Prometheus client.
//
// # Use
//
// The node builds one Table, one ThrottleLog and one Slots from the
// validated Config, and takes time from a monotonic base of its own:
//
//	table, err := limits.NewTable(cfg.Limits)        // rates of the four types
//	slots, err := limits.NewSlots(cfg.Limits.BlobFetchesPerPeer)
//	throttle := limits.NewThrottleLog()
//	reg.MustRegister(table.Collector())              // no peer labels
//	start := time.Now()
//	now := func() int64 { return int64(time.Since(start)) }
//
// For each decoded request (Node.admit, design §7), before any expensive
// work:
//
//	k, ok := limits.ParseKind(string(req.Type))      // the four types with a budget
//	if ok, retryAfter := table.Allow(peer, k, now()); !ok {
//		if throttle.ShouldLog(peer, k, now()) {
//			log.Info("peer throttled", "peer", peer, "type", k) // never an address
//		}
//		reply(&proto.Refused{Reason: limits.Refusal(k), RetryAfterMs: limits.RetryAfterMs(retryAfter)})
//	}
//
// Once a minute the node logs throttle.TakeSuppressed() when it is not
// zero; at a clean shutdown it logs table.Snapshot() (a slog.LogValuer),
// which `wats diag` shows too. A replicate handler takes one slot per blob
// with slots.TryAcquire(peer), skips the blobs that find none, and calls
// release when a fetch ends. The sync client builds limits.NewPacer(peerSyncPerMin) from the
// peer's hello and calls Wait before each request, and Refused with the
// retry_after_ms of a refusal it got anyway.
//
// # How it works
//
// Buckets are GCRA (the generic cell rate algorithm) on int64 nanoseconds,
// with no floating point: a bucket is one number, its theoretical arrival
// time TAT, the moment it will be full again. A request at now is allowed
// iff max(TAT, now) − now ≤ τ, the tolerance (burst − 1)·T, and then TAT
// grows by the emission interval T = 60e9/perMin ns. T is generally not a
// whole number of nanoseconds (7 a minute: 8,571,428,571 + 3/7 ns), so TAT,
// T and τ are kept as whole nanoseconds plus a remainder in units of
// 1/perMin ns: after any number of requests TAT is exact, and a client
// that keeps the bucket busy gets exactly perMin a minute forever
// (TestNoDrift checks 1,000,000 requests). A refused request changes
// nothing; retryAfter is the exact wait until the next token, rounded up to
// a whole nanosecond. The burst is ADR 0014's max(1, perMin/4); 0 is
// unlimited and keeps no state.
//
// Time is passed in as a value (now, ns from a base the caller picks) and
// mapped, order kept, onto uint64, so every difference is non-negative and
// no idle time overflows, math.MinInt64 to math.MaxInt64 included. TAT
// only grows, so a clock that steps backwards finds a bucket emptier, never
// fuller: no token is ever credited twice (testdata/buckets.txt steps
// through these cases).
//
// A full bucket is the same as no state, so a Table keeps, per peer, only
// the TATs of its four buckets (40 bytes) while one is not full, in 64
// shards chosen by a seeded hash of the peer id, each with its own mutex.
// Each shard drops its idle peers every SweepInterval as part of Allow (or
// on Sweep), and remembers, per type, the latest TAT it dropped: should the
// clock step back past a sweep, a new entry starts from there, so dropping
// state never credits a token either. A hard cap (DefaultMaxPeers: about
// 100 bytes a peer, 6.5 MiB, plus the peer ids) bounds the peers tracked at once; at the cap a newcomer is refused
// rather than anyone evicted (see Table for why). The admission check costs
// about 25 ns and no allocation for a known peer (BenchmarkTableAllow).
//
// "peer throttled" lines (ThrottleLog) are limited to one a minute per
// peer and type, as ADR 0014 says, and, so that a flood of many peer ids
// cannot flood the log, to ThrottleLogBurst at once and ThrottleLogsPerMin
// a minute in all; the rest are counted for a summary line.
//
// The Pacer runs the peer's GCRA on the client's clock, one token short of
// the peer's burst so that latency jitter up to one interval never turns
// into a refusal. At 600 a minute a catch-up of 1,000,000 events in pages
// of 256 takes about (1,000,000/256 − 150)/10 s ≈ 6.3 minutes.
//
// # Files
//
//   - kind.go: Kind (the four request types, their wire names and config
//     keys), Refusal, RetryAfterMs.
//   - rate.go: Rate (exact rate, burst, interval), Bucket, and the GCRA
//     itself (allow) with the time mapping (tick) and its bounds.
//   - config.go: Config (the [limits] table), DefaultConfig, Validate,
//     ConfigError, and the bounds of every key with their reasons.
//   - table.go: Table: shards, Allow, sweeps, the floor, the cap.
//   - metrics.go: Counts, Snapshot, and the Prometheus collector.
//   - throttlelog.go: ThrottleLog, the caps on "peer throttled" lines.
//   - slots.go: Slots, the per-peer blob fetch semaphore.
//   - pacer.go: Pacer, the client side.
//   - testdata/buckets.txt: step tests of one bucket, as a script
//     (script_test.go runs it).
package limits
