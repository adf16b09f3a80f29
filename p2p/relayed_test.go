package p2p

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/p2p/protocol/circuitv2/client"
	"github.com/libp2p/go-libp2p/p2p/protocol/circuitv2/relay"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/wats-network/wats/proto"
)

// relayedHost is a host on 127.0.0.1 that can dial and be dialled through
// relays, closed with the test.
func relayedHost(t *testing.T) host.Host {
	t.Helper()
	h, err := libp2p.New(libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"), libp2p.EnableRelay())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// TestKeepRelayed: when a relayed connection this node opened to a wats
// peer closes (the relay's circuit ended, as a relay ends every circuit
// after its time), the peer is dialled again; a peer that does not speak
// /wats/1 is not.
func TestKeepRelayed(t *testing.T) {
	for _, wats := range []bool{true, false} {
		rh := relayedHost(t)
		r, err := relay.New(rh, relay.WithLimit(&relay.RelayLimit{Duration: 500 * time.Millisecond, Data: 1 << 20}))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		target, dialler := relayedHost(t), relayedHost(t)
		if wats {
			target.SetStreamHandler(proto.ID, func(s network.Stream) { s.Reset() })
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if _, err := client.Reserve(ctx, target, peer.AddrInfo{ID: rh.ID(), Addrs: rh.Addrs()}); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		kctx, kcancel := context.WithCancel(ctx)
		KeepRelayed(kctx, dialler, 8, wg.Go)
		circuit, err := ma.NewMultiaddr(rh.Addrs()[0].String() + "/p2p/" + rh.ID().String() + "/p2p-circuit")
		if err != nil {
			t.Fatal(err)
		}
		// Only the relayed address: the dialler never learns the target's
		// own before its first connection.
		if err := dialler.Connect(ctx, peer.AddrInfo{ID: target.ID(), Addrs: []ma.Multiaddr{circuit}}); err != nil {
			t.Fatal(err)
		}
		if !dialler.Network().ConnsToPeer(target.ID())[0].Stat().Limited {
			t.Fatal("test bug: the connection is not relayed")
		}
		// The circuit ends after half a second; a redial follows a second
		// later.
		closed := false
		deadline := time.Now().Add(10 * time.Second)
		for ; time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) { // waiting on the network
			c := dialler.Network().Connectedness(target.ID())
			if c != network.Connected && !closed {
				closed = true
				deadline = time.Now().Add(RelayRedialDelay + 3*time.Second)
			} else if c == network.Connected && closed {
				break
			}
		}
		got := dialler.Network().Connectedness(target.ID()) == network.Connected
		kcancel()
		wg.Wait()
		if !closed {
			t.Fatalf("wats %v: the circuit never closed", wats)
		}
		if got != wats {
			t.Errorf("wats %v: connected again %v, want %v", wats, got, wats)
		}
	}
}
