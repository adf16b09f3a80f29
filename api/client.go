package api

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Bounds on what the client reads from the daemon. The daemon runs as the
// same user behind a 0600 socket, so these are not a defence against an
// attacker: they keep a buggy or confused daemon (or some other program
// listening on the path) from making the CLI allocate without limit.
const (
	// MaxResponseBytes caps a non-streaming response body. The largest
	// legitimate one is an EventPage: at most 256 events (docs/design.md §4) of at
	// most a few tens of KiB each (a 16 KiB body, 16 blob references), well
	// under 8 MiB; 64 MiB leaves room for any page size the daemon chooses.
	MaxResponseBytes = 64 << 20
	// MaxStreamLineBytes caps one line of an NDJSON stream (PathTail,
	// PathSync). A line is one event (a gossip envelope, which wraps one, is
	// capped at 64 KiB, docs/design.md §6) or one SyncProgress (a few hundred bytes).
	MaxStreamLineBytes = 1 << 20
	// MaxErrorBytes caps the body read from a non-2xx response; the rest is
	// discarded. An ErrorBody is one message of a line or two.
	MaxErrorBytes = 64 << 10
)

// baseURL is the URL prefix of every request. The host is ignored (the
// transport always dials the socket) but net/http needs one.
const baseURL = "http://wats"

// Client calls the control API of the daemon listening on one Unix socket.
// It is safe for concurrent use. The zero value is not usable; use
// NewClient. Calls have no timeout of their own: pass a ctx with a deadline
// where one is wanted (the streams run until ctx is done).
type Client struct {
	socket string
	hc     *http.Client
	tr     *http.Transport

	// maxResponse and maxLine are MaxResponseBytes and MaxStreamLineBytes;
	// fields so that tests can exercise the bounds cheaply.
	maxResponse int64
	maxLine     int
}

// NewClient returns a client for the daemon serving on the Unix socket at
// socket (repo.Repo.SocketPath). It does not connect: the first call does,
// and fails with a *NoDaemonError if nothing listens there.
func NewClient(socket string) *Client {
	c := &Client{socket: socket, maxResponse: MaxResponseBytes, maxLine: MaxStreamLineBytes}
	c.tr = &http.Transport{
		DialContext:        c.dial,
		DisableCompression: true,
		MaxIdleConns:       4,
		// How long an upload with "Expect: 100-continue" waits for the
		// daemon's go-ahead before it sends the body anyway.
		ExpectContinueTimeout: 5 * time.Second,
	}
	c.hc = &http.Client{Transport: c.tr}
	return c
}

// Socket returns the path of the socket the client dials.
func (c *Client) Socket() string { return c.socket }

// Close releases the client's idle connections. The client stays usable.
func (c *Client) Close() { c.tr.CloseIdleConnections() }

// dial is the transport's dialler: a connection to the socket, tuned for
// uploads.
func (c *Client) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	conn, err := c.dialSocket(ctx)
	if uc, ok := conn.(*net.UnixConn); ok && err == nil {
		// Room for an upload to run ahead of the daemon's import (the
		// kernel may grant less); small requests use none of it.
		_ = uc.SetWriteBuffer(uploadAheadBytes)
		return uploadConn{uc}, nil
	}
	return conn, err
}

// dialSocket connects to the daemon's socket; a *NoDaemonError if
// nothing listens there.
func (c *Client) dialSocket(ctx context.Context) (net.Conn, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", c.socket)
	if err != nil && (errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ECONNREFUSED)) {
		return nil, &NoDaemonError{Socket: c.socket, Err: err}
	}
	return conn, err
}

// Upload tuning, measured in docs/performance.md ("blob add"): an upload
// is copied to the socket a chunk at a time, and may be up to four chunks
// ahead of the daemon, which reads as much as is there at once.
const (
	// uploadCopyBytes is one blob chunk (docs/design.md §9, 1 MiB).
	uploadCopyBytes = 1 << 20
	// uploadAheadBytes is the socket's send buffer.
	uploadAheadBytes = 4 * uploadCopyBytes
)

// uploadConn is a connection to the daemon through which net/http copies
// a request body uploadCopyBytes at a time (its own copy takes 32 KiB).
type uploadConn struct{ *net.UnixConn }

var copyBufs = sync.Pool{New: func() any { b := make([]byte, uploadCopyBytes); return &b }}

// ReadFrom is what net/http's writer calls for a body past its first
// bytes (after its buffer of the head is flushed).
func (c uploadConn) ReadFrom(r io.Reader) (int64, error) {
	buf := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(buf)
	// The wrappers hide io.WriterTo and io.ReaderFrom, which would bring
	// io.CopyBuffer back here or to a smaller copy.
	return io.CopyBuffer(struct{ io.Writer }{c.UnixConn}, struct{ io.Reader }{r}, *buf)
}

// ID returns the daemon's identity (GET PathID).
func (c *Client) ID(ctx context.Context) (*ID, error) {
	var out ID
	if err := c.getJSON(ctx, PathID, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Dashboard returns where the daemon serves its web dashboard, with the
// access token (GET PathDashboard): an *Error matching ErrNotFound when
// the dashboard is off.
func (c *Client) Dashboard(ctx context.Context) (*Dashboard, error) {
	var out Dashboard
	if err := c.getJSON(ctx, PathDashboard, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Status returns the daemon's status (GET PathStatus).
func (c *Client) Status(ctx context.Context) (*Status, error) {
	var out Status
	if err := c.getJSON(ctx, PathStatus, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Peers returns the connected peers (GET PathPeers); never nil on success.
func (c *Client) Peers(ctx context.Context) ([]Peer, error) {
	var out []Peer
	if err := c.getJSON(ctx, PathPeers, nil, &out); err != nil {
		return nil, err
	}
	if out == nil {
		out = []Peer{}
	}
	return out, nil
}

// Connect asks the daemon to dial addr, a full multiaddr ending in
// /p2p/<peer id>, and to complete hello (POST PathConnect). It returns the
// peer as the daemon then sees it.
func (c *Client) Connect(ctx context.Context, addr string) (*Peer, error) {
	var out Peer
	if err := c.postJSON(ctx, PathConnect, ConnectRequest{Addr: addr}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// AddEvent asks the daemon to sign, store and gossip an event of this kind
// and body naming blobs (none, or up to 16), with the daemon as their
// provider (POST PathEvents). It returns the stored signed event. The
// daemon validates kind, body and blobs (docs/design.md §5) and answers 400 if
// they are bad; body must be valid JSON for the request to be encoded at
// all.
func (c *Client) AddEvent(ctx context.Context, kind string, body jsontext.Value, blobs ...BlobRef) (jsontext.Value, error) {
	var out jsontext.Value
	if err := c.postJSON(ctx, PathEvents, AddEventRequest{Kind: kind, Body: body, Blobs: blobs}, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// Events returns the page of the local log after cursor after (0 = from
// the start), of at most limit events; limit <= 0 leaves the page size to
// the daemon (GET PathEvents).
func (c *Client) Events(ctx context.Context, after uint64, limit int) (*EventPage, error) {
	q := url.Values{}
	q.Set("after", strconv.FormatUint(after, 10))
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var out EventPage
	if err := c.getJSON(ctx, PathEvents, q, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Event returns the event with this id, or the one event whose id starts
// with it (GET PathEvent + id; see IsEventIDPrefix for what the daemon
// accepts). An id no event has gives an *Error matching ErrNotFound, a
// prefix of several events' ids one matching ErrAmbiguous.
func (c *Client) Event(ctx context.Context, id string) (jsontext.Value, error) {
	if id == "" {
		return nil, errors.New("api: empty event id")
	}
	var out jsontext.Value
	if err := c.getJSON(ctx, PathEvent+url.PathEscape(id), nil, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// Tail streams the events stored after cursor after (GET PathTail),
// calling fn for each, in log order, as the daemon stores them. It returns
// when ctx is done (ctx.Err()), when fn returns an error (that error), or
// when the stream breaks (ErrStreamEnded if the daemon closed it). Each
// value is fn's to keep.
func (c *Client) Tail(ctx context.Context, after uint64, fn func(jsontext.Value) error) error {
	q := url.Values{}
	q.Set("after", strconv.FormatUint(after, 10))
	resp, err := c.do(ctx, http.MethodGet, PathTail, q, nil, ContentTypeNDJSON)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	err = c.readLines(resp.Body, func(line []byte) error {
		v := jsontext.Value(bytes.Clone(line))
		if !v.IsValid() {
			return fmt.Errorf("api: tail: invalid JSON line %.64q", line)
		}
		return fn(v)
	})
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err == nil {
		return ErrStreamEnded
	}
	return err
}

// Sync asks the daemon to catch up on peer's log (POST PathSync); peer is
// a peer ID or a full multiaddr to dial first. fn, if not nil, is called
// with every progress line, the final one included. Sync returns the final
// progress: with a nil error when Done, or with an error wrapping
// ErrSyncFailed when the daemon reported one. If the stream ends without a
// final line, it returns the last progress seen (nil if none) and an error
// matching ErrStreamEnded.
func (c *Client) Sync(ctx context.Context, peer string, fn func(SyncProgress)) (*SyncProgress, error) {
	return postProgress(ctx, c, PathSync, SyncRequest{Peer: peer}, "sync", fn,
		func(p *SyncProgress) (bool, string) { return p.Done, p.Error }, ErrSyncFailed)
}

// SyncAll asks the daemon to sync from every connected peer at once (POST
// PathSync with SyncRequest.All; ADR 0052), as Sync does for one: each
// line carries every peer's share (SyncProgress.Shares).
func (c *Client) SyncAll(ctx context.Context, fn func(SyncProgress)) (*SyncProgress, error) {
	return postProgress(ctx, c, PathSync, SyncRequest{All: true}, "sync", fn,
		func(p *SyncProgress) (bool, string) { return p.Done, p.Error }, ErrSyncFailed)
}

// postProgress POSTs req to path and reads the NDJSON progress lines of
// the answer, each given to fn (if not nil), until the final one: a line
// for which final says done or an error. It returns that line, with nil or
// an error wrapping failed and the daemon's message; if the stream ends
// first, the last line seen (nil if none) and ErrStreamEnded.
func postProgress[T any](ctx context.Context, c *Client, path string, req any, what string, fn func(T),
	final func(*T) (done bool, errMsg string), failed error) (*T, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("api: encode %s request: %w", what, err)
	}
	resp, err := c.do(ctx, http.MethodPost, path, nil, body, ContentTypeNDJSON)
	if err != nil {
		return nil, err
	}
	return readProgress(ctx, c, resp, what, fn, final, failed)
}

// readProgress reads the NDJSON progress lines of resp, as postProgress
// says, and closes its body.
func readProgress[T any](ctx context.Context, c *Client, resp *http.Response, what string, fn func(T),
	final func(*T) (done bool, errMsg string), failed error) (*T, error) {
	defer resp.Body.Close()
	var last *T
	errFinal := errors.New("final") // stops readLines at the final line
	err := c.readLines(resp.Body, func(line []byte) error {
		var p T
		if err := json.Unmarshal(line, &p); err != nil {
			return fmt.Errorf("api: %s: bad progress line: %w", what, err)
		}
		last = &p
		if fn != nil {
			fn(p)
		}
		if done, msg := final(&p); done || msg != "" {
			return errFinal
		}
		return nil
	})
	switch {
	case errors.Is(err, errFinal):
		if _, msg := final(last); msg != "" {
			return last, fmt.Errorf("%w: %s", failed, msg)
		}
		return last, nil
	case ctx.Err() != nil:
		return last, ctx.Err()
	case err == nil:
		return last, ErrStreamEnded
	default:
		return last, err
	}
}

// Metrics returns the daemon's metrics in the Prometheus text exposition
// format (GET PathMetrics).
func (c *Client) Metrics(ctx context.Context) (string, error) {
	resp, err := c.do(ctx, http.MethodGet, PathMetrics, nil, nil, "text/plain")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := c.readAll(resp.Body)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// Profile writes the daemon's runtime profile name ("heap", "goroutine",
// "allocs", … as net/http/pprof names them; GET /debug/pprof/NAME) to w,
// in pprof's protobuf format. It fails on a name the runtime does not
// know (an *Error, 404), if the daemon is not running, or if w fails.
func (c *Client) Profile(ctx context.Context, name string, w io.Writer) error {
	return c.ProfileOf(ctx, name, nil, w)
}

// readLines calls fn with each non-empty line of r (without its "\n")
// until r ends (nil), a line is longer than c.maxLine (ErrTooLarge), r
// fails, or fn returns an error (that error). The line is only valid
// during the call.
func (c *Client) readLines(r io.Reader, fn func([]byte) error) error {
	sc := bufio.NewScanner(r)
	// +1: the scanner's buffer holds the line and its "\n".
	sc.Buffer(make([]byte, 0, min(64<<10, c.maxLine+1)), c.maxLine+1)
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) > c.maxLine { // a last line without "\n"
			return fmt.Errorf("%w: stream line over %d bytes", ErrTooLarge, c.maxLine)
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		if err := fn(line); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return fmt.Errorf("%w: stream line over %d bytes", ErrTooLarge, c.maxLine)
		}
		return fmt.Errorf("api: read stream: %w", err)
	}
	return nil
}

func (c *Client) getJSON(ctx context.Context, path string, q url.Values, out any) error {
	resp, err := c.do(ctx, http.MethodGet, path, q, nil, ContentTypeJSON)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return c.decode(resp.Body, path, out)
}

func (c *Client) postJSON(ctx context.Context, path string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("api: encode %s request: %w", path, err)
	}
	resp, err := c.do(ctx, http.MethodPost, path, nil, body, ContentTypeJSON)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return c.decode(resp.Body, path, out)
}

func (c *Client) decode(r io.Reader, path string, out any) error {
	b, err := c.readAll(r)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("api: decode %s response: %w", path, err)
	}
	return nil
}

// readAll reads r up to c.maxResponse bytes; a longer body is ErrTooLarge.
func (c *Client) readAll(r io.Reader) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, c.maxResponse+1))
	if err != nil {
		return nil, fmt.Errorf("api: read response: %w", err)
	}
	if int64(len(b)) > c.maxResponse {
		return nil, fmt.Errorf("%w: body over %d bytes", ErrTooLarge, c.maxResponse)
	}
	return b, nil
}

// do sends one request and returns the response if its status is 2xx; the
// caller closes its body. Otherwise it returns a *NoDaemonError, an *Error
// (non-2xx) or a transport error.
func (c *Client) do(ctx context.Context, method, path string, q url.Values, body []byte, accept string) (*http.Response, error) {
	u := baseURL + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return nil, fmt.Errorf("api: %s %s: %w", method, path, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", ContentTypeJSON)
	}
	req.Header.Set("Accept", accept)
	return c.send(req)
}

// send performs req: a daemon that is not running is a *NoDaemonError, a
// non-2xx answer an *Error.
func (c *Client) send(req *http.Request) (*http.Response, error) { return c.sendOn(c.hc, req) }

// sendOn is send through hc.
func (c *Client) sendOn(hc *http.Client, req *http.Request) (*http.Response, error) {
	resp, err := hc.Do(req)
	if err != nil {
		var nd *NoDaemonError
		if errors.As(err, &nd) {
			return nil, nd
		}
		if ctx := req.Context(); ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("api: %s %s: %w", req.Method, req.URL.Path, err)
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		return nil, errorFrom(resp)
	}
	return resp, nil
}

// errorFrom builds the *Error of a non-2xx response, reading at most
// MaxErrorBytes of its body.
func errorFrom(resp *http.Response) *Error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, MaxErrorBytes))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, MaxErrorBytes)) // lets the connection be reused
	e := &Error{Status: resp.StatusCode}
	var eb ErrorBody
	if err := json.Unmarshal(b, &eb); err == nil && eb.Error != "" {
		e.Message = eb.Error
	} else if s := strings.TrimSpace(string(b)); s != "" && !strings.HasPrefix(s, "{") {
		e.Message = s
	} else {
		e.Message = http.StatusText(resp.StatusCode)
	}
	return e
}

// Limits returns the daemon's effective rate limits (GET PathLimits).
func (c *Client) Limits(ctx context.Context) (*Limits, error) {
	var l Limits
	if err := c.getJSON(ctx, PathLimits, nil, &l); err != nil {
		return nil, err
	}
	return &l, nil
}

// Diag returns the daemon's admission counters (GET PathDiag).
func (c *Client) Diag(ctx context.Context) (*Diag, error) {
	var d Diag
	if err := c.getJSON(ctx, PathDiag, nil, &d); err != nil {
		return nil, err
	}
	return &d, nil
}
