// Package scripttest runs step tests written as scripts (docs/design.md §14):
// each line of a testdata file is a command and, after "=>", the output it
// must give; blank lines and lines starting with "#" are comments. The
// packages that decide things by the clock (limits, blobs) keep their
// expectations in such files, worked out by hand from ADR 0014.
package scripttest

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Run runs the script at path: for each command line it calls run with the
// command's fields and compares what run returns with the expected output.
// An error from run, or fewer than minCommands commands (a truncated
// script), fails the test.
func Run(t *testing.T, path string, minCommands int, run func(fields []string) (string, error)) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	name := filepath.Base(path)
	sc := bufio.NewScanner(f)
	ran := 0
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		cmd, want, ok := strings.Cut(text, "=>")
		if !ok {
			t.Fatalf("%s:%d: no =>", name, line)
		}
		cmd, want = strings.TrimSpace(cmd), strings.TrimSpace(want)
		got, err := run(strings.Fields(cmd))
		if err != nil {
			t.Fatalf("%s:%d: %s: %v", name, line, cmd, err)
		}
		if got != want {
			t.Errorf("%s:%d: %s\n got: %s\nwant: %s", name, line, cmd, got, want)
		}
		ran++
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if ran < minCommands {
		t.Fatalf("%s: only %d commands ran: is the script truncated?", name, ran)
	}
}
