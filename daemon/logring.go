package daemon

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"sync"
	"unicode/utf8"

	"github.com/wats-network/wats/api"
)

// Bounds of a LogRing (docs/adr/0050): what `wats diag bundle` gets of the
// daemon's log without a log file. 1,000 lines is some minutes of a busy
// node's info lines, the start of a quiet one's; 512 KiB bounds them when
// the lines are long (libp2p's errors name addresses and peers), and a
// line is cut at 16 KiB so that one huge line does not push out all the
// others.
const (
	// LogRingLines is the most lines a LogRing keeps.
	LogRingLines = 1000
	// LogRingBytes is the most bytes of lines a LogRing keeps, newlines
	// not counted.
	LogRingBytes = 512 << 10
	// LogLineBytes is the most bytes kept of one line: a longer one is
	// kept as its first LogLineBytes bytes (whole UTF-8 characters)
	// followed by logLineCut.
	LogLineBytes = 16 << 10
)

// logLineCut ends a line cut at LogLineBytes.
const logLineCut = " …(cut)"

// LogRing keeps the last lines the daemon logged, as it wrote them (text
// or JSON per log.format), at most LogRingLines lines and LogRingBytes
// bytes: the oldest go first. It is an io.Writer that takes each
// write as whole lines (a slog handler writes one record a call, ending
// in "\n"; a last piece without one is a line too). Tee puts it beside
// the writer the daemon logs to. It is safe for concurrent use; the zero
// value is not usable: use NewLogRing.
type LogRing struct {
	mu     sync.Mutex
	lines  []string // a circle of LogRingLines slots; n of them from first
	first  int
	n      int
	bytes  int    // of the lines kept
	logged uint64 // lines written since NewLogRing
}

// NewLogRing returns an empty LogRing.
func NewLogRing() *LogRing { return &LogRing{lines: make([]string, LogRingLines)} }

// Write keeps each line of p (Write never fails).
func (r *LogRing) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for rest := p; len(rest) > 0; {
		line, after, _ := bytes.Cut(rest, []byte{'\n'})
		r.add(line)
		rest = after
	}
	return len(p), nil
}

// add keeps line (without its newline), dropping the oldest lines past
// the bounds. REQUIRES: r.mu held.
func (r *LogRing) add(line []byte) {
	var s string
	if len(line) > LogLineBytes {
		cut := LogLineBytes
		for cut > 0 && !utf8.RuneStart(line[cut]) {
			cut--
		}
		s = string(line[:cut]) + logLineCut
	} else {
		s = string(line)
	}
	r.logged++
	if r.n == len(r.lines) {
		r.drop()
	}
	r.lines[(r.first+r.n)%len(r.lines)] = s
	r.n++
	r.bytes += len(s)
	for r.bytes > LogRingBytes {
		r.drop()
	}
}

// drop forgets the oldest line. REQUIRES: r.mu held, r.n > 0.
func (r *LogRing) drop() {
	r.bytes -= len(r.lines[r.first])
	r.lines[r.first] = ""
	r.first = (r.first + 1) % len(r.lines)
	r.n--
}

// Tail returns the last n lines kept, oldest first, without their
// newlines (all kept when n <= 0 or n is more than are kept), and the
// lines written since NewLogRing: more than are kept when some were
// dropped.
func (r *LogRing) Tail(n int) (lines []string, logged uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if n <= 0 || n > r.n {
		n = r.n
	}
	lines = make([]string, n)
	for i := range n {
		lines[i] = r.lines[(r.first+r.n-n+i)%len(r.lines)]
	}
	return lines, r.logged
}

// Tee returns a writer that keeps each write in r, then writes it to w,
// and returns what w returns: r is written even when w fails (a closed
// stderr).
func (r *LogRing) Tee(w io.Writer) io.Writer { return tee{r, w} }

// tee is LogRing.Tee's writer.
type tee struct {
	r *LogRing
	w io.Writer
}

func (t tee) Write(p []byte) (int, error) {
	_, _ = t.r.Write(p)
	return t.w.Write(p)
}

// serveLog answers GET api.PathLog from ring; nil answers 404.
func serveLog(ring *LogRing) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if ring == nil {
			writeError(w, http.StatusNotFound, errors.New("this daemon keeps no log lines: it was not started by `wats daemon`"))
			return
		}
		n, err := queryUint(r, "lines", 0)
		if err == nil && r.URL.Query().Has("lines") && n == 0 {
			err = errors.New("lines must be a whole number from 1 up, not 0")
		}
		if err != nil {
			writeError(w, http.StatusBadRequest, err)
			return
		}
		lines, logged := ring.Tail(int(min(n, LogRingLines)))
		writeJSON(w, http.StatusOK, api.LogTail{Lines: lines, Logged: logged})
	}
}
