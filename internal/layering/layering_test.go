// Package layering holds the test that keeps the imports between wats
// packages pointing downward (docs/design.md §2): core, the shared
// vocabulary, imports no other wats package and every package may import
// it; proto, eventlog, limits, challenge, peercache and api import no
// other but core; blobs imports proto and eventlog; config takes the
// defaults and bounds of limits, blobs and peercache from them; repo
// imports config; gossip imports proto and eventlog, heads proto; node is
// the only package that knows all the others; cmd/wats reaches a running daemon through node's control API
// client. Package node stays a wiring layer of at most maxNodeLines lines
// (TestNodeIsWiring).
package layering

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/wats-network/wats"

// allowed lists, for each package, the wats packages it may import besides
// core (everyTo). A package missing here fails the test until its place
// is decided.
var allowed = map[string][]string{
	"core":      {},
	"proto":     {},
	"eventlog":  {},
	"config":    {"limits", "blobs", "peercache", "bandwidth"},
	"peercache": {},
	"limits":    {},
	"challenge": {},
	"blobs":     {"proto", "eventlog", "internal/humanize"},
	"repo":      {"config", "bandwidth", "internal/fileio"},
	"gossip":    {"proto", "eventlog"},
	"heads":     {"proto"},
	"api":       {},
	"node":      {"metrics", "proto", "eventlog", "config", "repo", "peercache", "gossip", "heads", "limits", "challenge", "blobs", "api", "store", "routing", "peers", "catchup", "p2p", "internal/diskspace", "internal/ackmark", "internal/memrelease", "bandwidth"},
	// The libp2p host and what a peer may hold of it: the resource
	// manager's limits by scope, stream caps by tier, the gater.
	"p2p": {"config", "limits", "proto", "blobs"},
	// The bandwidth caps and counts of the node's streams, the month's
	// count in the repo (docs/adr/0048).
	"bandwidth": {"api", "internal/fileio"},
	// The sync client's run: fetch, verify, store in groups.
	"catchup": {"eventlog", "limits", "proto"},
	// What a node decides about its peers (the stranger slots, reputation).
	"peers": {"core", "limits", "peercache", "challenge", "proto", "eventlog", "api"},
	// The node's Prometheus metrics: counters without peer labels, and
	// gauges that read the node through funcs.
	"metrics": {"core", "limits", "proto"},
	// The network's DHT, NAT traversal and the store of provider
	// records: what a node asks of the network beyond its peers.
	"routing": {"config", "limits", "proto", "api"},
	// A database apart from a running node: its options, offline reads,
	// check and repair, the lost events' record.
	"store": {"eventlog", "blobs", "peercache", "peers", "limits", "repo", "api", "proto", "internal/ackmark", "internal/diskspace"},
	// The web dashboard: its page, the control API's read-only views
	// behind a token, the history of the metrics (docs/adr/0049).
	"dashboard": {"api"},
	// The control server of a running node, and Run for `wats daemon`.
	"daemon":            {"node", "api", "repo", "proto", "eventlog", "blobs", "peercache", "metrics", "dashboard", "p2p"},
	"cmd/wats":          {"node", "api", "daemon", "store", "p2p", "repo", "config", "eventlog", "internal/attack", "internal/devnet", "internal/bench", "internal/fileio", "internal/humanize", "internal/netsim"},
	"internal/layering": {},
	// The attack suite is a tool of cmd/wats: a client of the wire
	// protocol, as an outside peer is.
	"internal/attack": {"proto", "challenge", "eventlog"},
	// The devnet is a harness of cmd/wats: a client of the daemons it
	// starts, through their repos and control API, as the CLI is.
	"internal/devnet": {"api", "repo", "config", "internal/fileio", "internal/humanize"},
	// The benches are a harness of cmd/wats: daemons of the devnet driven
	// through their control API and attacked with internal/attack; bench
	// sync runs two nodes in its process through node's exported API,
	// filling the log (eventlog) of one before it starts; bench transport
	// builds two hosts as a daemon does (p2p.NewHost) for the ceiling a
	// fetch is held against.
	"internal/bench": {"internal/devnet", "internal/attack", "internal/humanize", "node", "api", "repo", "config", "eventlog", "p2p"},
	// A developer's command (go run) that reads the execution traces
	// bench sync writes; it imports no wats package.
	"internal/bench/tracestat": {},
	// The simulated internet (network namespaces, NATs) and the daemons
	// it runs, a harness as the devnet is; cmd/wats takes its address
	// classes when the harness runs it.
	"internal/netsim": {"internal/devnet", "api", "repo", "config"},
	// The developer's command behind `make sim`.
	"internal/netsim/simrun": {"internal/netsim"},
	// Small helpers that cmd/wats and its harnesses share: whole files
	// written atomically and read with a cap; byte counts and plurals as
	// the CLI prints them.
	"internal/fileio":    {},
	"internal/diskspace": {},
	"internal/ackmark":   {},
	// Memory back to the OS after a flood (ADR 0042).
	"internal/memrelease": {},
	"internal/humanize":   {},
	// Test-only helpers, imported by _test files (which go list .Imports
	// does not show); they import no wats package.
	"internal/scripttest": {},
	// The test of docs/design.md §15 against the code (a doc.go and a
	// test file).
	"internal/adr0014": {},
}

// everyTo is the package every other wats package may import: the shared
// vocabulary, which itself imports none.
const everyTo = "core"

func TestImportsPointDownward(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg := strings.TrimPrefix(strings.TrimPrefix(fields[0], module), "/")
		ok, known := allowed[pkg]
		if !known {
			t.Errorf("package %s has no entry in the layering table; add one", pkg)
			continue
		}
		for _, imp := range fields[1:] {
			dep, isWats := strings.CutPrefix(imp, module+"/")
			if !isWats {
				continue
			}
			if !contains(ok, dep) && (dep != everyTo || pkg == everyTo) {
				t.Errorf("%s imports %s, which docs/design.md §2 does not allow", pkg, dep)
			}
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
