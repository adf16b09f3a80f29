package blobs

import (
	"bytes"
	"context"
	"errors"
	"io"
	"maps"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
)

// TestHolders: of the connected peers asked, the one that holds the blob
// answers that it does, the others that they do not, and the channel
// closes once all answered; a peer not connected is not asked (nor
// dialled); a want-have of a block not held is no miss at the peer
// asked, a want-block is.
func TestHolders(t *testing.T) {
	var unheld atomic.Int32
	xo := ExchangeOptions{Node: &testNode{unheld: func(peer.ID) { unheld.Add(1) }}}
	holder := newPeerNode(t, StoreOptions{}, xo)
	other := newPeerNode(t, StoreOptions{}, xo)
	far := newPeerNode(t, StoreOptions{}, xo)
	asker := newPeerNode(t, StoreOptions{}, xo)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, size, err := holder.st.Import(ctx, bytes.NewReader(randBytes(3*ChunkSize, 7)))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []*peerNode{holder, other} {
		if err := asker.h.Connect(ctx, n.info()); err != nil {
			t.Fatal(err)
		}
	}
	asker.h.Peerstore().AddAddrs(far.h.ID(), far.h.Addrs(), time.Hour)
	got := map[peer.ID]bool{}
	for a := range asker.x.Holders(ctx, c, []peer.ID{other.h.ID(), far.h.ID(), holder.h.ID(), holder.h.ID()}) {
		if _, twice := got[a.Peer]; twice {
			t.Errorf("%s answered twice", a.Peer)
		}
		got[a.Peer] = a.Holds
	}
	if want := map[peer.ID]bool{holder.h.ID(): true, other.h.ID(): false}; !maps.Equal(got, want) {
		t.Fatalf("answers %v, want %v", got, want)
	}
	if ctx.Err() != nil {
		t.Fatal("the channel closed only when the context ended: not every peer's answer counted")
	}
	if len(asker.h.Network().ConnsToPeer(far.h.ID())) != 0 {
		t.Error("a peer not connected was dialled")
	}
	if n := unheld.Load(); n != 0 {
		t.Errorf("%d misses for a want-have of a block not held, want 0", n)
	}
	// The same want as a want-block: a miss at the peer that lacks it.
	if _, err := asker.f.Stream(ctx, Request{CID: c, Size: size, Sources: Sources{Named: []peer.AddrInfo{other.info()}}}, &recorder{}); err == nil {
		t.Fatal("fetched from a peer without the blob")
	}
	if n := unheld.Load(); n != 1 {
		t.Errorf("%d misses for a want-block of a block not held, want 1", n)
	}

	// None asked: closed at once; a context that ends closes it.
	for range asker.x.Holders(ctx, c, nil) {
		t.Fatal("a holder among no peers")
	}
	silent := newPeerNode(t, StoreOptions{}, xo)
	if err := asker.h.Connect(ctx, silent.info()); err != nil {
		t.Fatal(err)
	}
	silent.x.Close() // connected, but answers no bitswap message
	sctx, scancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer scancel()
	for range asker.x.Holders(sctx, cid.Cid(c), []peer.ID{silent.h.ID()}) {
		t.Fatal("a silent peer held the blob")
	}
	if ctx.Err() != nil {
		t.Fatal("the ask of a silent peer did not end with its context")
	}
}

// TestFetchAsksConnectedPeersFirst: a fetch with no provider named asks
// its connected peers whether they hold the blob at the same time as
// content routing, and fetches from a holder that answers, while the
// search of content routing goes on (here it never ends by itself).
func TestFetchAsksConnectedPeersFirst(t *testing.T) {
	holder := newPeerNode(t, StoreOptions{}, ExchangeOptions{})
	other := newPeerNode(t, StoreOptions{}, ExchangeOptions{})
	b := newPeerNode(t, StoreOptions{}, ExchangeOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, size, err := holder.st.Import(ctx, bytes.NewReader(randBytes(5*ChunkSize+3, 9)))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []*peerNode{other, holder} {
		if err := b.h.Connect(ctx, n.info()); err != nil {
			t.Fatal(err)
		}
	}
	searching := make(chan struct{})
	b.f = NewFetcher(b.x, b.st, &FetcherOptions{
		FindProviders: func(ctx context.Context, c cid.Cid) []peer.AddrInfo {
			close(searching)
			<-ctx.Done() // a DHT that finds nothing, slowly
			return nil
		},
		Connected: func() []peer.ID { return []peer.ID{other.h.ID(), holder.h.ID()} },
	})
	var waits []Waiting
	start := time.Now()
	err = b.f.Fetch(ctx, Request{CID: c, Size: size, Wait: func(w Waiting) { waits = append(waits, w) }})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-searching:
	default:
		t.Error("content routing was not asked")
	}
	if d := time.Since(start); d > RouteWithGuesses {
		t.Errorf("the fetch took %v: it waited for content routing", d)
	}
	want := []Waiting{{Finding: true}, {Provider: holder.h.ID()}}
	if !slices.Equal(waits, want) {
		t.Errorf("waits %v, want %v", waits, want)
	}
	if ok, _ := b.st.Has(c); !ok {
		t.Fatal("fetched but not held")
	}
}

// TestFetchNotHeldByASilentPeer: a connected peer that takes the question
// whether it holds the blob and never answers does not hold the fetch:
// the search ends after AskTimeout, and the fetch with it.
func TestFetchNotHeldByASilentPeer(t *testing.T) {
	old := AskTimeout
	AskTimeout = 300 * time.Millisecond
	t.Cleanup(func() { AskTimeout = old })
	mute := newHost(t)
	for _, id := range Protocols {
		mute.SetStreamHandler(id, func(s network.Stream) { _, _ = io.Copy(io.Discard, s) })
	}
	b := newPeerNode(t, StoreOptions{}, ExchangeOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := b.h.Connect(ctx, peer.AddrInfo{ID: mute.ID(), Addrs: mute.Addrs()}); err != nil {
		t.Fatal(err)
	}
	b.f = NewFetcher(b.x, b.st, &FetcherOptions{Connected: func() []peer.ID { return []peer.ID{mute.ID()} }})
	c, err := cid.Decode("bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy")
	if err != nil {
		t.Fatal(err)
	}
	// The fetch's own context never ends: only AskTimeout can end it.
	done := make(chan error, 1)
	go func() { done <- b.f.Fetch(context.Background(), Request{CID: c, Size: 10}) }()
	select {
	case err := <-done:
		if !errors.Is(err, ErrNoProvider) {
			t.Fatalf("fetch asking a silent peer: %v, want ErrNoProvider", err)
		}
	case <-ctx.Done():
		t.Fatal("the fetch is held by a peer that never answers")
	}
}

// TestInFlight: a fetch waiting on its provider is listed with the
// provider, its size and nothing held, and is gone once it ends.
func TestInFlight(t *testing.T) {
	mute := newHost(t)
	for _, id := range Protocols {
		mute.SetStreamHandler(id, func(s network.Stream) { _, _ = io.Copy(io.Discard, s) })
	}
	b := newPeerNode(t, StoreOptions{}, ExchangeOptions{})
	c, err := cid.Decode("bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy")
	if err != nil {
		t.Fatal(err)
	}
	if got := b.f.InFlight(); len(got) != 0 {
		t.Fatalf("before any fetch: %v in flight", got)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- b.f.Fetch(ctx, Request{CID: c, Size: 10, Sources: Sources{Named: []peer.AddrInfo{{ID: mute.ID(), Addrs: mute.Addrs()}}}})
	}()
	deadline := time.Now().Add(20 * time.Second)
	for {
		got := b.f.InFlight()
		if len(got) == 1 && got[0].Provider == mute.ID() {
			if got[0].CID != c || got[0].Size != 10 || got[0].Held != 0 || got[0].Finding || got[0].Started.IsZero() {
				t.Fatalf("in flight: %+v", got[0])
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the fetch's attempt is not listed: %+v", got)
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	<-done
	if got := b.f.InFlight(); len(got) != 0 {
		t.Fatalf("after the fetch ended: %v in flight", got)
	}
}
