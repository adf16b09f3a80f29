package p2p

import (
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"
)

// TestGaterRefusesNonEd25519Peers: docs/design.md §3, peers with other key types
// are refused before any stream.
func TestGaterRefusesNonEd25519Peers(t *testing.T) {
	g := NewGater(time.Now)
	sk, _, err := crypto.GenerateSecp256k1Key(nil)
	if err != nil {
		t.Fatal(err)
	}
	secp, _ := peer.IDFromPrivateKey(sk)
	ek, _, _ := crypto.GenerateEd25519Key(nil)
	ed, _ := peer.IDFromPrivateKey(ek)
	if g.InterceptPeerDial(secp) || g.InterceptSecured(0, secp, nil) {
		t.Error("a secp256k1 peer passed the gater")
	}
	if !g.InterceptPeerDial(ed) || !g.InterceptSecured(0, ed, nil) {
		t.Error("an Ed25519 peer was refused")
	}
	g.Ban(ed, time.Minute)
	if g.InterceptPeerDial(ed) || g.InterceptSecured(0, ed, nil) {
		t.Error("a banned peer passed the gater")
	}
}

func TestTCPFirstDialRanker(t *testing.T) {
	tcp4 := ma.StringCast("/ip4/127.0.0.1/tcp/4001")
	quic4 := ma.StringCast("/ip4/127.0.0.1/udp/4001/quic-v1")
	tcp6 := ma.StringCast("/ip6/::1/tcp/4001")
	ranked := tcpFirstDialRanker([]ma.Multiaddr{quic4, tcp4, tcp6})
	delays := map[string]time.Duration{}
	for _, r := range ranked {
		delays[r.Addr.String()] = r.Delay
	}
	if len(delays) != 3 || delays[tcp4.String()] > delays[tcp6.String()]+time.Second {
		t.Fatalf("ranked %v", ranked)
	}
	first := min(delays[tcp4.String()], delays[tcp6.String()])
	if first != 0 || delays[quic4.String()] < quicHeadStart {
		t.Fatalf("TCP at %v, QUIC at %v: want TCP first and QUIC at least %v later", first, delays[quic4.String()], quicHeadStart)
	}
	// Without TCP addresses the default ranking stands: QUIC at once.
	if r := tcpFirstDialRanker([]ma.Multiaddr{quic4}); len(r) != 1 || r[0].Delay != 0 {
		t.Fatalf("QUIC alone: %v", r)
	}
	if isTCP(ma.StringCast("/ip4/1.2.3.4/tcp/1/ws")) || !isTCP(ma.StringCast("/ip4/1.2.3.4/tcp/1/p2p/12D3KooWQ5idLmdXzYPiqriamQeF7ryWMuRfnJa9mCyks4ey8Su5")) {
		t.Fatal("isTCP: ws is not plain TCP; a /p2p suffix does not change the transport")
	}
}
