// Package node wires a wats node together (docs/design.md §2, ADR 0046):
// the libp2p host, the stores (package store), the peers' state and
// decisions (package peers), gossip, the sync client (package catchup),
// heads announcements (package heads), the blob service (package blobs),
// the DHT and NAT traversal (package routing). It is the only package that
// knows all the others; it owns no decision of its own. The control API's
// server is package daemon's; node answers it through exported methods.
//
// Lifecycle: New takes a config and an identity key, opens the stores
// (Options.Dir's, or in memory) and builds the host; Start joins gossip,
// dials the bootstrap and known peers and starts the background loops;
// Close stops everything and waits for it.
//
// Every inbound stream is negotiated by acceptStream within per-tier caps
// (streams.go). Every /wats/1 stream goes through one handler
// (handler.go): attach it to the "wats" resource-manager service, hold the
// peer to its cap of streams, read the frame within its deadlines, decode,
// classify what it asks for (peers.Classify), pass Node.admit (admit.go:
// peers.Table.Admit's verdict carried out), serve, write one response. Bad
// input gets a clear error response and is counted in the peer's value
// history; it never stops the node.
//
// What the node carries out of package peers' verdicts (tags, bans,
// closes, metrics, logs) is in peers.go; the node's own plumbing for each
// peer is its link. The other files wire one package each: gossip.go
// (gossip's budgets and the store of gossiped events, ADR 0031), syncer.go
// (catchup.Client), heads.go, fetch.go (blobs.Service and the exchange's
// one call up, blobsNode), routing.go, challenge.go, hello.go, publish.go
// and crash.go (local events, crash reports); api.go and control.go answer
// the control server.
package node
