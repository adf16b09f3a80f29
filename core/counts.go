package core

// Counts are a peer's value history (docs/design.md §8, ADR 0030): one
// type for the node's run state of a peer, the peer cache's records, the
// tiers worked out from them (limits.History) and the control API's
// answers. Of the peer's requests to this node: Served, answered;
// Refused, turned away over a limit; Challenged, answered with a
// challenge (ADR 0014); Solved, let through by a solution; Misses, asking
// for what never existed here (a sync cursor past the head, a blob no
// event names, a crash report already held). Abuse signals: Invalid
// messages (requests that do not decode, events and envelopes that do not
// verify), Failed solutions, Timeouts (streams held past the deadline of
// negotiation or of a request's first bytes). What it gave: Events
// delivered first, Bytes of blobs fetched from it.
type Counts struct {
	Served     uint64 `json:"served"`
	Refused    uint64 `json:"refused"`
	Challenged uint64 `json:"challenged"`
	Solved     uint64 `json:"solved"`
	Misses     uint64 `json:"misses"`
	Invalid    uint64 `json:"invalid"`
	Failed     uint64 `json:"failed"`
	Timeouts   uint64 `json:"timeouts"`
	Events     uint64 `json:"events"`
	Bytes      uint64 `json:"bytes"`
}

// IsZero reports whether c counts nothing.
func (c Counts) IsZero() bool { return c == Counts{} }

// Plus returns c + d, count by count.
func (c Counts) Plus(d Counts) Counts {
	return Counts{
		Served: c.Served + d.Served, Refused: c.Refused + d.Refused, Challenged: c.Challenged + d.Challenged,
		Solved: c.Solved + d.Solved, Misses: c.Misses + d.Misses, Invalid: c.Invalid + d.Invalid,
		Failed: c.Failed + d.Failed, Timeouts: c.Timeouts + d.Timeouts, Events: c.Events + d.Events, Bytes: c.Bytes + d.Bytes,
	}
}

// Minus returns c - d, count by count (d counted no more than c).
func (c Counts) Minus(d Counts) Counts {
	return Counts{
		Served: c.Served - d.Served, Refused: c.Refused - d.Refused, Challenged: c.Challenged - d.Challenged,
		Solved: c.Solved - d.Solved, Misses: c.Misses - d.Misses, Invalid: c.Invalid - d.Invalid,
		Failed: c.Failed - d.Failed, Timeouts: c.Timeouts - d.Timeouts, Events: c.Events - d.Events, Bytes: c.Bytes - d.Bytes,
	}
}
