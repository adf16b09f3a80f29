package heads

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/wats-network/wats/core"
	"github.com/wats-network/wats/proto"
)

// memLog is a Source in memory.
type memLog struct {
	mu      sync.Mutex
	ids     []core.ShortID
	changed chan struct{}
}

func newMemLog() *memLog { return &memLog{changed: make(chan struct{})} }

func (l *memLog) add(n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for range n {
		l.ids = append(l.ids, named(strconv.Itoa(len(l.ids))))
	}
	close(l.changed)
	l.changed = make(chan struct{})
}

func (l *memLog) Head() core.Cursor { l.mu.Lock(); defer l.mu.Unlock(); return core.Cursor(len(l.ids)) }

func (l *memLog) Changed() <-chan struct{} { l.mu.Lock(); defer l.mu.Unlock(); return l.changed }

func (l *memLog) ShortIDs(after core.Cursor, max int) ([]core.ShortID, core.Cursor, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	head := core.Cursor(len(l.ids))
	if after >= head {
		return nil, after, nil
	}
	from := after
	if head-after > core.Cursor(max) {
		from = head - core.Cursor(max)
	}
	return append([]core.ShortID(nil), l.ids[from:]...), from, nil
}

// readAll reads the announcements of c into a channel, with the time each
// arrived.
type arrival struct {
	h  *proto.Heads
	at time.Time
}

func readAll(c net.Conn) (<-chan arrival, <-chan error) {
	out, done := make(chan arrival, 64), make(chan error, 1)
	go func() { done <- Read(c, func(h *proto.Heads) { out <- arrival{h, time.Now()} }) }()
	return out, done
}

// TestAnnounce: head 0 at once for an empty log, then nothing while it
// does not grow; then the head and the ids of what was stored since the
// last announcement, batched at most one every MinAnnounceInterval; past
// MaxHeadIDs at once, the newest.
func TestAnnounce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w, r := net.Pipe()
		defer r.Close()
		src := newMemLog()
		ctx, cancel := context.WithCancel(t.Context())
		var ended error
		go func() { ended = Announce(ctx, w, src); w.Close() }()
		got, _ := readAll(r)
		start := time.Now()
		synctest.Wait()
		if a := <-got; a.h.Head != 0 || len(a.h.IDs) != 0 || a.at != start {
			t.Fatalf("the first announcement of an empty log: %+v at %v, want head 0 at once", a.h, a.at.Sub(start))
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if len(got) != 0 {
			t.Fatal("an idle log was announced again")
		}
		src.add(3)
		synctest.Wait()
		a := <-got
		if a.h.Head != 3 || len(a.h.IDs) != 3 || a.h.IDs[2] != named("2") || a.at != start.Add(time.Second) {
			t.Fatalf("first announcement %+v at %v", a.h, a.at.Sub(start))
		}
		src.add(1)
		src.add(1) // within the interval: one announcement of both
		time.Sleep(MinAnnounceInterval)
		synctest.Wait()
		a = <-got
		if a.h.Head != 5 || len(a.h.IDs) != 2 || a.h.From() != 3 || a.at.Sub(start) != time.Second+MinAnnounceInterval {
			t.Fatalf("second announcement %+v at %v", a.h, a.at.Sub(start))
		}
		src.add(proto.MaxHeadIDs + 10)
		time.Sleep(MinAnnounceInterval)
		synctest.Wait()
		a = <-got
		if a.h.Head != 5+proto.MaxHeadIDs+10 || len(a.h.IDs) != proto.MaxHeadIDs || a.h.From() != 15 {
			t.Fatalf("announcement past MaxHeadIDs: head %d, %d ids from %d", a.h.Head, len(a.h.IDs), a.h.From())
		}
		cancel()
		synctest.Wait()
		if ended != nil {
			t.Errorf("Announce ended with %v when its context did", ended)
		}
	})
}

// TestAnnounceWriteTimeout: a reader that stops reading has the announcer
// give up after WriteTimeout.
func TestAnnounceWriteTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w, r := net.Pipe() // never read
		defer r.Close()
		defer w.Close()
		src := newMemLog()
		src.add(1)
		errc := make(chan error, 1)
		start := time.Now()
		go func() { errc <- Announce(t.Context(), w, src) }()
		time.Sleep(WriteTimeout)
		synctest.Wait()
		select {
		case err := <-errc:
			if !errors.Is(err, os.ErrDeadlineExceeded) || time.Since(start) != WriteTimeout {
				t.Errorf("Announce = %v after %v", err, time.Since(start))
			}
		default:
			t.Error("Announce still blocked past WriteTimeout")
		}
	})
}

// TestReadPaced: announcements sent back to back are taken in one every
// MinReadInterval; a bad one ends the stream with its error, io.EOF the
// writer's close.
func TestReadPaced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w, r := net.Pipe()
		got, done := readAll(r)
		start := time.Now()
		go func() {
			for i := 1; i <= 3; i++ {
				b, _ := proto.MarshalHeads(&proto.Heads{Head: core.Cursor(i)})
				_ = proto.WriteFrame(w, b)
			}
			w.Close()
		}()
		for i := range 3 {
			a := <-got
			if want := time.Duration(i) * MinReadInterval; a.at.Sub(start) != want || a.h.Head != core.Cursor(i+1) {
				t.Errorf("announcement %d (head %d) taken in at %v, want %v", i, a.h.Head, a.at.Sub(start), want)
			}
		}
		if err := <-done; !errors.Is(err, io.EOF) {
			t.Errorf("Read after the writer closed: %v", err)
		}

		w, r = net.Pipe()
		_, done = readAll(r)
		go func() { _ = proto.WriteFrame(w, []byte(`{"head":"1","ids":["nothex"]}`)) }()
		var perr *proto.Error
		if err := <-done; !errors.As(err, &perr) || perr.Code != proto.CodeBadRequest {
			t.Errorf("Read of a bad announcement: %v", err)
		}
		w.Close()

		w, r = net.Pipe()
		_, done = readAll(r)
		go func() { _, _ = w.Write([]byte{0x81, 0x10}) }() // a frame of 2049 bytes
		if err := <-done; !errors.Is(err, proto.ErrFrameTooLarge) {
			t.Errorf("Read of a frame past MaxHeadsBytes: %v", err)
		}
		w.Close()
	})
}
