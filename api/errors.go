package api

import (
	"errors"
	"fmt"
	"net/http"
)

// ErrNoDaemon matches the error of any call made when no daemon listens on
// the socket: the socket file does not exist, or it refuses connections (a
// daemon that exited without removing it). The concrete error is a
// *NoDaemonError naming the socket.
var ErrNoDaemon = errors.New("api: no daemon is running")

// ErrNotFound matches an *Error whose status is 404 Not Found, e.g. GET
// PathEvent for an unknown id.
var ErrNotFound = errors.New("api: not found")

// ErrAmbiguous matches an *Error whose status is 409 Conflict: GET
// PathEvent for an id prefix that several events share.
var ErrAmbiguous = errors.New("api: ambiguous id prefix")

// ErrStreamEnded is returned when the daemon closes an NDJSON stream before
// its end: a PathTail stream (which is endless), or a PathSync stream
// without a final line. It usually means the daemon stopped.
var ErrStreamEnded = errors.New("api: the daemon closed the stream early")

// ErrSyncFailed wraps the Error of the final SyncProgress of a failed sync.
var ErrSyncFailed = errors.New("api: sync failed")

// ErrTooLarge is returned when a response body is larger than the client
// accepts (MaxResponseBytes, MaxStreamLineBytes).
var ErrTooLarge = errors.New("api: response too large")

// NoDaemonError is the error of a call made when no daemon listens on
// Socket. It matches ErrNoDaemon with errors.Is and unwraps to the dial
// error.
type NoDaemonError struct {
	// Socket is the path of the Unix socket that was dialled.
	Socket string
	// Err is the dial error, e.g. one matching fs.ErrNotExist or
	// syscall.ECONNREFUSED.
	Err error
}

func (e *NoDaemonError) Error() string {
	return fmt.Sprintf("api: no daemon is running (socket %s: %v)", e.Socket, e.Err)
}

// Is reports whether target is ErrNoDaemon.
func (e *NoDaemonError) Is(target error) bool { return target == ErrNoDaemon }

// Unwrap returns the dial error.
func (e *NoDaemonError) Unwrap() error { return e.Err }

// Error is a non-2xx response of the daemon.
type Error struct {
	// Status is the HTTP status code.
	Status int
	// Message is the ErrorBody's error, or the body's text or the status
	// text when the body is not an ErrorBody.
	Message string
}

func (e *Error) Error() string {
	return fmt.Sprintf("api: %d %s: %s", e.Status, http.StatusText(e.Status), e.Message)
}

// Is reports whether target is ErrNotFound and the status is 404, or
// target is ErrAmbiguous and the status is 409.
func (e *Error) Is(target error) bool {
	switch target {
	case ErrNotFound:
		return e.Status == http.StatusNotFound
	case ErrAmbiguous:
		return e.Status == http.StatusConflict
	}
	return false
}
