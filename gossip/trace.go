package gossip

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"sync"

	pb "github.com/libp2p/go-libp2p-pubsub/pb"
)

// fileTracer writes gossipsub's trace events to a file, one JSON object a
// line, as pubsub's JSONTracer does (Options.TracePath), but buffered in
// the caller and flushed by Close, so that a node that stops leaves the
// whole trace: pubsub's own closes its file on a goroutine nobody waits
// for.
type fileTracer struct {
	mu  sync.Mutex
	f   *os.File
	w   *bufio.Writer
	enc *json.Encoder
	err error
}

func newFileTracer(path string) (*fileTracer, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	return &fileTracer{f: f, w: w, enc: json.NewEncoder(w)}, nil
}

// Trace writes evt (pubsub.EventTracer); after the first error, or Close,
// nothing more.
func (t *fileTracer) Trace(evt *pb.TraceEvent) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.err == nil && t.f != nil {
		t.err = t.enc.Encode(evt)
	}
}

// Close flushes and closes the file, and reports the first error.
func (t *fileTracer) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.f == nil {
		return t.err
	}
	if err := t.w.Flush(); t.err == nil {
		t.err = err
	}
	if err := t.f.Close(); t.err == nil {
		t.err = err
	}
	t.f = nil
	if t.err != nil {
		return fmt.Errorf("gossip: trace: %w", t.err)
	}
	return nil
}
