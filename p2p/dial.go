package p2p

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/p2p/net/swarm"
	ma "github.com/multiformats/go-multiaddr"
)

// Dialer is how a node dials the peers it chose: an operator's connect
// (by address, or by peer ID at the addresses the DHT gave), the redial of
// the peer cache, discovery (the DHT's rendezvous, mDNS), the bootstrap
// peers. Every such dial is tried once more when the security handshake
// failed (AgainAfterHandshake), and is recorded as chosen (Choices): the
// peers it reaches have standing (ADR 0041's addendum). The host's other
// dials (a DHT query's, a fetch's providers, autonat's, a relay's, a hole
// punch's) do not go through it, and give none.
type Dialer struct {
	host    host.Host
	choices Choices
	log     *slog.Logger
}

// Choices records the dials a node chose (peers.Table): the peers they
// reach have standing (ADR 0041's addendum).
type Choices interface {
	// Choose is told of a chosen dial of p before it starts; done after
	// it returns, with whether it connected.
	Choose(p peer.ID) (done func(connected bool))
	// ChooseAlways is told of a peer chosen for the run whoever dials (a
	// bootstrap peer).
	ChooseAlways(p peer.ID)
}

// NewDialer returns the Dialer of h, which records its dials in choices
// (nil: nowhere) and logs failed dials of DialEach and Bootstrap to log.
func NewDialer(h host.Host, choices Choices, log *slog.Logger) *Dialer {
	return &Dialer{host: h, choices: choices, log: log}
}

// Dial connects to ai as a dial this node chose (Choices.Choose), once
// more when the security handshake failed (AgainAfterHandshake): a node
// that restarts redials its known peers while they may be dialling it.
func (d *Dialer) Dial(ctx context.Context, ai peer.AddrInfo) error {
	done := func(bool) {}
	if d.choices != nil {
		done = d.choices.Choose(ai.ID)
	}
	err := AgainAfterHandshake(ctx, func(again bool) error {
		if again {
			d.ClearBackoff(ai.ID) // the failed dial's backoff
		}
		return d.host.Connect(ctx, ai)
	})
	done(err == nil)
	return err
}

// ClearBackoff clears the swarm's backoff of earlier failed dials of p:
// an operator's explicit dial is not held back by it, nor is a dial at
// addresses a lookup just found.
func (d *Dialer) ClearBackoff(p peer.ID) {
	if sw, ok := d.host.Network().(*swarm.Swarm); ok {
		sw.Backoff().Clear(p)
	}
}

// AgainAfterHandshake runs dial, and once more after 50 to 250 ms when it
// failed in the security handshake: two peers that dial each other's
// listen port at once (each binds its own, SO_REUSEPORT) may make one TCP
// connection of the two dials, which both ends take for their own, and
// whose handshake fails on both ("noise: message is too short"); the
// random pause uncrosses them. again tells dial it is the second try.
func AgainAfterHandshake(ctx context.Context, dial func(again bool) error) error {
	err := dial(false)
	if err == nil || !errHandshake(err) {
		return err
	}
	t := time.NewTimer(50*time.Millisecond + rand.N(200*time.Millisecond))
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		return err
	}
	return dial(true)
}

// errHandshake reports whether err is a dial that reached the peer's
// address and failed in the security handshake (libp2p's upgrader gives
// no sentinel for it).
func errHandshake(err error) bool {
	return strings.Contains(err.Error(), "failed to negotiate security protocol")
}

// Probe dials ai.ID at each of ai.Addrs through its transport (a full
// handshake, so the peer ID is checked) and closes what it opened; nil
// when one address answered, else the error of each.
func (d *Dialer) Probe(ctx context.Context, ai peer.AddrInfo) error {
	sw, ok := d.host.Network().(*swarm.Swarm)
	if !ok {
		return nil
	}
	var errs []error
	for _, a := range ai.Addrs {
		tr := sw.TransportForDialing(a)
		if tr == nil {
			errs = append(errs, fmt.Errorf("%s: no transport dials it", a))
			continue
		}
		err := AgainAfterHandshake(ctx, func(bool) error {
			c, err := tr.Dial(ctx, a, ai.ID)
			if err == nil {
				_ = c.Close()
			}
			return err
		})
		if err == nil {
			return nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", a, err))
	}
	return errors.Join(errs...)
}

// CloseConnsNotAt closes the connections to ai.ID that are not to one of
// ai.Addrs.
func (d *Dialer) CloseConnsNotAt(ai peer.AddrInfo) {
	for _, c := range d.host.Network().ConnsToPeer(ai.ID) {
		if !slices.ContainsFunc(ai.Addrs, c.RemoteMultiaddr().Equal) {
			d.log.Debug("closing a connection elsewhere than the peer answers now", "peer", ai.ID, "addr", c.RemoteMultiaddr())
			_ = c.Close()
		}
	}
}

// ConnectedAt reports whether one of the connections to ai.ID is to one of
// ai.Addrs.
func (d *Dialer) ConnectedAt(ai peer.AddrInfo) bool {
	for _, c := range d.host.Network().ConnsToPeer(ai.ID) {
		if slices.ContainsFunc(ai.Addrs, c.RemoteMultiaddr().Equal) {
			return true
		}
	}
	return false
}

// Bounds of DialEach.
const (
	// DialEachConcurrency bounds its dials at once.
	DialEachConcurrency = 8
	// DialEachTimeout bounds one of its dials.
	DialEachTimeout = 10 * time.Second
)

// DialEach dials each peer of infos that is not this host, has an address
// and is not connected, at most DialEachConcurrency at once and each
// within DialEachTimeout, and returns once they are done or ctx is; a dial
// that fails is logged at debug with msg. Used by the redial of the peer
// cache at start (ADR 0026) and by discovery.
func (d *Dialer) DialEach(ctx context.Context, infos iter.Seq[peer.AddrInfo], msg string) {
	sem := make(chan struct{}, DialEachConcurrency)
	var wg sync.WaitGroup
	defer wg.Wait()
	for ai := range infos {
		if ai.ID == d.host.ID() || len(ai.Addrs) == 0 || d.host.Network().Connectedness(ai.ID) == network.Connected {
			continue
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			return
		}
		wg.Go(func() {
			defer func() { <-sem }()
			ctx, cancel := context.WithTimeout(ctx, DialEachTimeout)
			defer cancel()
			if err := d.Dial(ctx, ai); err != nil {
				d.log.Debug(msg, "peer", ai.ID, "err", err)
			}
		})
	}
}

// Retries of a bootstrap peer that could not be dialled at start (not
// up yet, a network not yet there): after BootstrapRetryFirst, then twice
// as long each time, up to BootstrapRetryMax, until it connects once or
// the node has enough peers.
const (
	BootstrapRetryFirst = 5 * time.Second
	BootstrapRetryMax   = 5 * time.Minute
	// BootstrapTimeout bounds one dial (and greeting) of a bootstrap peer.
	BootstrapTimeout = 30 * time.Second
)

// Bootstrap dials the bootstrap peers at addrs (full multiaddrs with
// /p2p/), chosen for the run whoever dials (Choices.ChooseAlways), each
// in its own goroutine: one connect per peer with all of its addresses,
// so that the dial ranker chooses among them (rather than one connection
// per address). connect dials and greets one; it returns after the first
// try of each. A peer whose try failed is tried again in a
// goroutine of retry's (BootstrapRetryFirst), until it connects, the host
// has enough peers (at least connsLow), or ctx is done.
func (d *Dialer) Bootstrap(ctx context.Context, addrs []string, connsLow int,
	connect func(context.Context, peer.AddrInfo) error, retry func(func())) {
	var mas []ma.Multiaddr
	for _, s := range addrs {
		a, err := ma.NewMultiaddr(s)
		if err != nil {
			d.log.Warn("bad bootstrap address", "addr", s, "err", err)
			continue
		}
		mas = append(mas, a)
	}
	infos, err := peer.AddrInfosFromP2pAddrs(mas...)
	if err != nil {
		d.log.Warn("bad bootstrap address", "err", err)
	}
	try := func(ai peer.AddrInfo) error {
		ctx, cancel := context.WithTimeout(ctx, BootstrapTimeout)
		defer cancel()
		return connect(ctx, ai)
	}
	var wg sync.WaitGroup
	for _, ai := range infos {
		if d.choices != nil {
			d.choices.ChooseAlways(ai.ID)
		}
		wg.Go(func() {
			if err := try(ai); err != nil && ctx.Err() == nil {
				d.log.Warn("bootstrap peer unreachable; will retry", "peer", ai.ID, "addrs", ai.Addrs, "err", err)
				retry(func() { d.retryBootstrap(ctx, ai, connsLow, try) })
			}
		})
	}
	wg.Wait()
}

// retryBootstrap tries ai again, BootstrapRetryFirst later and then twice
// as long each time up to BootstrapRetryMax, until it connects, the host
// has connsLow peers, or ctx is done.
func (d *Dialer) retryBootstrap(ctx context.Context, ai peer.AddrInfo, connsLow int, try func(peer.AddrInfo) error) {
	wait := BootstrapRetryFirst
	t := time.NewTimer(wait)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if d.host.Network().Connectedness(ai.ID) == network.Connected || len(d.host.Network().Peers()) >= connsLow {
			return
		}
		err := try(ai)
		if err == nil {
			d.log.Info("bootstrap peer reached", "peer", ai.ID)
			return
		}
		wait = min(2*wait, BootstrapRetryMax)
		d.log.Debug("bootstrap peer still unreachable", "peer", ai.ID, "err", err, "next", wait)
		t.Reset(wait)
	}
}
