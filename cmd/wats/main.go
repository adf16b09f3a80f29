package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

// Exit codes of the wats binary.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

// version is the wats version, set at build time with
// -ldflags "-X main.version=v0.1.0".
var version = "dev"

func main() {
	hup := catchHangups() // first of all (hangup.go)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	if isDaemonCommand(os.Args[1:]) {
		processHangups = hup
	} else {
		ctx = endOnHangup(ctx, hup, hangupIgnoredAtExec())
	}
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run executes the command line args and returns the process exit code.
// Errors are printed to stderr as "Error: ...", without the Go package
// prefixes of the layers they passed through (userMessage).
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	root := newRootCmd(stdin, stdout, stderr)
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return exitOK
	}
	var ec *exitCodeError
	if errors.As(err, &ec) {
		return ec.code
	}
	if ctx.Err() != nil && errors.Is(err, context.Canceled) {
		fmt.Fprintln(stderr, "interrupted")
		return exitError
	}
	fmt.Fprintf(stderr, "Error: %s\n", printable(userMessage(err)))
	if isUsageError(err) {
		if cmd == nil {
			cmd = root
		}
		path := commandName() + strings.TrimPrefix(cmd.CommandPath(), root.Name())
		fmt.Fprintf(stderr, "Run '%s --help' for usage.\n", path)
		return exitUsage
	}
	return exitError
}

// usageError is an error in the command line itself: the command prints it
// with a pointer to --help and exits with exitUsage.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

func usageErrorf(format string, args ...any) error {
	return &usageError{fmt.Errorf(format, args...)}
}

// isUsageError reports whether err is a usage error, including those cobra
// makes itself for an unknown command.
func isUsageError(err error) bool {
	var ue *usageError
	if errors.As(err, &ue) {
		return true
	}
	msg := err.Error()
	return strings.HasPrefix(msg, "unknown command ") || strings.HasPrefix(msg, "required flag")
}

// exitCodeError makes run exit with code without printing anything: the
// command already said what it had to (e.g. `devnet exec` passing on the
// exit code of the command it ran).
type exitCodeError struct{ code int }

func (e *exitCodeError) Error() string { return fmt.Sprintf("exit status %d", e.code) }
