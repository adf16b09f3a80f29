// Package eventlog is the event model of wats and its local, append-only log
// (docs/design.md §5): creating, encoding, decoding and verifying signed events, and
// storing them in the node's pebble database at consecutive local positions
// that `sync` pages through.
//
// # Events
//
// An event is the JSON object {"id","author","time","kind","body","blobs","sig"}:
//
//   - author: the libp2p peer ID of an Ed25519 key, canonical base58;
//   - time: unix milliseconds, 0..2^53;
//   - kind: 1..32 of [a-z0-9._-];
//   - body: a JSON object, ≤ 16 KiB in canonical form; for kind "crash" the
//     Crash shape {program, version, os, arch, reason, stack ≤ 8 KiB,
//     fingerprint};
//   - blobs: ≤ 16 of {cid, size, name}: a canonical base32 CIDv1, a size
//     ≤ 2^53, a name of ≤ 255 UTF-8 bytes without control characters;
//   - signing bytes: "wats-event-v1:" followed by the RFC 8785 (JCS)
//     canonical JSON of the event without id and sig;
//   - id: lowercase hex BLAKE3-256 of the signing bytes;
//   - sig: Ed25519 signature of the signing bytes, base64url without
//     padding, valid under ZIP 215 (ADR 0034, signature.go).
//
// testdata/events.json holds events signed by an independent implementation;
// the tests reproduce their signing bytes, ids and signatures exactly.
//
// A node's own events come from New. Events from peers go through Decode
// (strict JSON: duplicate, unknown or missing members, wrong types are
// refused; the body is canonicalized) and Verify (caps, syntax, the
// 10-minute rule, id, signature), or VerifyBatch for a whole sync page on
// all cores, its signatures checked as Ed25519 batches (the same verdict
// as Verify's). Failures are *ValidationError values naming the field, with
// the sentinels ErrMalformed, ErrTooLarge, ErrFuture, ErrBadID and
// ErrBadSignature for errors.Is. Every bound on peer input is a named
// constant in event.go.
//
// # The log
//
// Log keeps verified events in a pebble database the node owns and shares
// with other packages; it uses only keys under KeyPrefix ("ev/"):
//
//	"ev/p/" + position (8 bytes big-endian) -> event JSON (Event.Marshal)
//	"ev/i/" + id (32 raw bytes)             -> position (8 bytes big-endian)
//
// It also keeps the indexes listed at KeyPrefix in log.go: the CIDs events
// name, each author's usage, the log's totals (docs/design.md §10).
//
// Append dedupes by id, applies the quota (SetQuota; ADR 0031) and writes
// one pebble batch, synced before it returns; concurrent calls share one
// batch and one sync (group commit). Positions run 1, 2, … with no gaps,
// so Head is both the newest position and the event count, and Open
// recovers it from the last position key. Page returns the events after a position, bounded by count and bytes;
// paging by position never skips or repeats an event, whatever their
// timestamps. A position is a core.Cursor, on the wire a decimal string
// (docs/design.md §4). All walks the log from a position, a page at a time.
// Changed wakes readers that wait for new events.
//
//	db, _ := pebble.Open(dir, opts)          // owned by the node
//	l, _ := eventlog.Open(db)
//	ok, rejected := eventlog.VerifyBatch(page, time.Now())
//	added, _ := l.Append(ok)                 // durable on return
//	evs, next, more, _ := l.Page(after, 256, 4<<20)
//	for e, err := range l.All(0) { … }      // the whole log, decoded
//
// # Files
//
//   - event.go: Event, BlobRef, the caps, New, SigningBytes, Marshal, Verify.
//   - decode.go: Decode, strict: json v2 binds the members; presence,
//     null, the canonical body and the blob cap are checked there.
//   - decodefast.go: Decode's fast path, one pass over an event in the
//     form Marshal writes; anything else goes to the general path.
//   - body.go: body canonicalization (JCS) and the number check; Crash.
//   - batch.go: VerifyBatch and VerifyNew, a page in shares, one a worker;
//     VerifyPage, a page on the calling goroutine.
//   - signature.go: the signature rule (ZIP 215), one at a time and in a
//     batch.
//   - log.go: Log, its key layout, Append, Page, Get, Has, Changed.
//   - seen.go: the in-memory Bloom filter of stored ids that spares Append
//     most lookups.
//   - errors.go: sentinels, ValidationError, BatchError.
package eventlog
