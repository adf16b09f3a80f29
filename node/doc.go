// Package node wires a wats node together: the libp2p host, the pebble
// database, the event log, the peer cache, gossip, the /wats/1 request
// handlers with their admission point, the sync client, and the control API
// served on the repo's Unix socket (design §2). It is the only package that
// knows all the others.
//
// Lifecycle: New opens the repo's database and builds the host; Start joins
// gossip, dials the bootstrap peers and starts the periodic sync; Close
// stops everything and waits for it. Run does all three for `wats daemon`
// and serves the control API in between.
//
// Every /wats/1 stream goes through one handler shape (handler.go): attach
// the stream to the "wats" resource-manager service, set a read deadline,
// read one frame with the request cap, decode, pass Node.admit, serve, write
// one response and close; a protocol error resets the stream. Bad input gets
// a clear error response and is counted; it never stops the node.
//
// Files:
//   - node.go: Node, New, Start, Close, peer state.
//   - host.go: the libp2p host (TCP, QUIC, Noise, TLS, yamux, resource and
//     connection managers) and the connection gater.
//   - handler.go: the stream handler, admit, and the hello and sync handlers.
//   - hello.go: greeting peers on connect, the network check.
//   - syncer.go: the sync client (pipelined pages, persisted cursors).
//   - publish.go: local events and gossip delivery.
//   - fetch.go: the blob exchange and fetcher, auto-fetch (queue, retries,
//     the scan at start), the replicate handler; api_blobs.go: their API.
//   - crash.go: crash reports.
//   - api.go: the control API server; run.go: Run for the daemon.
//   - metrics.go: Prometheus counters, without peer labels.
package node
