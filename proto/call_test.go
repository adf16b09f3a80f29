package proto

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/wats-network/wats/core"
)

// hostPair starts two libp2p hosts on 127.0.0.1, connects the first to the
// second, and has the second answer /wats/1 with handler.
func hostPair(t *testing.T, handler network.StreamHandler) (client, server host.Host) {
	t.Helper()
	newHost := func() host.Host {
		h, err := libp2p.New(libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { h.Close() })
		return h
	}
	client, server = newHost(), newHost()
	server.SetStreamHandler(ID, handler)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := client.Connect(ctx, peer.AddrInfo{ID: server.ID(), Addrs: server.Addrs()}); err != nil {
		t.Fatal(err)
	}
	return client, server
}

// answer is a handler that reads the request and answers with reply(req).
// It does not touch t, since it may outlive the test: a request it cannot
// read is answered with an *Error, which fails the client side.
func answer(reply func(*Request) []byte) network.StreamHandler {
	return func(s network.Stream) {
		defer s.Close()
		b, err := ReadFrame(s, MaxRequestBytes)
		if err != nil {
			s.Reset()
			return
		}
		req, err := DecodeRequest(b)
		if err != nil {
			WriteMessage(s, &Error{Code: codeOf(err), Message: "test handler: " + err.Error()}, nil)
			return
		}
		WriteFrame(s, reply(req)) // the client may have gone: the test says
	}
}

func mustMarshal(t *testing.T, m Message) []byte {
	t.Helper()
	b, err := Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestCall(t *testing.T) {
	page := &SyncResponse{Events: nil, Next: 12, More: true}
	for _, tc := range []struct {
		name  string
		reply func(*Request) Message
		check func(t *testing.T, resp *Response, err error)
	}{
		{
			name: "sync",
			reply: func(r *Request) Message {
				if r.Sync == nil || r.Sync.After != 7 || r.Sync.Limit != 256 {
					t.Errorf("handler got %+v", r.Sync)
				}
				return page
			},
			check: func(t *testing.T, resp *Response, err error) {
				if err != nil {
					t.Fatal(err)
				}
				if resp.Type != TypeSync || !reflect.DeepEqual(resp.Sync, page) {
					t.Fatalf("got %+v", resp)
				}
			},
		},
		{
			name:  "error",
			reply: func(*Request) Message { return &Error{Code: CodeNotFound, Message: "no such cursor"} },
			check: func(t *testing.T, resp *Response, err error) {
				e, ok := err.(*Error)
				if !ok || e.Code != CodeNotFound || e.Message != "no such cursor" || resp != nil {
					t.Fatalf("got %v (%T), %+v", err, err, resp)
				}
			},
		},
		{
			name:  "refused",
			reply: func(*Request) Message { return &Refused{Reason: "rate limited (sync): retry later", RetryAfterMs: 100} },
			check: func(t *testing.T, resp *Response, err error) {
				e, ok := err.(*RefusedError)
				if !ok || e.Reason != "rate limited (sync): retry later" || e.RetryAfterMs != 100 || !errors.Is(err, ErrRefused) {
					t.Fatalf("got %v (%T)", err, err)
				}
			},
		},
		{
			name:  "challenge",
			reply: func(*Request) Message { return &Challenge{Alg: "b3", Seed: testSeed, Effort: 9, Expires: 99} },
			check: func(t *testing.T, resp *Response, err error) {
				e, ok := err.(*ChallengeError)
				if !ok || e.Challenge != (Challenge{"b3", testSeed, 9, 99}) || !errors.Is(err, ErrChallenged) {
					t.Fatalf("got %v (%T)", err, err)
				}
			},
		},
		{
			name:  "wrong response type",
			reply: func(*Request) Message { return &CrashReportResponse{ID: "x"} },
			check: func(t *testing.T, resp *Response, err error) {
				if !errors.Is(err, ErrBadResponse) || resp != nil {
					t.Fatalf("got %v", err)
				}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client, server := hostPair(t, answer(func(r *Request) []byte { return mustMarshal(t, tc.reply(r)) }))
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			resp, err := Call(ctx, client, server.ID(), &SyncRequest{After: 7})
			tc.check(t, resp, err)
		})
	}
}

// TestCallResponseCaps: a response frame of exactly MaxResponseBytes is
// read; one byte more is refused from its length prefix.
func TestCallResponseCaps(t *testing.T) {
	exact := padded(`"type":"hello","version":1,"network":"n","head":"5"`, MaxResponseBytes)
	over := padded(`"type":"hello","version":1,"network":"n","head":"5"`, MaxResponseBytes+1)
	for _, tc := range []struct {
		name  string
		reply []byte
		ok    bool
	}{
		{"exactly the cap", exact, true},
		{"one byte over", over, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client, server := hostPair(t, answer(func(*Request) []byte { return tc.reply }))
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			resp, err := Call(ctx, client, server.ID(), &Hello{Version: 1, Network: "n", Head: 0})
			if tc.ok {
				if err != nil || resp.Hello.Head != 5 {
					t.Fatalf("got %+v, %v", resp, err)
				}
				return
			}
			if !errors.Is(err, ErrFrameTooLarge) || !strings.Contains(err.Error(), "8388609 bytes") {
				t.Fatalf("got %v, want ErrFrameTooLarge with the size", err)
			}
		})
	}
}

func TestCallBadResponse(t *testing.T) {
	for name, reply := range map[string][]byte{
		"not JSON":      []byte("hello"),
		"unknown type":  []byte(`{"type":"later"}`),
		"dup names":     []byte(`{"type":"refused","reason":"a","reason":"b"}`),
		"missing field": []byte(`{"type":"sync","events":[]}`),
	} {
		t.Run(name, func(t *testing.T) {
			client, server := hostPair(t, answer(func(*Request) []byte { return reply }))
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_, err := Call(ctx, client, server.ID(), &SyncRequest{})
			if !errors.Is(err, ErrBadResponse) {
				t.Fatalf("got %v, want ErrBadResponse", err)
			}
			var e *Error
			if errors.As(err, &e) {
				t.Fatalf("a bad response must not look like an error response: %v", err)
			}
		})
	}
}

// TestCallDeadline: a handler that never answers; the call ends at ctx's
// deadline with context.DeadlineExceeded.
func TestCallDeadline(t *testing.T) {
	done := make(chan struct{})
	client, server := hostPair(t, func(s network.Stream) {
		ReadFrame(s, MaxRequestBytes)
		<-done // never answers
		s.Reset()
	})
	defer close(done)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := Call(ctx, client, server.ID(), &SyncRequest{})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want context.DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("the call took %v past a 300ms deadline", d)
	}
}

// TestCallCancel: cancelling ctx ends a pending call.
func TestCallCancel(t *testing.T) {
	done := make(chan struct{})
	got := make(chan struct{})
	client, server := hostPair(t, func(s network.Stream) {
		ReadFrame(s, MaxRequestBytes)
		close(got)
		<-done
		s.Reset()
	})
	defer close(done)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-got; cancel() }()
	_, err := Call(ctx, client, server.ID(), &SyncRequest{})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
}

func TestCallRefusesNonRequests(t *testing.T) {
	for _, m := range []Message{&Refused{Reason: "r"}, &SyncResponse{}, nil, (*Hello)(nil), &Hello{}} {
		if _, err := Call(context.Background(), nil, "", m); err == nil {
			t.Fatalf("Call(%T) succeeded", m)
		}
	}
}

func TestTypeTimeout(t *testing.T) {
	if TypeReplicate.Timeout() != 130*time.Second || TypeSync.Timeout() != 30*time.Second ||
		TypeHello.Timeout() != ResponseTimeout || TypeCrashReport.Timeout() != ResponseTimeout {
		t.Fatal("timeouts differ from docs/design.md §4")
	}
}

// deadlineBuffer is a writer with a write deadline, as a stream is.
type deadlineBuffer struct {
	bytes.Buffer
	deadline time.Time
}

func (d *deadlineBuffer) SetWriteDeadline(t time.Time) error { d.deadline = t; return nil }

// TestWriteMessageDeadline: the deadline is set from the encoded length
// before the frame is written; without a timeout none is set; a message
// that does not encode writes nothing.
func TestWriteMessageDeadline(t *testing.T) {
	var w deadlineBuffer
	var asked int
	before := time.Now()
	if err := WriteMessage(&w, &Refused{Reason: "r"}, func(n int) time.Duration { asked = n; return time.Hour }); err != nil {
		t.Fatal(err)
	}
	b, err := ReadFrame(bytes.NewReader(w.Bytes()), MaxResponseBytes)
	if err != nil || asked != len(b) {
		t.Fatalf("timeout asked for %d bytes, the frame holds %d (%v)", asked, len(b), err)
	}
	if w.deadline.Before(before.Add(time.Hour)) {
		t.Fatalf("deadline %v, want an hour from %v", w.deadline, before)
	}
	w = deadlineBuffer{}
	if err := WriteMessage(&w, &Refused{Reason: "r"}, nil); err != nil || !w.deadline.IsZero() {
		t.Fatalf("no timeout: deadline %v, %v", w.deadline, err)
	}
	w = deadlineBuffer{}
	if err := WriteMessage(&w, &Hello{}, func(int) time.Duration { return time.Hour }); err == nil || w.Len() != 0 || !w.deadline.IsZero() {
		t.Fatalf("an invalid message: %v, %d bytes written, deadline %v", err, w.Len(), w.deadline)
	}
}

// TestCallPagesOutliveTheFrame: a response's frame goes back to a pool
// once decoded, so the events of a page must not alias it. Pages of 64
// KiB and more (the size that recycles) stay as they were while later
// calls read their frames, in buffers that may be the first one's.
func TestCallPagesOutliveTheFrame(t *testing.T) {
	event := func(call, i int) []byte {
		return fmt.Appendf(nil, `{"call":%d,"i":%d,"pad":%q}`, call, i, strings.Repeat("x", 400))
	}
	calls := 0
	client, server := hostPair(t, answer(func(*Request) []byte {
		calls++
		page := &SyncResponse{Next: 1, More: true}
		for i := range core.MaxPageEvents {
			page.Events = append(page.Events, event(calls, i))
		}
		return mustMarshal(t, page)
	}))
	var pages [][]jsontext.Value
	for range 4 {
		resp, err := Call(t.Context(), client, server.ID(), &SyncRequest{After: 0})
		if err != nil {
			t.Fatal(err)
		}
		pages = append(pages, resp.Sync.Events)
	}
	for c, evs := range pages {
		for i, ev := range evs {
			if want := event(c+1, i); !bytes.Equal(ev, want) {
				t.Fatalf("call %d, event %d changed after later calls:\n%s\nwant\n%s", c+1, i, ev, want)
			}
		}
	}
}

// TestHelloAnswer: an answer to a hello shows the peer on another network
// by a wrong_network error or a hello naming another; any other error,
// or an answer that is not a hello, is an error.
func TestHelloAnswer(t *testing.T) {
	callErr := errors.New("stream reset")
	for _, c := range []struct {
		resp  *Response
		err   error
		wrong string
		fails bool
	}{
		{&Response{Type: TypeHello, Hello: &Hello{Network: "n"}}, nil, "", false},
		{&Response{Type: TypeHello, Hello: &Hello{Network: "m"}}, nil, `is on network "m"`, false},
		{nil, &Error{Code: CodeWrongNetwork, Message: "elsewhere"}, "answered: elsewhere", false},
		{nil, &Error{Code: CodeInternal, Message: "x"}, "", true},
		{nil, callErr, "", true},
		{&Response{Type: TypeSync, Sync: &SyncResponse{}}, nil, "", true},
	} {
		wrong, err := HelloAnswer(c.resp, c.err, "n")
		if wrong != c.wrong || (err != nil) != c.fails {
			t.Errorf("HelloAnswer(%+v, %v) = %q, %v; want %q, error %v", c.resp, c.err, wrong, err, c.wrong, c.fails)
		}
	}
}

// TestCallAgainWhenTheConnectionDies: a request whose connection closes
// under it is sent once more, on a new connection, and answered there; a
// request whose stream alone is reset, or whose second connection dies
// too, fails, sent no more than twice.
func TestCallAgainWhenTheConnectionDies(t *testing.T) {
	page := &SyncResponse{Next: 3}
	for _, tc := range []struct {
		name      string
		fail      func(s network.Stream) // how the handler fails request i
		failures  int                    // the first failures requests fail
		wantCalls int32
		wantErr   bool
	}{
		{"connection closed once", func(s network.Stream) { s.Conn().Close() }, 1, 2, false},
		{"connection closed twice", func(s network.Stream) { s.Conn().Close() }, 2, 2, true},
		{"stream reset", func(s network.Stream) { s.Reset() }, 1, 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var calls atomic.Int32
			client, server := hostPair(t, func(s network.Stream) {
				if _, err := ReadFrame(s, MaxRequestBytes); err != nil {
					s.Reset()
					return
				}
				if int(calls.Add(1)) <= tc.failures {
					tc.fail(s)
					return
				}
				WriteMessage(s, page, nil)
				s.Close()
			})
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			resp, err := Call(ctx, client, server.ID(), &SyncRequest{})
			if got := calls.Load(); got != tc.wantCalls {
				t.Fatalf("the request was sent %d times; want %d (err %v)", got, tc.wantCalls, err)
			}
			if tc.wantErr {
				if err == nil {
					t.Fatal("the call succeeded; want its error")
				}
				return
			}
			if err != nil || resp.Sync == nil || resp.Sync.Next != 3 {
				t.Fatalf("got %+v, %v; want the page", resp, err)
			}
		})
	}
}
