package limits

import (
	"encoding/binary"
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/wats-network/wats/core"
)

// ed25519Prefix is how every Ed25519 peer id starts: an identity multihash
// (0x00, 36 bytes) of the protobuf public key (type Ed25519, 32 bytes).
const ed25519Prefix = "\x00\x24\x08\x01\x12\x20"

// testPeer returns a distinct peer id of the shape of an Ed25519 one (38
// bytes) for each i, without generating keys.
func testPeer(i int) peer.ID {
	var key [32]byte
	binary.BigEndian.PutUint64(key[:], uint64(i))
	binary.BigEndian.PutUint64(key[24:], uint64(i)*0x9e3779b97f4a7c15)
	return peer.ID(ed25519Prefix + string(key[:]))
}

// testPeers returns n distinct peer ids.
func testPeers(n int) []peer.ID {
	ids := make([]peer.ID, n)
	for i := range ids {
		ids[i] = testPeer(i)
	}
	return ids
}

// newTestTable returns a Table of the default rates, or fails t.
func newTestTable(t testing.TB, opts *TableOptions) *Table {
	t.Helper()
	tb, err := NewTable(DefaultConfig(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return tb
}

// sameShard returns n peers that land in the same shard of tb.
func sameShard(tb *Table, n int) []peer.ID {
	var ids []peer.ID
	want := tb.shardOf(testPeer(0))
	for i := 0; len(ids) < n; i++ {
		if p := testPeer(i); tb.shardOf(p) == want {
			ids = append(ids, p)
		}
	}
	return ids
}

// takeAll calls Allow until refused, at most limit times, and returns the
// number allowed.
func takeAll(tb *Table, p peer.ID, k core.Request, now int64, limit int) int {
	for n := range limit {
		if ok, _ := tb.Allow(p, k, now); !ok {
			return n
		}
	}
	return limit
}
