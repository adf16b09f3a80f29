// Package heads carries heads announcements (docs/adr/0041), the part of
// wats that makes every event arrive whatever gossip loses: each node
// tells each peer, on a one-way stream of its own (proto.HeadsID), how far
// its log reaches and the short ids (core.ShortID) of the events it
// stored since it last said; the peer checks that it holds each of them
// and pulls what it lacks with a /wats/1 sync, within the pull budget the
// node gives that peer.
//
// Gossip is the fast path and stays it: an event it delivers is held
// before the announcement is looked at (Options.Grace), and the reader
// only moves its sync cursor past it. What a full queue, a budget or a
// lost promise dropped on the way is missing when the reader looks, and
// it is pulled then. Scuttlebutt's epidemic broadcast trees and Hypercore
// work the same way: peers tell each other how far their logs reach, and
// pull what they lack.
//
// The package has three parts:
//
//   - Window and Decide (window.go): what a reader knows of a peer's log
//     from its announcements, and the pure decision of what to do about
//     it: move the cursor past what it holds, and pull from the first
//     position it does not (testdata/*.txt).
//   - Tracker (tracker.go): per peer, the window, a check Grace after each
//     announcement, and the pulls, one page each, within Options.Allow.
//   - Announce and Read (stream.go): the two ends of a Heads stream.
//
// It imports no wats package but core and proto; the node wires it to
// the log, the sync client and the budgets.
package heads
