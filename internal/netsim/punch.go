package netsim

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/wats-network/wats/api"
)

// PunchPairs are the pairs of one kind of NAT pair that the hole punching
// step connected through the relay (Result.Punch), by how they ended.
type PunchPairs struct {
	// Pairs were tried: Direct ended with a direct connection (hole-punched,
	// or dialled directly after it), Relayed with the relay's only, None
	// with no connection (the dial through the relay failed).
	Pairs   int `json:"pairs"`
	Direct  int `json:"direct"`
	Relayed int `json:"relayed"`
	None    int `json:"none"`
	// ToDirect are the times from the relayed connection to the direct
	// one, of the pairs that ended direct, shortest first.
	ToDirect []time.Duration `json:"to_direct_ns"`
}

// Median is the median of ToDirect (the higher of the two in the middle),
// 0 for none.
func (p *PunchPairs) Median() time.Duration {
	if len(p.ToDirect) == 0 {
		return 0
	}
	return p.ToDirect[len(p.ToDirect)/2]
}

// DirectPct is the pairs that ended direct, in percent of those tried.
func (p *PunchPairs) DirectPct() float64 {
	return 100 * float64(p.Direct) / float64(max(p.Pairs, 1))
}

// punchWait is how long the step waits, after a relayed connection, for
// the direct one: three times the 5 s it may take (DCUtR's direct dial
// first, then its punches, a few round trips each).
const punchWait = 15 * time.Second

// punchFromEachNAT is how many nodes of each other NAT connect to a quiet
// node: a relay serves 16 circuits a peer at once (routing's
// relayResources), and the pairs with a symmetric NAT keep theirs.
const punchFromEachNAT = 2

// punchPoll is how often the step looks at a pair's connection.
const punchPoll = 100 * time.Millisecond

// natKind names NAT r's kind: "cone" (ports kept) or "symmetric".
func (m *measure) natKind(r int) string {
	if m.o.Topology.NATs[r].Symmetric {
		return "symmetric"
	}
	return "cone"
}

// holePunching measures DCUtR's case: it starts the Late nodes, quiet
// ones that dial nobody but the relay, waits for their relay addresses,
// then has punchFromEachNAT nodes behind each other NAT connect to each at
// its relay address, and times each pair from the relayed connection to a direct
// one, at most punchWait (Result.Punch).
func (m *measure) holePunching() error {
	if len(m.late) == 0 {
		return nil
	}
	for _, nd := range m.late {
		if err := nd.start(m.o.Bin); err != nil {
			return err
		}
	}
	relayAddr := map[int]string{}
	for _, nd := range m.late {
		if err := nd.waitAPI(m.ctx, m.o.Timeout); err != nil {
			return err
		}
		err := m.poll(fmt.Sprintf("node%d's relay address", nd.i), func(ctx context.Context) (bool, error) {
			st, err := nd.cl.Status(ctx)
			if err != nil || len(st.RelayAddrs) == 0 {
				return false, err
			}
			a := st.RelayAddrs[0]
			if !strings.HasSuffix(a, "/p2p/"+nd.id.String()) {
				a += "/p2p/" + nd.id.String()
			}
			relayAddr[nd.i] = a
			return true, nil
		})
		if err != nil {
			return err
		}
	}
	m.o.Log("hole punching: %d quiet nodes reserved a slot on the relay", len(m.late))
	m.res.Punch = map[string]*PunchPairs{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, l := range m.late {
		from := map[int]int{} // dialers so far, by NAT
		for _, d := range m.nodes {
			if d.host.NAT < 0 || d.host.NAT == l.host.NAT || d.halted || from[d.host.NAT] == punchFromEachNAT {
				continue
			}
			from[d.host.NAT]++
			kind := m.natKind(d.host.NAT) + "-" + m.natKind(l.host.NAT)
			wg.Go(func() {
				conn, took := m.punch(d, l, relayAddr[l.i])
				mu.Lock()
				defer mu.Unlock()
				p := m.res.Punch[kind]
				if p == nil {
					p = &PunchPairs{}
					m.res.Punch[kind] = p
				}
				p.Pairs++
				switch conn {
				case api.ConnDirect, api.ConnHolePunched:
					p.Direct++
					p.ToDirect = append(p.ToDirect, took)
				case api.ConnRelayed:
					p.Relayed++
				default:
					p.None++
				}
			})
		}
	}
	wg.Wait()
	for kind, p := range m.res.Punch {
		slices.Sort(p.ToDirect)
		m.o.Log("hole punching %s: %d of %d pairs direct (%.0f%%), %d relayed, %d none; relayed to direct: median %s",
			kind, p.Direct, p.Pairs, p.DirectPct(), p.Relayed, p.None, p.Median().Round(time.Millisecond))
	}
	return nil
}

// punch has d connect to l at its relay address and returns how they are
// connected once a direct connection came, or after punchWait (api.Peer.
// Conn; "" for none), and the time from the relayed connection to the
// direct one.
func (m *measure) punch(d, l *node, addr string) (conn string, took time.Duration) {
	ctx, cancel := context.WithTimeout(m.ctx, punchWait+m.o.Timeout)
	defer cancel()
	if _, err := d.cl.Connect(ctx, addr); err != nil {
		m.o.Log("hole punching: node%d to node%d through the relay: %v", d.i, l.i, err)
		return "", 0
	}
	start := time.Now()
	for {
		conn = m.connOf(ctx, d, l)
		if conn == api.ConnDirect || conn == api.ConnHolePunched || time.Since(start) >= punchWait {
			return conn, time.Since(start)
		}
		select {
		case <-ctx.Done():
			return conn, time.Since(start)
		case <-time.After(punchPoll):
		}
	}
}

// connOf is how d is connected to l (api.Peer.Conn), "" when it is not.
func (m *measure) connOf(ctx context.Context, d, l *node) string {
	peers, err := d.cl.Peers(ctx)
	if err != nil {
		return ""
	}
	for _, p := range peers {
		if p.PeerID == l.id.String() {
			return p.Conn
		}
	}
	return ""
}
