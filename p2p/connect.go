package p2p

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/p2p/discovery/mdns"
)

// Connect dials the peer an operator names, at any of ai.Addrs (ranked
// by the dial ranker: TCP first), or, with none, at the addresses the
// peerstore holds for it and else at those find (peer routing, the DHT;
// nil when off) gives, clearing the backoff of earlier failed dials. A peer
// already connected is dialled again at the addresses given when none of
// its connections is to one of them, so that a wrong address is an error
// rather than "connected"; when it answers there, its connections
// elsewhere are closed (they are from before it moved or restarted).
// Addresses that fail, and the peerstore did not hold, are dropped from
// the peerstore. A failure the operator can act on (a wrong peer ID at
// the address, nothing listening there, a peer ID no peer of the DHT
// knew) is a *ConnectError, which says so in one sentence.
func (d *Dialer) Connect(ctx context.Context, ai peer.AddrInfo, find func(context.Context, peer.ID) (peer.AddrInfo, error)) error {
	d.ClearBackoff(ai.ID)
	known := d.host.Peerstore().Addrs(ai.ID)
	forget := func() {
		for _, a := range ai.Addrs {
			if !slices.ContainsFunc(known, a.Equal) {
				d.host.Peerstore().SetAddr(ai.ID, a, 0) // forget what the operator mistyped
			}
		}
	}
	if d.host.Network().Connectedness(ai.ID) == network.Connected && len(ai.Addrs) > 0 && !d.ConnectedAt(ai) {
		// Connected elsewhere: libp2p would answer at once, whatever the
		// addresses; try them.
		if err := d.Probe(ctx, ai); err != nil {
			forget()
			return explainDial(ai, err)
		}
		// A QUIC connection to a process that is gone answers nothing
		// until its idle timeout, and libp2p opens streams on the
		// connection with the most of them, so they are closed and the
		// peer dialled afresh.
		d.CloseConnsNotAt(ai)
	}
	if len(ai.Addrs) > 0 {
		if err := d.Dial(ctx, ai); err != nil {
			forget()
			return explainDial(ai, err)
		}
		return nil
	}
	var err error
	if len(known) > 0 {
		if err = d.Dial(ctx, ai); err == nil {
			return nil
		}
	}
	if find == nil {
		if err != nil {
			return explainDial(ai, err)
		}
		return errors.New("no address known for it, and p2p.dht is off: pass a full multiaddr")
	}
	found, ferr := find(ctx, ai.ID)
	if ferr != nil {
		return explainFind(ai.ID, err, ferr)
	}
	// The lookup's own dial of the peer may have failed (crossed:
	// AgainAfterHandshake) and left the swarm's backoff on the addresses
	// it found: dial them anyway.
	d.ClearBackoff(ai.ID)
	return explainDial(found, d.Dial(ctx, found))
}

// StartMDNS starts mDNS discovery on the Dialer's host among the nodes of
// network (a service name of their own, so that nodes of different
// networks on one LAN do not dial each other), dialling within 30 s, as a
// dial this node chose (Dial), in a goroutine of spawn's, each peer found
// while ctx lasts; a failed dial is logged at debug level.
func (d *Dialer) StartMDNS(ctx context.Context, network string, spawn func(func())) (mdns.Service, error) {
	s := mdns.NewMdnsService(d.host, "_wats-"+network+"._udp", mdnsNotifee{ctx, d, spawn})
	if err := s.Start(); err != nil {
		return nil, fmt.Errorf("p2p: start mDNS: %w", err)
	}
	return s, nil
}

type mdnsNotifee struct {
	ctx   context.Context
	d     *Dialer
	spawn func(func())
}

func (m mdnsNotifee) HandlePeerFound(ai peer.AddrInfo) {
	if ai.ID == m.d.host.ID() || m.ctx.Err() != nil {
		return
	}
	m.spawn(func() {
		ctx, cancel := context.WithTimeout(m.ctx, 30*time.Second)
		defer cancel()
		if err := m.d.Dial(ctx, ai); err != nil {
			m.d.log.Debug("mDNS peer unreachable", "peer", ai.ID, "err", err)
		}
	})
}

// ParsePeer reads a peer an operator names: a peer ID (12D3KooW…), or a
// full multiaddr ending in /p2p/<peer id>, whose addresses it returns.
func ParsePeer(s string) (peer.AddrInfo, error) {
	if !strings.HasPrefix(s, "/") {
		id, err := peer.Decode(s)
		if err != nil {
			return peer.AddrInfo{}, fmt.Errorf("%q is neither a peer ID (12D3KooW…) nor a full multiaddr (/ip4/…/tcp/…/p2p/12D3KooW…): %w", s, err)
		}
		return peer.AddrInfo{ID: id}, nil
	}
	ai, err := peer.AddrInfoFromString(s)
	if err != nil {
		return peer.AddrInfo{}, fmt.Errorf("%q is not a full multiaddr with /p2p/<peer id>: %w", s, err)
	}
	return *ai, nil
}

// FullAddrs returns h's listen multiaddrs with /p2p/<id> appended.
func FullAddrs(h host.Host) []string {
	addrs := h.Addrs()
	out := make([]string, 0, len(addrs))
	suffix := "/p2p/" + h.ID().String()
	for _, a := range addrs {
		out = append(out, a.String()+suffix)
	}
	return out
}
