package netsim

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSmallInternet runs the small simulated internet: 2 public nodes, 2
// NATs that keep ports with 3 nodes each and a symmetric one with 2, and a
// quiet node behind each, real daemons in network namespaces. Every node
// finds every other on the DHT, gossip reaches every node, a blob added
// behind one NAT is fetched by CID alone from behind the other, a blob
// whose named provider is stopped is still fetched from the node that
// fetched it before, and a blob announced behind a NAT reaches the
// symmetric NAT. Of the pairs that first met through the relay, most of
// those behind port-keeping NATs end direct (hole punching), and none
// with a symmetric NAT is left without a connection. Every namespace is
// gone afterwards. It needs root, ip and nft (CI runs it as root); the
// full run is `make sim`.
func TestSmallInternet(t *testing.T) {
	if err := Need(); err != nil {
		t.Skip("the simulated internet " + err.Error())
	}
	if testing.Short() {
		t.Skip("starts 8 daemons for a minute or two")
	}
	bin := filepath.Join(t.TempDir(), "wats")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/wats-network/wats/cmd/wats").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	res, err := Run(ctx, Options{Bin: bin, Dir: t.TempDir(), Timeout: 2 * time.Minute, Log: t.Logf,
		Topology: Topology{Public: 2, NATs: []NAT{{Nodes: 3, Late: 1}, {Nodes: 3, Late: 1}, {Nodes: 2, Symmetric: true, Late: 1}}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", res)
	if res.Reachability["private"] == 0 || res.Reachability["public"] == 0 {
		t.Errorf("reachability %v: AutoNAT found no node public, or none private", res.Reachability)
	}
	if res.Pairs.Direct+res.Pairs.HolePunched == 0 {
		t.Errorf("pairs %+v: no direct connection at all", res.Pairs)
	}
	if !strings.HasPrefix(res.BlobSymmetric, "fetched") {
		t.Errorf("the announced blob behind the symmetric NAT: %s", res.BlobSymmetric)
	}
	for kind, p := range res.Punch {
		t.Logf("hole punching %s: %+v", kind, *p)
		switch {
		case p.Pairs == 0:
			t.Errorf("hole punching %s: no pair tried", kind)
		case kind == "cone-cone" && p.DirectPct() < 70:
			t.Errorf("hole punching %s: %.0f%% of the pairs direct, want at least 70%%", kind, p.DirectPct())
		case strings.Contains(kind, "symmetric") && p.None > 0:
			t.Errorf("hole punching %s: %d pairs left without a connection", kind, p.None)
		}
	}
	for _, kind := range []string{"cone-cone", "cone-symmetric", "symmetric-cone"} {
		if res.Punch[kind] == nil {
			t.Errorf("no pair of kind %s measured: %v", kind, res.Punch)
		}
	}
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), nsPrefix()) {
		t.Errorf("namespaces left after the run:\n%s", out)
	}
}

// TestReapLeftovers: the namespaces of a run whose process is gone are
// deleted by the next Build; those of a live process are kept.
func TestReapLeftovers(t *testing.T) {
	if err := Need(); err != nil {
		t.Skip("the simulated internet " + err.Error())
	}
	ctx := context.Background()
	// A pid that is not running: a process that was killed.
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	gone := "ws" + itoa(dead.Process.Pid) + "-inet"
	live := nsPrefix() + "keep"
	for _, ns := range []string{gone, live} {
		if err := run(ctx, "", "ip", "netns", "add", ns); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { _ = run(ctx, "", "ip", "netns", "del", live) })
	if err := ReapLeftovers(ctx); err != nil {
		t.Fatal(err)
	}
	out, _ := exec.Command("ip", "netns", "list").Output()
	if strings.Contains(string(out), gone) {
		t.Errorf("%s, of a process that is gone, was not deleted", gone)
	}
	if !strings.Contains(string(out), live) {
		t.Errorf("%s, of this live process, was deleted", live)
	}
}
