package peers

import (
	"sync"

	"github.com/libp2p/go-libp2p/core/peer"
)

// choices are the peers this node chose to dial, which have standing (ADR
// 0041 and its addendum): the dials of p2p.Dialer in flight, and the
// peers chosen for the whole run whoever dials (ChooseAlways). They are kept apart
// from the connections' direction: a connection this node opened may be a
// DHT query's, a provider's, autonat's or a relay's, whose peers others
// chose.
type choices struct {
	mu sync.Mutex
	// dialling counts the chosen dials of each peer in flight. At most
	// the dials running at once: each entry goes when its last dial
	// returns.
	dialling map[peer.ID]int
	// kept are the peers chosen for the run (the config's bootstrap
	// peers): as many as the config names.
	kept map[peer.ID]struct{}
}

// chosen reports whether p is being dialled by choice or was kept.
func (c *choices) chosen(p peer.ID) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, kept := c.kept[p]
	return kept || c.dialling[p] > 0
}

// Choose records that this node chose to dial p: an operator's connect,
// a bootstrap peer, a redial of the peer cache, a peer found by discovery
// (p2p.Dialer, ADR 0041's addendum). Call it before the dial and done
// after it, with whether the dial connected. The state of p made while
// the dial is in flight (by the dial's connection, or by p's own crossing
// it) is chosen, and so is p's state when done reports it connected,
// whoever opened its connection: a chosen dial of a peer connected
// inbound gives it standing. Standing so gained lasts for p's stay and,
// as the Table remembers a disconnected peer (RecentFor), for its
// reconnections: a chosen peer that restarts and dials this node back, or
// a relayed one dialled again, keeps it. done may be called more than
// once; the first call counts.
func (t *Table[L]) Choose(p peer.ID) (done func(connected bool)) {
	t.ch.mu.Lock()
	t.ch.dialling[p]++
	t.ch.mu.Unlock()
	var once sync.Once
	return func(connected bool) {
		once.Do(func() {
			// Marked before the count goes down: a state made meanwhile
			// sees the count, one made before is marked here.
			if st := t.Get(p); connected && st != nil {
				st.chosen.Store(true)
			}
			t.ch.mu.Lock()
			defer t.ch.mu.Unlock()
			if t.ch.dialling[p]--; t.ch.dialling[p] <= 0 {
				delete(t.ch.dialling, p)
			}
		})
	}
}

// ChooseAlways records p as chosen for the whole run, whoever dials: a bootstrap
// peer of the config, which may dial this node before this node's own
// dial reaches it. Its state, connected or made later, is chosen.
func (t *Table[L]) ChooseAlways(p peer.ID) {
	t.ch.mu.Lock()
	t.ch.kept[p] = struct{}{}
	t.ch.mu.Unlock()
	if st := t.Get(p); st != nil {
		st.chosen.Store(true)
	}
}
