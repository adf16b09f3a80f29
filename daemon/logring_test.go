package daemon

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/wats-network/wats/api"
	"github.com/wats-network/wats/node"
)

// writeLines writes n lines "<prefix>i" to r, one Write each.
func writeLines(t *testing.T, r *LogRing, prefix string, n int) {
	t.Helper()
	for i := range n {
		if _, err := fmt.Fprintf(r, "%s%d\n", prefix, i); err != nil {
			t.Fatal(err)
		}
	}
}

// TestLogRingLines: LogRingLines lines are all kept; one more drops the
// oldest; Tail gives the last n, oldest first, and counts every line.
func TestLogRingLines(t *testing.T) {
	r := NewLogRing()
	writeLines(t, r, "l", LogRingLines)
	lines, logged := r.Tail(0)
	if len(lines) != LogRingLines || logged != LogRingLines || lines[0] != "l0" || lines[LogRingLines-1] != fmt.Sprint("l", LogRingLines-1) {
		t.Fatalf("at the bound: %d lines (%q … %q), logged %d; want all %d", len(lines), lines[0], lines[len(lines)-1], logged, LogRingLines)
	}
	writeLines(t, r, "m", 1)
	lines, logged = r.Tail(0)
	if len(lines) != LogRingLines || logged != LogRingLines+1 || lines[0] != "l1" || lines[LogRingLines-1] != "m0" {
		t.Fatalf("one past the bound: %d lines (%q … %q), logged %d; want l1 … m0, logged %d", len(lines), lines[0], lines[len(lines)-1], logged, LogRingLines+1)
	}
	if got, _ := r.Tail(2); strings.Join(got, ",") != fmt.Sprintf("l%d,m0", LogRingLines-1) {
		t.Errorf("Tail(2) = %q", got)
	}
	if got, _ := r.Tail(LogRingLines + 1); len(got) != LogRingLines {
		t.Errorf("Tail(%d) gave %d lines, want the %d kept", LogRingLines+1, len(got), LogRingLines)
	}
}

// TestLogRingBytes: lines of LogRingBytes bytes in all are kept; one byte
// more drops the oldest line.
func TestLogRingBytes(t *testing.T) {
	const size = 1 << 10 // LogRingBytes/size lines fill the bytes before the lines
	if LogRingBytes/size > LogRingLines {
		t.Fatalf("%d lines of %d bytes pass LogRingLines first", LogRingBytes/size, size)
	}
	line := func(c byte) []byte { return append(bytes.Repeat([]byte{c}, size), '\n') }
	r := NewLogRing()
	r.Write(line('a'))
	for range LogRingBytes/size - 1 {
		r.Write(line('b'))
	}
	lines, _ := r.Tail(0)
	if len(lines) != LogRingBytes/size || lines[0][0] != 'a' {
		t.Fatalf("at %d bytes: %d lines kept, the first %.1q; want %d from the a line", LogRingBytes, len(lines), lines[0], LogRingBytes/size)
	}
	r.Write([]byte("c\n"))
	lines, logged := r.Tail(0)
	if len(lines) != LogRingBytes/size || lines[0][0] != 'b' || lines[len(lines)-1] != "c" || logged != LogRingBytes/size+1 {
		t.Fatalf("one byte past: %d lines kept, the first %.1q, the last %.1q; want the a line dropped", len(lines), lines[0], lines[len(lines)-1])
	}
	if r.bytes > LogRingBytes {
		t.Errorf("%d bytes kept, more than %d", r.bytes, LogRingBytes)
	}
}

// TestLogRingLongLine: a line of LogLineBytes is kept whole; one byte
// longer is cut there, on a character's start, and says so.
func TestLogRingLongLine(t *testing.T) {
	r := NewLogRing()
	whole := strings.Repeat("x", LogLineBytes)
	fmt.Fprintln(r, whole)
	fmt.Fprintln(r, whole+"y")
	// A 2-byte character across the bound is dropped whole.
	fmt.Fprintln(r, strings.Repeat("x", LogLineBytes-1)+"é")
	lines, _ := r.Tail(0)
	if lines[0] != whole {
		t.Errorf("a line of %d bytes was not kept whole (%d bytes)", LogLineBytes, len(lines[0]))
	}
	if lines[1] != whole+logLineCut {
		t.Errorf("a line of %d bytes: kept %d bytes ending %q; want %d and %q", LogLineBytes+1, len(lines[1]), lines[1][len(lines[1])-10:], LogLineBytes, logLineCut)
	}
	if want := strings.Repeat("x", LogLineBytes-1) + logLineCut; lines[2] != want {
		t.Errorf("a character across the bound: kept %q…", lines[2][LogLineBytes-4:])
	}
}

// TestLogRingWrites: a write of several lines keeps each; a last piece
// without a newline is a line; an empty write keeps nothing.
func TestLogRingWrites(t *testing.T) {
	r := NewLogRing()
	r.Write([]byte("a\nb\n"))
	r.Write([]byte("c"))
	r.Write(nil)
	if got, logged := r.Tail(0); strings.Join(got, ",") != "a,b,c" || logged != 3 {
		t.Errorf("kept %q, logged %d; want a,b,c and 3", got, logged)
	}
}

// TestLogRingTee: the lines a slog handler writes through Tee reach both
// the ring and the writer, even when the writer fails.
func TestLogRingTee(t *testing.T) {
	r := NewLogRing()
	var out bytes.Buffer
	log := slog.New(slog.NewJSONHandler(r.Tee(&out), nil))
	log.Info("node started", "peers", 2)
	lines, _ := r.Tail(0)
	if len(lines) != 1 || lines[0]+"\n" != out.String() || !strings.Contains(lines[0], `"msg":"node started"`) {
		t.Fatalf("ring %q, writer %q; want the same JSON line", lines, out.String())
	}
	broken := errors.New("closed")
	log = slog.New(slog.NewTextHandler(r.Tee(failWriter{broken}), nil))
	log.Warn("after stderr closed")
	if lines, _ := r.Tail(1); !strings.Contains(lines[0], "after stderr closed") {
		t.Errorf("a line whose writer failed is not kept: %q", lines)
	}
}

type failWriter struct{ err error }

func (f failWriter) Write([]byte) (int, error) { return 0, f.err }

// TestLogRingConcurrent writes from several goroutines while others read
// (run it with -race): every line is counted, and what is kept stays
// within the bounds and is whole lines.
func TestLogRingConcurrent(t *testing.T) {
	r := NewLogRing()
	const writers, each = 8, 500
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				fmt.Fprintf(r, "writer=%d i=%d %s\n", w, i, strings.Repeat("z", i))
			}
		})
	}
	stop := make(chan struct{})
	var readers sync.WaitGroup
	for range 2 {
		readers.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				lines, _ := r.Tail(10)
				for _, l := range lines {
					if !strings.HasPrefix(l, "writer=") {
						t.Errorf("a line kept in pieces: %.40q", l)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	readers.Wait()
	lines, logged := r.Tail(0)
	if logged != writers*each {
		t.Errorf("logged %d, want %d", logged, writers*each)
	}
	total := 0
	for _, l := range lines {
		total += len(l)
	}
	if len(lines) > LogRingLines || total > LogRingBytes || total != r.bytes {
		t.Errorf("kept %d lines, %d bytes (counted %d); bounds %d, %d", len(lines), total, r.bytes, LogRingLines, LogRingBytes)
	}
}

// TestAPILog serves a ring on the control API: the last lines, all kept
// without lines, lines past LogRingLines as all, and 400 for lines=0 or
// not a number; 404 when the daemon keeps none.
func TestAPILog(t *testing.T) {
	n := startNode(t, nil)
	ring := NewLogRing()
	writeLines(t, ring, "line", LogRingLines+5)
	c := logClient(t, n, ring)
	ctx := context.Background()
	for _, tc := range []struct {
		lines, want int
	}{{0, LogRingLines}, {1, 1}, {LogRingLines, LogRingLines}, {LogRingLines + 1, LogRingLines}} {
		got, err := c.Log(ctx, tc.lines)
		if err != nil {
			t.Fatalf("Log(%d): %v", tc.lines, err)
		}
		if len(got.Lines) != tc.want || got.Lines[len(got.Lines)-1] != fmt.Sprint("line", LogRingLines+4) || got.Logged != LogRingLines+5 {
			t.Errorf("Log(%d): %d lines ending %q, logged %d; want %d ending line%d, logged %d",
				tc.lines, len(got.Lines), got.Lines[len(got.Lines)-1], got.Logged, tc.want, LogRingLines+4, LogRingLines+5)
		}
	}
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return new(net.Dialer).DialContext(ctx, "unix", c.Socket())
	}}}
	for _, q := range []string{"0", "-1", "x"} {
		resp, err := hc.Get("http://wats" + api.PathLog + "?lines=" + q)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "lines") {
			t.Errorf("lines=%s: %d %s, want 400 naming lines", q, resp.StatusCode, body)
		}
	}
	var ae *api.Error
	if _, err := logClient(t, n, nil).Log(ctx, 0); !errors.As(err, &ae) || ae.Status != http.StatusNotFound {
		t.Errorf("no ring: %v, want 404", err)
	}
}

// logClient serves n's control API with ring on a socket in a temp dir
// until the test ends, and returns a client for it.
func logClient(t *testing.T, n *node.Node, ring *LogRing) *api.Client {
	t.Helper()
	c := api.NewClient(serveSocketWith(t, n, ring))
	t.Cleanup(c.Close)
	return c
}
