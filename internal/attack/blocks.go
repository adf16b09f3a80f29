package attack

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/ipfs/boxo/ipld/merkledag"
	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/protocol"
	"github.com/multiformats/go-multihash"
)

// The attacks on wats's block transfer (docs/adr/0053, docs/adr/0056),
// against a blob the node holds (Options.CID, its root): the blocks of its
// DAG are listed first by one id that walks it over the transfer itself,
// as any peer can.
const (
	// BlocksFloodOpen: IDs ids each say hello, then hold 16 streams of
	// the block transfer (as many as the node lets one peer hold), on each
	// writing requests for every leaf of the blob, 64 a request, over and
	// over, as fast as the stream takes them, and never reading an
	// answer: open loop. A stream the node resets is opened again at once.
	BlocksFloodOpen = "blocks-flood-open"
	// BlocksFloodClosed: the same ids and streams, each asking for every
	// leaf 64 at a time and reading each answer as fast as it comes
	// (discarded, unchecked) before asking the next: closed loop, the
	// most a reader takes from the node.
	BlocksFloodClosed = "blocks-flood-closed"
	// BlocksMax: IDs ids, each with 16 streams, cycling through
	// requests at the transfer's bounds, each read in full: the most CIDs
	// a request may name (64) of held leaves; one past (65); CIDs of the
	// most bytes allowed (128) and one past (129), none held; and 64
	// random CIDs that no blob holds.
	BlocksMax = "blocks-max"
	// BlocksSybil: Rate fresh ids a second each say hello, ask for 64
	// leaves of the blob in one request (64 MiB), read what comes for
	// Hold, and leave.
	BlocksSybil = "blocks-sybil"
)

func init() { Attacks = append(Attacks, BlocksFloodOpen, BlocksFloodClosed, BlocksMax, BlocksSybil) }

// The block transfer's wire (docs/adr/0053), as an outside peer writes it:
// this package is a client of the wire, not of package blobs.
const (
	// blocksProtocol is its protocol id.
	blocksProtocol = protocol.ID("/wats/blocks/1")
	// blocksMaxCIDs and blocksMaxCIDBytes are a request's bounds: CIDs a
	// request, bytes a CID.
	blocksMaxCIDs     = 64
	blocksMaxCIDBytes = 128
	// blocksMaxBlock is the largest block an answer carries: a chunk.
	blocksMaxBlock = 1 << 20
)

// blocksAttack runs the attacks of this file; false for another name.
func blocksAttack(ctx context.Context, name string, t Target, o Options, st *stats) bool {
	var mode blocksMode
	switch name {
	case BlocksFloodOpen:
		mode = blocksOpen
	case BlocksFloodClosed:
		mode = blocksClosed
	case BlocksMax:
		mode = blocksBounds
	case BlocksSybil:
		mode = blocksSybilMode
	default:
		return false
	}
	leaves, err := scoutBlob(ctx, t, o.CID, st)
	if err != nil {
		st.failed.Add(1)
		st.setErr(err)
		<-ctx.Done() // nothing to ask for: the run's figures say so
		return true
	}
	if mode == blocksSybilMode {
		atRate(ctx, o.Rate, 1024, func() { blocksSybil(ctx, t, o.Hold, leaves, st) })
		return true
	}
	// Each id stays within the streams the node lets a peer hold (16):
	// past them its streams are reset, and a peer with more than 64
	// streams reset in a second is disconnected as flooding (ADR 0030).
	perID := min(o.PerID, blocksStreamsPerID)
	helloHolders(ctx, t, o.IDs, perID, st, func(c *Conn, w int) { blocksWorker(ctx, c, mode, leaves, w, st) })
	return true
}

// blocksStreamsPerID is how many streams of the block transfer an
// attacker keeps per id: the most the node lets a peer hold.
const blocksStreamsPerID = 16

// blocksMode is what a worker of the block attacks does on its streams.
type blocksMode int

const (
	blocksOpen blocksMode = iota
	blocksClosed
	blocksBounds
	blocksSybilMode
)

// helloHolders is holders whose ids say hello on each connection before
// its perID workers run (w: the worker's number on it): the node serves
// blocks only to peers that did.
func helloHolders(ctx context.Context, t Target, ids, perID int, st *stats, work func(c *Conn, w int)) {
	readyHolders(ctx, t, ids, perID, 100*time.Millisecond, st, func(c *Conn) bool { return c.hello(ctx, st) }, work)
}

// hello says hello on c (not advertising "challenge": the node then
// refuses rather than challenges it) and reports whether it was answered.
func (c *Conn) hello(ctx context.Context, st *stats) bool {
	st.requests.Add(1)
	resp, err := c.Request(ctx, c.Hello(false), nil)
	if err != nil || resp.Hello == nil {
		return false
	}
	st.answered.Add(1)
	return true
}

// blocksWorker runs one stream of mode at a time on c until ctx ends or c
// closes, opening another each time the node ends one; w spreads the
// workers' requests over the blob.
func blocksWorker(ctx context.Context, c *Conn, mode blocksMode, leaves []cid.Cid, w int, st *stats) {
	next := w * blocksMaxCIDs // the first leaf of the next request
	for i := 0; ctx.Err() == nil && !c.IsClosed(); {
		s, err := c.OpenProtocol(ctx, blocksProtocol)
		if err != nil {
			st.failed.Add(1)
			Pause(ctx, 10*time.Millisecond)
			continue
		}
		st.streams.Add(1)
		stop := context.AfterFunc(ctx, func() { _ = s.Reset() })
		r := bufio.NewReaderSize(s, 64<<10)
		for ctx.Err() == nil {
			var err error
			switch mode {
			case blocksOpen:
				// Requests only, as fast as the stream takes them.
				_, err = s.Write(appendBlocksRequest(nil, cycle(leaves, &next)))
				st.requests.Add(1)
			case blocksClosed:
				err = blocksAsk(s, r, cycle(leaves, &next), st)
			case blocksBounds:
				err = blocksBound(s, r, i, leaves, &next, st)
				i++
			}
			if err != nil {
				break
			}
		}
		stop()
		st.reset.Add(1)
		_ = s.Reset()
	}
}

// cycle returns the next blocksMaxCIDs leaves from *next on, wrapping
// round the blob, and moves *next past them.
func cycle(leaves []cid.Cid, next *int) []cid.Cid {
	out := make([]cid.Cid, 0, blocksMaxCIDs)
	for len(out) < blocksMaxCIDs && len(out) < len(leaves) {
		out = append(out, leaves[*next%len(leaves)])
		*next++
	}
	return out
}

// blocksAsk writes a request for cs on s and reads every answer from r,
// counting the blocks' bytes as they come, and the request answered once
// every answer came with some block.
func blocksAsk(s network.MuxedStream, r *bufio.Reader, cs []cid.Cid, st *stats) error {
	st.requests.Add(1)
	if _, err := s.Write(appendBlocksRequest(nil, cs)); err != nil {
		return err
	}
	var got int64
	for range cs {
		n, err := readBlock(r)
		st.bytes.Add(n)
		if err != nil {
			return err
		}
		got += n
	}
	if got > 0 { // a request served, with blocks
		st.answered.Add(1)
	}
	return nil
}

// blocksBound sends the i-th request of the bounds cycle on s: 64 held
// leaves; 65 CIDs (past the bound: the node resets the stream, an error
// here); 64 CIDs of 128 bytes; one of 129 bytes (reset); 64 random CIDs.
func blocksBound(s network.MuxedStream, r *bufio.Reader, i int, leaves []cid.Cid, next *int, st *stats) error {
	switch i % 5 {
	case 0:
		return blocksAsk(s, r, cycle(leaves, next), st)
	case 1:
		cs := append(cycle(leaves, next), leaves[0])
		return blocksPast(s, r, appendBlocksRequest(nil, cs), st)
	case 2:
		return blocksAsk(s, r, randomCIDs(blocksMaxCIDs, blocksMaxCIDBytes), st)
	case 3:
		return blocksPast(s, r, appendBlocksRequest(nil, randomCIDs(1, blocksMaxCIDBytes+1)), st)
	default:
		return blocksAsk(s, r, randomCIDs(blocksMaxCIDs, 36), st)
	}
}

// blocksPast sends req, a request past a bound, and reads until the node
// ends the stream (it must answer nothing); it returns the error that
// ended it, or errAnswered if something came.
func blocksPast(s network.MuxedStream, r *bufio.Reader, req []byte, st *stats) error {
	st.requests.Add(1)
	if _, err := s.Write(req); err != nil {
		return err
	}
	if _, err := r.ReadByte(); err != nil {
		return err
	}
	st.answered.Add(1) // a request past a bound answered: a finding
	return errAnswered
}

// errAnswered: a request past a bound of the block transfer was answered.
var errAnswered = errors.New("attack: a request past a bound was answered")

// readBlock reads one answer of the block transfer from r and discards
// its block: the bytes of it read (0: not served).
func readBlock(r *bufio.Reader) (int64, error) {
	n, err := binary.ReadUvarint(r)
	if err != nil {
		return 0, err
	}
	if n > blocksMaxBlock {
		return 0, fmt.Errorf("attack: a block of %d bytes", n)
	}
	k, err := r.Discard(int(n))
	return int64(k), err
}

// appendBlocksRequest appends a request frame for cs to b (any count and
// any CID lengths: the attacks send some past the bounds).
func appendBlocksRequest(b []byte, cs []cid.Cid) []byte {
	b = binary.AppendUvarint(b, uint64(len(cs)))
	for _, c := range cs {
		cb := c.Bytes()
		b = binary.AppendUvarint(b, uint64(len(cb)))
		b = append(b, cb...)
	}
	return b
}

// randomCIDs returns k random raw CIDs (CIDv1) of n bytes each (n ≥ 36):
// BLAKE3 digests for 36 bytes, else identity digests padded to n. None is
// a block of any blob.
func randomCIDs(k, n int) []cid.Cid {
	out := make([]cid.Cid, k)
	for i := range out {
		if n == 36 {
			d := make([]byte, 32)
			_, _ = rand.Read(d)
			mh, _ := multihash.Encode(d, multihash.BLAKE3)
			out[i] = cid.NewCidV1(cid.Raw, mh)
			continue
		}
		// CIDv1 (1 byte), raw (1), identity (1), its length (1 below 128,
		// else 2), then the digest.
		l := n - 4
		if l >= 128 {
			l--
		}
		d := make([]byte, l)
		_, _ = rand.Read(d)
		mh, _ := multihash.Encode(d, multihash.IDENTITY)
		out[i] = cid.NewCidV1(cid.Raw, mh)
	}
	return out
}

// blocksSybil is one fresh id that says hello, asks for 64 leaves from a
// random place of the blob in one request, reads what comes for hold, and
// leaves.
func blocksSybil(ctx context.Context, t Target, hold time.Duration, leaves []cid.Cid, st *stats) {
	withFresh(ctx, t, st, func(dctx context.Context, c *Conn) {
		if !c.hello(dctx, st) {
			return
		}
		s, err := c.OpenProtocol(dctx, blocksProtocol)
		if err != nil {
			st.failed.Add(1)
			return
		}
		st.streams.Add(1)
		hctx, cancel := context.WithTimeout(dctx, hold)
		defer cancel()
		stop := context.AfterFunc(hctx, func() { _ = s.Reset() })
		defer stop()
		var b [8]byte
		_, _ = rand.Read(b[:])
		next := int(binary.LittleEndian.Uint32(b[:]) % uint32(len(leaves)))
		_ = blocksAsk(s, bufio.NewReaderSize(s, 64<<10), cycle(leaves, &next), st)
		_ = s.Reset()
	})
}

// scoutBlob lists the leaves of the blob whose root is root (a CID
// string), walking its DAG over the block transfer with a fresh id of its
// own: what any peer that said hello can do. A blob of one block is its
// own leaf.
func scoutBlob(ctx context.Context, t Target, root string, st *stats) ([]cid.Cid, error) {
	rc, err := cid.Decode(root)
	if err != nil {
		return nil, fmt.Errorf("attack: the blob's CID %q: %w", root, err)
	}
	sctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	c, _ := freshConn(sctx, t, st)
	if c == nil {
		return nil, errors.New("attack: the scout could not connect")
	}
	defer c.Close()
	if !c.hello(sctx, st) {
		return nil, errors.New("attack: the scout's hello was not answered")
	}
	s, err := c.OpenProtocol(sctx, blocksProtocol)
	if err != nil {
		return nil, err
	}
	defer s.Reset()
	stop := context.AfterFunc(sctx, func() { _ = s.Reset() })
	defer stop()
	r := bufio.NewReaderSize(s, 64<<10)
	var leaves []cid.Cid
	level := []cid.Cid{rc}
	for len(level) > 0 {
		var below []cid.Cid
		for len(level) > 0 {
			k := min(len(level), blocksMaxCIDs)
			if _, err := s.Write(appendBlocksRequest(nil, level[:k])); err != nil {
				return nil, err
			}
			for _, bc := range level[:k] {
				n, err := binary.ReadUvarint(r)
				if err != nil {
					return nil, err
				}
				if n == 0 || n > blocksMaxBlock {
					return nil, fmt.Errorf("attack: block %s not served (%d bytes)", bc, n)
				}
				data := make([]byte, n)
				if _, err := io.ReadFull(r, data); err != nil {
					return nil, err
				}
				if bc.Type() == cid.Raw {
					leaves = append(leaves, bc)
					continue
				}
				nd, err := merkledag.DecodeProtobuf(data)
				if err != nil {
					return nil, fmt.Errorf("attack: node %s: %w", bc, err)
				}
				for _, l := range nd.Links() {
					below = append(below, l.Cid)
				}
			}
			level = level[k:]
		}
		level = below
	}
	if len(leaves) == 0 {
		return nil, errors.New("attack: the blob has no leaves")
	}
	return leaves, nil
}
