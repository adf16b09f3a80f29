// Package limits holds the per-peer rate limits of ADR 0014 ("Decision"):
// a token bucket per peer and request type on /wats/1 (hello, sync,
// replicate, crash_report), the refusal those requests get over their
// limit, and admission itself as a pure function (Policy.Decide) of the
// peer's tier, its facts and what the request asks for (ADR 0030: tiers
// from value history, request classes and a miss budget); the cap on every
// log line a peer can cause (LogCap), the counters, the per-peer blob fetch
// slots, the tiered Pool of shared memory, the client-side Pacer that keeps
// a node's own requests within a peer's advertised rate, and the [limits]
// table of config.toml with its validation.
//
// It imports no other wats package but core (docs/design.md §2), only
// libp2p's peer.ID and the Prometheus client.
//
// # Use
//
// The node builds one Table, one LogCap and one Slots from the validated
// Config, and takes time from a monotonic base of its own:
//
//	table, err := limits.NewTable(cfg.Limits, nil)   // the Policy of every tier
//	slots, err := limits.NewSlots(cfg.Limits.BlobFetchesPerPeer)
//	logs := limits.NewLogCap()
//	reg.MustRegister(table.Collector())              // no peer labels
//	start := time.Now()
//	now := func() int64 { return int64(time.Since(start)) }
//
// For each decoded request (Node.admit, docs/design.md §7), before any expensive
// work, with the peer's tier (TierOf its History) and the request's class
// (the cheap existence check):
//
//	k, ok := req.Type.Request()                      // the four types with a budget
//	d := table.Admit(peer, limits.Facts{Tier: t, CanSolve: solves, Reputed: reputed},
//		limits.Request{Type: k, Class: class, Solved: verified, InFlight: n}, now())
//	switch d.Verdict {
//	case limits.Refuse:
//		if logs.ShouldLog(peer, limits.ThrottledTopic(k), now()) {
//			log.Info("peer throttled", "peer", peer, "type", k) // never an address
//		}
//		reply(&proto.Refused{Reason: limits.Refusal(k), RetryAfterMs: limits.RetryAfterMs(d.RetryAfter)})
//	case limits.Challenge: // issue one
//	}
//
// testdata/admit.txt steps through every rule of Decide. Once a minute the
// node logs logs.TakeSuppressed() when it is not zero; at a clean shutdown
// it logs table.Snapshot() (a slog.LogValuer), which `wats diag` shows too. A replicate handler takes one slot per blob
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
// the TATs of its five buckets (the four types and the misses: 56 bytes)
// while one is not full, in 64 shards chosen by a seeded hash of the peer
// id, each with its own mutex.
// Each shard drops its idle peers every SweepInterval as part of Allow (or
// on Sweep), and remembers, per type, the latest TAT it dropped: should the
// clock step back past a sweep, a new entry starts from there, so dropping
// state never credits a token either. A hard cap (DefaultMaxPeers: about
// 100 bytes a peer, 6.5 MiB, plus the peer ids) bounds the peers tracked
// at once; at the cap a newcomer is decided on a budget it shares with the
// other untracked peers of its shard rather than anyone evicted (see
// Table for why). Admission costs about 30 ns and no allocation for a
// known peer, half of x/time/rate's Limiter (BenchmarkAdmitVsRate).
//
// Tiers (TierOf): a peer's History — served, misses, invalid messages,
// failed and solved challenges, held streams, events and bytes it gave —
// makes it a suspect (limits.suspect_percent of the rates), new, normal
// (ADR 0014's rates) or valued (limits.valued_percent, the ceiling).
// Misses (ClassMiss) also take a token of the peer's miss budget
// (limits.miss_per_min). A Pool shares a budget of memory by tier, the
// strangers at most a quarter.
//
// Log lines a peer causes (LogCap), "peer throttled" among them, are
// limited to one a minute per peer and topic (ADR 0014's once a minute per
// peer and type) and, so that a flood of many peer ids cannot flood the
// log, to LogBurst at once and LogPerMin a minute in all; the rest are
// counted for a summary line.
//
// The Pacer runs the peer's GCRA on the client's clock, one token short of
// the peer's burst so that latency jitter up to one interval never turns
// into a refusal. At 600 a minute a catch-up of 1,000,000 events in pages
// of 256 takes about (1,000,000/256 − 150)/10 s ≈ 6.3 minutes.
//
// # Files
//
//   - kind.go: the config key (RateKey) and refusal reason (Refusal) of
//     each request type's budget (core.Request), RetryAfterMs.
//   - rate.go: Rate (exact rate, burst, interval), Bucket, and the GCRA
//     itself (allow) with the time mapping (tick) and its bounds.
//   - config.go: Config (the [limits] table), DefaultConfig, Validate,
//     ConfigError, and the bounds of every key with their reasons.
//   - tier.go: Tier, History, TierOf.
//   - admit.go: Class, Facts, Request, Decision, State, Policy and Decide.
//   - table.go: Table: shards, Admit and Allow, sweeps, the floor, the cap
//     and the shared newcomer budget.
//   - metrics.go: Counts, Snapshot, and the Prometheus collector.
//   - logcap.go: LogCap, the caps on the lines peers cause.
//   - pool.go: Pool, a budget shared by tier.
//   - slots.go: Slots, the per-peer blob fetch semaphore.
//   - pacer.go: Pacer, the client side.
//   - testdata/buckets.txt: step tests of one bucket, as a script
//     (script_test.go runs it); testdata/admit.txt: step tests of
//     admission (admit_test.go).
package limits
