package store

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"syscall"
	"testing"
)

// TestFatalSaysWhatToDo: when pebble finds damage in a running node's
// database (a fatal error: pebble does not go on), the node says on stderr
// what the operator can do before it exits 1.
func TestFatalSaysWhatToDo(t *testing.T) {
	var out bytes.Buffer
	code := -1
	fatalOut, exitProcess = &out, func(c int) { code = c }
	t.Cleanup(func() { fatalOut, exitProcess = os.Stderr, os.Exit })
	Logger{Log: slog.New(slog.DiscardHandler), Repo: "/srv/wats"}.Fatalf("on-disk corruption: %s", "000006.sst")
	if code != 1 {
		t.Errorf("exit code %d, want 1", code)
	}
	for _, want := range []string{"the database of repo /srv/wats is damaged", "wats repo check --repo /srv/wats", "wats repo repair --repo /srv/wats", "intact"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("stderr does not say %q:\n%s", want, out.String())
		}
	}
}

// TestFatalSaysDiskFull: a fatal error of pebble's that is a full disk
// (ENOSPC, as an error or in its text) says the disk is full and that
// nothing is damaged, not the damage advice.
func TestFatalSaysDiskFull(t *testing.T) {
	var out bytes.Buffer
	code := -1
	fatalOut, exitProcess = &out, func(c int) { code = c }
	t.Cleanup(func() { fatalOut, exitProcess = os.Stderr, os.Exit })
	dir := t.TempDir()
	for _, args := range [][]any{
		{fmt.Errorf("write 000012.log: %w", syscall.ENOSPC)},
		{"write 000012.log: no space left on device"},
	} {
		out.Reset()
		Logger{Log: slog.New(slog.DiscardHandler), Repo: dir}.Fatalf("pebble: could not write to the WAL: %v", args...)
		if code != 1 {
			t.Errorf("exit code %d, want 1", code)
		}
		if s := out.String(); !strings.Contains(s, "the disk of repo "+dir+" is full (") || !strings.Contains(s, "Nothing is damaged") || strings.Contains(s, "repair") {
			t.Errorf("%v: stderr says:\n%s", args, s)
		}
	}
}
