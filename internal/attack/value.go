package attack

import (
	"context"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/p2p/muxer/yamux"
	noise "github.com/libp2p/go-libp2p/p2p/security/noise"
	"github.com/libp2p/go-libp2p/p2p/transport/tcp"
	ma "github.com/multiformats/go-multiaddr"
	msmux "github.com/multiformats/go-multistream"

	"github.com/wats-network/wats/eventlog"
	"github.com/wats-network/wats/proto"

	"github.com/wats-network/wats/core"
)

// Attacks with what anyone can make: self-signed events, crash reports,
// pages asked for and never read (ADR 0030 §4 and §8 say what meets each).
const (
	// UnreadPages: one id gives the node 100 events of 16 KiB (its log
	// then has pages of over a megabyte); then IDs fresh ids each ask for
	// pagesPerID sync pages of them and never read the answers, asking
	// again once the node has given up on them.
	UnreadPages = "unread-pages"
	// CrashFlood: Rate fresh ids a second each submit two valid crash
	// reports (their own signed crash events, an 8 KiB stack each) and
	// leave.
	CrashFlood = "crash-flood"
	// ValueSybils: Rate fresh ids a second each give the node one
	// self-signed event by sync, the cheapest value there is, and leave
	// once the node has synced it.
	ValueSybils = "value-sybils"
)

func init() { Attacks = append(Attacks, UnreadPages, CrashFlood, ValueSybils) }

// pagesPerID is how many pages each id of UnreadPages asks for at once:
// more than a node serves one peer at once.
const pagesPerID = 4

// extraAttack runs the attacks of this file; false for another name.
func extraAttack(ctx context.Context, name string, t Target, o Options, st *stats) bool {
	if name == SybilHostSync {
		atRate(ctx, o.Rate, 8192, func() { sybilHost(ctx, t, o.Hold, st) })
		return true
	}
	switch name {
	case UnreadPages:
		unreadPages(ctx, t, o, st)
	case CrashFlood:
		atRate(ctx, o.Rate, 1024, func() { crashReporter(ctx, t, st) })
	case ValueSybils:
		atRate(ctx, o.Rate, 1024, func() { valueSybil(ctx, t, st) })
	default:
		return dhtAttack(ctx, name, t, o, st) || blocksAttack(ctx, name, t, o, st)
	}
	return true
}

// largeEvents signs k events of id's with a body of 16 KiB, the largest.
func (id *Identity) largeEvents(k int) ([]jsontext.Value, error) {
	pad := strings.Repeat("y", eventlog.MaxBodyBytes-64)
	return id.notes(k, func(i int) string { return fmt.Sprintf(`{"i":%d,"p":%q}`, i, pad) })
}

// give connects a fresh id that serves events by sync, says hello naming
// their count as its head, and waits until the node has synced them (or
// ctx ends); it returns the connection, which the caller closes, and the
// node's head as its hello said.
func give(ctx context.Context, t Target, id *Identity, events []jsontext.Value, st *stats) (*Conn, core.Cursor, error) {
	h := &proto.Hello{Version: proto.Version, Network: t.Network, Agent: "wats-attack",
		Features: []string{proto.FeatureChallenge}, Listen: []string{}, Head: core.Cursor(len(events))}
	synced := make(chan struct{})
	c, err := id.Dial(ctx, t, notifying(h, events, synced))
	if err != nil {
		st.failed.Add(1)
		return nil, 0, err
	}
	st.conns.Add(1)
	st.requests.Add(1)
	resp, err := c.Request(ctx, h, nil)
	if err != nil || resp.Hello == nil {
		c.Close()
		return nil, 0, fmt.Errorf("attack: hello: %v", err)
	}
	st.answered.Add(1)
	select {
	case <-synced:
	case <-ctx.Done():
		c.Close()
		return nil, 0, ctx.Err()
	}
	Pause(ctx, time.Second) // the node stores the page
	resp, err = c.Request(ctx, h, nil)
	if err != nil || resp.Hello == nil {
		c.Close()
		return nil, 0, fmt.Errorf("attack: hello: %v", err)
	}
	return c, resp.Hello.Head, nil
}

// unreadPages is UnreadPages.
func unreadPages(ctx context.Context, t Target, o Options, st *stats) {
	id, err := st.newIdentity()
	if err != nil {
		return
	}
	events, err := id.largeEvents(100)
	if err != nil {
		return
	}
	gctx, cancel := context.WithTimeout(ctx, time.Minute)
	c, head, err := give(gctx, t, id, events, st)
	cancel()
	if err != nil {
		return
	}
	c.Close()
	after := core.Cursor(0)
	if head > core.Cursor(len(events)) {
		after = head - core.Cursor(len(events)) // the large events are the last
	}
	holders(ctx, t, o.IDs, pagesPerID, 200*time.Millisecond, st, func(c *Conn) { holdPages(ctx, c, after, st) })
}

// holdPages asks for sync pages after the cursor on c and never reads
// them, asking again every 31 s (past the longest write deadline a node
// gives a response) until c closes or ctx ends.
func holdPages(ctx context.Context, c *Conn, after core.Cursor, st *stats) {
	b, err := proto.Marshal(&proto.SyncRequest{After: after, Limit: core.MaxPageEvents})
	if err != nil {
		return
	}
	for ctx.Err() == nil && !c.IsClosed() {
		raw, err := c.OpenRaw(ctx)
		if err != nil {
			Pause(ctx, 50*time.Millisecond)
			continue
		}
		s := msmux.NewMSSelect(raw, proto.ID)
		st.requests.Add(1)
		if err := proto.WriteFrame(s, b); err != nil {
			_ = raw.Reset()
			st.reset.Add(1)
			Pause(ctx, 50*time.Millisecond)
			continue
		}
		st.streams.Add(1)
		Pause(ctx, proto.ResponseTimeout+time.Second) // reading nothing: the node's write blocks on the window
		_ = raw.Reset()
	}
}

// crashReporter is one id of CrashFlood.
func crashReporter(ctx context.Context, t Target, st *stats) {
	withFresh(ctx, t, st, func(dctx context.Context, c *Conn) { reportCrashes(dctx, c, st) })
}

// reportCrashes submits two crash reports on c.
func reportCrashes(dctx context.Context, c *Conn, st *stats) {
	id := c.id
	stack := strings.Repeat("s", 8<<10)
	for i := range 2 {
		crash := eventlog.Crash{
			CrashInfo:   core.CrashInfo{Program: "flood", Version: "1", OS: "linux", Arch: "amd64", Reason: "panic " + strconv.Itoa(i), Stack: stack},
			Fingerprint: "f",
		}
		body, err := crash.Body()
		if err != nil {
			return
		}
		ev, err := eventlog.New(id.key, time.Now(), eventlog.KindCrash, body, nil)
		if err != nil {
			return
		}
		raw, err := ev.Marshal()
		if err != nil {
			return
		}
		st.requests.Add(1)
		if resp, err := c.Request(dctx, &proto.CrashReportRequest{Event: raw}, nil); err == nil && resp.CrashReport != nil {
			st.answered.Add(1)
		}
	}
}

// valueSybil is one id of ValueSybils.
func valueSybil(ctx context.Context, t Target, st *stats) {
	id, err := st.newIdentity()
	if err != nil {
		return
	}
	events, err := id.Events(1)
	if err != nil {
		return
	}
	dctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	if c, _, err := give(dctx, t, id, events, st); err == nil {
		c.Close()
	}
}

// SybilHostSync: Rate fresh ids a second, each a whole libp2p host (its
// own identify, the gossip and heads protocols it advertises), as a wats
// node is: each connects, says hello advertising "heads", asks for a sync
// page, keeps its connection Hold, and leaves. What the node does for a
// newcomer that looks like a node (identify both ways, a heads stream to
// it) is part of the cost.
const SybilHostSync = "sybil-host-sync"

func init() { Attacks = append(Attacks, SybilHostSync) }

// sybilHost is one id of SybilHostSync.
func sybilHost(ctx context.Context, t Target, hold time.Duration, st *stats) {
	var src net.IP
	if len(st.sources) > 0 {
		src = st.sources[(st.next.Add(1)-1)%uint64(len(st.sources))]
	}
	h, err := libp2p.New(
		libp2p.NoListenAddrs,
		libp2p.Transport(tcp.NewTCPTransport, tcp.DisableReuseport(), tcp.WithDialerForAddr(fromSource(src))),
		libp2p.Security(noise.ID, noise.New),
		libp2p.Muxer(yamux.ID, yamux.DefaultTransport),
		libp2p.ResourceManager(&network.NullResourceManager{}),
		libp2p.DisableRelay(),
		libp2p.DisableMetrics(),
	)
	if err != nil {
		return
	}
	defer h.Close()
	st.ids.Add(1)
	// It reads the heads the node announces, as a node would, and drops them.
	h.SetStreamHandler(proto.HeadsID, func(s network.Stream) { _, _ = io.Copy(io.Discard, s); s.Reset() })
	dctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	if err := h.Connect(dctx, peer.AddrInfo{ID: t.ID, Addrs: []ma.Multiaddr{t.Addr}}); err != nil {
		st.failed.Add(1)
		return
	}
	st.conns.Add(1)
	hello := &proto.Hello{Version: proto.Version, Network: t.Network, Agent: "wats-attack",
		Features: []string{proto.FeatureChallenge, proto.FeatureHeads}, Listen: []string{}}
	for _, req := range []proto.Message{hello, &proto.SyncRequest{After: 0, Limit: core.MaxPageEvents}} {
		st.requests.Add(1)
		resp, err := proto.Call(dctx, h, t.ID, req)
		if err != nil || resp.Hello == nil && resp.Sync == nil {
			return
		}
		st.answered.Add(1)
	}
	Pause(ctx, hold)
}
