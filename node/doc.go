// Package node wires a wats node together: the libp2p host, the pebble
// database, the event log, the peer cache, gossip, the /wats/1 request
// handlers with their admission point, the sync client and the blob
// fetcher (docs/design.md §2). It is the only package that knows all the
// others. The control API's HTTP server, and Run for `wats daemon`, are
// package daemon's; node answers them through exported methods. What a
// database is apart from a running node (its pebble options, reading a
// stopped repo, checking and repairing one) is package store's.
//
// Lifecycle: New takes a config and an identity key, opens the database
// (Options.Dir's, or one in memory) and builds the host; Start joins
// gossip, dials the bootstrap peers and starts the periodic sync; Close
// stops everything and waits for it. daemon.Run does all three on a repo
// for `wats daemon` and serves the control API in between.
//
// Every /wats/1 stream goes through one handler shape (handler.go): attach
// the stream to the "wats" resource-manager service, hold the peer to its
// cap of streams (by tier), read its length prefix within 2 s and the frame
// within 10 s with the request cap, decode, classify what it asks for,
// pass Node.admit, serve, write one response and close; a protocol error
// resets the stream. Bad input gets a clear error response and is counted
// in the peer's value history; it never stops the node.
//
// Holding under attack (ADR 0030): all the node knows of its peers and
// decides about them is a peers.Table (their state, value history and
// tier, records earned by value, the stranger slots, admission, the sync
// cursors); peers.go carries out its verdicts (tags, bans, closes, metrics,
// logs). Every inbound stream is negotiated by acceptStream, held to
// per-tier caps (package p2p's) and a 2 s deadline (streams.go); the
// resource manager has explicit limits for every scope (package p2p);
// peer-caused log lines go through one cap (peerlog.go).
//
// Files:
//   - node.go: Node, New, Start, Close, connection notices, call (every
//     request this node sends).
//   - peers.go: the node's side of package peers: the verdicts carried
//     out, and the node's plumbing for each peer (link).
//   - streams.go: the inbound stream handler, per-tier caps, flood bans.
//   - peerlog.go: the cap on peer-caused log lines.
//   - admit.go: Node.admit and the request classes.
//   - handler.go: the stream handler, and the hello and sync handlers.
//   - hello.go: greeting peers on connect, the network check.
//   - syncer.go: when and from where the sync client runs (package
//     catchup's run), the store of what it verified, persisted cursors.
//   - publish.go: local events and gossip delivery.
//   - gossip.go: gossip's callbacks (its budgets, spam bans and scores
//     are package peers' decisions), the store of gossiped events (ADR
//     0031).
//   - heads.go: heads announcements (docs/adr/0041): the announcer to
//     each peer, the reader of each peer's, the pulls (their budget and
//     standing are package peers').
//   - challenge.go: the load challenge: issuing, checking solutions,
//     solving the challenges of the peers this node calls.
//   - fetch.go: the blob exchange and fetcher, the auto-fetch workers on
//     blobs.Scheduler (whose are the queue and the retries), the scan at
//     start, the replicate handler.
//   - crash.go: crash reports.
//   - routing.go: the wiring of package routing (the network's DHT,
//     docs/adr/0040): its options, dials by peer ID, providing blobs;
//     nat.go: how each peer is connected, the node's reachability.
//   - api.go: the answers in api's types (Status, Peers, Limits,
//     Diag, PeerCache); control.go: what else the control server
//     (daemon) reads and drives.
//   - lost.go: acknowledged events lost with a WAL's tail, looked for
//     until they are back (ADR 0045); disk.go: the disk guard (ADR 0044).
//   - options.go: Options and their defaults.
//   - node.go's newMetrics: what package metrics reads of the node.
package node
