package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"syscall"
	"testing"

	"github.com/wats-network/wats/api"
)

// TestDaemonGone: the errors of a daemon that stops while a command asks
// it, whichever side of the request it meets, say the daemon is gone (the
// command then reads the repo itself); others do not.
func TestDaemonGone(t *testing.T) {
	// As net/http returns them: a *url.Error around a *net.OpError.
	wrap := func(op string, err error) error {
		return &url.Error{Op: "Get", URL: "http://wats/v1/events", Err: &net.OpError{Op: op, Net: "unix", Err: os.NewSyscallError(op, err)}}
	}
	for _, tc := range []struct {
		err  error
		gone bool
	}{
		{&api.NoDaemonError{Socket: "api.sock", Err: syscall.ECONNREFUSED}, true},
		{wrap("dial", syscall.ECONNREFUSED), true},
		{wrap("write", syscall.EPIPE), true}, // the request written as the daemon closed
		{wrap("read", syscall.ECONNRESET), true},
		{fmt.Errorf("get: %w", io.ErrUnexpectedEOF), true},
		{wrap("dial", syscall.EACCES), false},
		{errors.New("the daemon says: bad request"), false},
		{nil, false},
	} {
		if got := daemonGone(tc.err); got != tc.gone {
			t.Errorf("daemonGone(%v) = %v, want %v", tc.err, got, tc.gone)
		}
	}
}
