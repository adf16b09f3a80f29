// Package store is what a node's database is apart from a running node
// (docs/design.md §10): the pebble options every opener uses and the
// logger that says what an operator can do when pebble stops (db.go); a
// stopped repo read without a daemon, as `events ls`, `blob ls` and
// `peers cache` do then (offline.go); `wats repo check` and `wats repo
// repair`, which read every record of a damaged database and keep what
// still verifies (repair.go, ADR 0032); and the record of acknowledged
// events lost with a WAL's damaged tail (lost.go, ADR 0045).
//
// The stores themselves are eventlog's, blobs' and peercache's; store
// opens them read-only over one database. A running node opens them
// through package node, which takes its options from here.
package store
