package main

import "testing"

// TestApplyHint: log.level alone takes a SIGHUP, a key that is not
// reloadable a restart, and both kinds together say both.
func TestApplyHint(t *testing.T) {
	for _, tc := range []struct {
		keys []string
		want string
	}{
		{[]string{"log.level"}, "send the daemon SIGHUP (kill -HUP PID; the pid is in repo.lock) to apply"},
		{[]string{"p2p.mdns"}, "restart the daemon to apply"},
		{[]string{"bandwidth.up_bytes_per_s", "log.level"},
			"restart the daemon to apply them all (a SIGHUP (kill -HUP PID; the pid is in repo.lock) applies log.level alone)"},
	} {
		if got := applyHint(tc.keys); got != tc.want {
			t.Errorf("applyHint(%q) = %q, want %q", tc.keys, got, tc.want)
		}
	}
}
