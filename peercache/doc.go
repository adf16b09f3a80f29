// Package peercache persists what a node knows about the peers it has met
// (design §8, issue 5): their addresses, when they were first and last seen,
// their last completed hello, the sync cursor into each peer's log, and the
// counts of their requests to this node (served, refused, challenged,
// solved, and misses: seed 004's peer value history). From it the node
// decides reputation (ADR 0014) and redials known peers at start.
//
// # Storage
//
// The cache lives in the node's one pebble database under its own key
// prefix ("p/" + the peer ID's raw bytes), one JSON record per peer, each
// written as one Set so that a record is all or nothing. A Cache loads
// every record at Open, so lookups never touch the disk. Records written by
// older versions load: unknown fields are ignored, missing ones are zero. A
// record that does not decode is skipped and returned by Open for the
// caller to report, never fatal; it stays on disk until an Update of that
// peer overwrites it or Forget deletes it.
//
// # Writes
//
// Update (a hello, a disconnect, a sync cursor) writes the record at once,
// synced if asked. Count, on the node's per-request hot path, only
// increments in memory (about 10 ns, no allocation) and marks the record
// dirty; Flush writes every dirty record in one unsynced batch, Start runs
// Flush in the background every few seconds, and Close stops that, then
// flushes with a sync. An unsynced write survives a kill -9 of the process
// once pebble's WAL writer has handed it to the OS (at once, in practice),
// but a machine crash may lose the writes since the last sync. So a kill -9
// loses at most the counts since the last flush, and never corrupts the
// cache (pebble's WAL replays whole batches only). Only peers with a record
// are counted: counts for unknown peers are dropped, so a flood of fresh
// identities creates nothing.
//
// # Capacity
//
// Options.MaxPeers (default 10,000) bounds the records. Adding one beyond
// it evicts the least recently seen existing record (LastSeen, then
// FirstSeen), from memory and from pebble in the same batch, in O(log n)
// with a heap; Open evicts down to the bound if more are stored.
//
// # Use
//
//	c, damaged, err := peercache.OpenWithOptions(db, peercache.Options{MaxPeers: n})
//	// report damaged once
//	c.Start(0)
//	defer c.Close()
//	for _, ai := range c.Known() { /* redial, most recently seen first */ }
//	c.Update(p, false, func(r *peercache.Record) { ... }) // on hello
//	c.Count(p, peercache.CountServed)                    // per request
//	c.Reputed(p, now)                                    // admission
//	c.All(); c.Forget(p)                                 // wats peers cache / forget
//
// Files: peercache.go holds the Cache, its Record, counts, flushing and
// eviction. Tests: peercache_test.go (records, cursor, damaged records,
// addresses) and counts_test.go (counts, flushing, crash images, capacity,
// Forget, All and Known, concurrency, benchmarks).
package peercache
