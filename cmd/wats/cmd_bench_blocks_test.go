package main

import (
	"strings"
	"testing"
)

// TestBenchFetchAttackUsage: `bench fetch --attack` names its scenarios
// in a usage error, and refuses a --duration under 5 s.
func TestBenchFetchAttackUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", "fetch", "--attack", "nope"}, `--attack "nope": must be one of all, none, blocks-flood-open-1`},
		{[]string{"bench", "fetch", "--attack", "blocks-sybil-20", "--duration", "1s"}, "--duration 1s: at least 5s"},
	} {
		code, _, stderr := runCLI(t, "", tc.args...)
		if code != exitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want usage error with %q", tc.args, code, stderr, tc.want)
		}
	}
}
