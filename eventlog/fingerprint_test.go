package eventlog

import "testing"

func TestFingerprintIsStableAcrossVersions(t *testing.T) {
	f := Fingerprint("demo", "panic: x", "goroutine 1:\nmain.main()\n\t/src/main.go:7")
	if len(f) != 64 || f != Fingerprint("demo", "panic: x", "goroutine 1:\nother frames") {
		t.Fatalf("fingerprint %q must depend on the first stack line only", f)
	}
	if f == Fingerprint("demo", "panic: y", "goroutine 1:") || f == Fingerprint("other", "panic: x", "goroutine 1:") {
		t.Fatal("different program or reason, same fingerprint")
	}
}
