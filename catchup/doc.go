// Package catchup is the sync client's run (docs/design.md §5.2, ADR 0019,
// ADR 0038, ADR 0039): it pages through one peer's log from a cursor,
// verifies the events of each page and hands the verified pages to the
// node to store, within bounds that a peer that lies cannot stretch (a
// run's pages, its invalid events, the refusals it waits out). The node
// decides when to run one, from which cursor and with what share of new
// authors' events, and stores what it is handed (package node, syncer.go).
package catchup
