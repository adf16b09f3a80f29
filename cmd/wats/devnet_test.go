package main

import (
	"errors"
	"os/exec"
	"syscall"
	"testing"
)

func TestExitCodeOf(t *testing.T) {
	for _, tc := range []struct {
		script string
		want   int
	}{{"exit 3", 3}, {"exit 1", 1}, {"kill -TERM $$", 128 + int(syscall.SIGTERM)}} {
		err := exec.Command("sh", "-c", tc.script).Run()
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatalf("%s: %v", tc.script, err)
		}
		if got := exitCodeOf(ee); got != tc.want {
			t.Errorf("%s: exit code %d, want %d", tc.script, got, tc.want)
		}
	}
}
