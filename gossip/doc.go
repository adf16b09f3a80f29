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
// Under attack (ADR 0031): each message a peer forwards takes a token of
// that peer's budget at the RPC, before gossipsub checks anything; an
// event's author's budget is looked at before its signature is checked and
// taken after. A valid new envelope is handed to a Store callback from the
// validator, and accepted, so forwarded on, only once Store has made it
// durable (the node's log commits concurrent events in one batch).
// Envelopes gossipsub drops for want of room are reported to Missed, so
// the node syncs from their forwarder at once. Peer scoring counts invalid
// envelopes, broken IWANT promises, peers sharing an IP and the node's
// tier of the peer; no peer exchange is sent.
//
// The providers an envelope names are the node's to keep: blobs.Hints
// keeps at most 16 per blob, the newest (ADR 0014; ADR 0033, "One shape
// for a fetch").
//
// Files: gossip.go holds the topic, validator and publisher; score.go the
// peer scoring.
package gossip
