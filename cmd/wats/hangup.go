package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// SIGHUP from the first instant (docs/adr/0043). Go's runtime ends a
// process on a SIGHUP until the program asks for it with signal.Notify,
// and main runs only after every package's init, some 30 ms after exec
// for this binary: a SIGHUP then (systemd's ExecReload right after the start, a script's
// kill -HUP) killed the daemon with status 129. So:
//
//   - a C constructor (hangup_cgo.go) sets SIGHUP to be ignored before the
//     Go runtime starts, which the runtime then leaves so (it keeps an
//     inherited SIG_IGN for SIGHUP), and notes whether it was ignored
//     already at exec (nohup);
//   - main's first act is signal.Notify for SIGHUP, on a channel of one
//     that keeps the first one not yet read;
//   - the daemon reads that channel for its reloads (reloadOnHUP): a SIGHUP
//     that came before its handler ran is a reload once it runs;
//   - any other command ends on a SIGHUP as on SIGTERM (a terminal hung
//     up), unless SIGHUP was ignored at exec, as under nohup.
//
// A SIGHUP before the constructor runs, in execve or the dynamic loader
// (up to 2–3 ms after the parent sees the exec on a busy machine of 2
// cores), ends the process as it would any other: no code of the program
// runs yet to ask otherwise. Under systemd, Type=notify closes that
// window: ExecReload waits for the daemon's READY=1 (daemon/notify.go).
// TestHangupAtAnyMoment starts its moments at the constructor.

// processHangups is main's SIGHUP channel when the command is the daemon
// (nil in tests that call run in-process: reloadOnHUP then asks for its
// own).
var processHangups <-chan os.Signal

// catchHangups asks for SIGHUP on a channel of one; main calls it first.
func catchHangups() chan os.Signal {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	return hup
}

// isDaemonCommand reports whether args name the daemon command.
func isDaemonCommand(args []string) bool {
	cmd, _, err := newRootCmd(nil, io.Discard, io.Discard).Find(args)
	return err == nil && cmd.Name() == "daemon"
}

// endOnHangup returns a context that ends when ctx does or at the first
// SIGHUP on hup, unless SIGHUP was ignored at exec (ignoredAtExec): then
// hangups are read and dropped, as the ignored signal was.
func endOnHangup(ctx context.Context, hup <-chan os.Signal, ignoredAtExec bool) context.Context {
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				if !ignoredAtExec {
					cancel()
					return
				}
			}
		}
	}()
	return ctx
}
