package bench

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
)

// What became of each honest event on its way, from the daemons' gossipsub
// traces (bench gossip --trace; docs/adr/0041 §5): for each hop, A to B
// and B to C, the first thing that went wrong for an event that did not
// arrive within deliveredWithin.

// traceEvent is one line of pubsub's JSON tracer (its pb.TraceEvent as
// encoding/json writes it: byte fields in base64, the type a number).
type traceEvent struct {
	Type           int    `json:"type"`
	PeerID         []byte `json:"peerID"`
	Timestamp      int64  `json:"timestamp"`
	PublishMessage *struct {
		MessageID []byte `json:"messageID"`
	} `json:"publishMessage"`
	RejectMessage *struct {
		MessageID    []byte `json:"messageID"`
		ReceivedFrom []byte `json:"receivedFrom"`
		Reason       string `json:"reason"`
	} `json:"rejectMessage"`
	DeliverMessage *struct {
		MessageID    []byte `json:"messageID"`
		ReceivedFrom []byte `json:"receivedFrom"`
	} `json:"deliverMessage"`
	RecvRPC *struct {
		ReceivedFrom []byte   `json:"receivedFrom"`
		Meta         *rpcMeta `json:"meta"`
	} `json:"recvRPC"`
	SendRPC *struct {
		SendTo []byte   `json:"sendTo"`
		Meta   *rpcMeta `json:"meta"`
	} `json:"sendRPC"`
	DropRPC *struct {
		SendTo []byte   `json:"sendTo"`
		Meta   *rpcMeta `json:"meta"`
	} `json:"dropRPC"`
}

type rpcMeta struct {
	Messages []struct {
		MessageID []byte `json:"messageID"`
	} `json:"messages"`
	Control *struct {
		Ihave []struct {
			MessageIDs [][]byte `json:"messageIDs"`
		} `json:"ihave"`
		Iwant []struct {
			MessageIDs [][]byte `json:"messageIDs"`
		} `json:"iwant"`
	} `json:"control"`
}

// The trace event types of pubsub's pb.TraceEvent_Type.
const (
	tracePublish = 0
	traceReject  = 1
	traceDeliver = 3
	traceRecvRPC = 6
	traceSendRPC = 7
	traceDropRPC = 8
)

// hopFate is what happened to one message on one hop, from the traces of
// its two ends.
type hopFate struct {
	sent, dropped, received, ihave, iwanted bool
	delivered                               time.Time // zero when never
	rejected                                string
}

// TraceFate is what became of one honest event that did not reach C within
// deliveredWithin.
type TraceFate struct {
	AtSeconds float64 `json:"at_seconds"` // when A published it, from the first
	// AB and BC say, for each hop, the first thing that went wrong (or
	// "delivered by gossip in N ms"), Arrived how it reached C in the end.
	AB      string `json:"a_to_b"`
	BC      string `json:"b_to_c"`
	Arrived string `json:"arrived"`
}

// TraceReport is bench gossip --trace's account of the honest events that
// were late or never delivered.
type TraceReport struct {
	// Fates counts, for each hop, the events by what happened to them on
	// it ("A→B: …", "B→C: …").
	Fates map[string]int `json:"fates"`
	// Events are the late and lost ones, in order.
	Events []TraceFate `json:"events"`
}

// readTrace reads one daemon's trace file.
func readTrace(path string) ([]traceEvent, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []traceEvent
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var e traceEvent
		if json.Unmarshal(sc.Bytes(), &e) == nil {
			out = append(out, e)
		}
	}
	return out, sc.Err()
}

// hops follows the messages of ids from sender to receiver through their
// traces.
func hops(ids map[string]bool, sender, receiver []traceEvent, from, to peer.ID) map[string]*hopFate {
	out := make(map[string]*hopFate, len(ids))
	get := func(id []byte) *hopFate {
		k := string(id)
		if !ids[k] {
			return nil
		}
		if out[k] == nil {
			out[k] = &hopFate{}
		}
		return out[k]
	}
	for _, e := range sender {
		switch {
		case e.SendRPC != nil && peer.ID(e.SendRPC.SendTo) == to && e.SendRPC.Meta != nil:
			for _, m := range e.SendRPC.Meta.Messages {
				if h := get(m.MessageID); h != nil {
					h.sent = true
				}
			}
			if c := e.SendRPC.Meta.Control; c != nil {
				for _, ih := range c.Ihave {
					for _, id := range ih.MessageIDs {
						if h := get(id); h != nil {
							h.ihave = true
						}
					}
				}
			}
		case e.DropRPC != nil && peer.ID(e.DropRPC.SendTo) == to && e.DropRPC.Meta != nil:
			for _, m := range e.DropRPC.Meta.Messages {
				if h := get(m.MessageID); h != nil {
					h.dropped = true
				}
			}
		}
	}
	for _, e := range receiver {
		switch {
		case e.RecvRPC != nil && peer.ID(e.RecvRPC.ReceivedFrom) == from && e.RecvRPC.Meta != nil:
			for _, m := range e.RecvRPC.Meta.Messages {
				if h := get(m.MessageID); h != nil {
					h.received = true
				}
			}
		case e.SendRPC != nil && peer.ID(e.SendRPC.SendTo) == from && e.SendRPC.Meta != nil && e.SendRPC.Meta.Control != nil:
			for _, iw := range e.SendRPC.Meta.Control.Iwant {
				for _, id := range iw.MessageIDs {
					if h := get(id); h != nil {
						h.iwanted = true
					}
				}
			}
		case e.DeliverMessage != nil && peer.ID(e.DeliverMessage.ReceivedFrom) == from:
			if h := get(e.DeliverMessage.MessageID); h != nil && h.delivered.IsZero() {
				h.delivered = time.Unix(0, e.Timestamp)
			}
		case e.RejectMessage != nil && peer.ID(e.RejectMessage.ReceivedFrom) == from:
			if h := get(e.RejectMessage.MessageID); h != nil && h.rejected == "" {
				h.rejected = e.RejectMessage.Reason
			}
		}
	}
	return out
}

// describe says what happened to a message on a hop it took from publish
// (its publication at A).
func (h *hopFate) describe(publish time.Time, sender, receiver string) string {
	switch {
	case h == nil:
		return fmt.Sprintf("never sent by %s", sender)
	case !h.delivered.IsZero():
		how := "gossip"
		if h.iwanted {
			how = "gossip (IHAVE/IWANT)"
		}
		return fmt.Sprintf("delivered by %s in %d ms", how, h.delivered.Sub(publish).Milliseconds())
	case h.rejected != "":
		return fmt.Sprintf("received, %s at %s (%s)", "ignored or rejected", receiver, h.rejected)
	case h.received:
		return fmt.Sprintf("received by %s, never validated", receiver)
	case h.sent:
		return fmt.Sprintf("sent, dropped at %s's RPC inspector (a budget; wats_gossip_ignored_total)", receiver)
	case h.dropped:
		return fmt.Sprintf("dropped in %s's outbound queue", sender)
	case h.ihave:
		return fmt.Sprintf("announced by IHAVE only, never asked for by %s", receiver)
	}
	return fmt.Sprintf("never sent by %s", sender)
}

// traceReport works out the fate of the honest events of sent that did
// not reach C within deliveredWithin, from the traces of A, B and C (in
// paths) and the arrivals at B and C.
func traceReport(paths [3]string, ids [3]peer.ID, sent []honestSent, atB, atC *arrivals) (*TraceReport, error) {
	var tr [3][]traceEvent
	for i, p := range paths {
		var err error
		if tr[i], err = readTrace(p); err != nil {
			return nil, fmt.Errorf("trace of %s: %w", lineNames[i], err)
		}
	}
	// A's publications, each matched to the honest event whose API call
	// it fell within (A publishes nothing else).
	type pub struct {
		id string
		at time.Time
	}
	var pubs []pub
	for _, e := range tr[0] {
		if e.Type == tracePublish && e.PublishMessage != nil {
			pubs = append(pubs, pub{string(e.PublishMessage.MessageID), time.Unix(0, e.Timestamp)})
		}
	}
	msgOf := make(map[string]pub, len(sent)) // event id -> its message
	for _, s := range sent {
		best, bestD := -1, time.Duration(1<<62)
		for i, p := range pubs {
			d := p.at.Sub(s.at)
			if d < 0 {
				d = -d - 1 // before the call: never the one, unless nothing else
			}
			if d <= s.add+time.Millisecond && d < bestD {
				best, bestD = i, d
			}
		}
		if best >= 0 {
			msgOf[s.id] = pubs[best]
		}
	}
	ids2 := make(map[string]bool, len(msgOf))
	for _, p := range msgOf {
		ids2[p.id] = true
	}
	ab := hops(ids2, tr[0], tr[1], ids[0], ids[1])
	bc := hops(ids2, tr[1], tr[2], ids[1], ids[2])
	rep := &TraceReport{Fates: map[string]int{}}
	var first time.Time
	for _, s := range sent {
		if first.IsZero() || s.at.Before(first) {
			first = s.at
		}
	}
	for _, s := range sent {
		tc, ok := atC.at(s.id)
		if ok && tc.Sub(s.at) <= deliveredWithin {
			continue
		}
		p, matched := msgOf[s.id]
		f := TraceFate{AtSeconds: s.at.Sub(first).Seconds(), Arrived: "never"}
		if !matched {
			f.AB, f.BC = "its publication is not in A's trace", "—"
		} else {
			f.AB = ab[p.id].describe(p.at, "A", "B")
			f.BC = bc[p.id].describe(p.at, "B", "C")
			if _, atb := atB.at(s.id); atb && (ab[p.id] == nil || ab[p.id].delivered.IsZero()) {
				f.AB += "; pulled by B"
			}
		}
		if ok {
			f.Arrived = fmt.Sprintf("at C in %d ms", tc.Sub(s.at).Milliseconds())
			if matched && (bc[p.id] == nil || bc[p.id].delivered.IsZero()) {
				f.Arrived += ", pulled"
			}
		}
		rep.Events = append(rep.Events, f)
		rep.Fates["A→B: "+fateKind(f.AB)]++
		rep.Fates["B→C: "+fateKind(f.BC)]++
	}
	return rep, nil
}

// fateKind is a fate without its figures, to count alike ones together.
func fateKind(s string) string {
	out := make([]rune, 0, len(s))
	for _, r := range s {
		if r >= '0' && r <= '9' {
			if len(out) == 0 || out[len(out)-1] != 'N' {
				out = append(out, 'N')
			}
			continue
		}
		out = append(out, r)
	}
	return string(out)
}

// SortedFates returns the report's fates, the most frequent first.
func (r *TraceReport) SortedFates() []string {
	keys := slices.Collect(maps.Keys(r.Fates))
	slices.SortFunc(keys, func(a, b string) int { return cmp.Or(cmp.Compare(r.Fates[b], r.Fates[a]), cmp.Compare(a, b)) })
	return keys
}
