package node

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/wats-network/wats/eventlog"
	"github.com/wats-network/wats/proto"
)

// ErrInvalidEvent wraps the reason an event given to AddEvent was refused.
var ErrInvalidEvent = errors.New("node: invalid event")

// AddEvent signs an event of this kind and body (a JSON object) with the
// node's key, stores it durably and publishes it by gossip. The event is
// stored even if publishing fails: peers catch up by sync.
func (n *Node) AddEvent(ctx context.Context, kind string, body jsontext.Value, blobs []eventlog.BlobRef) (*eventlog.Event, error) {
	ev, err := n.sign(kind, body, blobs)
	if err != nil {
		return nil, err
	}
	if err := n.storeAndGossip(ctx, ev, "local", []proto.Provider{n.selfProvider()}); err != nil {
		return nil, fmt.Errorf("node: store event: %w", err)
	}
	return ev, nil
}

// sign makes an event of this node's, now; an invalid kind, body or blob
// list, or a blob not complete here of the size declared
// (blobs.Store.Holds), is an error wrapping ErrInvalidEvent.
func (n *Node) sign(kind string, body jsontext.Value, blobs []eventlog.BlobRef) (*eventlog.Event, error) {
	ev, err := eventlog.New(n.host.Peerstore().PrivKey(n.host.ID()), n.now(), kind, body, blobs)
	if err == nil {
		err = n.blobs.Holds(ev.Blobs)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidEvent, err)
	}
	return ev, nil
}

// storeAndGossip appends ev durably and, when it is new and gossip is on,
// publishes it with providers for its blobs (none if it has none). A failed
// publish is logged, not returned: peers catch up by sync.
func (n *Node) storeAndGossip(ctx context.Context, ev *eventlog.Event, source string, providers []proto.Provider) error {
	added, err := n.events.Append([]*eventlog.Event{ev})
	if err != nil {
		return err
	}
	n.m.EventsStored(source, len(added))
	if len(added) == 0 || n.gossip == nil {
		return nil
	}
	if len(ev.Blobs) == 0 {
		providers = nil
	}
	raw, err := ev.Marshal()
	if err != nil {
		return err
	}
	if err := n.gossip.Publish(ctx, raw, providers); err != nil {
		n.log.Warn("gossip publish failed; peers will catch up by sync", "event", ev.ID, "err", err)
	}
	return nil
}

// selfProvider names this node as a provider (docs/design.md §6), with
// at most proto.MaxProviderAddrs addresses.
func (n *Node) selfProvider() proto.Provider { return proto.ProviderOf(n.host.ID(), n.host.Addrs()) }

// has reports whether the log holds the event with this id.
func (n *Node) has(id string) bool {
	ok, err := n.events.Has(id)
	return err == nil && ok
}
