package bench

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestAttackNet: --netns makes a namespace with an address per id and
// the host end of a veth pair, reachable from inside it, and removes them
// all. It needs root and ip, and skips without them.
func TestAttackNet(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: network namespaces")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs the ip command")
	}
	a, err := newAttackNet(3)
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			a.close()
		}
	}()
	if len(a.sources) != 3 || a.sources[2] != "198.18.1.3" {
		t.Errorf("sources %q", a.sources)
	}
	out, err := a.command("ip", "-4", "addr").CombinedOutput()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range a.sources {
		if !strings.Contains(string(out), "inet "+s+"/16") {
			t.Errorf("the namespace has no %s:\n%s", s, out)
		}
	}
	if out, err := a.command("ping", "-c", "1", "-W", "2", "-I", a.sources[0], a.hostIP).CombinedOutput(); err != nil {
		if _, lerr := exec.LookPath("ping"); lerr == nil {
			t.Errorf("the host end %s is not reachable from %s: %v\n%s", a.hostIP, a.sources[0], err, out)
		}
	}
	a.close()
	closed = true
	if out, _ := exec.Command("ip", "netns", "list").CombinedOutput(); strings.Contains(string(out), a.ns) {
		t.Errorf("namespace %s left after close", a.ns)
	}
}
