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

func TestBenchVsIPFSUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", "vs-ipfs", "--rounds", "0"}, "--rounds 0: must be at least 1"},
		{[]string{"bench", "vs-ipfs", "--transport", "udp"}, `--transport "udp": must be tcp or quic`},
		{[]string{"bench", "vs-ipfs", "--size", "0"}, "--size 0: must be 1..2^53 bytes"},
		{[]string{"bench", "vs-ipfs", "--size", "9007199254740993"}, "must be 1..2^53 bytes"},
	} {
		code, _, stderr := runCLI(t, "", tc.args...)
		if code != exitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want usage error with %q", tc.args, code, stderr, tc.want)
		}
	}
}

// TestBenchVsIPFSSkipsWithoutKubo: without --ipfs or $IPFS the bench says
// it is skipped, how to get a kubo binary, and succeeds (make test needs
// no kubo; `make bench-kubo` without IPFS= says so).
func TestBenchVsIPFSSkipsWithoutKubo(t *testing.T) {
	t.Setenv("IPFS", "")
	code, stdout, stderr := runCLI(t, "", "bench", "vs-ipfs")
	if code != 0 || stdout != "" || !strings.Contains(stderr, "skipped") || !strings.Contains(stderr, "go build -o /tmp/ipfs ./cmd/ipfs") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}
