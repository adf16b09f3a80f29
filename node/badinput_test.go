package node

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/wats-network/wats/catchup"
	"github.com/wats-network/wats/core"
	"github.com/wats-network/wats/eventlog"
	"github.com/wats-network/wats/peers"
	"github.com/wats-network/wats/proto"
)

// rawHost is a bare libp2p host on 127.0.0.1 that speaks /wats/1 by hand.
func rawHost(t testing.TB) host.Host {
	t.Helper()
	h, err := libp2p.New(libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// exchange opens a /wats/1 stream from h to p, writes raw, closes the write
// side and returns the decoded response; nil if the node reset the stream.
func exchange(t *testing.T, h host.Host, p peer.ID, raw []byte) *proto.Response {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := h.NewStream(ctx, p, proto.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := s.Write(raw); err != nil {
		t.Fatal(err)
	}
	s.CloseWrite()
	b, err := proto.ReadFrame(s, proto.MaxResponseBytes)
	if err != nil {
		return nil
	}
	resp, err := proto.DecodeResponse(b)
	if err != nil {
		t.Fatalf("node sent an undecodable response %q: %v", b, err)
	}
	return resp
}

func frame(payload string) []byte {
	var buf bytes.Buffer
	if err := proto.WriteFrame(&buf, []byte(payload)); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

// TestBadRequestsGetClearErrors sends malformed requests to a node: each
// gets the error code docs/design.md §4 names (or a reset, for a frame that never
// completes), nothing stored is lost, and the node goes on serving.
func TestBadRequestsGetClearErrors(t *testing.T) {
	n := startNode(t, testConfig(false, time.Hour))
	publish(t, n, 3)
	h := rawHost(t)
	h.Peerstore().AddAddrs(n.ID(), n.Host().Addrs(), time.Hour)

	oversized := binary.AppendUvarint(nil, proto.MaxRequestBytes+1)
	cases := []struct {
		name string
		raw  []byte
		want proto.Code // "" means the stream is reset without a response
	}{
		{"oversized length prefix", oversized, proto.CodeTooLarge},
		{"invalid JSON", frame(`{"type":"hello",`), proto.CodeBadRequest},
		{"not an object", frame(`[1,2,3]`), proto.CodeBadRequest},
		{"wrong field type", frame(`{"type":"sync","after":5}`), proto.CodeBadRequest},
		{"duplicate key", frame(`{"type":"sync","after":"0","after":"1"}`), proto.CodeBadRequest},
		{"nested duplicate key", frame(`{"type":"hello","version":1,"network":"test","agent":"x","features":[],"listen":[],"head":"0","_grease":{"a":1,"a":2}}`), proto.CodeBadRequest},
		{"limit 0", frame(`{"type":"sync","after":"0","limit":0}`), proto.CodeBadRequest},
		{"negative cursor", frame(`{"type":"sync","after":"-1"}`), proto.CodeBadRequest},
		{"cursor past 2^64-1", frame(`{"type":"sync","after":"18446744073709551616"}`), proto.CodeBadRequest},
		{"unknown type", frame(`{"type":"gimme"}`), proto.CodeUnsupported},
		{"no type", frame(`{"after":"0"}`), proto.CodeBadRequest},
		{"truncated frame", append(binary.AppendUvarint(nil, 100), `{"type":`...), ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp := exchange(t, h, n.ID(), tc.raw)
			if tc.want == "" {
				if resp != nil {
					t.Fatalf("got a %q response, want the stream reset", resp.Type)
				}
				return
			}
			if resp == nil || resp.Error == nil {
				t.Fatalf("got %+v, want an error %q", resp, tc.want)
			}
			if resp.Error.Code != tc.want {
				t.Fatalf("error code %q (%s), want %q", resp.Error.Code, resp.Error.Message, tc.want)
			}
			if resp.Error.Message == "" {
				t.Fatal("error without a message")
			}
		})
	}
	// Nothing was lost and the node still serves.
	resp := exchange(t, h, n.ID(), frame(`{"type":"sync","after":"0","limit":300}`))
	if resp == nil || resp.Sync == nil || len(resp.Sync.Events) != 3 {
		t.Fatalf("after the bad requests, sync answered %+v, want the 3 events", resp)
	}
	if got := n.m.Value("wats_bad_requests_total", string(proto.CodeBadRequest)); got < 8 {
		t.Errorf("bad requests counted %v, want at least 8", got)
	}
}

// respondingPeer is a bare host whose /wats/1 handler answers each decoded
// request with respond's message.
func respondingPeer(t testing.TB, respond func(*proto.Request) proto.Message) host.Host {
	h := rawHost(t)
	h.SetStreamHandler(proto.ID, func(s network.Stream) {
		defer s.Close()
		b, err := proto.ReadFrame(s, proto.MaxRequestBytes)
		if err != nil {
			s.Reset()
			return
		}
		req, err := proto.DecodeRequest(b)
		if err != nil {
			s.Reset()
			return
		}
		if err := proto.WriteMessage(s, respond(req), nil); err != nil {
			s.Reset()
		}
	})
	return h
}

// fakePeer is a host that answers hello and serves one fixed sync page.
func fakePeer(t *testing.T, networkName string, events []jsontext.Value) host.Host {
	return respondingPeer(t, func(req *proto.Request) proto.Message {
		if req.Type == proto.TypeHello {
			return &proto.Hello{Version: 1, Network: networkName, Agent: "fake", Features: []string{}, Listen: []string{},
				Head: core.Cursor(len(events))}
		}
		page := &proto.SyncResponse{Next: core.Cursor(len(events))}
		if req.Sync.After < core.Cursor(len(events)) {
			page.Events = events[req.Sync.After:]
		}
		return page
	})
}

func signed(t *testing.T, key crypto.PrivKey, at time.Time, text string) *eventlog.Event {
	t.Helper()
	ev, err := eventlog.New(key, at, "note", jsontext.Value(`{"text":"`+text+`"}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

func marshal(t *testing.T, ev *eventlog.Event) jsontext.Value {
	t.Helper()
	b, err := ev.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestSyncDropsInvalidEventsKeepsTheRest: a peer serves a page with a bad
// signature, an event 10 minutes and 1 ms in the future and a malformed
// one among good ones; the good ones are stored, the others dropped and
// counted (as the peer's invalid messages, but for the one from the
// future), and the cursor moves past the page.
func TestSyncDropsInvalidEventsKeepsTheRest(t *testing.T) {
	key, _, _ := crypto.GenerateEd25519Key(nil)
	now := time.Now()
	good1 := signed(t, key, now, "one")
	good2 := signed(t, key, now, "two")
	edge := signed(t, key, now.Add(eventlog.MaxFutureSkew-time.Second), "almost too far ahead")
	future := signed(t, key, now.Add(eventlog.MaxFutureSkew+time.Minute), "too far ahead")
	badSig := signed(t, key, now, "tampered")
	badSig.Sig = good1.Sig
	page := []jsontext.Value{
		marshal(t, good1), marshal(t, badSig), marshal(t, future),
		jsontext.Value(`{"id":"nope"}`), marshal(t, edge), marshal(t, good2),
	}
	f := fakePeer(t, "test", page)
	n := startNode(t, testConfig(false, time.Hour))
	n.Host().Peerstore().AddAddrs(f.ID(), f.Addrs(), time.Hour)
	ctx := context.Background()
	if err := n.Host().Connect(ctx, peer.AddrInfo{ID: f.ID(), Addrs: f.Addrs()}); err != nil {
		t.Fatal(err)
	}
	st, err := n.SyncPeer(ctx, f.ID(), nil)
	if err != nil {
		t.Fatal(err)
	}
	// The sync after hello may have done the work before SyncPeer ran, so
	// check the node's state rather than this call's counts.
	if st.Cursor != 6 || n.peers.Cursor(f.ID()) != 6 {
		t.Fatalf("cursor %d (persisted %d), want 6: past the whole page", st.Cursor, n.peers.Cursor(f.ID()))
	}
	if got := storedBy(n, "sync"); got != 3 {
		t.Errorf("stored %v events by sync, want 3", got)
	}
	for _, ev := range []*eventlog.Event{good1, good2, edge} {
		if ok, _ := n.events.Has(ev.ID); !ok {
			t.Errorf("valid event %s not stored", ev.ID)
		}
	}
	for _, ev := range []*eventlog.Event{badSig, future} {
		if ok, _ := n.events.Has(ev.ID); ok {
			t.Errorf("invalid event %s stored", ev.ID)
		}
	}
	if got := n.Status().Dropped; got != 3 {
		t.Errorf("status dropped = %d, want 3", got)
	}
	// The forged and the malformed are invalid messages of the peer's;
	// the event from the future is not (its clock may be right).
	if ps := n.run.Get(f.ID()); ps == nil {
		t.Error("the peer is not connected")
	} else if got := ps.Count(peers.Invalid); got != 2 {
		t.Errorf("the peer's invalid count: %d, want 2", got)
	}
}

// TestWrongNetworkHello: a hello naming another network gets wrong_network
// and the connection is closed.
func TestWrongNetworkHello(t *testing.T) {
	n := startNode(t, testConfig(false, time.Hour))
	h := rawHost(t)
	h.Peerstore().AddAddrs(n.ID(), n.Host().Addrs(), time.Hour)
	resp := exchange(t, h, n.ID(), frame(`{"type":"hello","version":1,"network":"other","agent":"x","features":[],"listen":[],"head":"0"}`))
	if resp == nil || resp.Error == nil || resp.Error.Code != proto.CodeWrongNetwork {
		t.Fatalf("got %+v, want wrong_network", resp)
	}
	deadline := time.Now().Add(5 * time.Second)
	for h.Network().Connectedness(n.ID()) == network.Connected {
		if time.Now().After(deadline) {
			t.Fatal("the node did not disconnect the peer of another network")
		}
		time.Sleep(10 * time.Millisecond) // waiting on the network
	}
}

// lyingPeer answers hello with a huge head and every sync with one page of
// the given events and more=true, forever.
func lyingPeer(t *testing.T, page []jsontext.Value, served *atomic.Int64) host.Host {
	return respondingPeer(t, func(req *proto.Request) proto.Message {
		if req.Type == proto.TypeHello {
			return &proto.Hello{Version: 1, Network: "test", Agent: "liar", Head: 18446744073709551615}
		}
		served.Add(1)
		return &proto.SyncResponse{Events: page, Next: req.Sync.After + core.Cursor(len(page)), More: true}
	})
}

// TestSyncRunBounds: a peer whose pages always say "more" gets at most
// catchup.Client.RunPages requests in a run, and one serving invalid events ends the
// run once more than catchup.MaxInvalidPerRun were dropped.
func TestSyncRunBounds(t *testing.T) {
	const runPages = 20
	key, _, _ := crypto.GenerateEd25519Key(nil)
	now := time.Now()
	ctx := context.Background()

	t.Run("pages", func(t *testing.T) {
		n := startNode(t, testConfig(false, time.Hour))
		n.sync.RunPages = runPages // before the node syncs from anyone
		known := signed(t, key, now, "known")
		if _, err := n.events.Append([]*eventlog.Event{known}); err != nil {
			t.Fatal(err)
		}
		var served atomic.Int64
		f := lyingPeer(t, []jsontext.Value{marshal(t, known)}, &served)
		if err := n.Host().Connect(ctx, peer.AddrInfo{ID: f.ID(), Addrs: f.Addrs()}); err != nil {
			t.Fatal(err)
		}
		_, err := n.SyncPeer(ctx, f.ID(), nil)
		if !errors.Is(err, catchup.ErrRunBound) {
			t.Fatalf("sync from a peer that always has more: %v, want catchup.ErrRunBound", err)
		}
		// The hello-triggered run and this one: each at most the bound, and
		// the background one is not continued since it stored nothing.
		if got := served.Load(); got > 2*runPages {
			t.Fatalf("served %d pages, want at most %d", got, 2*runPages)
		}
		if n.events.Head() != 1 {
			t.Fatalf("head %d, want 1: replayed events are not stored again", n.events.Head())
		}
	})

	t.Run("invalid", func(t *testing.T) {
		n := startNode(t, testConfig(false, time.Hour))
		n.sync.RunPages = runPages // before the node syncs from anyone
		var page []jsontext.Value
		for i := range 100 {
			ev := signed(t, key, now, fmt.Sprint("bad ", i))
			ev.Sig = signed(t, key, now, "other").Sig
			page = append(page, marshal(t, ev))
		}
		var served atomic.Int64
		f := lyingPeer(t, page, &served)
		if err := n.Host().Connect(ctx, peer.AddrInfo{ID: f.ID(), Addrs: f.Addrs()}); err != nil {
			t.Fatal(err)
		}
		_, err := n.SyncPeer(ctx, f.ID(), nil)
		if !errors.Is(err, catchup.ErrRunBound) {
			t.Fatalf("sync from a peer of invalid events: %v, want catchup.ErrRunBound", err)
		}
		// 100 invalid a page: a run ends at its third page (300 > 256),
		// where the verify stage stops it. Fetched by then at most: those
		// 3, GOMAXPROCS in verification and as many queued for the order,
		// one waiting for a verifier, a full queue before verification,
		// one in flight. Two runs (the one after hello, and this one).
		workers := runtime.GOMAXPROCS(0)
		if got := served.Load(); got > int64(2*(3+2*workers+1+catchup.PipelineDepth+1)) {
			t.Fatalf("served %d pages of invalid events, want a handful", got)
		}
		if n.events.Head() != 0 {
			t.Fatalf("stored %d invalid events", n.events.Head())
		}
	})
}
