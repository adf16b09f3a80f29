package bench

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// attackNet is the network namespace `bench gossip --netns` runs its
// attacker in: a veth pair whose host end has hostIP, the daemons A and B
// listening there too, and whose other end, in the namespace, has an
// address per attacker id (sources), in 198.18.0.0/15, the range reserved
// for such tests. Each id dials from its own address, so that libp2p's
// per-IP connection rate limit applies as it does to attackers on the
// internet (it exempts loopback, where the rest of the bench runs).
type attackNet struct {
	ns      string
	hostIP  string
	sources []string
}

// attackNetHostIP is the host end's address.
const attackNetHostIP = "198.18.0.1"

// newAttackNet makes the namespace with n source addresses. It needs root
// and the ip command.
func newAttackNet(n int) (_ *attackNet, err error) {
	if os.Geteuid() != 0 {
		return nil, errors.New("--netns needs root (network namespaces)")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return nil, errors.New("--netns needs the ip command (iproute2)")
	}
	if n > 250*250 {
		return nil, fmt.Errorf("--netns: at most %d ids", 250*250)
	}
	pid := os.Getpid()
	a := &attackNet{ns: fmt.Sprintf("wats-gossip-%d", pid), hostIP: attackNetHostIP}
	host, peerEnd := fmt.Sprintf("wgh%d", pid), fmt.Sprintf("wgn%d", pid)
	run := func(args ...string) error {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
		}
		return nil
	}
	if err := run("netns", "add", a.ns); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			a.close()
		}
	}()
	for _, args := range [][]string{
		{"link", "add", host, "type", "veth", "peer", "name", peerEnd},
		{"link", "set", peerEnd, "netns", a.ns},
		{"addr", "add", a.hostIP + "/16", "dev", host},
		{"link", "set", host, "up"},
		{"-n", a.ns, "link", "set", "lo", "up"},
		{"-n", a.ns, "link", "set", peerEnd, "up"},
	} {
		if err := run(args...); err != nil {
			return nil, err
		}
	}
	var batch strings.Builder
	for i := range n {
		ip := fmt.Sprintf("198.18.%d.%d", 1+i/250, 1+i%250)
		a.sources = append(a.sources, ip)
		fmt.Fprintf(&batch, "addr add %s/16 dev %s\n", ip, peerEnd)
	}
	cmd := exec.Command("ip", "-n", a.ns, "-batch", "-")
	cmd.Stdin = strings.NewReader(batch.String())
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("ip -batch (the ids' addresses): %v: %s", err, strings.TrimSpace(string(out)))
	}
	return a, nil
}

// close removes the namespace, and with it the veth pair.
func (a *attackNet) close() {
	_ = exec.Command("ip", "netns", "del", a.ns).Run()
}

// command returns the command that runs exe with args in the namespace.
func (a *attackNet) command(exe string, args ...string) *exec.Cmd {
	return exec.Command("ip", append([]string{"netns", "exec", a.ns, exe}, args...)...)
}
