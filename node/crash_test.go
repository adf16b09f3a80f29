package node

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/wats-network/wats/core"
	"github.com/wats-network/wats/eventlog"
	"github.com/wats-network/wats/proto"
)

// TestCrashReports: a node submits crash reports to a peer by
// crash_report; the peer stores them (with the dump's blob reference) and
// groups them by fingerprint; an event that is not a crash is refused with
// bad_request.
func TestCrashReports(t *testing.T) {
	a := startNode(t, testConfig(false, time.Hour))
	b := startNode(t, testConfig(false, time.Hour))
	connect(t, b, a)
	ctx := context.Background()
	crash := eventlog.Crash{CrashInfo: core.CrashInfo{Program: "demo", Version: "1.0.0", OS: "linux", Arch: "amd64", Reason: "panic: index out of range", Stack: "goroutine 1 [running]:\nmain.main()"}}
	// A dump this node does not hold (or of another size) cannot be named.
	missing := &eventlog.BlobRef{CID: "bafkr4ihdkvcmlrvr2mbxsgvofyvjnqcz3wwb5gd5yhqn4t4zr5qinjqfbu", Size: 5, Name: "core.dmp"}
	if _, err := b.ReportCrash(ctx, crash, missing, a.ID()); !errors.Is(err, ErrInvalidEvent) || !strings.Contains(err.Error(), "not stored here") {
		t.Fatalf("a dump not stored: %v", err)
	}
	held := addBlob(t, b, []byte("dump!"))
	if _, err := b.ReportCrash(ctx, crash, &eventlog.BlobRef{CID: held.CID, Size: 4}, a.ID()); !errors.Is(err, ErrInvalidEvent) || !strings.Contains(err.Error(), "is 5 bytes here; the event declares 4") {
		t.Fatalf("a dump of another size: %v", err)
	}
	dump := &eventlog.BlobRef{CID: held.CID, Size: held.Size, Name: "core.dmp"}
	ev, err := b.ReportCrash(ctx, crash, dump, a.ID())
	if err != nil {
		t.Fatal(err)
	}
	got, _, err := a.events.Get(ev.ID)
	if err != nil || len(got.Blobs) != 1 || got.Blobs[0] != *dump {
		t.Fatalf("a stored %+v, %v; want the report with its dump", got, err)
	}
	crash.Version = "1.0.1" // same failure, next release
	if _, err := b.ReportCrash(ctx, crash, nil, a.ID()); err != nil {
		t.Fatal(err)
	}
	other := crash
	other.Reason = "panic: nil map"
	if _, err := b.ReportCrash(ctx, other, nil, a.ID()); err != nil {
		t.Fatal(err)
	}
	groups, err := a.CrashGroups()
	if err != nil {
		t.Fatal(err)
	}
	if len(groups) != 2 {
		t.Fatalf("%d groups, want 2: %+v", len(groups), groups)
	}
	for _, g := range groups {
		want := 1
		if g.Fingerprint == eventlog.Fingerprint(crash.Program, crash.Reason, crash.Stack) {
			want = 2
			if g.LastVersion != "1.0.1" {
				t.Errorf("last version %q, want 1.0.1", g.LastVersion)
			}
		}
		if g.Count != want {
			t.Errorf("group %s has %d reports, want %d", g.Reason, g.Count, want)
		}
	}

	note, err := eventlog.New(b.Host().Peerstore().PrivKey(b.ID()), time.Now(), "note", jsontext.Value(`{"a":1}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := note.Marshal()
	_, err = b.call(ctx, a.ID(), &proto.CrashReportRequest{Event: raw})
	if perr, ok := err.(*proto.Error); !ok || perr.Code != proto.CodeBadRequest {
		t.Fatalf("a note as a crash report: %v, want bad_request", err)
	}
	if ok, _ := a.events.Has(note.ID); ok {
		t.Fatal("the refused note was stored")
	}
}
