package main

import "testing"

// TestApplyHint: log.level alone takes a SIGHUP, a key that is not
// reloadable a restart, and both kinds together say both; the SIGHUP is a
// command to paste, with the daemon's pid when known, else reading it from
// the repo lock.
func TestApplyHint(t *testing.T) {
	c := &cli{repoDir: "/tmp/my repo"}
	for _, tc := range []struct {
		keys []string
		pid  int
		want string
	}{
		{[]string{"log.level"}, 4242, "send the daemon a SIGHUP to apply: kill -HUP 4242"},
		{[]string{"log.level"}, 0, "send the daemon a SIGHUP to apply: kill -HUP $(cat '/tmp/my repo/repo.lock')"},
		{[]string{"p2p.mdns"}, 4242, "restart the daemon to apply"},
		{[]string{"bandwidth.up_bytes_per_s", "log.level"}, 4242,
			"restart the daemon to apply them all; a SIGHUP applies log.level alone: kill -HUP 4242"},
	} {
		if got := c.applyHint(tc.keys, tc.pid); got != tc.want {
			t.Errorf("applyHint(%q, %d) = %q, want %q", tc.keys, tc.pid, got, tc.want)
		}
	}
}
