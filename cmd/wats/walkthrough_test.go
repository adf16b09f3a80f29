package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// The README's walk-through (between <!-- walkthrough and <!-- /walkthrough
// -->) is run as written: each line of its ```sh blocks is a command, run
// in one bash with $A and $B set to repos of the test's own, from a
// directory holding bin/wats (the binary under test) and README.md, as a
// reader runs them from the top of the repository. A `bin/wats daemon`
// line is run in the background, as the reader's own terminal runs it,
// and waited for until it answers. A comment ending in → "TEXT" is what
// the command's output must hold; a command that needs another node's
// news (gossip, a fetch) is run again until it holds it, 30 s at most.
//
// What the reader's machine has and a test's must not share: before each
// daemon starts, its repo is put on a network of the test's own and on
// 127.0.0.1 at free ports (the first node's default port, 9287, may be
// taken, and traffic stays on loopback).

const (
	walkStart = "<!-- walkthrough"
	walkEnd   = "<!-- /walkthrough -->"
)

// expectPattern finds the → "TEXT" of a command's comment.
var expectPattern = regexp.MustCompile(`#.*→ "([^"]*)"\s*$`)

// walkthroughCommands returns the commands of readme's walk-through, in
// order: the lines of its ```sh blocks, without blank and comment lines.
func walkthroughCommands(readme string) ([]string, error) {
	i := strings.Index(readme, walkStart)
	j := strings.Index(readme, walkEnd)
	if i < 0 || j < i {
		return nil, fmt.Errorf("no %s … %s section", walkStart, walkEnd)
	}
	var cmds []string
	inBlock := false
	for _, line := range strings.Split(readme[i:j], "\n") {
		switch {
		case strings.HasPrefix(line, "```sh"):
			inBlock = true
		case strings.HasPrefix(line, "```"):
			inBlock = false
		case inBlock && strings.TrimSpace(line) != "" && !strings.HasPrefix(strings.TrimSpace(line), "#"):
			cmds = append(cmds, line)
		}
	}
	if inBlock {
		return nil, fmt.Errorf("a ```sh block of the walk-through is not closed")
	}
	return cmds, nil
}

func TestWalkthroughCommands(t *testing.T) {
	readme := "x\n```sh\nmake build\n```\n" + walkStart + " -->\n```sh\n# a comment\nbin/wats init --repo \"$A\"\n\n" +
		"bin/wats events ls   # → \"hi\"\n```\ntext\n```\nnot sh\n```\n" + walkEnd + "\n```sh\nafter\n```\n"
	cmds, err := walkthroughCommands(readme)
	if err != nil || strings.Join(cmds, "|") != `bin/wats init --repo "$A"|bin/wats events ls   # → "hi"` {
		t.Errorf("commands %q, %v", cmds, err)
	}
	if _, err := walkthroughCommands("no markers"); err == nil {
		t.Error("a README without the markers: no error")
	}
	if m := expectPattern.FindStringSubmatch(cmds[1]); m == nil || m[1] != "hi" {
		t.Errorf("expectation of %q: %q", cmds[1], m)
	}
}

// TestReadmeStartsWithMake: the README's first commands are still make
// devnet and make test.
func TestReadmeStartsWithMake(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, _ := strings.Cut(string(b), "```sh\n")
	block, _, _ := strings.Cut(rest, "```")
	lines := strings.Split(strings.TrimSpace(block), "\n")
	if len(lines) < 2 || !strings.HasPrefix(lines[0], "make devnet") || !strings.HasPrefix(lines[1], "make test") {
		t.Errorf("the README's first commands are %q, want make devnet, then make test", lines)
	}
	if w := strings.Index(string(b), walkStart); w < 0 || w > strings.Index(string(b), "## How it holds up") {
		t.Error("the walk-through does not come before the defence design")
	}
}

// walkShell is one bash that runs the walk-through's commands in turn, so
// that the variables one sets are there for the next, as in a terminal.
type walkShell struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	lines  chan string
	stderr *lockedBuffer
	n      int
}

func startWalkShell(t *testing.T, dir string, env []string) *walkShell {
	t.Helper()
	sh := &walkShell{cmd: exec.Command("bash", "--noprofile", "--norc"), lines: make(chan string, 1024), stderr: new(lockedBuffer)}
	sh.cmd.Dir, sh.cmd.Env, sh.cmd.Stderr = dir, env, sh.stderr
	var err error
	if sh.in, err = sh.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := sh.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := sh.cmd.Start(); err != nil {
		t.Skipf("no bash to run the walk-through: %v", err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			sh.lines <- sc.Text()
		}
		close(sh.lines)
	}()
	t.Cleanup(func() {
		sh.in.Close()
		_ = sh.cmd.Wait()
	})
	return sh
}

// run runs line in the shell, its stdin empty, and returns its exit code
// and stdout; a command that runs past d fails the test.
func (sh *walkShell) run(t *testing.T, line string, d time.Duration) (int, string) {
	t.Helper()
	sh.n++
	mark := fmt.Sprintf("__walkthrough_%d__", sh.n)
	fmt.Fprintf(sh.in, "{ %s\n} </dev/null; printf '\\n%s %%d\\n' $?\n", line, mark)
	var out []string
	timeout := time.After(d)
	for {
		select {
		case l, ok := <-sh.lines:
			if !ok {
				t.Fatalf("the shell ended during %q; its stderr:\n%s", line, sh.stderr)
			}
			if code, ok := strings.CutPrefix(l, mark+" "); ok {
				var c int
				fmt.Sscan(code, &c)
				return c, strings.TrimSuffix(strings.Join(out, "\n"), "\n")
			}
			out = append(out, l)
		case <-timeout:
			t.Fatalf("%q ran past %v; the shell's stderr:\n%s", line, d, sh.stderr)
		}
	}
}

// expand returns the words of args as the shell expands them.
func (sh *walkShell) expand(t *testing.T, args string) []string {
	t.Helper()
	code, out := sh.run(t, "printf '%s\\n' "+args, 10*time.Second)
	if code != 0 {
		t.Fatalf("expanding %q: exit %d", args, code)
	}
	return strings.Split(out, "\n")
}

func TestReadmeWalkthrough(t *testing.T) {
	bin, tmp, env := e2eSetup(t)
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	cmds, err := walkthroughCommands(string(readme))
	if err != nil {
		t.Fatalf("README.md: %v", err)
	}
	// What the walk-through must show a newcomer, whatever its wording.
	all := strings.Join(cmds, "\n")
	for _, want := range []string{"bin/wats init", "bin/wats daemon", "bin/wats peers connect", "bin/wats events add",
		"bin/wats blob add", "bin/wats blob get", "--size"} {
		if !strings.Contains(all, want) {
			t.Errorf("the walk-through has no %q", want)
		}
	}

	// The reader's directory: bin/wats and README.md.
	work := filepath.Join(tmp, "work")
	if err := os.MkdirAll(filepath.Join(work, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(bin, filepath.Join(work, "bin", "wats")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, "README.md"), readme, 0o644); err != nil {
		t.Fatal(err)
	}
	env = append(env, "A="+filepath.Join(tmp, "wats-a"), "B="+filepath.Join(tmp, "wats-b"))
	sh := startWalkShell(t, work, env)
	network := fmt.Sprintf("e2e-walk-%d", time.Now().UnixNano())
	daemons := 0
	for _, line := range cmds {
		if rest, ok := strings.CutPrefix(line, "bin/wats daemon"); ok {
			words := sh.expand(t, rest)
			dir := ""
			for i, w := range words {
				if w == "--repo" && i+1 < len(words) {
					dir = words[i+1]
				}
			}
			if dir == "" {
				t.Fatalf("%q: no --repo", line)
			}
			for _, args := range [][]string{
				{"config", "set", "network", network, "--repo", dir},
				{"config", "set", "p2p.listen", "/ip4/127.0.0.1/tcp/0,/ip4/127.0.0.1/udp/0/quic-v1", "--repo", dir},
			} {
				if code, _, stderr := runBin(t, env, bin, args...); code != 0 {
					t.Fatalf("%s: exit %d: %s", strings.Join(args, " "), code, stderr)
				}
			}
			startBinDaemon(t, env, bin, dir)
			daemons++
			continue
		}
		want := ""
		if m := expectPattern.FindStringSubmatch(line); m != nil {
			want = m[1]
		}
		deadline := time.Now().Add(30 * time.Second)
		for {
			code, out := sh.run(t, line, 2*time.Minute)
			if code != 0 {
				t.Fatalf("%q: exit %d\nstdout:\n%s\nstderr so far:\n%s", line, code, out, sh.stderr)
			}
			if strings.Contains(out, want) {
				t.Logf("%s\n%s", line, out)
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%q: its output lacks %q after 30 s:\n%s", line, want, out)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	if daemons != 2 {
		t.Errorf("the walk-through started %d daemons, want 2", daemons)
	}
}
