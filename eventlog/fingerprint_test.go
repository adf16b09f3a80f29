package eventlog

import (
	"errors"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/wats-network/wats/core"
)

func TestFingerprintIsStableAcrossVersions(t *testing.T) {
	f := Fingerprint("demo", "panic: x", "goroutine 1:\nmain.main()\n\t/src/main.go:7")
	if len(f) != 64 || f != Fingerprint("demo", "panic: x", "goroutine 1:\nother frames") {
		t.Fatalf("fingerprint %q must depend on the first stack line only", f)
	}
	if f == Fingerprint("demo", "panic: y", "goroutine 1:") || f == Fingerprint("other", "panic: x", "goroutine 1:") {
		t.Fatal("different program or reason, same fingerprint")
	}
}

// TestDecodeCrash: a crash event decodes; a note, a forged one and one
// from the future do not.
func TestDecodeCrash(t *testing.T) {
	key, _, _ := crypto.GenerateEd25519Key(nil)
	now := time.Now()
	c := Crash{CrashInfo: core.CrashInfo{Program: "demo", Version: "1", OS: "linux", Arch: "amd64", Reason: "panic: x", Stack: "goroutine 1:"}}
	body, err := c.Body()
	if err != nil {
		t.Fatal(err)
	}
	if c.Fingerprint != Fingerprint(c.Program, c.Reason, c.Stack) {
		t.Fatal("Body did not fill the fingerprint in")
	}
	marshal := func(kind string, body jsontext.Value, at time.Time) []byte {
		ev, err := New(key, at, kind, body, nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := ev.Marshal()
		return b
	}
	if ev, err := DecodeCrash(marshal(KindCrash, body, now), now); err != nil || ev.Kind != KindCrash {
		t.Fatalf("a crash event: %v, %v", ev, err)
	}
	if _, err := DecodeCrash(marshal("note", jsontext.Value(`{"text":"x"}`), now), now); err == nil {
		t.Fatal("a note was taken for a crash")
	}
	if _, err := DecodeCrash(marshal(KindCrash, body, now.Add(time.Hour)), now); !errors.Is(err, ErrFuture) {
		t.Fatalf("a crash from the future: %v, want ErrFuture", err)
	}
	forged := marshal(KindCrash, body, now)
	forged[len(forged)-5] ^= 1
	if _, err := DecodeCrash(forged, now); err == nil {
		t.Fatal("a damaged event decoded")
	}
}
