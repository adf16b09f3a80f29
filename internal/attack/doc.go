// Package attack is the project's own attack suite (ADR 0030;
// docs/reliability.md): attackers that speak /wats/1 and bitswap to a real
// daemon on 127.0.0.1 the way strangers on the internet can, and the honest
// load whose service they are measured by. `wats bench attack` runs a daemon,
// the honest load in its own process and the attacker in another at the
// lowest CPU priority, and reports, per scenario, the honest requests
// served and their latency, the newcomers served, and the daemon's memory,
// log lines and CPU.
//
// An attacker's ids are cheap (Identity: an Ed25519 key with a TCP, Noise
// and yamux transport of its own, no libp2p host), so that one process can
// make hundreds of fresh ids a second. The honest peers are the same kind
// of client, but they answer the node's hello, advertise "challenge" and
// solve what they are given, as wats nodes do.
//
// Files: conn.go (Identity, Conn, requests), honest.go (the honest load
// and its figures), attackers.go (the attacks).
//
// This package is a tool: nothing in the node imports it.
package attack
