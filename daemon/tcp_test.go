package daemon

import (
	"bufio"
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"testing"
	"time"
)

// TestServeTCPHoldsAtMostMaxTCPConns: the dashboard's and the metrics'
// server hold MaxTCPConns connections at once; the next is served only
// once one of them closes (before, it waits in the backlog), so that idle
// connections of another local user never take the daemon's descriptors.
func TestServeTCPHoldsAtMostMaxTCPConns(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- serveTCP(ctx, l, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ok")) }))
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	get := func(c net.Conn, wait time.Duration) error {
		c.SetDeadline(time.Now().Add(wait))
		if _, err := c.Write([]byte("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")); err != nil {
			return err
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			return err
		}
		return resp.Body.Close()
	}
	var held []net.Conn
	for i := range MaxTCPConns {
		c, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if err := get(c, 10*time.Second); err != nil {
			t.Fatalf("connection %d of %d: %v", i+1, MaxTCPConns, err)
		}
		held = append(held, c) // kept alive, idle
	}
	over, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer over.Close()
	if err := get(over, 300*time.Millisecond); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("connection %d while %d are held: %v, want no answer", MaxTCPConns+1, MaxTCPConns, err)
	}
	held[0].Close()
	next, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer next.Close()
	// The waiting connection's request was cut by its deadline; a new one
	// is served once a held connection closed.
	over.Close()
	if err := get(next, 10*time.Second); err != nil {
		t.Fatalf("a connection after one of the %d closed: %v", MaxTCPConns, err)
	}
}
