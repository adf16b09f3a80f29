// Package bench holds the harnesses behind `wats bench`: each measures
// the node on this machine and returns its figures as a struct that
// cmd/wats prints as a table or as JSON (the JSON field names are part of
// the command's output).
//
//   - Sync (`bench sync`): two nodes in this process on 127.0.0.1, the
//     first filled with signed events through node's exported API, the
//     second timed catching up by sync, against crypto/ed25519's single
//     checks of the same signatures on all cores (ADR 0034). It reports
//     each figure as it is measured (Figure), which the command prints at
//     once, a line of text or of JSON each.
//   - Fetch (`bench fetch`): two daemons of a devnet (internal/devnet), a
//     blob imported into one and fetched by the other over bitswap.
//   - Disk (`bench disk`): fsyncs of small appends, as the event log's WAL
//     makes them.
//   - RunAttack and RunKill (`bench attack`, docs/adr/0030): a daemon under
//     each attack of internal/attack while an honest load is measured;
//     kill -9 during writes.
//   - RunGossip (`bench gossip`, docs/adr/0031): three daemons in a line
//     under gossip attacks while A's honest events are timed to C.
//
// The attackers run in another process, this same binary re-executed as
// a hidden subcommand (`wats bench attack-worker`, `wats bench
// gossip-worker`, kept in cmd/wats with the flags RunAttack and RunGossip
// pass), at nice 19 on every thread (startNiced), so that the figures
// describe the node and not two processes sharing the cores; the
// subcommands call AttackWorker and GossipWorker, which print the figures
// the harness reads back.
//
// Files: sync.go, fetch.go, disk.go, attack.go, gossip.go (the benches);
// netns.go (the network namespace of `bench gossip --netns`); nice.go
// (startNiced); figures.go (what /proc says of a process: RSS, CPU, the
// nice of its threads; disk use; quantiles).
package bench
