package node

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/wats-network/wats/api"
	"github.com/wats-network/wats/eventlog"
	"github.com/wats-network/wats/proto"
	"github.com/wats-network/wats/store"
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
	if err := n.gossip.Publish(ctx, ev, providers); err != nil {
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

// serveCrashReport stores a crash event a peer submits (crash_report): it
// must verify and be of kind "crash" with a valid crash body; it is then
// stored and gossiped, with the submitter named as the provider of its
// dump.
func (n *Node) serveCrashReport(ctx context.Context, p peer.ID, r *proto.CrashReportRequest) proto.Message {
	ev, err := eventlog.DecodeCrash(r.Event, n.now())
	if err != nil {
		n.m.EventsDropped("crash_report", 1)
		return &proto.Error{Code: proto.CodeBadRequest, Message: proto.TruncateText("crash_report: " + err.Error())}
	}
	if err := n.storeAndGossip(ctx, ev, "crash_report", []proto.Provider{proto.ProviderOf(p, n.host.Peerstore().Addrs(p))}); err != nil {
		msg := "could not store the report"
		if errors.Is(err, ErrDiskFull) {
			msg += ": the node's disk is full; try again later"
		}
		return &proto.Error{Code: proto.CodeInternal, Message: msg}
	}
	// The dump is fetched within the bounds of every fetch, the submitter
	// first and holding one of its fetch slots (ADR 0029).
	if n.fetch != nil {
		n.fetch.FetchDumps(n.ctx, p, ev.Blobs, n.go_)
	}
	return &proto.CrashReportResponse{ID: ev.ID}
}

// ReportCrash signs a crash event with this node's key (the fingerprint is
// computed when empty) with the dump blob if given, and either stores and
// gossips it here, or, with to set, submits it to that peer by
// crash_report. It returns the event.
func (n *Node) ReportCrash(ctx context.Context, c eventlog.Crash, dump *eventlog.BlobRef, to peer.ID) (*eventlog.Event, error) {
	body, err := c.Body()
	if err != nil {
		return nil, err
	}
	var refs []eventlog.BlobRef
	if dump != nil {
		refs = []eventlog.BlobRef{*dump}
	}
	if to == "" {
		return n.AddEvent(ctx, eventlog.KindCrash, body, refs)
	}
	ev, err := n.sign(eventlog.KindCrash, body, refs)
	if err != nil {
		return nil, err
	}
	raw, err := ev.Marshal()
	if err != nil {
		return nil, err
	}
	resp, err := n.call(ctx, to, &proto.CrashReportRequest{Event: raw})
	if err != nil {
		return nil, fmt.Errorf("node: crash_report to %s: %w", to, err)
	}
	if resp.CrashReport == nil || resp.CrashReport.ID != ev.ID {
		return nil, errors.New("node: crash_report answered with another id")
	}
	return ev, nil
}

// CrashGroups groups the crash events of the log by fingerprint, most
// recent first (store.CrashGroups).
func (n *Node) CrashGroups() ([]api.CrashGroup, error) { return store.CrashGroups(n.events) }
