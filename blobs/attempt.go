package blobs

import (
	"context"
	"errors"
	"fmt"
	"time"

	bsnetwork "github.com/ipfs/boxo/bitswap/network"
	"github.com/ipfs/boxo/ipld/merkledag"
	"github.com/ipfs/boxo/ipld/unixfs"
	upb "github.com/ipfs/boxo/ipld/unixfs/pb"
	blocks "github.com/ipfs/go-block-format"
	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/wats-network/wats/core"
)

// Bounds on the DAG of one blob, checked as its blocks arrive (ADR 0029).
const (
	// MaxDepth is the deepest a blob's DAG may be, the root at depth 0:
	// with 174 links a node (boxo's balanced layout), depth 8 covers far
	// more than core.MaxSafeInt.
	MaxDepth = 8
	// MaxLinks is the most links one node of a blob may have.
	MaxLinks = 1024
)

// innerAllowance is the bytes allowed per chunk for the inner (dag-pb)
// nodes of a blob: boxo's balanced layout spends about 48 bytes per leaf
// (a link and a block size), and 1/174 of that again per level above.
const innerAllowance = 64

// Budget is the most bytes one attempt receives for a blob of the declared
// size (ADR 0014 "Declared size", ADR 0029): the declared size, one
// bitswap message of a chunk (MaxMessageBytes), and innerAllowance bytes
// per chunk for the inner nodes. A block is requested only while the
// bytes received plus MaxMessageBytes for each block in flight stay within
// it, so even a DAG whose nodes lie about their children's sizes costs no
// more.
func Budget(size uint64) uint64 {
	return size + MaxMessageBytes + innerAllowance*ChunksFor(size, ChunkSize)
}

// MaxBlocks is the most blocks one attempt visits for a blob of the
// declared size (each visit of a block named several times counts): 16
// per chunk of the declared size, so chunks down to 64 KiB are fine, and
// 2*MaxDepth+1 for the inner nodes above them. It bounds the work on a DAG
// whose few blocks link to each other many times (ADR 0029).
func MaxBlocks(size uint64) uint64 {
	return 16*ChunksFor(size, ChunkSize) + 2*MaxDepth + 1
}

// item is a block of the DAG still to fetch: its CID, the bytes of the
// file it covers (its parent's claim; the declared size for the root) and
// its depth.
type item struct {
	c     cid.Cid
	span  uint64
	depth int
}

// walk is the state of one attempt (FetchFrom).
type walk struct {
	x        *Exchange
	a        *attempt
	root     cid.Cid
	size     uint64
	budget   uint64 // Budget(size): the most bytes received or read
	received uint64 // bytes of blocks received, or read from the store
	visits   uint64 // blocks queued so far, the root included; ≤ MaxBlocks(size)
	done     uint64 // file bytes covered so far (local and received)
	progress func(done uint64)
	queue    []item
	out      map[string]item // requested, not received; by cid.KeyString
	written  []cid.Cid
	ms       bsnetwork.MessageSender
	// bc is the block transfer's stream to the provider, when it speaks
	// it (docs/adr/0053); nil while none is open, and for bitswap.
	bc *blocksConn
	// overBitswap: the attempt asks over bitswap (the provider did not
	// open the block transfer), to its end.
	overBitswap bool
	seq         int32
	// reaskDue: the wants in flight are to be sent again (rewant): a
	// message of the provider was dropped unread, a connection of several
	// to it closed, or a third of the idle timeout passed in silence.
	reaskDue bool
	// wq takes the checked blocks to the writer goroutine, which stores
	// them (several in one pebble batch when they queue up), so that
	// receiving and checking overlap the writes.
	wq    chan queued
	wdone chan struct{}
	werr  error // the writer's first error; read after wdone
}

// writeQueue is how many checked blocks wait for the writer, at most.
const writeQueue = 4

// queued is a checked block on its way to the writer, with the buffer of
// leafBufs that holds its bytes, if any (returned once it is written).
type queued struct {
	blk blocks.Block
	buf *[]byte
}

// writer stores the blocks of wq until it is closed.
func (w *walk) writer(ctx context.Context) {
	defer close(w.wdone)
	batch := make([]blocks.Block, 0, writeQueue)
	bufs := make([]*[]byte, 0, writeQueue)
	for q := range w.wq {
		batch, bufs = append(batch[:0], q.blk), append(bufs[:0], q.buf)
	more:
		for len(batch) < writeQueue {
			select {
			case q, ok := <-w.wq:
				if !ok {
					break more
				}
				batch, bufs = append(batch, q.blk), append(bufs, q.buf)
			default:
				break more
			}
		}
		if w.werr == nil { // else drain after a failure
			if err := w.x.store.putBlocks(ctx, w.root, batch); err != nil {
				w.werr = fmt.Errorf("%w: %w", ErrStore, err)
			}
		}
		// The leaves are in their data file (or dropped): their buffers
		// go back.
		for i, b := range bufs {
			if b != nil {
				putLeafBuf(b)
			}
			batch[i] = nil
		}
	}
}

// flush waits until every queued block is stored and returns the writer's
// error, if any. It ends the writer.
func (w *walk) flush() error {
	if w.wq == nil {
		return nil
	}
	close(w.wq)
	<-w.wdone
	w.wq = nil
	return w.werr
}

// FetchFrom is one attempt of a fetch: it asks provider p alone for the
// blocks of the blob root of the declared size that the store does not
// hold, checks each block as it arrives and writes it to the store,
// unreferenced (Store.PutBlock). It returns the blocks it wrote and nil
// once every block covering the declared size is in the store; the caller
// then pins with Store.Complete.
//
// Bounds (ADR 0014 "Declared size", "Collections"; ADR 0029):
//   - Only the blocks covering the declared size are requested: the
//     root's UnixFS file size must equal size (else ErrSizeMismatch,
//     after the root alone), each node's children must add up to what its
//     parent says it covers, and a raw leaf is at most ChunkSize (else
//     ErrBadBlob).
//   - A collection root (a directory, a HAMT shard, a symlink) fails with
//     ErrCollection after the root alone: children are never followed.
//   - At most Budget(size) bytes are received or read from the store (a
//     block the store holds counts as if received): a block is requested
//     only while those bytes plus MaxMessageBytes for each block in flight
//     and the new one stay within that budget, and at most the exchange's
//     window of blocks are in flight. At most MaxBlocks(size) blocks are
//     visited, however often the DAG names them.
//   - A block is accepted only from p and only if it was asked for; an
//     attempt whose provider sends nothing for the exchange's idle timeout
//     (DefaultIdleTimeout, 15 s) fails with ErrStalled. After each silent
//     third of it, and when one of several connections to p closes, the
//     wants in flight are sent again (bitswap sends a message once: a
//     stream or connection that ends can take wants or blocks with it).
//
// A provider that speaks wats's block transfer (BlocksProtocol, ADR 0053)
// is asked on one stream of it, by the same rules: the blocks come in the
// order asked, each checked against its CID as it is read (else
// ErrBadBlocks, as for a length past ChunkSize), and the stream's end
// ends the attempt (nothing is sent again on it). Any other provider is
// asked over bitswap.
//
// Errors: the ones above belong to the CID; ErrDontHave, ErrProviderGone,
// ErrStalled, ErrBadBlocks, a failed dial or ctx's deadline belong to the
// provider; ctx's cancellation to the caller.
func (x *Exchange) FetchFrom(ctx context.Context, p peer.ID, root cid.Cid, size uint64, progress func(done uint64)) (written []cid.Cid, err error) {
	switch {
	case root.Type() == cid.Raw && size > ChunkSize:
		return nil, fmt.Errorf("%w: %s is one raw block, declared %d bytes > one chunk", ErrBadBlob, root, size)
	case root.Type() != cid.Raw && root.Type() != cid.DagProtobuf:
		return nil, fmt.Errorf("%w: %s: codec %#x is neither raw nor dag-pb", ErrBadBlob, root, root.Type())
	case size > core.MaxSafeInt:
		return nil, fmt.Errorf("%w: declared size %d", ErrTooLarge, size)
	}
	if root.Type() == cid.Raw && size == 0 {
		// Bitswap cannot carry an empty block (boxo's server answers "don't
		// have"); the empty blob is known without asking anyone.
		return emptyBlob(ctx, x.store, root)
	}
	w := &walk{
		x: x, root: root, size: size, budget: Budget(size), progress: progress,
		queue: []item{{c: root, span: size}}, visits: 1,
		out: make(map[string]item),
		a:   &attempt{p: p, inbox: make(chan event, x.window+1), lost: make(chan struct{}, 1)},
		seq: 1 << 30,
	}
	x.register(w.a)
	w.wq, w.wdone = make(chan queued, writeQueue), make(chan struct{})
	go w.writer(context.WithoutCancel(ctx))
	defer w.close()
	// The idle timeout is counted in thirds: after each silent third the
	// wants in flight are sent again (rewant), after the third it stalls.
	third := x.idle / 3
	idle := time.NewTimer(third)
	defer idle.Stop()
	silent := 0
	for {
		if err := w.fill(ctx); err != nil {
			return w.written, err
		}
		if len(w.queue) == 0 && len(w.out) == 0 {
			return w.written, w.flush()
		}
		if len(w.out) == 0 {
			// Blocks remain and none may be asked for: the DAG needs more
			// than the budget (e.g. many tiny chunks), a fault of the CID.
			return w.written, fmt.Errorf("%w: %s: its blocks need more than the %d bytes allowed for %d declared", ErrBadBlob, w.root, w.budget, w.size)
		}
		if w.reaskDue && w.rewant(ctx) == nil {
			// Sent; a failure (no room for a stream to p now) is tried
			// again after the next event, within the idle timeout.
			w.reaskDue = false
		}
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return w.written, fmt.Errorf("blobs: provider %s: attempt timed out: %w", p, ctx.Err())
			}
			return w.written, ctx.Err()
		case <-idle.C:
			if silent++; silent == 3 {
				return w.written, fmt.Errorf("%w: %s sent nothing for %v", ErrStalled, p, x.idle)
			}
			w.reaskDue = true
			idle.Reset(third)
		case <-w.a.lost:
			// A message of p was dropped unread (ADR 0035): what it
			// carried is asked for again, within the attempt's deadline.
			w.reaskDue = true
		case e := <-w.a.inbox:
			switch {
			case e.gone:
				if !x.net.IsConnectedToPeer(ctx, p) {
					return w.written, fmt.Errorf("%w: %s", ErrProviderGone, p)
				}
				// One of several connections closed: what it carried
				// (wants, blocks on their way) may be lost.
				w.reaskDue = true
			case e.err != nil:
				if !x.net.IsConnectedToPeer(ctx, p) {
					return w.written, fmt.Errorf("%w: %s: %w", ErrProviderGone, p, e.err)
				}
				return w.written, e.err
			case e.dontHave.Defined():
				return w.written, fmt.Errorf("%w: %s has no block %s", ErrDontHave, p, e.dontHave)
			default:
				if err := w.accept(ctx, e.blk, e.buf); err != nil {
					return w.written, err
				}
				// Counted from the last block received (or the first wants).
				silent = 0
				idle.Reset(third)
			}
		}
	}
}

// rewant sends the wants in flight again, on a new stream: the provider
// may have lost them, or the blocks it sent for them may be lost, with a
// stream or a connection that ended (bitswap sends each message once). A
// block that still comes twice is taken once; the second copy is
// unsolicited, dropped. Counted in ExchangeStats.Rewants.
func (w *walk) rewant(ctx context.Context) error {
	// The block transfer's stream is one, ordered and reliable: what it
	// loses ends it, and the attempt with it.
	if len(w.out) == 0 || w.ms == nil || w.bc != nil {
		return nil
	}
	_ = w.ms.Reset()
	w.ms = nil
	if err := w.openSender(ctx); err != nil {
		return err
	}
	cs := make([]cid.Cid, 0, len(w.out))
	for _, it := range w.out {
		cs = append(cs, it.c)
	}
	w.x.rewants.Add(1)
	if err := sendWants(ctx, w.ms, cs, &w.seq); err != nil {
		return fmt.Errorf("blobs: provider %s: send wants again: %w", w.a.p, err)
	}
	return nil
}

// close withdraws the wants still in flight and waits for the writer.
func (w *walk) close() {
	_ = w.flush()
	out := make([]cid.Cid, 0, len(w.out))
	for _, it := range w.out {
		out = append(out, it.c)
	}
	w.x.unregister(w.a, out)
	if w.bc != nil {
		w.bc.close(len(out) > 0)
	}
	if w.ms != nil {
		ctx, cancel := context.WithTimeout(context.Background(), cancelTimeout)
		sendCancels(ctx, w.ms, out)
		cancel()
		_ = w.ms.Reset()
	}
}

// fill takes items off the queue: those the store holds are checked and
// expanded at once, the others requested while the window and the budget
// allow.
func (w *walk) fill(ctx context.Context) error {
	var batch []cid.Cid
	for len(w.queue) > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		it := w.queue[0]
		if _, inFlight := w.out[it.c.KeyString()]; inFlight {
			break // the same block twice in a file: wait for the first
		}
		if n, ok := w.x.store.heldLeaf(it); ok {
			// A leaf held already (ADR 0054: checked, if a crash may have
			// torn it): its length, from its location record, is all the
			// walk needs of it; it costs what a received one does.
			w.queue = w.queue[1:]
			if w.received += n; w.received > w.budget {
				return fmt.Errorf("%w: %s: more than %d bytes read for %d declared", ErrBadBlob, w.root, w.budget, w.size)
			}
			if n != it.span {
				return fmt.Errorf("%w: leaf %s is %d bytes, its parent says %d", ErrBadBlob, it.c, n, it.span)
			}
			w.covered(n)
			continue
		}
		blk, err := w.x.store.GetBlock(ctx, it.c)
		if err == nil {
			// A block held already costs what a received one does.
			w.queue = w.queue[1:]
			if w.received += uint64(len(blk.RawData())); w.received > w.budget {
				return fmt.Errorf("%w: %s: more than %d bytes read for %d declared", ErrBadBlob, w.root, w.budget, w.size)
			}
			if err := w.expand(it, blk.RawData()); err != nil {
				return err
			}
			continue
		}
		if len(w.out) >= w.x.window || w.received+uint64(len(w.out)+1)*MaxMessageBytes > w.budget {
			break
		}
		w.queue = w.queue[1:]
		w.out[it.c.KeyString()] = it
		batch = append(batch, it.c)
	}
	if len(batch) == 0 {
		return nil
	}
	if w.ms == nil && w.bc == nil {
		if err := w.x.connect(ctx, w.a.p); err != nil {
			return err
		}
		if err := w.x.node.Prepare(ctx, w.a.p); err != nil {
			return fmt.Errorf("blobs: provider %s: %w", w.a.p, err)
		}
		if !w.x.bitswapOnly && !w.overBitswap {
			// A provider that does not speak the block transfer (kubo, an
			// older wats) is asked over bitswap.
			w.bc, _ = w.x.openBlocks(ctx, w.a)
		}
		if w.bc == nil {
			w.overBitswap = true
			if err := w.openSender(ctx); err != nil {
				return err
			}
		}
	}
	if w.bc != nil {
		return w.bc.request(batch)
	}
	for _, c := range batch {
		w.x.want(w.a, c)
	}
	if err := sendWants(ctx, w.ms, batch, &w.seq); err != nil {
		if !errors.Is(err, network.ErrResourceLimitExceeded) {
			return fmt.Errorf("blobs: provider %s: send wants: %w", w.a.p, err)
		}
		// No room here for a stream to p now: the blocks p has in flight
		// to this node hold its memory (a stranger's is small, ADR 0030).
		// The batch is in flight already; it goes with the next rewant,
		// after the next block, when that room is back, or after a
		// silent third of the idle timeout, within which p must answer.
		w.reaskDue = true
	}
	return nil
}

// openSender opens the stream the wants go to the provider on.
func (w *walk) openSender(ctx context.Context) error {
	ms, err := w.x.net.NewMessageSender(ctx, w.a.p, &bsnetwork.MessageSenderOpts{
		MaxRetries: 1, SendTimeout: sendTimeout, SendErrorBackoff: sendTimeout,
	})
	if err != nil {
		return fmt.Errorf("blobs: provider %s: open bitswap stream: %w", w.a.p, err)
	}
	w.ms = ms
	return nil
}

// accept checks a block received for an item in flight, writes it and
// expands it. buf, if set, is the buffer of leafBufs that holds b's bytes:
// it goes back once b is written, or now if b is not.
func (w *walk) accept(ctx context.Context, b blocks.Block, buf *[]byte) (err error) {
	handed := false // to the writer, which returns buf
	defer func() {
		if buf != nil && !handed {
			putLeafBuf(buf)
		}
	}()
	k := b.Cid().KeyString()
	it, ok := w.out[k]
	if !ok {
		return nil // not ours any more (a duplicate delivery)
	}
	delete(w.out, k)
	n := uint64(len(b.RawData()))
	w.received += n
	w.x.received.Add(n)
	w.x.node.Observe(Event{Kind: Received, Peer: w.a.p, Size: n})
	if w.received > w.budget {
		return fmt.Errorf("%w: %s: more than %d bytes received for %d declared", ErrBadBlob, w.root, w.budget, w.size)
	}
	if err := w.expand(it, b.RawData()); err != nil {
		return err
	}
	select {
	case w.wq <- queued{blk: b, buf: buf}:
		handed = true
	case <-ctx.Done():
		return ctx.Err()
	}
	w.written = append(w.written, b.Cid())
	return nil
}

// expand checks the bytes of item it against what its parent claimed and
// queues its children.
func (w *walk) expand(it item, data []byte) error {
	inline, kids, err := parseNode(it, data)
	if err != nil {
		return err
	}
	if err := visit(&w.visits, len(kids), w.root, w.size); err != nil {
		return err
	}
	w.queue = append(w.queue, kids...)
	w.covered(uint64(len(inline)))
	return nil
}

// visit adds k blocks to *visits, the blocks of blob root (of the
// declared size) visited so far, and fails past MaxBlocks(size).
func visit(visits *uint64, k int, root cid.Cid, size uint64) error {
	if *visits += uint64(k); *visits > MaxBlocks(size) {
		return fmt.Errorf("%w: %s: more than %d blocks to visit for %d bytes declared", ErrBadBlob, root, MaxBlocks(size), size)
	}
	return nil
}

// parseNode checks data, the bytes of block it.c, against what its parent
// claimed (it.span: the file bytes it covers; the declared size at the
// root) and the bounds of a blob's DAG (ADR 0029), and returns the file
// bytes the block holds itself (a raw leaf's bytes, a UnixFS node's inline
// data: they come before its children's in the file) and its children in
// file order, each with the bytes its parent says it covers. The walk of
// a fetch and the stream of a blob's bytes (Fetcher.Stream) read blocks
// by it alike.
//
// Errors: ErrSizeMismatch at the root when the size is not the declared
// one; ErrCollection for a root that is not a file; ErrBadBlob for every
// other fault (a block over ChunkSize, sizes that do not add up, more
// than MaxLinks links, deeper than MaxDepth, another codec).
func parseNode(it item, data []byte) (inline []byte, kids []item, err error) {
	root := it.depth == 0
	n := uint64(len(data))
	if n > ChunkSize {
		return nil, nil, fmt.Errorf("%w: block %s is %d bytes, more than one chunk", ErrBadBlob, it.c, n)
	}
	switch it.c.Type() {
	case cid.Raw:
		if n != it.span {
			if root {
				return nil, nil, fmt.Errorf("%w: %s is %d bytes, declared %d", ErrSizeMismatch, it.c, n, it.span)
			}
			return nil, nil, fmt.Errorf("%w: leaf %s is %d bytes, its parent says %d", ErrBadBlob, it.c, n, it.span)
		}
		return data, nil, nil
	case cid.DagProtobuf:
	default:
		return nil, nil, fmt.Errorf("%w: block %s: codec %#x", ErrBadBlob, it.c, it.c.Type())
	}
	nd, err := merkledag.DecodeProtobuf(data)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: node %s: %v", ErrBadBlob, it.c, err)
	}
	fsn, err := unixfs.FSNodeFromBytes(nd.Data())
	if err != nil {
		return nil, nil, fmt.Errorf("%w: node %s is not UnixFS: %v", ErrBadBlob, it.c, err)
	}
	switch fsn.Type() {
	case upb.Data_File, upb.Data_Raw:
	default:
		if root {
			return nil, nil, fmt.Errorf("%w: %s is a UnixFS %s", ErrCollection, it.c, fsn.Type())
		}
		return nil, nil, fmt.Errorf("%w: node %s inside a file is a UnixFS %s", ErrBadBlob, it.c, fsn.Type())
	}
	if fsn.FileSize() != it.span {
		if root {
			return nil, nil, fmt.Errorf("%w: %s is a file of %d bytes, declared %d", ErrSizeMismatch, it.c, fsn.FileSize(), it.span)
		}
		return nil, nil, fmt.Errorf("%w: node %s covers %d bytes, its parent says %d", ErrBadBlob, it.c, fsn.FileSize(), it.span)
	}
	links := nd.Links()
	switch {
	case len(links) != fsn.NumChildren():
		return nil, nil, fmt.Errorf("%w: node %s has %d links and %d block sizes", ErrBadBlob, it.c, len(links), fsn.NumChildren())
	case len(links) > MaxLinks:
		return nil, nil, fmt.Errorf("%w: node %s has %d links, more than %d", ErrBadBlob, it.c, len(links), MaxLinks)
	case len(links) > 0 && it.depth >= MaxDepth:
		return nil, nil, fmt.Errorf("%w: node %s is deeper than %d", ErrBadBlob, it.c, MaxDepth)
	}
	inline = fsn.Data()
	sum := uint64(len(inline))
	for i, l := range links {
		bs := fsn.BlockSize(i)
		if bs == 0 || bs > it.span || (l.Cid.Type() == cid.Raw && bs > ChunkSize) {
			return nil, nil, fmt.Errorf("%w: node %s: child %d claims %d bytes", ErrBadBlob, it.c, i, bs)
		}
		sum += bs
		if sum > it.span {
			break
		}
	}
	if sum != it.span {
		return nil, nil, fmt.Errorf("%w: node %s: children add up to %d bytes, not %d", ErrBadBlob, it.c, sum, it.span)
	}
	kids = make([]item, len(links))
	for i, l := range links {
		kids[i] = item{c: l.Cid, span: fsn.BlockSize(i), depth: it.depth + 1}
	}
	return inline, kids, nil
}

func (w *walk) covered(n uint64) {
	if n == 0 {
		return
	}
	w.done += n
	if w.progress != nil {
		w.progress(w.done)
	}
}

// emptyBlob stores the empty raw block if root names it; any other raw
// root declared empty is a size mismatch, found with no request.
func emptyBlob(ctx context.Context, st *Store, root cid.Cid) ([]cid.Cid, error) {
	c, err := root.Prefix().Sum(nil)
	if err != nil || !c.Equals(root) {
		return nil, fmt.Errorf("%w: %s is not the empty block, declared 0 bytes", ErrSizeMismatch, root)
	}
	b, err := blocks.NewBlockWithCid(nil, root)
	if err != nil {
		return nil, fmt.Errorf("blobs: empty block: %w", err)
	}
	if err := st.PutBlock(ctx, root, b); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrStore, err)
	}
	return []cid.Cid{root}, nil
}
