//go:build !unix

package daemon

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
)

// No descriptors pass over sockets here: every import is an upload.

var errNoFile = errors.New("no file descriptor can come with a request on this system: upload the file's bytes with POST /v1/blobs")

func wrapListener(l net.Listener) net.Listener                    { return l }
func connState(net.Conn, http.ConnState)                          {}
func connContext(ctx context.Context, _ net.Conn) context.Context { return ctx }
func passedFile(context.Context) (*os.File, int64, error)         { return nil, 0, errNoFile }
func passedOutput(context.Context) (*os.File, error)              { return nil, errNoFile }
