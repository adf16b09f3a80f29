// Package catchup is the sync client's run (docs/design.md §5.2, ADR 0019,
// ADR 0038, ADR 0039): it pages through one peer's log from a cursor,
// verifies the events of each page and hands the verified pages to the
// node to store, within bounds that a peer that lies cannot stretch (a
// run's pages, its invalid events, the refusals it waits out). The node
// decides when to run one, from which cursor and with what share of new
// authors' events, and stores what it is handed (package node, syncer.go).
//
// A node far behind several peers catches up from all of them at once
// (ADR 0052, spread.go): the id space is split into shards (shards.go),
// handed out to the peers as a work queue and fetched by id range, each
// peer paced to its own rate, into one verify stage and one store stage;
// a peer's other shards are then compared by fingerprint, and its cursor
// set to its head.
//
// Files: client.go (Client: runs, cursors, triggers, gaps, pulls,
// SyncAll), run.go (Run: the fetch, verify and store stages of a run from
// one peer), spread.go (the catch-up from several peers), shards.go (the
// shards of the id space and the checks of a page by ids).
package catchup
