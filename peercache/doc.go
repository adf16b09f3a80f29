// Package peercache persists what a node knows about the peers it has met:
// their addresses, when they were first and last seen, their last completed
// hello, and the sync cursor into each peer's log (design §8).
//
// The cache lives in the node's one pebble database under its own key
// prefix ("p/" + the peer ID's bytes), one JSON record per peer. A Cache
// loads every record at Open, so lookups never touch the disk; writes go
// through to pebble. A damaged record is skipped and reported by Open, never
// fatal.
//
// This package starts small: the records and the cursor the sync client
// resumes from. The reputation rule, capacity and eviction, batched counter
// writes and redial at start come with the peer-cache issue.
//
// Files: peercache.go holds the Cache and its Record.
package peercache
