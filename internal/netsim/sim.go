package netsim

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/wats-network/wats/api"
	"github.com/wats-network/wats/config"
	"github.com/wats-network/wats/internal/devnet"
	"github.com/wats-network/wats/repo"
)

// Options configure a simulation (Run).
type Options struct {
	// Bin is the wats binary the daemons run.
	Bin string
	// Dir holds the nodes' repos and logs (node<i>/, node<i>/daemon.log).
	Dir string
	// Topology is the simulated internet. Its first public node is a
	// relay (p2p.relay_service); the first two are every node's
	// bootstrap peers.
	Topology Topology
	// Timeout bounds each step of the measurement.
	Timeout time.Duration
	// Log, if set, is told what the run does.
	Log func(format string, args ...any)
}

// Result is what a simulation measured (docs/scale.md records the full
// run's).
type Result struct {
	Nodes int `json:"nodes"`
	NATs  int `json:"nats"`
	// Discovery is the time from the daemons' start until every node had
	// found every other under the rendezvous key of the network's DHT (64
	// others, the most one look returns, in a larger run).
	Discovery time.Duration `json:"discovery_ns"`
	// Pairs counts the pairs of nodes by their best connection at the
	// end of the run: direct, hole-punched, relayed, or none.
	Pairs PairCounts `json:"pairs"`
	// Reachability counts the nodes by what AutoNAT found.
	Reachability map[string]int `json:"reachability"`
	// HolePunches sums the nodes' hole punches that ended.
	HolePunches api.HolePunches `json:"hole_punches"`
	// Gossip is the time an event published behind one NAT took to reach
	// every node.
	Gossip time.Duration `json:"gossip_ns"`
	// BlobAcross is the time from the blob's import behind one NAT until
	// a node behind another held it, fetched by CID alone (fetches that
	// found no provider yet, before the holder's record was on the DHT,
	// tried again every half second).
	BlobAcross time.Duration `json:"blob_across_ns"`
	// BlobProviderGone is the time from its named provider's stop until a
	// node held a blob (gossip's hint naming the stopped node), fetched
	// from a DHT provider.
	BlobProviderGone time.Duration `json:"blob_provider_gone_ns"`
	// Punch counts the pairs that hole punching (DCUtR) had to connect:
	// a node behind one NAT that reached a quiet node behind another only
	// through the relay, by the kinds of the two NATs, the dialler's first
	// ("cone-symmetric": a port-keeping NAT, then a symmetric one).
	Punch map[string]*PunchPairs `json:"punch,omitempty"`
	// BlobSymmetric is what became of a fetch, by CID alone, from behind
	// the first symmetric NAT, of a blob added and announced behind a NAT
	// that keeps ports: "" when the topology has none, "fetched in <time>"
	// from the announcement, or the error.
	BlobSymmetric string `json:"blob_symmetric,omitempty"`
}

// PairCounts counts pairs of nodes by how they are connected.
type PairCounts struct {
	Direct      int `json:"direct"`
	HolePunched int `json:"hole_punched"`
	Relayed     int `json:"relayed"`
	None        int `json:"none"`
}

// EnvDebug, when set, runs the simulation's daemons at log.level debug
// (libp2p's hole punching, AutoRelay and AutoNAT included), in
// node<i>/daemon.log.
const EnvDebug = "WATS_SIM_DEBUG"

// node is one daemon of a simulation.
type node struct {
	i    int
	host Host
	repo *repo.Repo
	id   peer.ID
	cl   *api.Client
	// d is the daemon once started.
	d *devnet.Daemon
	// halted: halt ran (its process group is gone: never signalled again).
	halted bool
}

// maxDiscovered is the most nodes one look under the rendezvous key
// returns (node's discoverLimit).
const maxDiscovered = 64

// simPort is the TCP and UDP port of the public nodes.
const simPort = 9287

// nodePort is node i's port: simPort for a public node, simPort+j for the
// j-th node behind a NAT. A home router keeps a flow's source port when it
// can (masquerade), so that peers observe the port a node's later flows
// leave from too, which hole punching needs; two nodes of one LAN on the
// same port would make the router pick another port for the second one's
// flows, a new one per flow.
func nodePort(n *Net, i int) int {
	h := n.Hosts[i]
	if h.NAT < 0 {
		return simPort
	}
	return simPort + int(h.IP.To4()[3]) - 10
}

// Run builds the simulated internet of o.Topology, runs a daemon on each
// node, measures what Result says, stops the daemons and deletes the
// namespaces, also when ctx ends (an interrupt) or a step fails.
func Run(ctx context.Context, o Options) (*Result, error) {
	if o.Log == nil {
		o.Log = func(string, ...any) {}
	}
	if o.Timeout == 0 {
		o.Timeout = 3 * time.Minute
	}
	n, err := Build(ctx, o.Topology)
	if err != nil {
		return nil, err
	}
	defer n.Close()
	o.Log("built %d namespaces for %d nodes behind %d NATs", n.namespaces(), len(n.Hosts), len(o.Topology.NATs))
	all, err := prepare(n, o)
	if err != nil {
		return nil, err
	}
	defer stop(all)
	var nodes, late []*node
	for _, nd := range all {
		if nd.host.Late {
			late = append(late, nd)
		} else {
			nodes = append(nodes, nd)
		}
	}
	start := time.Now()
	for _, nd := range nodes {
		if err := nd.start(o.Bin); err != nil {
			return nil, err
		}
	}
	for _, nd := range nodes {
		if err := nd.waitAPI(ctx, o.Timeout); err != nil {
			return nil, err
		}
	}
	o.Log("%d daemons up in %s", len(nodes), time.Since(start).Round(time.Millisecond))
	res := &Result{Nodes: len(nodes), NATs: len(o.Topology.NATs), Reachability: map[string]int{}}
	m := measure{ctx: ctx, o: o, nodes: nodes, late: late, res: res}
	for _, step := range []struct {
		name string
		f    func() error
	}{
		{"discovery", func() error { return m.discovery(start) }},
		{"gossip", m.gossip},
		{"blob across NATs", m.blobAcross},
		{"blob with its provider gone", m.blobProviderGone},
		{"blob behind a symmetric NAT", m.blobSymmetric},
		{"connections", m.connections},
		{"hole punching", m.holePunching},
	} {
		if err := step.f(); err != nil {
			return res, fmt.Errorf("netsim: %s: %w (logs in %s)", step.name, err, o.Dir)
		}
	}
	return res, nil
}

// prepare makes each node's repo: public nodes are DHT servers (the first
// a relay), nodes behind NATs are on p2p.dht auto; every node bootstraps
// from the first two public nodes.
func prepare(n *Net, o Options) ([]*node, error) {
	nodes := make([]*node, len(n.Hosts))
	var boot []string
	mk := func(i int) error {
		h := n.Hosts[i]
		cfg := config.Default()
		cfg.Network = "wats-sim"
		port := nodePort(n, i)
		cfg.P2P.Listen = []string{fmt.Sprintf("/ip4/%s/tcp/%d", h.IP, port), fmt.Sprintf("/ip4/%s/udp/%d/quic-v1", h.IP, port)}
		cfg.P2P.Bootstrap = boot
		cfg.P2P.DHT = config.DHTAuto
		// Blobs are fetched when a step asks, never by the events that
		// name them: a node must not hold a blob a step fetches later.
		// The public nodes keep the default, auto-fetch on: they fetch
		// what a node behind a NAT announces, and serve it to those that
		// cannot reach it (blobSymmetric; docs/adr/0047).
		cfg.Blobs.AutoFetch = h.NAT < 0
		if os.Getenv(EnvDebug) != "" {
			cfg.Log.Level = "debug"
		}
		if h.NAT < 0 {
			cfg.P2P.DHT = config.DHTServer
			cfg.P2P.RelayService = i == 0
		}
		if h.Late {
			// Quiet: it dials the relay, its one bootstrap peer and
			// relay, and no node it discovers (it has p2p.conns_low
			// peers), so that the others reach it through the relay.
			cfg.P2P.Bootstrap = boot[:1]
			cfg.P2P.Relays = boot[:1]
			cfg.P2P.ConnsLow = 1
		}
		r, err := repo.Init(filepath.Join(o.Dir, fmt.Sprintf("node%d", i)), &repo.InitOptions{Config: cfg})
		if err != nil {
			return err
		}
		id, err := peer.IDFromPrivateKey(r.Key)
		if err != nil {
			return err
		}
		nodes[i] = &node{i: i, host: h, repo: r, id: id, cl: api.NewClient(r.SocketPath())}
		return nil
	}
	bootN := min(2, o.Topology.Public)
	for i := range bootN {
		if err := mk(i); err != nil {
			return nil, err
		}
	}
	for i := range bootN {
		boot = append(boot, fmt.Sprintf("/ip4/%s/udp/%d/quic-v1/p2p/%s", n.Hosts[i].IP, simPort, nodes[i].id))
	}
	// The bootstrap nodes know each other.
	for i := range bootN {
		nodes[i].repo.Config.P2P.Bootstrap = append([]string{}, boot[:i]...)
		nodes[i].repo.Config.P2P.Bootstrap = append(nodes[i].repo.Config.P2P.Bootstrap, boot[i+1:]...)
		if _, err := devnet.PrepareRepo(nodes[i].repo.Dir, nodes[i].repo.Config); err != nil {
			return nil, err
		}
	}
	for i := bootN; i < len(nodes); i++ {
		if err := mk(i); err != nil {
			return nil, err
		}
	}
	return nodes, nil
}

// start runs the node's daemon in its namespace, with the simulated
// internet's address classes (EnvAddrs), its output in daemon.log.
func (nd *node) start(bin string) error {
	d, err := devnet.StartDaemonIn([]string{"ip", "netns", "exec", nd.host.NS}, []string{EnvAddrs + "=1"},
		bin, nd.repo.Dir, filepath.Join(nd.repo.Dir, "daemon.log"), nd.i, true)
	if err != nil {
		return err
	}
	nd.d = d
	return nil
}

// waitAPI waits until the daemon answers on its control API.
func (nd *node) waitAPI(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	_, err := nd.d.WaitAPI(ctx, nd.cl)
	return err
}

// halt stops the node's daemon (devnet.StopDaemons: SIGTERM, then SIGKILL
// after devnet.StopGrace), once.
func (nd *node) halt() {
	if nd.d == nil || nd.halted {
		return
	}
	nd.halted = true
	devnet.StopDaemons([]*devnet.Daemon{nd.d})
	nd.cl.Close()
}

// stop halts every daemon not halted yet, at once.
func stop(nodes []*node) {
	var live []*devnet.Daemon
	for _, nd := range nodes {
		if nd.d != nil && !nd.halted {
			nd.halted = true
			live = append(live, nd.d)
			defer nd.cl.Close()
		}
	}
	devnet.StopDaemons(live)
}

// measure runs the steps of a simulation.
type measure struct {
	ctx   context.Context
	o     Options
	nodes []*node
	// late are the Late nodes, started by holePunching.
	late []*node
	res  *Result
}

// poll calls cond every half second until it is true, or fails after the
// step's timeout.
func (m *measure) poll(what string, cond func(context.Context) (bool, error)) error {
	ctx, cancel := context.WithTimeout(m.ctx, m.o.Timeout)
	defer cancel()
	var last error
	for {
		ok, err := cond(ctx)
		if ok && err == nil {
			return nil
		}
		if err != nil {
			last = err
		}
		select {
		case <-ctx.Done():
			if err := m.ctx.Err(); err != nil {
				return fmt.Errorf("%s: interrupted: %w", what, err)
			}
			return fmt.Errorf("%s: not within %s (last error: %v)", what, m.o.Timeout, last)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// live are the nodes whose daemon runs.
func (m *measure) live() []*node {
	var out []*node
	for _, nd := range m.nodes {
		select {
		case <-nd.d.Exited():
		default:
			out = append(out, nd)
		}
	}
	return out
}

// discovery waits until every node found every other under the
// rendezvous key.
func (m *measure) discovery(start time.Time) error {
	// A look returns at most 64 nodes (the node's discoverLimit).
	want := min(len(m.nodes)-1, maxDiscovered)
	err := m.poll("every node found every other on the DHT", func(ctx context.Context) (bool, error) {
		for _, nd := range m.nodes {
			st, err := nd.cl.Status(ctx)
			if err != nil {
				return false, fmt.Errorf("node%d: %w", nd.i, err)
			}
			if st.DHT.Discovered < want {
				return false, fmt.Errorf("node%d found %d of %d", nd.i, st.DHT.Discovered, want)
			}
		}
		return true, nil
	})
	m.res.Discovery = time.Since(start)
	m.o.Log("discovery: every node found the %d others in %s", want, m.res.Discovery.Round(time.Millisecond))
	return err
}

// gossip publishes an event on the first node behind a NAT and waits until
// every node holds it.
func (m *measure) gossip() error {
	from := m.natNode(0, 0)
	before := map[int]uint64{}
	for _, nd := range m.nodes {
		st, err := nd.cl.Status(m.ctx)
		if err != nil {
			return err
		}
		before[nd.i] = st.Events
	}
	start := time.Now()
	if _, err := from.cl.AddEvent(m.ctx, "note", jsontext.Value(`{"sim":"gossip"}`)); err != nil {
		return err
	}
	err := m.poll("the event on every node", func(ctx context.Context) (bool, error) {
		for _, nd := range m.nodes {
			st, err := nd.cl.Status(ctx)
			if err != nil || st.Events <= before[nd.i] {
				return false, err
			}
		}
		return true, nil
	})
	m.res.Gossip = time.Since(start)
	m.o.Log("gossip: the event reached every node in %s", m.res.Gossip.Round(time.Millisecond))
	return err
}

// natNode is the j-th node behind NAT r (the last one if fewer).
func (m *measure) natNode(r, j int) *node {
	var behind []*node
	for _, nd := range m.nodes {
		if nd.host.NAT == r {
			behind = append(behind, nd)
		}
	}
	if len(behind) == 0 {
		return m.nodes[0]
	}
	return behind[min(j, len(behind)-1)]
}

// addBlob adds size random bytes as a blob on nd.
func addBlob(ctx context.Context, nd *node, size int) (*api.BlobInfo, error) {
	b := make([]byte, size)
	_, _ = rand.Read(b)
	return nd.cl.AddBlob(ctx, bytes.NewReader(b))
}

// fetch has nd fetch blob bi by its CID and size alone, within ctx and
// the step's timeout, and returns the time it took.
func (m *measure) fetch(ctx context.Context, nd *node, bi *api.BlobInfo) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, m.o.Timeout)
	defer cancel()
	start := time.Now()
	err := nd.cl.FetchBlob(ctx, api.FetchRequest{CID: bi.CID, Size: bi.Size}, nil)
	return time.Since(start), err
}

// blobAcross adds a blob behind the first NAT and fetches it, by CID
// alone, from behind the second.
func (m *measure) blobAcross() error {
	holder, getter := m.natNode(0, 0), m.natNode(1, 0)
	bi, err := addBlob(m.ctx, holder, 4<<20)
	if err != nil {
		return err
	}
	// The holder provides it on the DHT in the background: until its
	// record is there, a fetch finds no provider and is tried again.
	start := time.Now()
	err = m.poll("the blob fetched across NATs", func(ctx context.Context) (bool, error) {
		_, err := m.fetch(ctx, getter, bi)
		return err == nil, err
	})
	m.res.BlobAcross = time.Since(start)
	m.o.Log("blob: node%d (NAT 0) -> node%d (NAT 1) by CID in %s", holder.i, getter.i, m.res.BlobAcross.Round(time.Millisecond))
	return err
}

// blobProviderGone: a node behind the first NAT adds a blob and publishes
// an event naming it (gossip's hint names it as the provider); a node
// behind the second NAT fetches it; the first is stopped; a node behind
// the last NAT then fetches it, its named provider gone, from the DHT's.
func (m *measure) blobProviderGone() error {
	holder, second := m.natNode(0, 1), m.natNode(1, 1)
	// The last fetcher is behind a third NAT that keeps ports (hole
	// punching works there), or behind the second's if there is none.
	last := m.natNode(1, 2)
	for r, nat := range m.o.Topology.NATs {
		if r >= 2 && !nat.Symmetric {
			last = m.natNode(r, 0)
			break
		}
	}
	if last == holder || last == second {
		return errors.New("the topology needs three nodes behind NATs besides the holder")
	}
	bi, err := addBlob(m.ctx, holder, 2<<20)
	if err != nil {
		return err
	}
	if _, err := holder.cl.AddEvent(m.ctx, "file", jsontext.Value(`{"sim":"provider-gone"}`),
		api.BlobRef{CID: bi.CID, Size: bi.Size, Name: "sim.bin"}); err != nil {
		return err
	}
	if err := m.poll("the blob on a second node", func(ctx context.Context) (bool, error) {
		_, err := m.fetch(ctx, second, bi)
		return err == nil, err
	}); err != nil {
		return err
	}
	holder.halt()
	m.o.Log("stopped node%d, the blob's named provider", holder.i)
	start := time.Now()
	err = m.poll("the blob fetched with its named provider gone", func(ctx context.Context) (bool, error) {
		_, err := m.fetch(ctx, last, bi)
		return err == nil, err
	})
	m.res.BlobProviderGone = time.Since(start)
	m.o.Log("blob: node%d fetched it with its provider gone in %s", last.i, m.res.BlobProviderGone.Round(time.Millisecond))
	return err
}

// blobSymmetric: a node behind the first NAT that keeps ports adds a
// 4 MiB blob and announces it (an event naming it); the public nodes
// fetch it, as every node with blobs.auto_fetch does, and the first node
// behind a symmetric NAT, which no hole punch reaches, fetches it by CID
// alone from one of them (docs/adr/0047). Its outcome is a figure, not a
// failure: "" when the topology has no symmetric NAT, "fetched in <time>"
// (from the announcement), or the error.
func (m *measure) blobSymmetric() error {
	sym, holder := -1, -1
	for r, nat := range m.o.Topology.NATs {
		switch {
		case nat.Symmetric && sym < 0:
			sym = r
		case !nat.Symmetric && holder < 0:
			holder = r
		}
	}
	if sym < 0 || holder < 0 {
		return nil
	}
	from, getter := m.natNode(holder, 0), m.natNode(sym, 0)
	bi, err := addBlob(m.ctx, from, 4<<20)
	if err != nil {
		return err
	}
	start := time.Now()
	if _, err := from.cl.AddEvent(m.ctx, "file", jsontext.Value(`{"sim":"symmetric"}`),
		api.BlobRef{CID: bi.CID, Size: bi.Size, Name: "sym.bin"}); err != nil {
		return err
	}
	err = m.poll("the announced blob behind the symmetric NAT", func(ctx context.Context) (bool, error) {
		_, err := m.fetch(ctx, getter, bi)
		return err == nil, err
	})
	if err != nil {
		m.res.BlobSymmetric = err.Error()
	} else {
		m.res.BlobSymmetric = "fetched in " + time.Since(start).Round(time.Millisecond).String()
	}
	m.o.Log("blob behind the symmetric NAT: %s", m.res.BlobSymmetric)
	return nil
}

// connections counts the pairs of live nodes by their best connection,
// the nodes by reachability, and the hole punches.
func (m *measure) connections() error {
	live := m.live()
	kind := map[[2]peer.ID]string{}
	rank := map[string]int{api.ConnRelayed: 1, api.ConnDirect: 2, api.ConnHolePunched: 3}
	for _, nd := range live {
		st, err := nd.cl.Status(m.ctx)
		if err != nil {
			return err
		}
		m.res.Reachability[st.Reachability]++
		m.res.HolePunches.Succeeded += st.HolePunches.Succeeded
		m.res.HolePunches.Failed += st.HolePunches.Failed
		peers, err := nd.cl.Peers(m.ctx)
		if err != nil {
			return err
		}
		for _, p := range peers {
			id, err := peer.Decode(p.PeerID)
			if err != nil {
				continue
			}
			k := pairKey(nd.id, id)
			if rank[p.Conn] > rank[kind[k]] {
				kind[k] = p.Conn
			}
		}
	}
	for i, a := range live {
		for _, b := range live[i+1:] {
			switch kind[pairKey(a.id, b.id)] {
			case api.ConnDirect:
				m.res.Pairs.Direct++
			case api.ConnHolePunched:
				m.res.Pairs.HolePunched++
			case api.ConnRelayed:
				m.res.Pairs.Relayed++
			default:
				m.res.Pairs.None++
				m.o.Log("pairs: node%d (%s) and node%d (%s) are not connected", a.i, m.where(a), b.i, m.where(b))
			}
		}
	}
	m.o.Log("pairs: %+v; reachability %v; hole punches %+v", m.res.Pairs, m.res.Reachability, m.res.HolePunches)
	return nil
}

// where says where nd is: "public", or its NAT's index and kind.
func (m *measure) where(nd *node) string {
	if nd.host.NAT < 0 {
		return "public"
	}
	return fmt.Sprintf("NAT %d, %s", nd.host.NAT, m.natKind(nd.host.NAT))
}

func pairKey(a, b peer.ID) [2]peer.ID {
	if strings.Compare(string(a), string(b)) > 0 {
		a, b = b, a
	}
	return [2]peer.ID{a, b}
}
