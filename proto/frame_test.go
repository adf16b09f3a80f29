package proto

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"runtime"
	"testing"

	"github.com/libp2p/go-msgio"
)

// prefixOnly is a reader that yields a length prefix and then fails the
// test if anything more is read: a frame reader that refuses the length
// must not touch the payload.
type prefixOnly struct {
	t *testing.T
	b []byte
}

func (r *prefixOnly) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		r.t.Errorf("read past the length prefix")
		return 0, io.EOF
	}
	n := copy(p, r.b)
	r.b = r.b[n:]
	return n, nil
}

func uvarint(n uint64) []byte { return binary.AppendUvarint(nil, n) }

func frame(payload []byte) []byte {
	var buf bytes.Buffer
	if err := WriteFrame(&buf, payload); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

func TestFrameRoundTrip(t *testing.T) {
	for _, n := range []int{0, 1, 127, 128, 300, 1 << 16} {
		payload := bytes.Repeat([]byte{'a'}, n)
		f := frame(payload)
		if want := len(uvarint(uint64(n))) + n; len(f) != want {
			t.Fatalf("frame of %d: %d bytes, want %d", n, len(f), want)
		}
		got, err := ReadFrame(bytes.NewReader(f), MaxRequestBytes)
		if err != nil || !bytes.Equal(got, payload) {
			t.Fatalf("payload of %d: got %d bytes, %v", n, len(got), err)
		}
	}
}

// TestFrameCaps checks both frame caps at the bound and one past it.
func TestFrameCaps(t *testing.T) {
	for _, max := range []int{MaxRequestBytes, MaxResponseBytes} {
		payload := make([]byte, max)
		got, err := ReadFrame(bytes.NewReader(frame(payload)), max)
		if err != nil || len(got) != max {
			t.Fatalf("frame of exactly %d: %d bytes, %v", max, len(got), err)
		}
		_, err = ReadFrame(&prefixOnly{t: t, b: uvarint(uint64(max + 1))}, max)
		if !errors.Is(err, ErrFrameTooLarge) {
			t.Fatalf("frame of %d+1: %v, want ErrFrameTooLarge", max, err)
		}
	}
}

// TestFrameRefusedBeforeAllocating: a prefix of 2^62 bytes is refused after
// the prefix alone, and allocates next to nothing.
func TestFrameRefusedBeforeAllocating(t *testing.T) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range 100 {
		_, err := ReadFrame(&prefixOnly{t: t, b: uvarint(1 << 62)}, MaxResponseBytes)
		if !errors.Is(err, ErrFrameTooLarge) {
			t.Fatalf("got %v, want ErrFrameTooLarge", err)
		}
	}
	runtime.ReadMemStats(&after)
	if d := after.TotalAlloc - before.TotalAlloc; d > 256<<10 {
		t.Fatalf("100 refused frames allocated %d bytes", d)
	}
}

// TestMsgioRefusesBeforeAllocating verifies the library behaviour ReadFrame
// relies on: go-msgio's varint reader reports the length without reading
// the payload, and its ReadMsg refuses a length over its max with
// ErrMsgTooLarge, before allocating or reading the payload.
func TestMsgioRefusesBeforeAllocating(t *testing.T) {
	r := msgio.NewVarintReaderSize(&prefixOnly{t: t, b: uvarint(MaxRequestBytes + 1)}, MaxRequestBytes)
	if _, err := r.ReadMsg(); !errors.Is(err, msgio.ErrMsgTooLarge) {
		t.Fatalf("ReadMsg: %v, want ErrMsgTooLarge", err)
	}
	r = msgio.NewVarintReaderSize(&prefixOnly{t: t, b: uvarint(1 << 62)}, MaxRequestBytes)
	n, err := r.NextMsgLen()
	if err != nil || n != 1<<62 {
		t.Fatalf("NextMsgLen: %d, %v", n, err)
	}
}

func TestFrameErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []byte
		is   error
	}{
		{"empty stream", nil, io.EOF},
		{"truncated prefix", []byte{0x80}, ErrTruncatedFrame},
		{"truncated payload", append(uvarint(10), "12345"...), ErrTruncatedFrame},
		{"no payload", uvarint(10), io.ErrUnexpectedEOF},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadFrame(bytes.NewReader(tc.in), MaxRequestBytes)
			if !errors.Is(err, tc.is) {
				t.Fatalf("got %v, want %v", err, tc.is)
			}
		})
	}
	// Malformed prefixes: not minimal, longer than 9 bytes.
	for _, in := range [][]byte{{0x81, 0x00}, bytes.Repeat([]byte{0xff}, 10)} {
		if _, err := ReadFrame(bytes.NewReader(in), MaxRequestBytes); err == nil || errors.Is(err, io.EOF) {
			t.Fatalf("prefix %x: %v", in, err)
		}
	}
	boom := errors.New("boom")
	if _, err := ReadFrame(errReader{boom}, MaxRequestBytes); !errors.Is(err, boom) {
		t.Fatalf("reader error: %v", err)
	}
	if err := WriteFrame(errWriter{boom}, []byte("x")); !errors.Is(err, boom) {
		t.Fatalf("writer error: %v", err)
	}
}

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

type errWriter struct{ err error }

func (w errWriter) Write([]byte) (int, error) { return 0, w.err }

// TestFrameDoesNotReadAhead: frames back to back are read one by one.
func TestFrameDoesNotReadAhead(t *testing.T) {
	var buf bytes.Buffer
	for _, s := range []string{"one", "", "three"} {
		if err := WriteFrame(&buf, []byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	buf.WriteString("rest")
	for _, want := range []string{"one", "", "three"} {
		got, err := ReadFrame(&buf, 16)
		if err != nil || string(got) != want {
			t.Fatalf("got %q, %v; want %q", got, err, want)
		}
	}
	if buf.String() != "rest" {
		t.Fatalf("read ahead: %q left", buf.String())
	}
}

func TestReadFrameReserve(t *testing.T) {
	full := errors.New("scope full")
	var asked int
	alloc := func(n int) []byte { t.Fatalf("allocated %d bytes for a frame its scope refused", n); return nil }
	_, err := readFrame(&prefixOnly{t: t, b: uvarint(1000)}, MaxRequestBytes, alloc, func(n int) error {
		asked = n
		return full
	})
	if !errors.Is(err, full) || asked != 1000 {
		t.Fatalf("got %v, asked %d", err, asked)
	}
}
