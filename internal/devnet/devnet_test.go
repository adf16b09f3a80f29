package devnet

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestStateRoundTrip(t *testing.T) {
	dir := t.TempDir()
	if _, err := Load(dir); !errors.Is(err, ErrNoDevnet) {
		t.Fatalf("Load of an empty dir: %v, want ErrNoDevnet", err)
	}
	st := &State{Version: stateVersion, Network: "n", Started: time.Unix(1767225600, 0).UTC(), RunnerPID: 7,
		Nodes: []NodeState{{Index: 0, Repo: NodeDir(dir, 0), Log: "l", PID: 42, PeerID: "P", Addrs: []string{"/a"}}}}
	if err := st.save(dir); err != nil {
		t.Fatal(err)
	}
	got, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got.Network != "n" || !got.Started.Equal(st.Started) || len(got.Nodes) != 1 || got.Nodes[0].PID != 42 ||
		got.Nodes[0].Addrs[0] != "/a" || got.Nodes[0].Repo != filepath.Join(dir, "node0") {
		t.Errorf("loaded %+v", got)
	}
	if err := removeState(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(dir); !errors.Is(err, ErrNoDevnet) {
		t.Errorf("after removeState: %v", err)
	}
	if err := removeState(dir); err != nil {
		t.Errorf("removeState twice: %v", err)
	}
}

func TestStateDamaged(t *testing.T) {
	dir := t.TempDir()
	for _, content := range []string{"{", `{"version":2}`} {
		if err := os.WriteFile(filepath.Join(dir, stateFileName), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(dir); err == nil || errors.Is(err, ErrNoDevnet) {
			t.Errorf("Load(%q) = %v, want an error", content, err)
		}
	}
}

func TestStateSizeBound(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		size int
		ok   bool
	}{{maxStateBytes, true}, {maxStateBytes + 1, false}} {
		pad := tc.size - len(`{"version":1,"network":""}`)
		b := []byte(`{"version":1,"network":"` + strings.Repeat("x", pad) + `"}`)
		if err := os.WriteFile(filepath.Join(dir, stateFileName), b, 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := Load(dir)
		if (err == nil) != tc.ok {
			t.Errorf("devnet.json of %d bytes: %v, want ok %v", len(b), err, tc.ok)
		}
	}
}

func TestCleanDevnetDirRemovesOnlyDevnetFiles(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"node0", "node1", "node12", "nodes", "other"} {
		if err := os.MkdirAll(filepath.Join(dir, d, "sub"), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{stateFileName, "node3", "notes.txt"} {
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := cleanDir(dir); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dir)
	var left []string
	for _, e := range entries {
		left = append(left, e.Name())
	}
	if got := strings.Join(left, " "); got != "node3 nodes notes.txt other" {
		t.Errorf("left %q, want the non-devnet entries", got)
	}

	empty := filepath.Join(t.TempDir(), "devnet")
	os.MkdirAll(filepath.Join(empty, "node0"), 0o700)
	if err := cleanDir(empty); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(empty); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("an emptied devnet dir was kept: %v", err)
	}
	if err := cleanDir(filepath.Join(t.TempDir(), "none")); err != nil {
		t.Errorf("cleaning a missing dir: %v", err)
	}
}

func TestIsDevnetDaemon(t *testing.T) {
	repoDir := t.TempDir()
	cmd := exec.Command("sh", "-c", "echo started; sleep 60; true", "wats", "daemon", "--repo", repoDir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Skip("no sh:", err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	// Start returns once the child has called execve, which can be before
	// the kernel has set up the new program's arguments: until then
	// /proc/PID/cmdline reads empty. Once sh writes its line, it runs.
	if line, err := bufio.NewReader(out).ReadString('\n'); line != "started\n" {
		t.Fatalf("sh did not start: %q, %v", line, err)
	}
	// sh (which cannot exec sleep in its place: "; true" follows) keeps
	// the cmdline "sh -c ... wats daemon --repo DIR".
	if !isDevnetDaemon(cmd.Process.Pid, repoDir) {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/cmdline")
		t.Errorf("not recognized as the daemon of its repo; cmdline %q, %v", b, err)
	}
	if isDevnetDaemon(cmd.Process.Pid, repoDir+"x") {
		t.Error("recognized as the daemon of another repo")
	}
	if isDevnetDaemon(os.Getpid(), repoDir) {
		t.Error("the test process recognized as a daemon")
	}
}

func TestLogFollower(t *testing.T) {
	p := filepath.Join(t.TempDir(), "daemon.log")
	if err := os.WriteFile(p, []byte("one\ntwo\nthr"), 0o600); err != nil {
		t.Fatal(err)
	}
	l := &logFollower{path: p, prefix: "node1 | "}
	var out bytes.Buffer
	if _, err := l.copy(&out, false); err != nil {
		t.Fatal(err)
	}
	if out.String() != "node1 | one\nnode1 | two\n" {
		t.Errorf("first copy %q: want the complete lines only", out.String())
	}
	f, _ := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("ee\nfour")
	f.Close()
	out.Reset()
	l.copy(&out, false)
	if out.String() != "node1 | three\n" {
		t.Errorf("second copy %q", out.String())
	}
	out.Reset()
	l.copy(&out, true)
	if out.String() != "node1 | four\n" {
		t.Errorf("final copy %q", out.String())
	}
}

func TestLogTail(t *testing.T) {
	p := filepath.Join(t.TempDir(), "daemon.log")
	var b strings.Builder
	for i := range 30 {
		b.WriteString("line " + strconv.Itoa(i) + "\n")
	}
	os.WriteFile(p, []byte(b.String()), 0o600)
	got := LogTail(p, 3)
	if got != "  line 27\n  line 28\n  line 29" {
		t.Errorf("LogTail = %q", got)
	}
	if got := LogTail(filepath.Join(t.TempDir(), "none"), 3); !strings.Contains(got, "no such file") {
		t.Errorf("LogTail of a missing file = %q", got)
	}
}

func views(sets ...[]string) []nodeView {
	vs := make([]nodeView, len(sets))
	for i, s := range sets {
		vs[i].ids = make(map[string]struct{})
		for _, id := range s {
			vs[i].ids[id] = struct{}{}
		}
		vs[i].events = uint64(len(s))
	}
	return vs
}

func TestConverged(t *testing.T) {
	for _, tc := range []struct {
		name    string
		views   []nodeView
		ok      bool
		events  int
		missing []int
		state   string
	}{
		{"empty", views(nil, nil), false, 0, []int{0, 0}, "waiting for events"},
		{"same", views([]string{"a", "b"}, []string{"b", "a"}, []string{"a", "b"}), true, 2, []int{0, 0, 0}, "converged"},
		{"one behind", views([]string{"a", "b"}, []string{"a"}), false, 2, []int{0, 1}, "spreading"},
		{"same count, other set", views([]string{"a", "b"}, []string{"a", "c"}), false, 3, []int{1, 1}, "spreading"},
		{"single node", views([]string{"a"}), true, 1, []int{0}, "converged"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := converged(tc.views)
			if c.ok != tc.ok || c.events != tc.events || c.state() != tc.state {
				t.Errorf("converged = %+v (%s), want ok %v events %d state %s", c, c.state(), tc.ok, tc.events, tc.state)
			}
			for i := range tc.missing {
				if c.missing[i] != tc.missing[i] {
					t.Errorf("missing = %v, want %v", c.missing, tc.missing)
					break
				}
			}
		})
	}
	vs := views([]string{"a"}, []string{"a"})
	vs[1].err = "connection refused"
	if c := converged(vs); c.ok {
		t.Error("converged although a node did not answer")
	} else if s := c.summary(vs); !strings.Contains(s, "node1: connection refused") {
		t.Errorf("summary %q", s)
	}
}

func TestStatusLinesAndTable(t *testing.T) {
	vs := views([]string{"a", "b"}, []string{"a"})
	vs[0].head, vs[0].peers = 2, 1
	vs[1].head, vs[1].peers = 1, 1
	lines := statusLines(3*time.Second, vs, []int{2, 0}, []string{"2 ms", "…"}, "1 events reached every node, the slowest in 5 ms", converged(vs))
	want := []string{
		"at 3s: node0 published=2 events=2 head=2 peers=1 missing=0 lag=2ms",
		"at 3s: node1 published=0 events=1 head=1 peers=1 missing=1 lag=…",
		"at 3s: spreading: 2 events in all; behind: node1 (1 missing); 1 events reached every node, the slowest in 5 ms",
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("statusLines =\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	vs = views([]string{"a", "b"}, []string{"b", "a"})
	lines = statusLines(4*time.Second, vs, nil, nil, "", converged(vs))
	if len(lines) != 3 || strings.Contains(lines[0], "published") || strings.Contains(lines[0], "lag") ||
		lines[2] != "at 4s: converged: all 2 nodes hold the same 2 events" {
		t.Errorf("statusLines without --demo = %q", lines)
	}
	table := statusTable(4*time.Second, vs, []int{1, 1}, []string{"1 ms", "3 ms"}, "", converged(vs))
	if len(table) != 4 || !strings.HasPrefix(table[1], "node0") || !strings.HasSuffix(table[2], "3 ms") ||
		table[3] != "at 4s: converged: all 2 nodes hold the same 2 events" {
		t.Errorf("statusTable = %q", table)
	}

	var out bytes.Buffer
	cv := newConvergenceView(&out, true)
	cv.show(time.Second, vs, nil)
	cv.show(2*time.Second, vs, nil)
	if !strings.Contains(out.String(), "\x1b[4A") {
		t.Errorf("the TTY view does not redraw in place: %q", out.String())
	}
	out.Reset()
	cv = newConvergenceView(&out, false)
	cv.show(time.Second, vs, nil)
	if strings.Contains(out.String(), "\x1b") || strings.Count(out.String(), "\n") != 3 {
		t.Errorf("the plain view = %q, want a line a node and the verdict", out.String())
	}
	// The same state a second later prints nothing; a change prints it
	// all again, and a note once.
	cv.show(2*time.Second, vs, nil)
	if strings.Count(out.String(), "\n") != 3 {
		t.Errorf("the plain view printed the same state again: %q", out.String())
	}
	cv.note = "blob demo: done"
	cv.show(3*time.Second, vs, nil)
	cv.show(4*time.Second, vs, nil)
	vs[1].head = 7
	cv.show(5*time.Second, vs, nil)
	if got := out.String(); strings.Count(got, "\n") != 10 || !strings.Contains(got, "at 3s: blob demo: done") ||
		!strings.Contains(got, "at 5s: node1") || strings.Contains(got, "at 4s") || strings.Contains(got, "at 2s") {
		t.Errorf("the plain view after a note and a change = %q", got)
	}
}

// TestConvergenceViewFitsTheTerminal: in a terminal narrower than its
// lines, the view wraps them itself, at spaces, and its redraw goes back
// over every row it drew; no row reaches the width (where the terminal
// would wrap it), a word longer than a row is cut, and a line that fits
// is left as it is.
func TestConvergenceViewFitsTheTerminal(t *testing.T) {
	for _, tc := range []struct {
		line  string
		width int
		want  []string
	}{
		{"at 49s: converged", 0, []string{"at 49s: converged"}},
		{"at 49s: converged", 18, []string{"at 49s: converged"}},
		{"at 49s: converged", 17, []string{"at 49s:", "converged"}},
		{"a bbbbbbbbbb c", 5, []string{"a", "bbbb", "bbbb", "bb", "c"}},
	} {
		if got := fitRows(tc.line, tc.width); !slices.Equal(got, tc.want) {
			t.Errorf("fitRows(%q, %d) = %q, want %q", tc.line, tc.width, got, tc.want)
		}
	}
	vs := views([]string{"a", "b"}, []string{"a", "b"})
	var out bytes.Buffer
	cv := newConvergenceView(&out, true)
	cv.width = 20
	cv.note = strings.Repeat("a long note ", 10) // 120 columns: 7 rows of under 20
	cv.show(time.Second, vs, nil)
	first := out.String()
	for _, row := range strings.Split(strings.TrimSuffix(first, "\n"), "\n") {
		if n := utf8.RuneCountInString(strings.TrimPrefix(row, "\x1b[2K")); n >= 20 {
			t.Errorf("a row of %d columns in a terminal of 20: %q", n, row)
		}
	}
	out.Reset()
	cv.show(2*time.Second, vs, nil)
	if rows := strings.Count(first, "\n"); !strings.HasPrefix(out.String(), fmt.Sprintf("\x1b[%dA", rows)) {
		t.Errorf("the redraw does not go back over the %d rows drawn: %q", rows, out.String())
	}
}

func TestVerdictNamesNodesBehind(t *testing.T) {
	vs := views([]string{"a", "b", "c"}, []string{"a"}, []string{"a", "b", "c"}, []string{"a", "b"})
	vs[2].err = "connection refused"
	got := converged(vs).verdict(vs)
	want := "spreading: 3 events in all; behind: node1 (2 missing), node3 (1 missing); not answering: node2"
	if got != want {
		t.Errorf("verdict = %q\nwant      %q", got, want)
	}
	if got := converged(views(nil, nil)).verdict(views(nil, nil)); got != "waiting for events" {
		t.Errorf("verdict with no events = %q", got)
	}

	// A large devnet: the list names maxNamedNodes nodes and counts the rest.
	behind := func(n int) []nodeView {
		sets := [][]string{{"a"}}
		for range n {
			sets = append(sets, nil)
		}
		return views(sets...)
	}
	vs = behind(maxNamedNodes)
	got = converged(vs).verdict(vs)
	if !strings.HasSuffix(got, "node6 (1 missing)") || strings.Contains(got, "more") {
		t.Errorf("verdict of %d nodes behind = %q, want all named", maxNamedNodes, got)
	}
	vs = behind(maxNamedNodes + 1)
	got = converged(vs).verdict(vs)
	if !strings.HasSuffix(got, "node6 (1 missing) and 1 more") || strings.Contains(got, "node7") {
		t.Errorf("verdict of %d nodes behind = %q", maxNamedNodes+1, got)
	}
}

func TestColumnsLegend(t *testing.T) {
	for _, demo := range []bool{false, true} {
		l := columnsLegend(demo)
		for _, col := range []string{"EVENTS     events the node holds", "HEAD       its log position",
			"MISSING    events other nodes hold that it lacks", "PEERS      peers that completed hello"} {
			if !strings.Contains(l, col) {
				t.Errorf("legend (demo %v) does not explain %q:\n%s", demo, col, l)
			}
		}
		if strings.Contains(l, "PUBLISHED") != demo {
			t.Errorf("legend (demo %v) and PUBLISHED:\n%s", demo, l)
		}
	}
}

// TestSpread: a published event shows "…" at the nodes it has not reached
// and its lag at those it has; once at every node it counts in the
// summary with the slowest arrival; an arrival before the publisher's
// record (its own node's tail) counts as 0.
func TestSpread(t *testing.T) {
	s := newSpread(3)
	if l := s.lags(); l[0] != "-" || s.summary() != "" {
		t.Fatalf("before any event: lags %q, summary %q", l, s.summary())
	}
	t0 := time.Unix(1000, 0)
	s.arrived(0, "e1", t0.Add(-time.Millisecond)) // its own node, first
	s.published("e1", t0)
	s.arrived(1, "e1", t0.Add(4*time.Millisecond))
	if l := s.lags(); l[0] != "0 ms" || l[1] != "4 ms" || l[2] != "…" {
		t.Errorf("in flight: lags %q", l)
	}
	s.arrived(2, "e1", t0.Add(9*time.Millisecond))
	if l := s.lags(); l[2] != "9 ms" {
		t.Errorf("arrived everywhere: lags %q", l)
	}
	if got := s.summary(); got != "1 events reached every node, the slowest in 9 ms" {
		t.Errorf("summary %q", got)
	}
	s.published("e2", t0.Add(time.Second))
	s.arrived(1, "e2", t0.Add(time.Second+2*time.Millisecond))
	s.arrived(1, "e2", t0.Add(time.Second+50*time.Millisecond)) // a second arrival: the first counts
	if l := s.lags(); l[0] != "…" || l[1] != "2 ms" {
		t.Errorf("second event in flight: lags %q", l)
	}
}
