package gossip

import (
	"sync"
	"time"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
)

// meshTracer follows gossipsub's grafts and prunes on one topic, so the node
// can tell which peers it forwards to (its mesh) and tests can wait for the
// mesh to form instead of sleeping. It implements pubsub.RawTracer; all
// other events are ignored.
type meshTracer struct {
	topic string
	// dropped, if set, is told of each message gossipsub drops, with the
	// reason (pubsub.Reject*).
	dropped func(*pubsub.Message, string)

	mu struct {
		sync.Mutex
		mesh map[peer.ID]struct{}
		// changed is closed and replaced on every graft or prune.
		changed chan struct{}
	}
}

func newMeshTracer(topic string) *meshTracer {
	t := &meshTracer{topic: topic}
	t.mu.mesh = make(map[peer.ID]struct{})
	t.mu.changed = make(chan struct{})
	return t
}

// Mesh returns the peers in the topic's mesh and a channel closed at the
// next change of it.
func (t *meshTracer) Mesh() ([]peer.ID, <-chan struct{}) {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]peer.ID, 0, len(t.mu.mesh))
	for p := range t.mu.mesh {
		out = append(out, p)
	}
	return out, t.mu.changed
}

func (t *meshTracer) update(p peer.ID, topic string, in bool) {
	if topic != t.topic {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if in {
		t.mu.mesh[p] = struct{}{}
	} else {
		delete(t.mu.mesh, p)
	}
	close(t.mu.changed)
	t.mu.changed = make(chan struct{})
}

func (t *meshTracer) Graft(p peer.ID, topic string) { t.update(p, topic, true) }
func (t *meshTracer) Prune(p peer.ID, topic string) { t.update(p, topic, false) }
func (t *meshTracer) RemovePeer(p peer.ID)          { t.update(p, t.topic, false) }
func (t *meshTracer) Leave(topic string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if topic == t.topic {
		clear(t.mu.mesh)
	}
}

func (*meshTracer) AddPeer(peer.ID, protocol.ID)    {}
func (*meshTracer) Join(string)                     {}
func (*meshTracer) ValidateMessage(*pubsub.Message) {}
func (*meshTracer) DeliverMessage(*pubsub.Message)  {}
func (t *meshTracer) RejectMessage(m *pubsub.Message, reason string) {
	if t.dropped != nil {
		t.dropped(m, reason)
	}
}
func (*meshTracer) DuplicateMessage(*pubsub.Message)                     {}
func (*meshTracer) ThrottlePeer(peer.ID)                                 {}
func (*meshTracer) RecvRPC(*pubsub.RPC)                                  {}
func (*meshTracer) SendRPC(*pubsub.RPC, peer.ID)                         {}
func (*meshTracer) SendRPCCompleted(*pubsub.RPC, peer.ID, time.Duration) {}
func (*meshTracer) DropRPC(*pubsub.RPC, peer.ID)                         {}
func (*meshTracer) UndeliverableMessage(*pubsub.Message)                 {}
func (*meshTracer) OnNewOutboundStream(peer.ID, protocol.ID)             {}
func (*meshTracer) OnClosedOutboundStream(peer.ID)                       {}
