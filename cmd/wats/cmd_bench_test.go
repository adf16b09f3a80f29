package main

import (
	"strings"
	"testing"
)

func TestBenchGossipUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", "gossip", "--scenario", "nope"}, `--scenario "nope": must be one of all, none, invalid-flood`},
		{[]string{"bench", "gossip", "--duration", "1s"}, "--duration 1s: at least 5s"},
		{[]string{"bench", "gossip", "--after", "-1s"}, "--after -1s"},
		{[]string{"bench", "gossip", "--ids", "-3"}, "--ids -3"},
		{[]string{"bench", "gossip-worker", "--attack", "valid-spam"}, "no target"},
	} {
		code, _, stderr := runCLI(t, "", tc.args...)
		if code != exitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want usage error with %q", tc.args, code, stderr, tc.want)
		}
	}
}
