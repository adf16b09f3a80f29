package attack

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/ipfs/go-cid"
	pubsub "github.com/libp2p/go-libp2p-pubsub"
	pb "github.com/libp2p/go-libp2p-pubsub/pb"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-msgio/pbio"
	"github.com/multiformats/go-multihash"
	_ "github.com/multiformats/go-multihash/register/blake3" // BLAKE3 for the blobs' CIDs
	pbproto "google.golang.org/protobuf/proto"

	"github.com/wats-network/wats/core"
	"github.com/wats-network/wats/eventlog"
	"github.com/wats-network/wats/proto"
)

// The open-loop flood of ValidSpam (GossipOptions.Rate > 0): each id makes
// its envelopes at its own schedule, Rate a second, signs each as
// gossipsub does (StrictSign), and writes each as one RPC to every target
// on a gossipsub stream of its own. It never waits for a target: what a
// target's queue (rawQueue RPCs, as many as gossipsub queues for a peer)
// cannot take is dropped and counted. An id that cannot make its
// envelopes as fast as its schedule (its share of the attacker's CPU at
// nice 19) falls behind it, and Published says what it made.

// rawQueue is the RPCs an open-loop id queues for one target, as
// gossipsub's default outbound queue does.
const rawQueue = 32

// rawSender writes an id's RPCs to one target.
type rawSender struct {
	id     *gossipID
	target peer.AddrInfo
	q      chan *pb.RPC
}

// openLoop runs id's open-loop flood on targets until ctx ends.
func (id *gossipID) openLoop(ctx context.Context, targets []peer.AddrInfo, topic string, o GossipOptions, st *gossipCounters) {
	var wg sync.WaitGroup
	defer wg.Wait()
	senders := make([]*rawSender, len(targets))
	for i, t := range targets {
		s := &rawSender{id: id, target: t, q: make(chan *pb.RPC, rawQueue)}
		senders[i] = s
		wg.Go(func() { s.run(ctx, st) })
	}
	var salt [8]byte
	binary.LittleEndian.PutUint64(salt[:], uint64(time.Now().UnixNano()))
	start := time.Now()
	for i := 0; ctx.Err() == nil; i++ {
		if wait := time.Until(start.Add(time.Duration(i) * time.Second / time.Duration(o.Rate))); wait > 0 {
			Pause(ctx, wait)
		}
		env, raw, err := id.envelope(i, o)
		if err != nil {
			return
		}
		m, err := signedMessage(id.key, id.h.ID(), topic, uint64(i), env)
		if err != nil {
			return
		}
		st.published.Add(1)
		id.keep(raw)
		rpc := &pb.RPC{Publish: []*pb.Message{m}}
		for _, s := range senders {
			select {
			case s.q <- rpc:
			default:
				st.dropped.Add(1)
			}
		}
	}
}

// envelope is the i-th envelope of a flood: SpamEnvelope, or with
// o.Large LargeEnvelope; raw is its event.
func (id *gossipID) envelope(i int, o GossipOptions) (env []byte, raw jsontext.Value, err error) {
	if o.Large {
		return LargeEnvelope(id.key, i)
	}
	if raw, err = spamEvent(id.key, i, o.BodyBytes); err != nil {
		return nil, nil, err
	}
	env, err = proto.MarshalEnvelope(&proto.Envelope{Event: raw})
	return env, raw, err
}

// spamBody is the body of the i-th spam event, padded with bodyBytes bytes
// (at most what eventlog.MaxBodyBytes leaves).
func spamBody(i, bodyBytes int) jsontext.Value {
	bodyBytes = min(max(bodyBytes, 0), eventlog.MaxBodyBytes-64)
	return jsontext.Value(fmt.Sprintf(`{"spam":%d,"p":%q}`, i, strings.Repeat("s", bodyBytes)))
}

// LargeEnvelope is the i-th envelope of a large flood (GossipOptions.Large),
// signed by key, and its event: the largest body, eventlog.MaxBlobs blob
// references whose names of eventlog.MaxBlobNameBytes are escaped to twice
// that, and as many providers (up to proto.MaxProviders) of
// proto.MaxProviderAddrs addresses of proto.MaxAddrBytes as keep the
// envelope within proto.MaxEnvelopeBytes: about 59 KiB, as large as a
// valid envelope gets, just under the 64 KiB cap. The blobs exist nowhere;
// a node only records the providers as hints for them.
func LargeEnvelope(key crypto.PrivKey, i int) (env []byte, raw jsontext.Value, err error) {
	self, err := peer.IDFromPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	refs := make([]eventlog.BlobRef, eventlog.MaxBlobs)
	for j := range refs {
		h, err := multihash.Sum(fmt.Appendf(nil, "%s/%d/%d", self, i, j), multihash.BLAKE3, 32)
		if err != nil {
			return nil, nil, err
		}
		refs[j] = eventlog.BlobRef{CID: cid.NewCidV1(cid.Raw, h).String(), Size: 1 << 20,
			Name: fmt.Sprintf("%02d", j) + strings.Repeat(`\"`, (eventlog.MaxBlobNameBytes-2)/2)}
	}
	ev, err := eventlog.New(key, time.Now(), "note", spamBody(i, eventlog.MaxBodyBytes), refs)
	if err != nil {
		return nil, nil, err
	}
	if raw, err = ev.Marshal(); err != nil {
		return nil, nil, err
	}
	// A unix socket's path: no transport of a node dials it, and it names
	// no host, so that a node fetching the blobs resolves and sends
	// nothing for it.
	long := "/unix/" + strings.Repeat("a", proto.MaxAddrBytes-len("/unix/"))
	e := &proto.Envelope{Event: raw}
	for len(e.Providers) < proto.MaxProviders {
		e.Providers = append(e.Providers, proto.Provider{ID: self.String(),
			Addrs: slices.Repeat([]string{long}, proto.MaxProviderAddrs)})
		b, err := proto.MarshalEnvelope(e)
		if err != nil || len(b) > proto.MaxEnvelopeBytes {
			e.Providers = e.Providers[:len(e.Providers)-1]
			break
		}
		env = b
	}
	if env == nil {
		env, err = proto.MarshalEnvelope(e)
	}
	return env, raw, err
}

// signedMessage is a gossipsub message of data on topic from the id of
// key, with sequence number seq, signed as StrictSign requires.
func signedMessage(key crypto.PrivKey, from peer.ID, topic string, seq uint64, data []byte) (*pb.Message, error) {
	seqno := binary.BigEndian.AppendUint64(nil, seq)
	m := &pb.Message{From: []byte(from), Data: data, Seqno: seqno, Topic: &topic}
	b, err := pbproto.Marshal(m)
	if err != nil {
		return nil, err
	}
	sig, err := key.Sign(append([]byte(pubsub.SignPrefix), b...))
	if err != nil {
		return nil, err
	}
	m.Signature = sig
	return m, nil
}

// run writes the sender's queue to its target on a gossipsub stream of the
// id's, opening another when one breaks (the id redials the target
// meanwhile: keepConnected); what comes while no stream is open waits in
// the queue, and what does not fit is dropped by openLoop.
func (s *rawSender) run(ctx context.Context, st *gossipCounters) {
	for ctx.Err() == nil {
		if s.id.h.Network().Connectedness(s.target.ID) != network.Connected {
			Pause(ctx, 100*time.Millisecond)
			continue
		}
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		str, err := s.id.h.NewStream(sctx, s.target.ID, meshsubIDs...)
		cancel()
		if err != nil {
			Pause(ctx, 200*time.Millisecond)
			continue
		}
		stop := context.AfterFunc(ctx, func() { _ = str.Reset() })
		w := pbio.NewDelimitedWriter(str)
		for err == nil {
			select {
			case <-ctx.Done():
				err = ctx.Err()
			case rpc := <-s.q:
				if err = w.WriteMsg(rpc); err == nil {
					st.sent.Add(1)
					st.sentBytes.Add(int64(len(rpc.Publish[0].Data)))
				}
			}
		}
		stop()
		_ = str.Reset()
	}
}

// discardRPCs reads and drops what a target sends an id on a stream it
// opened (the node's own gossipsub stream to the id), so that the target
// is never held up writing to it.
func discardRPCs(s network.Stream) {
	defer s.Reset()
	_, _ = io.Copy(io.Discard, s)
}

// idLog is what an id that completes hello serves a node's sync from: its
// newest events (idLogSize of them) at their positions in its log.
type idLog struct {
	mu   sync.Mutex
	evs  [idLogSize]jsontext.Value
	head core.Cursor
}

// idLogSize bounds what an id keeps of its own log: the node syncs from it
// at most a page of 256 at a time, and an id publishing 1,000 a second
// keeps a second of them.
const idLogSize = 1024

// keep adds raw to the id's log when it completes hello (GossipOptions.Hello).
func (id *gossipID) keep(raw jsontext.Value) {
	if id.log == nil {
		return
	}
	l := id.log
	l.mu.Lock()
	defer l.mu.Unlock()
	l.head++
	l.evs[l.head%idLogSize] = raw
}

// page returns the events after `after` that the log still holds, up to
// core.MaxPageEvents, and the cursor of the last: the oldest kept when
// after is older than that.
func (l *idLog) page(after core.Cursor) ([]jsontext.Value, core.Cursor, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if oldest := l.head - min(l.head, idLogSize-1); after+1 < oldest {
		after = oldest - 1
	}
	var out []jsontext.Value
	next := after
	for p := after + 1; p <= l.head && len(out) < core.MaxPageEvents; p++ {
		out = append(out, l.evs[p%idLogSize])
		next = p
	}
	return out, next, next < l.head
}

// headNow returns the position of the id's newest event.
func (l *idLog) headNow() core.Cursor {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.head
}

// A peer that completes hello (GossipOptions.Hello): besides its flood, the
// id answers the target's hello and sync from its own log, greets each
// target, asks it for a sync page every helloSyncEvery, and announces its
// head on a Heads stream as a node does, at the most a node allows
// (every heads announcement interval), so that the target pulls its
// events too.
const helloSyncEvery = time.Second

// serveWats answers the target's /wats/1 requests on s: hello with the
// id's head, sync from its log.
func (id *gossipID) serveWats(s network.Stream, networkName string) {
	defer s.Close()
	_ = s.SetDeadline(time.Now().Add(requestTimeout))
	b, err := proto.ReadFrame(s, proto.MaxRequestBytes)
	if err != nil {
		_ = s.Reset()
		return
	}
	req, err := proto.DecodeRequest(b)
	if err != nil {
		_ = s.Reset()
		return
	}
	var resp proto.Message = id.hello(networkName)
	if req.Sync != nil {
		evs, next, more := id.log.page(req.Sync.After)
		if evs == nil {
			evs, next = []jsontext.Value{}, req.Sync.After
		}
		resp = &proto.SyncResponse{Events: evs, Next: next, More: more}
	}
	if err := proto.WriteMessage(s, resp, nil); err != nil {
		_ = s.Reset()
	}
}

// hello is the id's hello: no limit advertised (it serves whatever it is
// asked), the heads feature, its head.
func (id *gossipID) hello(networkName string) *proto.Hello {
	return &proto.Hello{Version: proto.Version, Network: networkName, Agent: "wats-attack",
		Features: []string{proto.FeatureHeads}, Listen: []string{}, Head: id.log.headNow()}
}

// greetAndSync greets t and then asks it for a sync page every
// helloSyncEvery, counting what it answered, until ctx ends.
func (id *gossipID) greetAndSync(ctx context.Context, t peer.AddrInfo, networkName string, st *gossipCounters) {
	greeted := false
	tick := time.NewTicker(helloSyncEvery)
	defer tick.Stop()
	var after core.Cursor
	for ctx.Err() == nil {
		if id.h.Network().Connectedness(t.ID) == network.Connected {
			var req proto.Message = &proto.SyncRequest{After: after, Limit: core.MaxPageEvents}
			if !greeted {
				req = id.hello(networkName)
			}
			resp, err := proto.Call(ctx, id.h, t.ID, req)
			switch {
			case err != nil:
				st.watsFailed.Add(1)
				greeted = false
			case resp.Hello != nil:
				greeted = true
				st.hellos.Add(1)
			case resp.Sync != nil:
				st.syncs.Add(1)
				after = resp.Sync.Next
				if !resp.Sync.More {
					after = 0 // ask again from the start: pages cost the node
				}
			}
		}
		select {
		case <-ctx.Done():
		case <-tick.C:
		}
	}
}

// announceHeads announces the id's head to t on a Heads stream every
// announceEvery, with the short ids of its newest events, until ctx ends.
func (id *gossipID) announceHeads(ctx context.Context, t peer.AddrInfo, st *gossipCounters) {
	const announceEvery = 100 * time.Millisecond
	for ctx.Err() == nil {
		if id.h.Network().Connectedness(t.ID) != network.Connected {
			Pause(ctx, 200*time.Millisecond)
			continue
		}
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		s, err := id.h.NewStream(sctx, t.ID, proto.HeadsID)
		cancel()
		if err != nil {
			Pause(ctx, time.Second)
			continue
		}
		stop := context.AfterFunc(ctx, func() { _ = s.Reset() })
		for ctx.Err() == nil {
			b, err := proto.MarshalHeads(id.log.heads())
			if err == nil {
				_ = s.SetWriteDeadline(time.Now().Add(10 * time.Second))
				err = proto.WriteFrame(s, b)
			}
			if err != nil {
				break
			}
			st.announced.Add(1)
			Pause(ctx, announceEvery)
		}
		stop()
		_ = s.Reset()
		Pause(ctx, time.Second)
	}
}

// heads is an announcement of the log: its head and the short ids of its
// newest events, proto.MaxHeadIDs at most.
func (l *idLog) heads() *proto.Heads {
	l.mu.Lock()
	defer l.mu.Unlock()
	h := &proto.Heads{Head: l.head}
	for p := l.head - min(l.head, proto.MaxHeadIDs) + 1; p <= l.head && p > 0; p++ {
		raw := l.evs[p%idLogSize]
		if len(raw) < 7+2*core.ShortIDBytes {
			return &proto.Heads{Head: l.head}
		}
		sid, err := core.ParseShortID(string(raw[7 : 7+2*core.ShortIDBytes]))
		if err != nil {
			return &proto.Heads{Head: l.head}
		}
		h.IDs = append(h.IDs, sid)
	}
	return h
}
