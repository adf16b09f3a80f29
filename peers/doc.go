// Package peers is everything a node knows of its peers and decides about
// them, apart from the libp2p host that connects them (ADR 0030, ADR 0046):
// a Table holds each connected peer's state (Peer: its connection's facts,
// hello, tier and value history, standing, sync cursor), remembers the
// recently disconnected, owns the stranger connection slots (Slots), the
// budget of new peer-cache records, and admission (Admit: limits.Policy's
// decision with the strangers' shared budgets and what a solution buys).
//
// Its decisions take the moment as values (the wall clock for what
// outlives the run, the node's monotonic reading for the rest) and return
// verdicts the node carries out: a tier to tag, a stranger to ban and
// close, a challenge to issue, a record made or put off. The scripts in
// testdata/ step through them: connect, hello, request, flood, fold,
// disconnect, reconnect and restart at given times.
package peers
