package proto

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"time"

	pool "github.com/libp2p/go-buffer-pool"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
)

// ErrBadResponse is returned (wrapped, with the details) by Call when the
// peer's response does not decode, or is of a type that does not answer the
// request.
var ErrBadResponse = errors.New("proto: bad response")

// Call sends req to peer p over a new /wats/1 stream of h and returns the
// success response, whose Type is req's type (docs/design.md §4).
//
// It opens a stream for ID, attaches it to ServiceName, writes the request
// frame, closes its write side, and reads one response frame of at most
// MaxResponseBytes (reserving that memory with the stream's resource scope),
// all within req's type's Timeout (ResponseTimeout, ReplicateTimeout for
// replicate) or ctx's deadline if sooner. It closes the stream after a
// well-formed response and resets it otherwise. A request whose
// connection closed under it is sent once more, on a new stream (call).
//
// Errors:
//   - an "error" response: the *Error itself (not wrapped);
//   - a "refused" response: a *RefusedError (errors.Is ErrRefused);
//   - a "challenge" response: a *ChallengeError (errors.Is ErrChallenged);
//   - a response that does not decode or does not answer req: ErrBadResponse,
//     wrapped;
//   - an oversized response: ErrFrameTooLarge, wrapped;
//   - the deadline or ctx's cancellation: ctx's error (e.g.
//     context.DeadlineExceeded), wrapped;
//   - transport errors, wrapped;
//   - req invalid (see MarshalGreased) or not a request type.
func Call(ctx context.Context, h host.Host, p peer.ID, req Message) (*Response, error) {
	if req == nil || reflect.ValueOf(req).IsNil() {
		return nil, errors.New("proto: call: nil request")
	}
	t := req.MessageType()
	if !isRequest(req) {
		return nil, fmt.Errorf("proto: call: %s is not a request type", t)
	}
	b, err := Marshal(req)
	if err != nil {
		return nil, err
	}
	return call(ctx, h, p, t, b)
}

// call is Call for a request of type t already encoded as b. A request
// whose connection died under it (its stream failed and the connection is
// closed now, before ctx ended) is sent once more, on a new stream, over
// another connection to p or a new one: a connection to a peer that
// restarted can be one the peer no longer has, which libp2p still picks
// for new streams until QUIC's idle timeout closes it (UDP brings no FIN).
// Every request type may be sent twice: hello and sync change nothing,
// and the events of replicate and crash_report are stored once by id.
func call(ctx context.Context, h host.Host, p peer.ID, t Type, b []byte) (*Response, error) {
	resp, died, err := callOnce(ctx, h, p, t, b)
	if died && ctx.Err() == nil {
		resp, _, err = callOnce(ctx, h, p, t, b)
	}
	return resp, err
}

// callOnce is call over one stream; died reports that the request failed
// because the stream's connection closed.
func callOnce(ctx context.Context, h host.Host, p peer.ID, t Type, b []byte) (_ *Response, died bool, _ error) {
	ctx, cancel := context.WithTimeout(ctx, t.Timeout())
	defer cancel()
	// Requests may go over a relayed (limited) connection: hello and sync
	// are small and resumable, and a relay's circuit is what reaches a peer
	// behind a NAT until a hole punch (docs/adr/0040). Blobs never do.
	s, err := h.NewStream(network.WithAllowLimitedConn(ctx, "wats"), p, ID)
	if err != nil {
		return nil, false, callError(ctx, t, p, err)
	}
	// A cancelled ctx resets the stream, which ends any read or write.
	stop := context.AfterFunc(ctx, func() { s.Reset() })
	defer stop()
	fail := func(err error) (*Response, bool, error) {
		s.Reset()
		return nil, ctx.Err() == nil && s.Conn().IsClosed(), callError(ctx, t, p, err)
	}
	if err := s.Scope().SetService(ServiceName); err != nil {
		return fail(err)
	}
	if dl, ok := ctx.Deadline(); ok {
		if err := s.SetDeadline(dl); err != nil {
			return fail(err)
		}
	}
	if err := WriteFrame(s, b); err != nil {
		return fail(err)
	}
	if err := s.CloseWrite(); err != nil {
		return fail(err)
	}
	// The response's frame goes back to a pool once decoded (a Response
	// does not alias it): a catch-up reads thousands of pages, each a
	// fresh allocation of its size otherwise (ADR 0038).
	rb, release, err := readStreamFrame(s, MaxResponseBytes, network.ReservationPriorityHigh, nil, true)
	if err != nil {
		return fail(err)
	}
	defer release()
	resp, err := DecodeResponse(rb)
	if err != nil {
		s.Reset()
		return nil, false, fmt.Errorf("%w: %s call to %s: %v", ErrBadResponse, t, p, err)
	}
	switch resp.Type {
	case t:
		s.Close()
		return resp, false, nil
	case TypeError:
		s.Close()
		return nil, false, resp.Error
	case TypeRefused:
		s.Close()
		return nil, false, &RefusedError{Refused: *resp.Refused}
	case TypeChallenge:
		s.Close()
		return nil, false, &ChallengeError{Challenge: *resp.Challenge}
	}
	s.Reset()
	return nil, false, fmt.Errorf("%w: %s call to %s: answered with %s", ErrBadResponse, t, p, resp.Type)
}

// ReadStreamFrame is ReadFrame on a libp2p stream, with the payload's
// memory reserved in the stream's resource scope (at priority prio) before
// it is allocated, so that the resource manager's memory limits bound what
// peers can make the node buffer. Call release when done with the payload;
// on error nothing stays reserved.
func ReadStreamFrame(s network.Stream, max int, prio uint8) (payload []byte, release func(), err error) {
	return readStreamFrame(s, max, prio, nil, false)
}

// ReadRequestFrame reads the request frame of a responder's stream opened
// at start: its length prefix within PrefixTimeout of start, the whole
// frame within ReadTimeout of start, at most MaxRequestBytes, its payload's
// memory reserved at priority prio as ReadStreamFrame does. A deadline that
// passes is an error for which IsTimeout holds.
func ReadRequestFrame(s network.Stream, start time.Time, prio uint8) (payload []byte, release func(), err error) {
	if err := s.SetReadDeadline(start.Add(PrefixTimeout)); err != nil {
		return nil, func() {}, fmt.Errorf("proto: set read deadline: %w", err)
	}
	return readStreamFrame(s, MaxRequestBytes, prio, func() error { return s.SetReadDeadline(start.Add(ReadTimeout)) }, false)
}

// readStreamFrame is ReadStreamFrame; prefixed, if set, runs once the
// length is known, before the payload is read. With pooled, the payload is
// read into a buffer of go-buffer-pool's, which release gives back: the
// caller must not keep it past release.
func readStreamFrame(s network.Stream, max int, prio uint8, prefixed func() error, pooled bool) (payload []byte, release func(), err error) {
	scope := s.Scope()
	reserved := 0
	var b []byte
	release = func() {
		if reserved > 0 {
			scope.ReleaseMemory(reserved)
			reserved = 0
		}
		if pooled && b != nil {
			pool.Put(b)
			b = nil
		}
	}
	alloc := func(n int) []byte { return make([]byte, n) }
	if pooled {
		alloc = pool.Get
	}
	b, err = readFrame(s, max, alloc, func(n int) error {
		if prefixed != nil {
			if err := prefixed(); err != nil {
				return err
			}
		}
		if err := scope.ReserveMemory(n, prio); err != nil {
			return err
		}
		reserved = n
		return nil
	})
	if err != nil {
		release()
		return nil, func() {}, err
	}
	return b, release, nil
}

// IsTimeout reports whether err is a deadline that passed (a stream's read
// or write deadline, a net.Error that times out).
func IsTimeout(err error) bool {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return true
	}
	var ne interface{ Timeout() bool }
	return errors.As(err, &ne) && ne.Timeout()
}

// callError wraps err, putting ctx's error first when the call failed
// because ctx ended (the stream deadline can fire a moment before ctx's own
// timer does).
func callError(ctx context.Context, t Type, p peer.ID, err error) error {
	cerr := ctx.Err()
	if cerr == nil {
		if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) {
			cerr = context.DeadlineExceeded
		}
	}
	if cerr != nil {
		return fmt.Errorf("proto: %s call to %s: %w (%v)", t, p, cerr, err)
	}
	return fmt.Errorf("proto: %s call to %s: %w", t, p, err)
}

// WriteMessage encodes m with Marshal (GREASE included) and writes it as one
// frame: what a stream handler sends back. When timeout is not nil and w
// has a write deadline (SetWriteDeadline, as a libp2p stream has), the
// deadline is set first to now plus timeout(n), n being the encoded
// message's length in bytes, so that a responder can give a large response
// more time than a small one. An error of Marshal is returned before
// anything is written.
func WriteMessage(w io.Writer, m Message, timeout func(n int) time.Duration) error {
	b, err := Marshal(m)
	if err != nil {
		return err
	}
	// Marshal's buffer comes from go-buffer-pool (encode); written, it
	// goes back (the writers here, yamux and Noise, copy what they send).
	defer pool.Put(b)
	if dw, ok := w.(interface{ SetWriteDeadline(time.Time) error }); ok && timeout != nil {
		if err := dw.SetWriteDeadline(time.Now().Add(timeout(len(b)))); err != nil {
			return err
		}
	}
	return WriteFrame(w, b)
}

// MinReadRate is the slowest a requester may read its response: 64 KiB/s
// (half a megabit), the rate blobs.MinBodyRate asks of a bitswap body.
const MinReadRate = 64 << 10

// ReplyTimeout is the write deadline of a response frame of n bytes:
// PrefixTimeout + 3 s, plus n at MinReadRate, at most ResponseTimeout (the
// requester's bound on the whole call). A small answer has 5 s, a full
// sync page of 4 MiB the 30 s. The memory of a sync page is held until its
// write ends, so a requester that does not read holds it no longer than
// this.
func ReplyTimeout(n int) time.Duration {
	return min(PrefixTimeout+3*time.Second+time.Duration(n)*time.Second/MinReadRate, ResponseTimeout)
}

// Reply writes one response m on s within ReplyTimeout and closes s; a
// failed write resets it, and its error is returned.
func Reply(s network.Stream, m Message) error {
	if err := WriteMessage(s, m, ReplyTimeout); err != nil {
		s.Reset()
		return err
	}
	return s.Close()
}

// ReadRequest reads and decodes the request of a responder's stream
// opened at start (ReadRequestFrame, DecodeRequest); release gives back
// the frame's memory. On an error, answer is what to send the peer for a
// request it got wrong (its fault, counted as invalid): CodeTooLarge for
// a frame over MaxRequestBytes (err wraps ErrFrameTooLarge), the decode's
// *Error otherwise; nil for a stream to reset without an answer (a
// deadline passed, IsTimeout(err); or the frame could not be read).
func ReadRequest(s network.Stream, start time.Time, prio uint8) (req *Request, release func(), answer *Error, err error) {
	b, release, err := ReadRequestFrame(s, start, prio)
	if errors.Is(err, ErrFrameTooLarge) {
		return nil, release, &Error{Code: CodeTooLarge, Message: err.Error()}, err
	}
	if err != nil {
		return nil, release, nil, err
	}
	if req, err = DecodeRequest(b); err != nil && !errors.As(err, &answer) {
		answer = &Error{Code: CodeBadRequest, Message: err.Error()}
	}
	return req, release, answer, err
}

// HelloAnswer reads the answer to a hello (resp and err, Call's) sent by
// a node on network: wrong says how it shows the peer on another network
// ("answered: " and a wrong_network error's message, or "is on network
// X" for a hello naming another), else ""; err is a failed call, or an
// answer that is not a hello.
func HelloAnswer(resp *Response, err error, network string) (wrong string, _ error) {
	var perr *Error
	switch {
	case errors.As(err, &perr) && perr.Code == CodeWrongNetwork:
		return "answered: " + perr.Message, nil
	case err != nil:
		return "", err
	case resp.Hello == nil:
		return "", fmt.Errorf("answered with %q", resp.Type)
	case resp.Hello.Network != network:
		return fmt.Sprintf("is on network %q", resp.Hello.Network), nil
	}
	return "", nil
}
