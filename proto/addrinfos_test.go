package proto

import (
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"
)

// TestAddrInfos: a provider whose id is not a peer id is dropped, an
// address that is not a multiaddr is skipped, the rest kept in order.
func TestAddrInfos(t *testing.T) {
	const id = "12D3KooWGRUVh7ZYMG9JWbShWD1ZkpWxNJaHfzDzSPkdVgHsAK7K"
	p, err := peer.Decode(id)
	if err != nil {
		t.Fatal(err)
	}
	got := AddrInfos([]Provider{
		{ID: "not a peer id", Addrs: []string{"/ip4/127.0.0.1/tcp/1"}},
		{ID: id, Addrs: []string{"/ip4/127.0.0.1/tcp/1", "not a multiaddr", "/ip4/127.0.0.1/udp/2/quic-v1"}},
	})
	if len(got) != 1 || got[0].ID != p || len(got[0].Addrs) != 2 || got[0].Addrs[0].String() != "/ip4/127.0.0.1/tcp/1" {
		t.Fatalf("AddrInfos = %v", got)
	}
}
