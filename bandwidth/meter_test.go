package bandwidth

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
)

// TestMonthAdd: the count rolls over to 0 at a new calendar month in UTC
// (not the local one), and a clock stepped back into an earlier month
// counts on in the later one.
func TestMonthAdd(t *testing.T) {
	jan := time.Date(2026, 1, 31, 23, 59, 59, 0, time.UTC)
	var m Month
	if got := m.Add(jan, 10); got != 10 || m.Month != "2026-01" {
		t.Fatalf("first Add: %d in %q", got, m.Month)
	}
	// 01:30 on 1 February in UTC+2 is still January in UTC.
	local := time.Date(2026, 2, 1, 1, 30, 0, 0, time.FixedZone("UTC+2", 2*3600))
	if got := m.Add(local, 5); got != 15 || m.Month != "2026-01" {
		t.Errorf("Add at a local February that is January in UTC: %d in %q", got, m.Month)
	}
	feb := jan.Add(time.Second)
	if got := m.Add(feb, 7); got != 7 || m.Month != "2026-02" {
		t.Errorf("Add in a new month: %d in %q, want 7 in 2026-02", got, m.Month)
	}
	if got := m.Add(jan.Add(-24*time.Hour), 3); got != 10 || m.Month != "2026-02" {
		t.Errorf("Add with the clock stepped back a month: %d in %q, want 10 in 2026-02", got, m.Month)
	}
	if got := m.Add(time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC), 1); got != 1 || m.Month != "2027-01" {
		t.Errorf("Add in a new year: %d in %q", got, m.Month)
	}
}

// TestMonthFile: a count written is read back; a missing file is nothing
// sent; a file over MaxMonthFileBytes, not JSON, or naming no month is an
// error that names the file.
func TestMonthFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, MonthFile)
	if m, err := ReadMonth(path); err != nil || m != (Month{}) {
		t.Fatalf("missing file: %v, %v", m, err)
	}
	want := Month{Month: "2026-05", UpBytes: 1 << 40}
	if err := WriteMonth(path, want); err != nil {
		t.Fatal(err)
	}
	if m, err := ReadMonth(path); err != nil || m != want {
		t.Errorf("read back %v, %v; want %v", m, err, want)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("mode: %v, %v", fi, err)
	}
	pad := func(n int) string { // a valid count padded with spaces to n bytes
		s := `{"month":"2026-05","up_bytes":1}`
		return s + strings.Repeat(" ", n-len(s))
	}
	for content, ok := range map[string]bool{
		pad(MaxMonthFileBytes):              true,
		pad(MaxMonthFileBytes + 1):          false,
		"not json":                          false,
		`{"month":"May","up_bytes":1}`:      false,
		`{"month":"2026-05","up_bytes":-1}`: false,
		`{"up_bytes":1}`:                    false,
	} {
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := ReadMonth(path)
		if (err == nil) != ok || err != nil && !strings.Contains(err.Error(), MonthFile) {
			t.Errorf("%.40q (%d bytes): %v", content, len(content), err)
		}
	}
}

// fakeConn is the connection of a fakeStream: its remote peer.
type fakeConn struct {
	network.Conn
	p peer.ID
}

func (c fakeConn) RemotePeer() peer.ID { return c.p }

// fakeStream is a stream that reads from r and writes to w without end.
type fakeStream struct {
	network.Stream
	p      peer.ID
	w      bytes.Buffer
	reads  atomic.Int64
	closed atomic.Bool
}

func (s *fakeStream) Conn() network.Conn { return fakeConn{p: s.p} }
func (s *fakeStream) Read(b []byte) (int, error) {
	s.reads.Add(int64(len(b)))
	return len(b), nil
}
func (s *fakeStream) Write(b []byte) (int, error)      { return s.w.Write(b) }
func (s *fakeStream) SetDeadline(time.Time) error      { return nil }
func (s *fakeStream) SetReadDeadline(time.Time) error  { return nil }
func (s *fakeStream) SetWriteDeadline(time.Time) error { return nil }
func (s *fakeStream) Close() error                     { s.closed.Store(true); return nil }
func (s *fakeStream) Reset() error                     { return s.Close() }

const (
	peerA = peer.ID("peer-a")
	peerB = peer.ID("peer-b")
)

func newTestMeter(t *testing.T, o Options) *Meter {
	t.Helper()
	m, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// TestStreamCaps: a stream's writes and reads are held to the caps,
// measured in fake time; the bytes are counted in all and per peer.
func TestStreamCaps(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newTestMeter(t, Options{UpBytesPerS: testRate, DownBytesPerS: 2 * testRate})
		fs := &fakeStream{p: peerA}
		s := m.Wrap(fs)
		start := time.Now()
		big := make([]byte, 5*testRate)
		if n, err := s.Write(big); n != len(big) || err != nil {
			t.Fatalf("Write: %d, %v", n, err)
		}
		// The first burst is free; the rest goes at the rate.
		if d, want := time.Since(start), 5*time.Second-BurstTime; d < want-time.Millisecond || d > want+time.Millisecond {
			t.Errorf("5 MiB written in %v at 1 MiB/s", d)
		}
		if fs.w.Len() != len(big) {
			t.Errorf("the stream got %d bytes of %d", fs.w.Len(), len(big))
		}
		start = time.Now()
		buf := make([]byte, 1<<20)
		read := 0
		for read < 4*testRate {
			n, err := s.Read(buf)
			if n > MaxGrant || err != nil {
				t.Fatalf("Read: %d, %v", n, err)
			}
			read += n
		}
		if d := time.Since(start); d < 2*time.Second-50*time.Millisecond || d > 2*time.Second {
			t.Errorf("4 MiB read in %v at 2 MiB/s", d)
		}
		if up, down := m.Peer(peerA); up != uint64(len(big)) || down != uint64(read) {
			t.Errorf("Peer: %d up, %d down; want %d, %d", up, down, len(big), read)
		}
		st := m.Status()
		if st.UpBytes != uint64(len(big)) || st.DownBytes != uint64(read) || st.UpBytesPerS != testRate || st.DownBytesPerS != 2*testRate {
			t.Errorf("Status: %+v", st)
		}
		if c := m.Counts(); c.Waits[0][Stranger] == 0 || c.Waits[1][Stranger] == 0 || c.Waits[0][Standing] != 0 {
			t.Errorf("waits: %v", c.Waits)
		}
	})
}

// TestStreamStanding: a peer with standing writes at the rate while a
// stranger waits; a wait ends with the stream's deadline, and with its
// Close.
func TestStreamStanding(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newTestMeter(t, Options{UpBytesPerS: MinBytesPerS, Standing: func(p peer.ID) bool { return p == peerA }})
		a, b := m.Wrap(&fakeStream{p: peerA}), m.Wrap(&fakeStream{p: peerB})
		a.Write(make([]byte, MaxGrant)) // the bucket empty
		done := make(chan error, 1)
		b.SetWriteDeadline(time.Now().Add(10 * time.Second))
		go func() { _, err := b.Write(make([]byte, MaxGrant)); done <- err }()
		synctest.Wait()
		go func() { a.Write(make([]byte, 12*MaxGrant)) }() // 12 s of the rate, queued first
		if err := <-done; !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("the stranger's write behind a peer with standing: %v, want a deadline error", err)
		}
		if up, _ := m.Peer(peerB); up != 0 {
			t.Errorf("the stranger sent %d bytes", up)
		}
		b.SetWriteDeadline(time.Time{})
		go func() { _, err := b.Write(make([]byte, 1)); done <- err }()
		synctest.Wait()
		b.Close()
		if err := <-done; !errors.Is(err, ErrClosed) {
			t.Errorf("a write waiting when its stream closed: %v", err)
		}
	})
}

// TestMonthlyCap: past monthly_up_bytes, Serves refuses strangers and not
// peers with standing; the count is written within FlushInterval, read
// back by the next Meter (a restart), and starts at 0 in a new month.
func TestMonthlyCap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		path := filepath.Join(t.TempDir(), MonthFile)
		var step atomic.Int64
		now := func() time.Time { return time.Now().Add(time.Duration(step.Load())) }
		standing := func(p peer.ID) bool { return p == peerA }
		o := Options{MonthlyUpBytes: 1 << 20, File: path, Now: now, Standing: standing}
		m := newTestMeter(t, o)
		go m.Run(t.Context())
		s := m.Wrap(&fakeStream{p: peerB})
		s.Write(make([]byte, 1<<20-1))
		if !m.Serves(peerB) || m.Stopped() {
			t.Fatal("a stranger refused below the cap")
		}
		time.Sleep(FlushInterval + time.Millisecond)
		synctest.Wait()
		if got, _ := ReadMonth(path); got.UpBytes != 1<<20-1 {
			t.Errorf("after FlushInterval the file holds %d bytes sent", got.UpBytes)
		}
		s.Write([]byte{0}) // the cap: written at once
		synctest.Wait()
		if got, _ := ReadMonth(path); got.UpBytes != 1<<20 {
			t.Errorf("at the cap the file holds %d bytes sent", got.UpBytes)
		}
		if m.Serves(peerB) || !m.Serves(peerA) || !m.Status().StrangerBlobsStopped {
			t.Errorf("at the cap: Serves(stranger) %v, Serves(standing) %v, status %+v", m.Serves(peerB), m.Serves(peerA), m.Status())
		}
		m.Close()

		m2 := newTestMeter(t, o) // a restart
		if m2.Serves(peerB) || m2.Month().UpBytes != 1<<20 {
			t.Errorf("after a restart: Serves(stranger) %v, month %+v", m2.Serves(peerB), m2.Month())
		}
		// The next month: from 0.
		for MonthOf(now()) == m2.Month().Month {
			step.Add(int64(24 * time.Hour))
		}
		if !m2.Serves(peerB) || m2.Month().UpBytes != 0 {
			t.Errorf("in a new month: Serves(stranger) %v, month %+v", m2.Serves(peerB), m2.Month())
		}
	})
}

// TestMeterBounds: caps just past their bounds are errors; 0 is unlimited.
func TestMeterBounds(t *testing.T) {
	for _, o := range []Options{{UpBytesPerS: MinBytesPerS - 1}, {DownBytesPerS: MaxBytesPerS + 1}, {UpBytesPerS: -1}, {MonthlyUpBytes: -1}} {
		if _, err := New(o); err == nil {
			t.Errorf("New(%+v) took it", o)
		}
	}
	m := newTestMeter(t, Options{UpBytesPerS: MinBytesPerS, DownBytesPerS: MaxBytesPerS})
	if m.up == nil || m.down == nil {
		t.Error("caps at their bounds not taken")
	}
	if m := newTestMeter(t, Options{}); m.up != nil || m.down != nil || !m.Serves(peerB) {
		t.Error("the zero Options cap something")
	}
}

// TestMeterStanding: Standing answers as the caps class a peer, asking
// Options.Standing once a ClassTTL at most.
func TestMeterStanding(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		asked := 0
		standing := true
		m := newTestMeter(t, Options{Now: time.Now, Standing: func(peer.ID) bool { asked++; return standing }})
		if !m.Standing(peerA) || !m.Standing(peerA) || asked != 1 {
			t.Fatalf("twice at once: asked %d times, want 1", asked)
		}
		standing = false
		time.Sleep(ClassTTL - time.Nanosecond)
		if !m.Standing(peerA) || asked != 1 {
			t.Fatalf("just within ClassTTL: asked %d times, want the class kept", asked)
		}
		time.Sleep(time.Nanosecond)
		if m.Standing(peerA) || asked != 2 {
			t.Fatalf("at ClassTTL: asked %d times, want the class asked again (stranger)", asked)
		}
	})
}
