package blobs

import (
	"context"
	"slices"

	bsmsg "github.com/ipfs/boxo/bitswap/message"
	pb "github.com/ipfs/boxo/bitswap/message/pb"
	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"
)

// Answer is a peer's answer to Holders: whether it holds the block.
type Answer struct {
	Peer  peer.ID
	Holds bool
}

// holderAsk is one Holders call: where it sends the answers, and how many
// of the peers it asked have not answered yet.
type holderAsk struct {
	out chan Answer // buffered: a place for each peer asked
	// keys are the (peer, block) it waits on; left of them are
	// unanswered, and done is closed when none is. Under Exchange.mu.
	keys []wantKey
	left int
	done chan struct{}
}

// Holders asks each of peers that is connected (it dials none) whether it
// holds the block c, as bitswap asks (a WANT_HAVE, with a DONT_HAVE asked
// for), and sends on the channel it returns each peer that answers that
// it does, as the answers come: one round trip for a connected holder.
// Each answer is sent, HAVE or DONT_HAVE; a peer that could not be asked
// (its stream failed: a relayed connection, say) answers nothing. The
// channel is closed once every peer asked has answered, or ctx ends: a
// peer may never answer, so the caller bounds ctx (AskTimeout).
// A peer's server answers HAVE only for a block a complete blob holds
// there, to a peer it serves; asking is not fetching (ADR 0014 bounds the
// providers tried, not the peers asked), and a want-have is no miss at
// the peer asked (Exchange.unheld).
func (x *Exchange) Holders(ctx context.Context, c cid.Cid, peers []peer.ID) <-chan Answer {
	a := &holderAsk{done: make(chan struct{})}
	var asked []peer.ID
	for _, p := range peers {
		if !slices.Contains(asked, p) && x.net.IsConnectedToPeer(ctx, p) {
			asked = append(asked, p)
		}
	}
	a.out = make(chan Answer, len(asked))
	if len(asked) == 0 {
		close(a.out)
		return a.out
	}
	x.asking.Add(1)
	x.mu.Lock()
	for _, p := range asked {
		k := wantKey{p, c.KeyString()}
		x.mu.asks[k] = append(x.mu.asks[k], a)
		a.keys = append(a.keys, k)
	}
	a.left = len(asked)
	x.mu.Unlock()
	for _, p := range asked {
		go func() {
			msg := bsmsg.New(false)
			msg.AddEntry(c, 1, pb.Message_Wantlist_Have, true)
			if err := x.net.SendMessage(ctx, p, msg); err != nil {
				x.answer(p, c, nil) // no answer will come
			}
		}()
	}
	go func() {
		select {
		case <-a.done:
		case <-ctx.Done():
		}
		x.mu.Lock()
		for _, k := range a.keys {
			x.mu.asks[k] = slices.DeleteFunc(x.mu.asks[k], func(o *holderAsk) bool { return o == a })
			if len(x.mu.asks[k]) == 0 {
				delete(x.mu.asks, k)
			}
		}
		x.mu.Unlock()
		x.asking.Add(-1)
		close(a.out) // after the receiver can no longer find a
	}()
	return a.out
}

// answered hands p's answer about block c to the Holders calls waiting for
// it, and reports whether one was.
func (x *Exchange) answered(p peer.ID, c cid.Cid, holds bool) bool {
	return x.answer(p, c, &Answer{Peer: p, Holds: holds})
}

// answer counts p as answered about c in the Holders calls waiting for it,
// sending them a unless it is nil, and reports whether one was waiting.
func (x *Exchange) answer(p peer.ID, c cid.Cid, a *Answer) bool {
	if x.asking.Load() == 0 {
		return false // the receiver's path of every block: no lock, no key
	}
	k := wantKey{p, c.KeyString()}
	x.mu.Lock()
	defer x.mu.Unlock()
	asks := x.mu.asks[k]
	delete(x.mu.asks, k)
	for _, h := range asks {
		if a != nil {
			h.out <- *a // never blocks: a place for each peer asked
		}
		if h.left--; h.left == 0 {
			close(h.done)
		}
	}
	return len(asks) > 0
}
