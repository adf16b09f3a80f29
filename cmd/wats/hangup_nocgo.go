//go:build !cgo || !unix

package main

import (
	"os/signal"
	"syscall"
)

// heldFromExec: without cgo, SIGHUP is held from main on only.
const heldFromExec = false

// hangupIgnoredAtExec reports whether SIGHUP was ignored when the process
// started (nohup). Without cgo there is no constructor: a SIGHUP before
// main's signal.Notify ends the process, as Go's runtime does by default.
var hangupIgnoredAtExec = func() func() bool {
	ignored := signal.Ignored(syscall.SIGHUP)
	return func() bool { return ignored }
}()
