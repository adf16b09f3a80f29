package blobs

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	blocks "github.com/ipfs/go-block-format"
	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
)

// This file is wats's own block transfer (docs/adr/0053): the blocks of a
// blob asked for by CID on one stream and sent back to back, in the order
// asked, from the provider's data file. A fetch uses it with a provider
// that speaks it and bitswap with any other (kubo, an older wats); the
// exchange serves both. Its rules are bitswap's of ADR 0029: blocks only
// of complete blobs (Store.Referenced), only to the peers Node.Serves
// admits, on a stream held to Node.AdmitStream's cap; each block checked
// against its CID before the walk of the fetch looks at it.
//
// Wire format (all integers unsigned varints):
//
//	request  (fetcher → provider), any number on one stream:
//	    count (1..MaxRequestCIDs)
//	    count × { len (1..MaxCIDBytes), CID bytes (binary CIDv1/CIDv0) }
//	response (provider → fetcher), one per CID of a request, in its order:
//	    len (0: the provider does not serve the block; else 1..ChunkSize)
//	    len × byte: the block
//
// The fetcher closes its side when it wants no more; the provider then
// closes the stream once every response is written.

// BlocksProtocol is the protocol id of wats's block transfer.
const BlocksProtocol = protocol.ID("/wats/blocks/1")

// Bounds of the block transfer's frames: a peer past one has its stream
// reset.
const (
	// MaxRequestCIDs is the most CIDs one request names: a fetch has at
	// most its window (DefaultWindow, 16) in flight, and asks for them
	// one request a batch.
	MaxRequestCIDs = 64
	// MaxCIDBytes is the longest CID a request may carry: a blob's CIDs
	// (CIDv1, BLAKE3-256) are 36 bytes; 128 leaves room for any hash of
	// up to 64 bytes with its prefixes.
	MaxCIDBytes = 128
)

// blockBufBytes is the memory a stream of the block transfer holds on
// either side for the block it reads or writes: one chunk and its length.
const blockBufBytes = ChunkSize + binary.MaxVarintLen64

// ErrBadBlocks: a peer's frame of the block transfer broke a bound or
// was not a frame (a provider fault when it is the provider's).
var ErrBadBlocks = errors.New("blobs: bad block transfer frame")

// appendRequest appends the request frame for cs to b.
// REQUIRES: 1 ≤ len(cs) ≤ MaxRequestCIDs.
func appendRequest(b []byte, cs []cid.Cid) []byte {
	b = binary.AppendUvarint(b, uint64(len(cs)))
	for _, c := range cs {
		cb := c.Bytes()
		b = binary.AppendUvarint(b, uint64(len(cb)))
		b = append(b, cb...)
	}
	return b
}

// readRequest reads one request frame from r: the CIDs it names. It
// returns io.EOF when r ends before a frame begins, and an error wrapping
// ErrBadBlocks when a bound is broken or a CID does not parse.
func readRequest(r *bufio.Reader) ([]cid.Cid, error) {
	n, err := binary.ReadUvarint(r)
	switch {
	case err != nil:
		return nil, err
	case n < 1 || n > MaxRequestCIDs:
		return nil, fmt.Errorf("%w: a request of %d CIDs (1..%d)", ErrBadBlocks, n, MaxRequestCIDs)
	}
	cs := make([]cid.Cid, n)
	var buf [MaxCIDBytes]byte
	for i := range cs {
		k, err := binary.ReadUvarint(r)
		if err != nil {
			return nil, noEOF(err)
		}
		if k < 1 || k > MaxCIDBytes {
			return nil, fmt.Errorf("%w: a CID of %d bytes (1..%d)", ErrBadBlocks, k, MaxCIDBytes)
		}
		if _, err := io.ReadFull(r, buf[:k]); err != nil {
			return nil, noEOF(err)
		}
		c, err := cid.Cast(buf[:k])
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrBadBlocks, err)
		}
		cs[i] = c
	}
	return cs, nil
}

// noEOF turns an end of stream inside a frame into io.ErrUnexpectedEOF.
func noEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// handleBlocks serves a stream of the block transfer, with the shape of
// handleStream: attached to ServiceName's scope and held to the peer's
// cap (Node.AdmitStream), its first request due within
// FirstMessageTimeout (else a Held event) and each later one within
// streamIdle; a frame past a bound resets it, the fetcher's close ends it.
//
// Each CID asked is answered in order (sendBlock): the block, if
// Node.Serves admits the peer and a complete blob holds it
// (Store.Referenced), else a length of 0 (and an Unheld event, as
// bitswap's DONT_HAVE).
func (x *Exchange) handleBlocks(s network.Stream) {
	p, release, ok := x.admit(s)
	if !ok {
		return
	}
	defer release()
	r := bufio.NewReaderSize(s, 4096)
	wait := FirstMessageTimeout
	for first := true; ; first = false {
		_ = s.SetReadDeadline(time.Now().Add(wait))
		wait = streamIdle
		cs, err := readRequest(r)
		if err != nil {
			if first && isTimeout(err) {
				x.node.Observe(Event{Kind: Held, Peer: p})
			}
			if errors.Is(err, io.EOF) {
				_ = s.Close()
			} else {
				_ = s.Reset()
			}
			return
		}
		// Whether p is served is decided as a request arrives, for all it
		// asks, as bitswap's server decides each want as it arrives: what
		// a stranger asked before the monthly cap (ADR 0048) was reached
		// is sent in full.
		serves := x.node.Serves(p)
		for _, c := range cs {
			if err := x.sendBlock(s, p, c, serves); err != nil {
				// An answer left unread past its deadline is a stream held
				// (docs/adr/0030 §6): a timeout in p's history.
				if isTimeout(err) {
					x.node.Observe(Event{Kind: Held, Peer: p})
				}
				_ = s.Reset()
				return
			}
		}
	}
}

// sendBlock writes the answer for block c, asked by p, on s (serves:
// Node.Serves(p) when the request came), in p's turn (docs/adr/0056): a
// peer has one answer being read and written at a time, whatever its
// streams, so that it takes the share of one fetcher of the node's
// sending, and the memory of one block (reserved in s's scope at
// Node.Priority's priority, from a pool of buffers) only while it writes.
// The turn must come within BodyTimeout of a chunk, and before the
// exchange closes (errTurn: another stream of p holds it); the store is
// read only while the exchange is open (errClosed: Close waits for the
// reads in progress); the answer must be written within BodyTimeout of
// its length (a timeout error: p does not read it).
func (x *Exchange) sendBlock(s network.Stream, p peer.ID, c cid.Cid, serves bool) error {
	done, ok := x.turns.take(p, answerTimeout(blockBufBytes), x.closing)
	if !ok {
		return errTurn
	}
	defer done()
	if err := s.Scope().ReserveMemory(blockBufBytes, x.node.Priority(p)); err != nil {
		return err
	}
	defer s.Scope().ReleaseMemory(blockBufBytes)
	buf := sendBufs.Get().(*[]byte)
	defer sendBufs.Put(buf)
	x.reads.RLock()
	if x.readsClosed { // the store may be closed next
		x.reads.RUnlock()
		return errClosed
	}
	b, n := x.appendBlock((*buf)[:0], p, c, serves)
	x.reads.RUnlock()
	if cap(b) >= blockBufBytes {
		*buf = b[:0]
	}
	_ = s.SetWriteDeadline(time.Now().Add(answerTimeout(len(b))))
	if _, err := s.Write(b); err != nil {
		return err
	}
	if n > 0 {
		x.node.Observe(Event{Kind: Sent, Peer: p, Size: uint64(n)})
	}
	return nil
}

// answerTimeout is the time an answer of n bytes of the block transfer
// may take to be written: BodyTimeout(n), as a message read; a variable
// so that tests can shorten it.
var answerTimeout = BodyTimeout

// errTurn: a stream of the block transfer waited for its peer's turn
// (sendBlock) longer than an answer may take to write: another stream of
// the peer held it, and is reset for it.
var errTurn = errors.New("blobs: the peer's turn to be sent a block did not come")

// errClosed: an answer of the block transfer was to read the store after
// the exchange closed.
var errClosed = errors.New("blobs: the exchange is closed")

// sendBufs are the buffers the provider's side of the block transfer
// reads answers into, blockBufBytes each: one per peer being written to
// (sendBlock), given back after the write.
var sendBufs = sync.Pool{New: func() any { b := make([]byte, 0, blockBufBytes); return &b }}

// appendBlock appends the response for block c, asked by p, to b and
// returns it with the block's size: its length and its bytes, or a length
// of 0 (size 0) when it is not served to p (serves: Node.Serves(p) when
// the request came).
func (x *Exchange) appendBlock(b []byte, p peer.ID, c cid.Cid, serves bool) ([]byte, int) {
	if !serves {
		return append(b, 0), 0
	}
	if !x.store.Referenced(c) {
		x.node.Observe(Event{Kind: Unheld, Peer: p, CID: c})
		return append(b, 0), 0
	}
	if c.Type() == cid.Raw {
		// A leaf is read from its data file straight into b, after room
		// for its length.
		if out, n, ok := x.store.appendLeaf(b, c); ok {
			return out, n
		}
	}
	blk, err := x.store.GetBlock(context.Background(), c)
	if err != nil {
		return append(b, 0), 0 // removed meanwhile (or unreadable): not served
	}
	data := blk.RawData()
	if len(data) == 0 || len(data) > ChunkSize {
		return append(b, 0), 0 // never a block of a blob (parseNode)
	}
	b = binary.AppendUvarint(b, uint64(len(data)))
	return append(b, data...), len(data)
}

// appendLeaf appends the response for the raw leaf c, read from its data
// file, to b: its length, then its bytes read in place. ok is false when
// no data file holds it whole (an older store's leaf in pebble, a file
// removed meanwhile, a read error): the caller reads it as any block.
// The leaf is not checked against its CID here: the fetcher checks every
// block it receives.
func (s *Store) appendLeaf(b []byte, c cid.Cid) (out []byte, n int, ok bool) {
	l, found, err := s.locate(c.Hash())
	if err != nil || !found || l.n < 1 || l.n > ChunkSize {
		return b, 0, false
	}
	f, err := s.fs.Open(s.dataPath(l.file))
	if err != nil {
		return b, 0, false
	}
	defer f.Close()
	out = binary.AppendUvarint(b, uint64(l.n))
	start := len(out)
	out = slices.Grow(out, int(l.n))[:start+int(l.n)]
	if _, err := f.ReadAt(out[start:], l.off); err != nil {
		return b, 0, false
	}
	return out, int(l.n), true
}

// blocksConn is the fetcher's side of a stream of the block transfer: the
// walk writes requests, a reader goroutine reads the responses, checks
// each block against the CID it answers and hands it to the attempt's
// inbox, in the order asked.
type blocksConn struct {
	s network.Stream
	a *attempt
	// order holds the CIDs asked and not yet answered, in order; its
	// capacity, the exchange's window, is the most in flight (FetchFrom).
	order chan cid.Cid
	req   []byte
	stop  chan struct{}
	done  chan struct{}
	once  sync.Once
}

// openBlocks opens a stream of the block transfer to a's provider, on a
// direct connection (never a relayed one, docs/adr/0040); an error means
// the provider does not speak it (or cannot open a stream now), and the
// attempt asks over bitswap.
func (x *Exchange) openBlocks(ctx context.Context, a *attempt) (*blocksConn, error) {
	s, err := x.net.Host().NewStream(ctx, a.p, BlocksProtocol)
	if err != nil {
		return nil, err
	}
	if err := s.Scope().SetService(ServiceName); err != nil {
		_ = s.Reset()
		return nil, err
	}
	bc := &blocksConn{s: s, a: a, order: make(chan cid.Cid, x.window), stop: make(chan struct{}), done: make(chan struct{})}
	go bc.read()
	return bc, nil
}

// request asks for cs, in order. REQUIRES: at most the window in flight.
func (bc *blocksConn) request(cs []cid.Cid) error {
	for len(cs) > 0 {
		k := min(len(cs), MaxRequestCIDs)
		for _, c := range cs[:k] {
			bc.order <- c // never blocks: at most the window in flight
		}
		bc.req = appendRequest(bc.req[:0], cs[:k])
		_ = bc.s.SetWriteDeadline(time.Now().Add(sendTimeout))
		if _, err := bc.s.Write(bc.req); err != nil {
			return fmt.Errorf("blobs: provider %s: send request: %w", bc.a.p, err)
		}
		cs = cs[k:]
	}
	return nil
}

// read reads the responses until the stream ends or close is called,
// handing each to the attempt: a block checked against its CID, a "don't
// have", or the error that ended the stream (a provider fault).
func (bc *blocksConn) read() {
	defer close(bc.done)
	r := bufio.NewReaderSize(bc.s, 4096)
	for {
		var c cid.Cid
		select {
		case c = <-bc.order:
		case <-bc.stop:
			return
		}
		e := bc.response(r, c)
		select {
		case bc.a.inbox <- e:
		case <-bc.stop:
			return
		}
		if e.err != nil {
			return
		}
	}
}

// response reads the answer for c.
func (bc *blocksConn) response(r *bufio.Reader, c cid.Cid) event {
	n, err := binary.ReadUvarint(r)
	switch {
	case err != nil:
		return event{err: fmt.Errorf("blobs: provider %s: blocks stream: %w", bc.a.p, err)}
	case n == 0:
		return event{dontHave: c}
	case n > ChunkSize:
		return event{err: fmt.Errorf("%w: provider %s: a block of %d bytes, more than one chunk", ErrBadBlocks, bc.a.p, n)}
	}
	scope := bc.s.Scope()
	if err := scope.ReserveMemory(int(n), network.ReservationPriorityAlways); err != nil {
		return event{err: fmt.Errorf("blobs: provider %s: %w", bc.a.p, err)}
	}
	defer scope.ReleaseMemory(int(n))
	buf := getLeafBuf()
	data := (*buf)[:n]
	if _, err := io.ReadFull(r, data); err != nil {
		putLeafBuf(buf)
		return event{err: fmt.Errorf("blobs: provider %s: blocks stream: %w", bc.a.p, noEOF(err))}
	}
	got, err := c.Prefix().Sum(data)
	if err != nil || !got.Equals(c) {
		putLeafBuf(buf)
		return event{err: fmt.Errorf("%w: provider %s: the bytes sent for block %s are not its own", ErrBadBlocks, bc.a.p, c)}
	}
	b, err := blocks.NewBlockWithCid(data, c)
	if err != nil {
		putLeafBuf(buf)
		return event{err: err}
	}
	if c.Type() != cid.Raw {
		// Only a leaf's buffer comes back (the walk's writer, once the
		// leaf is in its data file); an inner node's is the store's.
		b, _ = blocks.NewBlockWithCid(slices.Clone(data), c)
		putLeafBuf(buf)
		return event{blk: b}
	}
	return event{blk: b, buf: buf}
}

// leafBufs are the buffers the fetcher's side of the block transfer reads
// leaves into, ChunkSize each: a leaf's buffer goes back once the walk's
// writer has written it to its data file, so that a fetch reuses a few
// buffers rather than allocating (and zeroing) one per chunk.
var leafBufs = sync.Pool{New: func() any { b := make([]byte, ChunkSize); return &b }}

func getLeafBuf() *[]byte  { return leafBufs.Get().(*[]byte) }
func putLeafBuf(b *[]byte) { leafBufs.Put(b) }

// close ends the stream and waits for the reader: closed when no block
// is in flight (every answer read), else reset, so that the provider
// stops sending.
func (bc *blocksConn) close(inFlight bool) {
	bc.once.Do(func() {
		close(bc.stop)
		if inFlight {
			_ = bc.s.Reset()
			<-bc.done
			return
		}
		<-bc.done
		_ = bc.s.Close()
	})
}
