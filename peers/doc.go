// Package peers is what a node decides about its peers, apart from the
// libp2p host that connects them: whom the stranger connection slots
// keep and whom they evict (Slots, ADR 0030), and who is reputed (Reputed,
// ADR 0014). Its decisions take the monotonic reading of the moment as a
// value and return verdicts the node carries out (an eviction it bans and
// closes); they are stepped through by the scripts in testdata/.
//
// It is to own all that the node knows of a peer (docs/adr/0046); for now
// the run state of peers is the node's, and these decisions read it
// through the facts the node gives them.
package peers
