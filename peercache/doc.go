// Package peercache persists what a node knows about the peers that showed
// it value (docs/design.md §8; ADR 0026, 0030): their addresses, when they were
// first and last seen, their last completed hello, the sync cursor into
// each peer's log, and their value history (requests served, refused,
// challenged, solved, missed; invalid messages, failed solutions, held
// streams; events and blob bytes they gave). From it the node decides
// reputation (ADR 0014: met in an earlier run), works out tiers, and
// redials known peers at start. The node decides who gets a record.
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
// identities creates nothing. The node counts on its request path in its
// own run state and adds the counts here every few seconds (Add).
//
// # Capacity
//
// Options.MaxPeers (default 10,000) bounds the records. Adding one beyond
// it evicts by value (evict.go, after Bitcoin Core's inbound eviction):
// four traits each protect an eighth of the capacity (the longest known,
// the most useful, the most recently useful, one per address group), and
// among the rest the least recently seen go first, a 64th of the capacity
// at a time, from memory and from pebble in the same batch; Open evicts
// down to the bound if more are stored. Records of an older version (before
// value history) are kept at Open only if they hold a cursor or solutions.
//
// # Use
//
//	c, damaged, err := peercache.Open(db, &peercache.Options{MaxPeers: n})
//	// report damaged once
//	c.Start(0)
//	defer c.Close()
//	for _, ai := range c.Known() { /* redial, most recently seen first */ }
//	c.Update(p, true, func(r *peercache.Record) { ... })  // when p showed value
//	c.Add(p, counts, now)                                 // the counts of the last seconds
//	c.MetInEarlierRun(p)                                  // reputation
//	c.All(); c.Forget(p)                                 // wats peers cache / forget
//
// Files: peercache.go holds the Cache, its Record, counts and flushing;
// evict.go the eviction by value. Tests: peercache_test.go (records,
// cursor, damaged records, addresses), counts_test.go (counts, flushing,
// crash images, capacity, Forget, All and Known, concurrency, benchmarks)
// and evict_test.go (eviction by value, migration, Add).
package peercache
