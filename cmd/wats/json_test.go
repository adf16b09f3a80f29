package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/spf13/cobra"

	"github.com/wats-network/wats/internal/attack"
	"github.com/wats-network/wats/internal/bench"
)

// jsonCoveredElsewhere are the commands with --json whose output another
// test decodes (the test named), or whose result type TestJSONOutputs
// marshals because a run takes minutes.
var jsonCoveredElsewhere = map[string]string{
	"wats devnet up":     "TestDevnetMesh",
	"wats devnet status": "TestDevnetMesh",
	"wats bench attack":  "marshalled below (a run takes minutes)",
	"wats bench gossip":  "marshalled below (its warm-up alone is a minute)",
	"wats bench vs-ipfs": "marshalled below (it needs a kubo binary)",
	"wats config show":   "TestConfigCommands",
	"wats repo check":    "TestDamagedRepoCLI",
	"wats repo repair":   "TestDamagedRepoCLI",
}

// jsonCommands lists the command paths of root that have a --json flag.
func jsonCommands(root *cobra.Command) []string {
	var out []string
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Flags().Lookup("json") != nil {
			out = append(out, c.CommandPath())
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
	return out
}

// TestJSONOutputs runs every command that has --json, with it, through the
// real binary against two real daemons, and decodes what it prints: one
// JSON value, or one a line for the streams. A command with --json that
// neither this test nor jsonCoveredElsewhere runs fails the test.
func TestJSONOutputs(t *testing.T) {
	bin, tmp, env, a, b := twoDaemons(t)
	id := idOf(t, env, bin, a)
	file := filepath.Join(tmp, "blob.bin")
	data := strings.Repeat("wats ", 1000)
	if err := os.WriteFile(file, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	_, out, _ := runBin(t, env, bin, "blob", "add", file, "--repo", a)
	cid, _, _ := strings.Cut(strings.TrimSpace(out), ":")
	size := strconv.Itoa(len(data))

	type run struct {
		path  string   // the command path, "wats peers ls"
		args  []string // after "wats", --json and --repo added
		repo  string   // "": no --repo (devnet, bench)
		lines bool     // one JSON value a line
	}
	runs := []run{
		{"wats id", []string{"id"}, a, false},
		{"wats version", []string{"version"}, a, false},
		{"wats status", []string{"status"}, a, false},
		{"wats peers connect", []string{"peers", "connect", id.Addrs[0]}, b, false},
		{"wats peers ls", []string{"peers", "ls"}, b, false},
		{"wats peers cache", []string{"peers", "cache"}, b, false},
		{"wats limits", []string{"limits"}, a, false},
		{"wats diag", []string{"diag"}, a, false},
		{"wats dashboard", []string{"dashboard"}, a, false},
		{"wats events add", []string{"events", "add", "--kind", "note", "--body", `{"n":1}`}, a, false},
		{"wats events ls", []string{"events", "ls"}, a, false},
		{"wats events tail", []string{"events", "tail", "--after", "0"}, a, true},
		{"wats sync", []string{"sync", id.PeerID}, b, true},
		{"wats sync", []string{"sync"}, b, true}, // from every peer: each line with the shares
		{"wats blob add", []string{"blob", "add", file}, a, false},
		{"wats blob ls", []string{"blob", "ls"}, a, false},
		{"wats blob get", []string{"blob", "get", cid, "--size", size, "-o", filepath.Join(tmp, "got.bin")}, a, false},
		{"wats replicate", []string{"replicate", id.PeerID, cid + ":" + size}, b, false},
		{"wats crash report", []string{"crash", "report", "--program", "p", "--version", "1", "--reason", "r"}, a, false},
		{"wats crash ls", []string{"crash", "ls"}, a, false},
		{"wats blob rm", []string{"blob", "rm", cid}, a, false},
		{"wats peers disconnect", []string{"peers", "disconnect", id.PeerID}, b, false},
		{"wats bench sync", []string{"bench", "sync", "-n", "50", "--dir", filepath.Join(tmp, "bench")}, "", true},
		{"wats bench catchup", []string{"bench", "catchup", "-n", "50", "--peers", "2", "--dir", filepath.Join(tmp, "catchup")}, "", true},
		{"wats bench fetch", []string{"bench", "fetch", "--size", "1048576"}, "", true},
		{"wats bench fetch", []string{"bench", "fetch", "--size", "3145729", "--get", "--ceiling", "--rounds", "2"}, "", true},
		{"wats bench transport", []string{"bench", "transport", "--size", "1048577", "--rounds", "1"}, "", true},
		{"wats bench disk", []string{"bench", "disk", "--duration", "200ms", "--every", "10ms", "--dir", tmp}, "", false},
		{"wats devnet down", []string{"devnet", "down", "--dir", filepath.Join(tmp, "no-devnet")}, "", false},
	}
	// events get takes an id: the one events add printed.
	_, out, _ = runBin(t, env, bin, "events", "add", "--kind", "note", "--body", `{"n":2}`, "--repo", a)
	runs = append(runs, run{"wats events get", []string{"events", "get", strings.TrimSpace(out)}, a, false})

	covered := map[string]bool{}
	for _, r := range runs {
		covered[r.path] = true
		args := append(append([]string{}, r.args...), "--json")
		if r.repo != "" {
			args = append(args, "--repo", r.repo)
		}
		var code int
		var stdout, stderr string
		if r.lines && r.path == "wats events tail" {
			code, stdout, stderr = runBinLines(t, env, bin, 2, args...)
		} else {
			code, stdout, stderr = runBin(t, env, bin, args...)
		}
		if code != 0 {
			t.Errorf("%s --json: exit %d: %s", r.path, code, stderr)
			continue
		}
		values := []string{stdout}
		if r.lines {
			values = strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
		}
		for _, v := range values {
			if !jsontext.Value(v).IsValid() || strings.TrimSpace(v) == "" {
				t.Errorf("%s --json printed what is not JSON:\n%s", r.path, stdout)
				break
			}
		}
	}
	for _, path := range jsonCommands(newRootCmd(strings.NewReader(""), nil, nil)) {
		if !covered[path] && jsonCoveredElsewhere[path] == "" {
			t.Errorf("%s has --json, but no test decodes what it prints: add it to TestJSONOutputs", path)
		}
	}
	for path := range jsonCoveredElsewhere {
		if !slices.Contains(jsonCommands(newRootCmd(strings.NewReader(""), nil, nil)), path) {
			t.Errorf("jsonCoveredElsewhere names %s, which has no --json", path)
		}
	}

	// The benches too long to run here: their result types marshal.
	for name, v := range map[string]any{
		"bench attack": struct {
			Scenario *bench.AttackResult `json:"scenario"`
		}{&bench.AttackResult{}},
		"bench attack kill9": struct {
			Kill9 *bench.KillResult `json:"kill9"`
		}{&bench.KillResult{}},
		"bench gossip": struct {
			Scenario *bench.GossipResult `json:"scenario"`
		}{&bench.GossipResult{Daemons: []bench.GossipDaemonResult{{}}, Attacker: &attack.GossipStats{}}},
		"bench vs-ipfs": struct {
			Result *bench.VsIPFSResult `json:"result"`
		}{&bench.VsIPFSResult{Figures: []bench.VsIPFSFigure{{}}}},
	} {
		if _, err := marshalIndent(v); err != nil {
			t.Errorf("%s --json: %v", name, err)
		}
	}
}

// runBinLines runs the binary until it printed n lines on stdout, then
// stops it (for endless streams); it returns exit code 0 if it printed
// them.
func runBinLines(t *testing.T, env []string, bin string, n int, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()
	var out strings.Builder
	r := bufio.NewReader(pipe)
	for range n {
		line, err := r.ReadString('\n')
		out.WriteString(line)
		if err != nil {
			return 1, out.String(), stderr.String()
		}
	}
	return 0, out.String(), stderr.String()
}
