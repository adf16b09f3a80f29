package blobs

import (
	"bufio"
	"bytes"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"
	mh "github.com/multiformats/go-multihash"
)

// TestTurnsOnePerPeer: a peer has one turn at a time; another peer's is
// its own; a turn that does not come within the wait is refused, and one
// given back goes to the next stream of its peer, a wait ends when its
// stop is closed (the exchange closing); the table forgets a
// peer once no stream holds or waits for its turn.
func TestTurnsOnePerPeer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var ts turns
		a, b := peer.ID("a"), peer.ID("b")
		doneA, ok := ts.take(a, time.Second, nil)
		if !ok {
			t.Fatal("a's first turn refused")
		}
		doneB, ok := ts.take(b, time.Second, nil)
		if !ok {
			t.Fatal("b's turn refused while a holds its own")
		}
		doneB()
		start := time.Now()
		if _, ok := ts.take(a, time.Second, nil); ok {
			t.Fatal("a second turn of a while its first is held")
		}
		if waited := time.Since(start); waited != time.Second {
			t.Fatalf("refused after %v; want the wait, 1s", waited)
		}
		got := make(chan bool)
		go func() {
			done, ok := ts.take(a, time.Second, nil)
			if ok {
				done()
			}
			got <- ok
		}()
		time.Sleep(500 * time.Millisecond)
		doneA()
		doneA() // a second call gives back nothing more
		if !<-got {
			t.Fatal("a's turn, given back, did not go to its waiting stream")
		}
		doneA, _ = ts.take(a, time.Second, nil)
		stop := make(chan struct{})
		go func() {
			_, ok := ts.take(a, time.Minute, stop)
			got <- ok
		}()
		synctest.Wait()
		close(stop)
		if <-got {
			t.Fatal("a turn taken after its stop was closed")
		}
		doneA()
		if n := ts.waiting(); n != 0 {
			t.Fatalf("%d peers left in the table; want 0", n)
		}
	})
}

// inFlightNode counts, per peer, the answers of the block transfer being
// written: sendBlock asks Priority once it has the peer's turn and tells
// Sent once it has written a block; it keeps the most at once.
type inFlightNode struct {
	BaseNode
	mu       sync.Mutex
	now, top map[peer.ID]int
}

func (n *inFlightNode) Priority(p peer.ID) uint8 {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.now[p]++
	n.top[p] = max(n.top[p], n.now[p])
	return n.BaseNode.Priority(p)
}

func (n *inFlightNode) Observe(e Event) {
	if e.Kind == Sent {
		n.mu.Lock()
		n.now[e.Peer]--
		n.mu.Unlock()
	}
}

// TestBlocksOneAnswerAtATimePerPeer: a peer that asks on four streams of
// the block transfer at once, and reads none of its answers, is written
// one answer at a time (the others wait for its turn), so that it holds
// the memory of one chunk and the share of one stream of the node's
// sending; another peer is served everything meanwhile.
func TestBlocksOneAnswerAtATimePerPeer(t *testing.T) {
	ctx := testCtx(t)
	node := &inFlightNode{now: map[peer.ID]int{}, top: map[peer.ID]int{}}
	n := newPeerNode(t, StoreOptions{}, ExchangeOptions{Node: node})
	const k, size = MaxRequestCIDs, 16 << 10
	var cs []cid.Cid
	for i := range k {
		c, _, err := n.st.Import(ctx, bytes.NewReader(randBytes(size, uint64(100+i))))
		if err != nil {
			t.Fatal(err)
		}
		cs = append(cs, c)
	}
	greedy := newHost(t)
	for range 4 {
		s := blocksStream(t, greedy, n)
		if _, err := s.Write(appendRequest(nil, cs)); err != nil {
			t.Fatal(err)
		}
	}
	honest := newHost(t)
	s := blocksStream(t, honest, n)
	if _, err := s.Write(appendRequest(nil, cs)); err != nil {
		t.Fatal(err)
	}
	got, err := answers(bufio.NewReader(s), k)
	if err != nil {
		t.Fatalf("the honest peer got %d answers: %v", len(got), err)
	}
	for i, g := range got {
		if g != size {
			t.Fatalf("answer %d: %d bytes; want %d", i, g, size)
		}
	}
	node.mu.Lock()
	top := node.top[greedy.ID()]
	node.mu.Unlock()
	if top != 1 {
		t.Fatalf("the peer with four streams was written %d answers at once; want 1", top)
	}
}

// heldNode counts the Held events of each peer.
type heldNode struct {
	BaseNode
	held chan peer.ID
}

func (n *heldNode) Observe(e Event) {
	if e.Kind == Held {
		select {
		case n.held <- e.Peer:
		default:
		}
	}
}

// TestBlocksUnreadAnswerIsHeld: a peer that leaves an answer unread past
// its write deadline has its stream reset and a Held event counted, as a
// stream held (ADR 0030 §6).
func TestBlocksUnreadAnswerIsHeld(t *testing.T) {
	ctx := testCtx(t)
	old := answerTimeout
	answerTimeout = func(int) time.Duration { return 200 * time.Millisecond }
	t.Cleanup(func() { answerTimeout = old })
	node := &heldNode{held: make(chan peer.ID, 1)}
	n := newPeerNode(t, StoreOptions{}, ExchangeOptions{Node: node})
	c, _, err := n.st.Import(ctx, bytes.NewReader(randBytes(ChunkSize, 7)))
	if err != nil {
		t.Fatal(err)
	}
	greedy := newHost(t)
	s := blocksStream(t, greedy, n)
	if _, err := s.Write(appendRequest(nil, []cid.Cid{c})); err != nil {
		t.Fatal(err)
	}
	select {
	case p := <-node.held:
		if p != greedy.ID() {
			t.Fatalf("Held for %s; want the peer that does not read, %s", p, greedy.ID())
		}
	case <-ctx.Done():
		t.Fatal("no Held event for an answer left unread past its deadline")
	}
	if _, err := answers(bufio.NewReader(s), 1); err == nil {
		t.Fatal("the held stream's answer was read whole; want it reset")
	}
}

// blockingNode blocks the first Unheld event it is told (an answer of the
// block transfer reading the store) until release is closed, and records
// whether that event has returned.
type blockingNode struct {
	BaseNode
	entered, release chan struct{}
	once             sync.Once
	returned         atomic.Bool
	unheld           atomic.Int64
}

func (n *blockingNode) Observe(e Event) {
	if e.Kind != Unheld {
		return
	}
	n.unheld.Add(1)
	n.once.Do(func() {
		close(n.entered)
		<-n.release
		n.returned.Store(true)
	})
}

// TestBlocksCloseWaitsForReads: Close returns only once no answer of the
// block transfer reads the store, which its caller closes next; an answer
// asked for after Close does not read the store.
func TestBlocksCloseWaitsForReads(t *testing.T) {
	ctx := testCtx(t)
	node := &blockingNode{entered: make(chan struct{}), release: make(chan struct{})}
	n := newPeerNode(t, StoreOptions{}, ExchangeOptions{Node: node})
	h, err := mh.Sum([]byte("not held"), mh.SHA2_256, -1)
	if err != nil {
		t.Fatal(err)
	}
	c := cid.NewCidV1(cid.Raw, h)
	fetcher := newHost(t)
	s := blocksStream(t, fetcher, n)
	if _, err := s.Write(appendRequest(nil, []cid.Cid{c})); err != nil {
		t.Fatal(err)
	}
	select {
	case <-node.entered:
	case <-ctx.Done():
		t.Fatal("the answer did not read the store")
	}
	closed := make(chan bool)
	go func() {
		n.x.Close()
		closed <- node.returned.Load()
	}()
	close(node.release)
	if !<-closed {
		t.Fatal("Close returned while an answer was reading the store")
	}
	if _, err := s.Write(appendRequest(nil, []cid.Cid{c})); err == nil {
		_, _ = answers(bufio.NewReader(s), 2)
	}
	if got := node.unheld.Load(); got != 1 {
		t.Fatalf("the store was read for %d answers; want 1, none after Close", got)
	}
}
