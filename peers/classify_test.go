package peers

import (
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/crypto"

	"github.com/wats-network/wats/core"
	"github.com/wats-network/wats/eventlog"
	"github.com/wats-network/wats/limits"
	"github.com/wats-network/wats/proto"
)

// TestClassify: each request type's class at and past its bounds.
func TestClassify(t *testing.T) {
	held, _ := cid.V1Builder{Codec: cid.Raw, MhType: 0x1e}.Sum([]byte("held"))
	unknown, _ := cid.V1Builder{Codec: cid.Raw, MhType: 0x1e}.Sum([]byte("unknown"))
	key, _, _ := crypto.GenerateEd25519Key(nil)
	ev, err := eventlog.New(key, time.Now(), "note", jsontext.Value(`{"text":"x"}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := ev.Marshal()
	h := Holdings{
		Head:     func() core.Cursor { return 100 },
		HasEvent: func(id string) bool { return id == ev.ID },
		Blob:     func(c cid.Cid) bool { return c == held },
	}
	sync := func(after core.Cursor) *proto.Request {
		return &proto.Request{Type: proto.TypeSync, Sync: &proto.SyncRequest{After: after}}
	}
	replicate := func(cids ...string) *proto.Request {
		r := &proto.ReplicateRequest{}
		for _, c := range cids {
			r.Blobs = append(r.Blobs, proto.BlobRef{CID: c, Size: 1})
		}
		return &proto.Request{Type: proto.TypeReplicate, Replicate: r}
	}
	for _, tc := range []struct {
		name string
		req  *proto.Request
		want limits.Class
	}{
		{"sync at the head", sync(100), limits.ClassHit},
		{"sync a page past the head", sync(100 + core.MaxPageEvents), limits.ClassExpected},
		{"sync just past a page past", sync(101 + core.MaxPageEvents), limits.ClassMiss},
		{"replicate a held blob", replicate(held.String()), limits.ClassHit},
		{"replicate one unknown of two", replicate(held.String(), unknown.String()), limits.ClassMiss},
		{"replicate what is not a CID", replicate("not a cid"), limits.ClassMiss},
		{"a duplicate crash report", &proto.Request{Type: proto.TypeCrashReport, CrashReport: &proto.CrashReportRequest{Event: raw}}, limits.ClassMiss},
		{"a new crash report", &proto.Request{Type: proto.TypeCrashReport, CrashReport: &proto.CrashReportRequest{Event: jsontext.Value(`{}`)}}, limits.ClassHit},
		{"hello", &proto.Request{Type: proto.TypeHello, Hello: &proto.Hello{}}, limits.ClassHit},
	} {
		if got := Classify(tc.req, h); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
