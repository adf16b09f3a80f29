package blobs

import (
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
)

// turns gives each peer one turn at a time to be sent a block of the
// block transfer (Exchange.sendBlock, docs/adr/0056): a peer that opens
// many streams gets the share of the node's sending that one stream gets,
// and holds the memory of one block, not one a stream. The zero value is
// ready; it is safe for concurrent use.
type turns struct {
	mu    sync.Mutex
	peers map[peer.ID]*turn
}

// turn is one peer's: a semaphore of one, and how many streams hold or
// wait for it (the entry goes when none does).
type turn struct {
	sem  chan struct{}
	refs int
}

// take waits up to wait for p's turn; ok is false if it did not come
// (another stream of p held it all that time) or stop was closed first.
// done gives it back, once.
func (t *turns) take(p peer.ID, wait time.Duration, stop <-chan struct{}) (done func(), ok bool) {
	t.mu.Lock()
	if t.peers == nil {
		t.peers = make(map[peer.ID]*turn)
	}
	tu := t.peers[p]
	if tu == nil {
		tu = &turn{sem: make(chan struct{}, 1)}
		t.peers[p] = tu
	}
	tu.refs++
	t.mu.Unlock()
	leave := func() {
		t.mu.Lock()
		if tu.refs--; tu.refs == 0 {
			delete(t.peers, p)
		}
		t.mu.Unlock()
	}
	select {
	case tu.sem <- struct{}{}:
	default:
		timer := time.NewTimer(wait)
		defer timer.Stop()
		select {
		case tu.sem <- struct{}{}:
		case <-timer.C:
			leave()
			return nil, false
		case <-stop:
			leave()
			return nil, false
		}
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			<-tu.sem
			leave()
		})
	}, true
}

// waiting returns how many peers hold or wait for a turn (for tests).
func (t *turns) waiting() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.peers)
}
