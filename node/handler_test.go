package node

import (
	"errors"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"

	"github.com/wats-network/wats/proto"
)

// budgetScope is a stream scope that grants memory reservations up to a
// limit and records what is held.
type budgetScope struct {
	network.StreamScope // methods other than the two below are not used
	limit, held         int
}

func (s *budgetScope) ReserveMemory(n int, _ uint8) error {
	if s.held+n > s.limit {
		return errors.New("resource limit exceeded")
	}
	s.held += n
	return nil
}

func (s *budgetScope) ReleaseMemory(n int) { s.held -= n }

// TestSyncPageShrinksWhenMemoryIsShort: the sync handler reserves twice the
// page budget before reading the page; with less memory it serves smaller
// pages, with too little it answers "too busy", and it releases what it
// reserved.
func TestSyncPageShrinksWhenMemoryIsShort(t *testing.T) {
	n := startNode(t, testConfig(false, time.Hour))
	publish(t, n, 250) // about 80 KB, more than minPageBytes
	req := &proto.SyncRequest{After: 0, Limit: proto.MaxPageEvents}
	pageBytes := func(m proto.Message) int {
		total := 0
		for _, ev := range m.(*proto.SyncResponse).Events {
			total += len(ev)
		}
		return total
	}

	full := &budgetScope{limit: 1 << 30}
	resp, done := n.serveSync(full, req)
	if full.held != 2*proto.MaxPageBytes {
		t.Fatalf("held %d bytes while serving, want %d", full.held, 2*proto.MaxPageBytes)
	}
	if got := len(resp.(*proto.SyncResponse).Events); got != 250 {
		t.Fatalf("a page with memory to spare has %d events, want 250", got)
	}
	done()
	if full.held != 0 {
		t.Fatalf("%d bytes still held after done", full.held)
	}

	short := &budgetScope{limit: 2 * minPageBytes}
	resp, done = n.serveSync(short, req)
	if short.held != 2*minPageBytes {
		t.Fatalf("held %d, want the smallest budget %d", short.held, 2*minPageBytes)
	}
	if got := pageBytes(resp); got > minPageBytes || got == 0 {
		t.Fatalf("short page of %d bytes, want 1..%d", got, minPageBytes)
	}
	if got := len(resp.(*proto.SyncResponse).Events); got >= 250 || !resp.(*proto.SyncResponse).More {
		t.Fatalf("short page has %d events (more=%v), want fewer than 250 and more", got, resp.(*proto.SyncResponse).More)
	}
	done()

	none := &budgetScope{limit: 2*minPageBytes - 1}
	resp, done = n.serveSync(none, req)
	done()
	if e, ok := resp.(*proto.Error); !ok || e.Code != proto.CodeInternal {
		t.Fatalf("without memory: %+v, want a 'too busy' error", resp)
	}
	if none.held != 0 {
		t.Fatalf("%d bytes held after a refusal", none.held)
	}
}
