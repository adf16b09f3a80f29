//go:build cgo && unix

package main

/*
#include <signal.h>

static int wats_hup_ignored_at_exec;

// Runs before the Go runtime starts (hangup.go): SIGHUP is ignored until
// main asks for it.
__attribute__((constructor)) static void wats_hold_hangups(void) {
	struct sigaction old;
	if (sigaction(SIGHUP, NULL, &old) == 0 && old.sa_handler == SIG_IGN) {
		wats_hup_ignored_at_exec = 1;
	}
	signal(SIGHUP, SIG_IGN);
}

static int wats_hup_was_ignored(void) { return wats_hup_ignored_at_exec; }
*/
import "C"

// heldFromExec: this build holds SIGHUP from its constructor on.
const heldFromExec = true

// hangupIgnoredAtExec reports whether SIGHUP was ignored when the process
// started (nohup), before the constructor ignored it.
func hangupIgnoredAtExec() bool { return C.wats_hup_was_ignored() != 0 }
