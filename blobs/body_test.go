package blobs

import (
	"bytes"
	"sync/atomic"
	"testing"
	"time"

	bsmsg "github.com/ipfs/boxo/bitswap/message"
	pb "github.com/ipfs/boxo/bitswap/message/pb"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
)

// wantMessage is a bitswap message of k wants, as it goes on the wire
// (varint length prefix and body).
func wantMessage(t *testing.T, k int, seed byte) []byte {
	t.Helper()
	m := bsmsg.New(false)
	for _, c := range rawCIDs(t, k, seed) {
		m.AddEntry(c, 1, pb.Message_Wantlist_Block, true)
	}
	var buf bytes.Buffer
	if err := m.ToNetV1(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// openBitswap opens a bitswap stream from a fresh host to n.
func openBitswap(t *testing.T, n *peerNode) network.Stream {
	t.Helper()
	h := newHost(t)
	ctx := testCtx(t)
	if err := h.Connect(ctx, peer.AddrInfo{ID: n.h.ID(), Addrs: n.h.Addrs()}); err != nil {
		t.Fatal(err)
	}
	s, err := h.NewStream(ctx, n.h.ID(), Protocols[0])
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// alive reports whether s is still open at the other end after wait: a
// read times out here rather than failing with a reset.
func alive(s network.Stream, wait time.Duration) bool {
	_ = s.SetReadDeadline(time.Now().Add(wait))
	_, err := s.Read(make([]byte, 1))
	return isTimeout(err)
}

// TestSlowBodyIsRead: a message whose body takes longer than
// FirstMessageTimeout, but arrives within BodyTimeout of its prefix, is
// read; the stream stays open.
func TestSlowBodyIsRead(t *testing.T) {
	var held atomic.Int32
	n := newPeerNode(t, StoreOptions{}, ExchangeOptions{Node: &testNode{held: func(peer.ID) { held.Add(1) }}})
	s := openBitswap(t, n)
	msg := wantMessage(t, 4000, 1) // about 180 KB: a body deadline near 5 s
	if d := BodyTimeout(len(msg)); d < FirstMessageTimeout+2*time.Second {
		t.Fatalf("a message of %d bytes has a body deadline of %v: too short for this test", len(msg), d)
	}
	if _, err := s.Write(msg[:len(msg)/2]); err != nil {
		t.Fatal(err)
	}
	// A slow link: the deadline is the stream's, on the real clock.
	time.Sleep(FirstMessageTimeout + time.Second)
	if _, err := s.Write(msg[len(msg)/2:]); err != nil {
		t.Fatalf("the rest of a slow body: %v", err)
	}
	if !alive(s, time.Second) {
		t.Fatal("the stream of a slow body was reset")
	}
	if held.Load() != 0 {
		t.Fatal("a slow body counted as a held stream")
	}
}

// TestStalledBodyIsReset: a body that stops short is reset at BodyTimeout
// and counted as a held stream.
func TestStalledBodyIsReset(t *testing.T) {
	var held atomic.Int32
	n := newPeerNode(t, StoreOptions{}, ExchangeOptions{Node: &testNode{held: func(peer.ID) { held.Add(1) }}})
	s := openBitswap(t, n)
	msg := wantMessage(t, 1, 2)
	if _, err := s.Write(msg[:len(msg)-1]); err != nil {
		t.Fatal(err)
	}
	if alive(s, BodyTimeout(len(msg))+3*time.Second) {
		t.Fatal("a stalled body's stream is still open past BodyTimeout")
	}
	if held.Load() != 1 {
		t.Fatalf("held %d, want 1", held.Load())
	}
}

func TestBodyTimeout(t *testing.T) {
	if got := BodyTimeout(0); got != FirstMessageTimeout {
		t.Errorf("BodyTimeout(0) = %v", got)
	}
	if got, want := BodyTimeout(MaxMessageBytes), FirstMessageTimeout+time.Duration(MaxMessageBytes)*time.Second/MinBodyRate; got != want || got < 18*time.Second {
		t.Errorf("BodyTimeout(MaxMessageBytes) = %v, want %v", got, want)
	}
}

// TestPriorityWhileFetching: the memory of a peer's messages is reserved
// at Node.Priority, and always while this node fetches from the
// peer (the blocks are what it asked for).
func TestPriorityWhileFetching(t *testing.T) {
	n := newPeerNode(t, StoreOptions{}, ExchangeOptions{Node: &testNode{priority: func(peer.ID) uint8 { return 7 }}})
	x := n.x
	if got := x.priority("p"); got != 7 {
		t.Fatalf("priority without a fetch: %d, want the option's 7", got)
	}
	x.mu.Lock()
	x.mu.byPeer["p"] = map[*attempt]struct{}{{}: {}}
	x.mu.Unlock()
	if got := x.priority("p"); got != network.ReservationPriorityAlways {
		t.Fatalf("priority while fetching from the peer: %d, want always", got)
	}
	if got := x.priority("q"); got != 7 {
		t.Fatalf("another peer's priority: %d", got)
	}
}
