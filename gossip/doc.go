// Package gossip spreads new events to the network over libp2p gossipsub
// (docs/design.md §6).
//
// Every node of a network joins one topic, /wats/events/1/<network>. A
// message is an envelope, {"event": <signed event>, "providers": [...]},
// that names up to 8 peers which can serve the event's blobs; the publisher
// names itself. The topic validator rejects, never truncates, an envelope
// over 64 KiB, one with more than 8 providers (or more than 4 addresses for
// one of them), and one whose event does not verify; gossipsub then drops it
// and scores its sender down. An event the node already holds is ignored:
// not delivered again and not forwarded.
//
// Received envelopes are handed to a Deliver callback with the decoded
// event; the node stores the event and records the provider hints. Hints
// keeps at most 16 hints per blob, the newest (ADR 0014).
//
// Files: gossip.go holds the topic, validator and publisher; hints.go the
// provider-hint table.
package gossip
