package netsim

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/wats-network/wats/internal/devnet"
)

// Topology is the shape of a simulated internet: public nodes on the
// "internet" segment, and home routers each with nodes behind its NAT.
type Topology struct {
	// Public is the number of nodes with a public address (the first ones
	// are the network's bootstrap nodes).
	Public int
	// NATs are the home routers, in order.
	NATs []NAT
}

// NAT is one home router and the nodes on its LAN.
type NAT struct {
	// Nodes behind it.
	Nodes int
	// Symmetric gives each outbound flow a random source port
	// (endpoint-dependent mapping: nftables masquerade fully-random), on
	// which hole punching fails; otherwise the router keeps the source
	// port where it can (endpoint-independent mapping: masquerade).
	Symmetric bool
	// Late nodes are behind it too, started only for the hole punching
	// step: quiet ones, which dial no other node, so that the others reach
	// them through a relay first (DCUtR's case; Result.Punch).
	Late int
}

// Host is one node's place in the net: its namespace and address.
type Host struct {
	// NS is the network namespace the node runs in.
	NS string
	// IP is its address: in PublicNet for a public node, in its router's
	// /24 of PrivateNet behind a NAT.
	IP net.IP
	// NAT is the index of its router in Topology.NATs, -1 for a public
	// node.
	NAT int
	// Late: one of its NAT's Late nodes.
	Late bool
}

// Net is a simulated internet built of network namespaces: one for the
// internet (a bridge), one per home router (a WAN link on the bridge, a
// LAN bridge, forwarding and an nftables masquerade), one per node. Build
// it with Build, and Close it: Close deletes every namespace it made, and
// with them their links.
type Net struct {
	prefix string
	// Hosts are the nodes' places: the public ones first, then each
	// NAT's, in Topology order.
	Hosts []Host

	mu  sync.Mutex
	nss []string // made, in order
}

// Need reports why this process cannot build a Net (not root, no `ip` or
// no `nft`), or nil when it can.
func Need() error {
	if os.Geteuid() != 0 {
		return errors.New("needs root, to make network namespaces")
	}
	for _, tool := range []string{"ip", "nft"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("needs %q on $PATH (iproute2, nftables)", tool)
		}
	}
	return nil
}

// nsPrefix is the prefix of this process's namespaces: ws<pid>-.
func nsPrefix() string { return "ws" + itoa(os.Getpid()) + "-" }

func itoa(i int) string { return strconv.Itoa(i) }

// nsPattern matches the namespaces a Net names: ws<pid>-<name>.
var nsPattern = regexp.MustCompile(`^ws(\d+)-`)

// Build makes the namespaces of topo, named after this process
// ("ws<pid>-…"). It first deletes the namespaces of earlier runs whose
// process is gone (killed before it could tear down). On failure it
// deletes what it made.
func Build(ctx context.Context, topo Topology) (n *Net, err error) {
	if err := Need(); err != nil {
		return nil, err
	}
	if topo.Public < 1 || topo.Public > 200 {
		return nil, errors.New("netsim: 1 to 200 public nodes")
	}
	if len(topo.NATs) > 200 {
		return nil, errors.New("netsim: at most 200 NATs")
	}
	if err := ReapLeftovers(ctx); err != nil {
		return nil, err
	}
	n = &Net{prefix: nsPrefix()}
	defer func() {
		if err != nil {
			n.Close()
		}
	}()
	inet := n.prefix + "inet"
	if err := n.addNS(ctx, inet); err != nil {
		return nil, err
	}
	if err := run(ctx, inet, "ip", "link", "add", "br0", "type", "bridge"); err != nil {
		return nil, err
	}
	if err := run(ctx, inet, "ip", "link", "set", "br0", "up"); err != nil {
		return nil, err
	}
	for i := range topo.Public {
		ns := fmt.Sprintf("%spub%d", n.prefix, i)
		ip := net.IPv4(198, 18, 0, byte(10+i))
		if err := n.addHost(ctx, ns, inet, "br0", ip, 16, nil); err != nil {
			return nil, err
		}
		n.Hosts = append(n.Hosts, Host{NS: ns, IP: ip, NAT: -1})
	}
	for r, nat := range topo.NATs {
		if nat.Nodes+nat.Late > 200 {
			return nil, errors.New("netsim: at most 200 nodes behind a NAT")
		}
		router := fmt.Sprintf("%srt%d", n.prefix, r)
		wan := net.IPv4(198, 18, 1, byte(1+r))
		if err := n.addHost(ctx, router, inet, "br0", wan, 16, nil); err != nil {
			return nil, err
		}
		if err := n.natRouter(ctx, router, r, nat.Symmetric); err != nil {
			return nil, err
		}
		gw := net.IPv4(198, 19, byte(1+r), 1)
		for j := range nat.Nodes + nat.Late {
			ns := fmt.Sprintf("%sn%d-%d", n.prefix, r, j)
			ip := net.IPv4(198, 19, byte(1+r), byte(10+j))
			if err := n.addHost(ctx, ns, router, "lan0", ip, 24, gw); err != nil {
				return nil, err
			}
			n.Hosts = append(n.Hosts, Host{NS: ns, IP: ip, NAT: r, Late: j >= nat.Nodes})
		}
	}
	return n, nil
}

// addNS makes a namespace with its loopback up, and records it for Close.
func (n *Net) addNS(ctx context.Context, ns string) error {
	if err := run(ctx, "", "ip", "netns", "add", ns); err != nil {
		return err
	}
	n.mu.Lock()
	n.nss = append(n.nss, ns)
	n.mu.Unlock()
	return run(ctx, ns, "ip", "link", "set", "lo", "up")
}

// addHost makes namespace ns with a link eth0 at ip/bits, whose other end
// is on bridge br of namespace up, and a default route via gw (nil for
// none).
func (n *Net) addHost(ctx context.Context, ns, up, br string, ip net.IP, bits int, gw net.IP) error {
	if err := n.addNS(ctx, ns); err != nil {
		return err
	}
	// The bridge side is named after the host's address, unique on its
	// bridge and within 15 bytes.
	port := fmt.Sprintf("v%d-%d", ip.To4()[2], ip.To4()[3])
	steps := [][]string{
		{"", "ip", "link", "add", "eth0", "netns", ns, "type", "veth", "peer", "name", port, "netns", up},
		{up, "ip", "link", "set", port, "master", br},
		{up, "ip", "link", "set", port, "up"},
		{ns, "ip", "addr", "add", fmt.Sprintf("%s/%d", ip, bits), "dev", "eth0"},
		{ns, "ip", "link", "set", "eth0", "up"},
	}
	if gw != nil {
		steps = append(steps, []string{ns, "ip", "route", "add", "default", "via", gw.String()})
	}
	for _, s := range steps {
		if err := run(ctx, s[0], s[1], s[2:]...); err != nil {
			return err
		}
	}
	return nil
}

// natRouter makes router r a home router: a LAN bridge at 198.19.<r+1>.1/24,
// forwarding, a masquerade of the LAN's flows out of eth0 (fully random
// ports when symmetric), and no new flow from the WAN, into the LAN or to
// the router: dropped, not refused, as home routers do, so that the first
// packet of a hole punch that arrives before the router's own flow opened
// is lost rather than answered with a reset.
func (n *Net) natRouter(ctx context.Context, router string, r int, symmetric bool) error {
	masq := "masquerade"
	if symmetric {
		masq = "masquerade fully-random"
	}
	rules := fmt.Sprintf(`table ip nat {
	chain postrouting {
		type nat hook postrouting priority srcnat; policy accept;
		oifname "eth0" ip saddr 198.19.%d.0/24 %s
	}
}
table ip filter {
	chain forward {
		type filter hook forward priority filter; policy accept;
		iifname "eth0" ct state new drop
	}
	chain input {
		type filter hook input priority filter; policy accept;
		iifname "eth0" ct state new drop
	}
}
`, r+1, masq)
	steps := [][]string{
		{router, "ip", "link", "add", "lan0", "type", "bridge"},
		{router, "ip", "addr", "add", fmt.Sprintf("198.19.%d.1/24", r+1), "dev", "lan0"},
		{router, "ip", "link", "set", "lan0", "up"},
		{router, "sysctl", "-q", "-w", "net.ipv4.ip_forward=1"},
	}
	for _, s := range steps {
		if err := run(ctx, s[0], s[1], s[2:]...); err != nil {
			return err
		}
	}
	cmd := exec.CommandContext(ctx, "ip", "netns", "exec", router, "nft", "-f", "-")
	cmd.Stdin = strings.NewReader(rules)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("netsim: nft in %s: %v: %s", router, err, bytes.TrimSpace(out))
	}
	return nil
}

// namespaces counts the namespaces the Net made.
func (n *Net) namespaces() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.nss)
}

// Close deletes every namespace the Net made, the last first; deleting a
// namespace deletes its links and stops nothing else (the caller stops
// the processes it ran in them first).
func (n *Net) Close() error {
	n.mu.Lock()
	nss := n.nss
	n.nss = nil
	n.mu.Unlock()
	var errs []error
	for i := len(nss) - 1; i >= 0; i-- {
		if err := run(context.Background(), "", "ip", "netns", "del", nss[i]); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// ReapLeftovers deletes the namespaces of Nets whose process is gone: a run
// killed before its Close.
func ReapLeftovers(ctx context.Context) error {
	out, err := exec.CommandContext(ctx, "ip", "netns", "list").Output()
	if err != nil {
		return fmt.Errorf("netsim: ip netns list: %w", err)
	}
	var errs []error
	for _, line := range strings.Split(string(out), "\n") {
		name, _, _ := strings.Cut(strings.TrimSpace(line), " ")
		m := nsPattern.FindStringSubmatch(name)
		if m == nil {
			continue
		}
		pid, _ := strconv.Atoi(m[1])
		if pid == os.Getpid() || devnet.ProcessAlive(pid) {
			continue
		}
		if err := run(ctx, "", "ip", "netns", "del", name); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// run runs name with args, in namespace ns unless ns is "", and returns an
// error with its output if it fails.
func run(ctx context.Context, ns, name string, args ...string) error {
	if ns != "" {
		args = append([]string{"netns", "exec", ns, name}, args...)
		name = "ip"
	}
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("netsim: %s %s: %v: %s", name, strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}
