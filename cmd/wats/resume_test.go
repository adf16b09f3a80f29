package main

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wats-network/wats/api"
	"github.com/wats-network/wats/internal/humanize"
)

// TestBlobGetResumesAfterKill runs real daemons of the default profile
// (docs/adr/0054): the fetching daemon killed with SIGKILL part way
// through a `blob get` and restarted keeps what it had verified as a
// partial blob (blob ls --partial, status), also through a `repo repair`
// run between the kill and the restart, which says how many bytes of it
// it kept (ADR 0054, addendum); the next `blob get` says how much it
// already held, fetches the rest and writes the blob byte for byte. A
// fetch cut off by its provider's end leaves a partial blob too, which
// `blob rm` removes.
func TestBlobGetResumesAfterKill(t *testing.T) {
	bin, tmp, env := e2eSetup(t)
	a, b := filepath.Join(tmp, "a"), filepath.Join(tmp, "b")
	initDefault(t, env, bin, a, b)
	for _, set := range [][]string{
		{"blobs.auto_fetch", "false", b}, // b fetches what blob get asks, no more
		// a sends 16 MiB a second: a 48 MiB fetch takes 3 s, long enough
		// to be cut off part way.
		{"bandwidth.up_bytes_per_s", "16777216", a},
	} {
		if code, _, stderr := runBin(t, env, bin, "config", "set", set[0], set[1], "--repo", set[2]); code != 0 {
			t.Fatalf("config set %s: exit %d: %s", set[0], code, stderr)
		}
	}
	da, _ := startBinDaemonProc(t, env, bin, a)
	db, _ := startBinDaemonProc(t, env, bin, b)
	from := idOf(t, env, bin, a).Addrs[0]
	out := filepath.Join(tmp, "out")
	if err := os.Mkdir(out, 0o700); err != nil {
		t.Fatal(err)
	}
	add := func(n int, seed uint64) (string, []byte) {
		data := make([]byte, n)
		r := rand.New(rand.NewPCG(seed, 5))
		for i := range data {
			data[i] = byte(r.Uint32())
		}
		file := filepath.Join(tmp, "blob-"+strconv.FormatUint(seed, 10))
		if err := os.WriteFile(file, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return addBlobFile(t, env, bin, a, file).CID, data
	}
	// cutGet starts `blob get` of c on b and, once its temporary file
	// holds at least n bytes, calls cut; the get must then fail.
	cutGet := func(c string, size int, n int64, cut func()) {
		t.Helper()
		get := exec.Command(bin, "blob", "get", c, "--size", strconv.Itoa(size), "--from", from, "-o", filepath.Join(out, "cut.bin"), "--repo", b)
		get.Env = env
		stderr := new(lockedBuffer)
		get.Stderr = stderr
		if err := get.Start(); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(30 * time.Second); ; {
			tmps, _ := filepath.Glob(filepath.Join(out, ".wats-blob-*"))
			if fi, err := os.Stat(strings.Join(tmps, "")); len(tmps) == 1 && err == nil && fi.Size() >= n {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("fewer than %d bytes in the temporary file after 30 s (%s)", n, stderr.String())
			}
			time.Sleep(time.Millisecond) // waiting on another process
		}
		cut()
		if err := get.Wait(); err == nil {
			t.Fatal("blob get succeeded although it was cut off")
		}
	}
	partials := func() []api.PartialBlob {
		t.Helper()
		code, stdout, stderr := runBin(t, env, bin, "blob", "ls", "--partial", "--json", "--repo", b)
		if code != 0 {
			t.Fatalf("blob ls --partial: exit %d: %s", code, stderr)
		}
		var ps []api.PartialBlob
		if err := json.Unmarshal([]byte(stdout), &ps); err != nil {
			t.Fatalf("blob ls --partial --json: %v: %s", err, stdout)
		}
		return ps
	}

	// The fetching daemon killed with SIGKILL after 20 MiB (its partial
	// blob's records are synced every 16 MiB), its database repaired,
	// restarted.
	c, data := add(48<<20, 1)
	cutGet(c, len(data), 20<<20, func() { killDaemon(t, db) })
	code, repaired, stderr := runBin(t, env, bin, "repo", "repair", "--repo", b)
	if code != 0 || !strings.Contains(repaired, " and 1 partial blob (") {
		t.Fatalf("repo repair after the kill: exit %d: %s %s", code, repaired, stderr)
	}
	t.Logf("repo repair:\n%s", repaired)
	startBinDaemonProc(t, env, bin, b)
	ps := partials()
	if len(ps) != 1 || ps[0].CID != c || ps[0].Size != uint64(len(data)) || ps[0].Held < 16<<20 || ps[0].Held >= uint64(len(data)) {
		t.Fatalf("partial blobs after the repair and the restart: %+v, want %s with 16 MiB or more of %d held", ps, c, len(data))
	}
	if want := " and 1 partial blob (" + humanize.Bytes(ps[0].Held) + " held"; !strings.Contains(repaired, want) {
		t.Errorf("repo repair said\n%s\nwant it to say %q", repaired, want)
	}
	if _, stdout, _ := runBin(t, env, bin, "status", "--repo", b); !strings.Contains(stdout, "partial blobs") {
		t.Errorf("status does not count the partial blob:\n%s", stdout)
	}
	if _, stdout, _ := runBin(t, env, bin, "blob", "ls", "--repo", b); strings.Contains(stdout, c) {
		t.Errorf("blob ls lists the partial blob as a blob:\n%s", stdout)
	}
	got := filepath.Join(out, "got.bin")
	code, stdout, stderr := runBinWithin(t, 60*time.Second, env, bin, "blob", "get", c, "--size", strconv.Itoa(len(data)), "--from", from, "-o", got, "--json", "--repo", b)
	if code != 0 {
		t.Fatalf("blob get after the restart: exit %d: %s", code, stderr)
	}
	var w blobWritten
	if err := json.Unmarshal([]byte(stdout), &w); err != nil {
		t.Fatalf("blob get --json: %v: %s", err, stdout)
	}
	if w.Resumed != ps[0].Held {
		t.Errorf("blob get --json says it resumed from %d bytes; %d were held", w.Resumed, ps[0].Held)
	}
	if want := resuming(ps[0].Held, uint64(len(data))) + "\n"; !strings.Contains(stderr, want) {
		t.Errorf("blob get after the restart said %q; want it to say %q", stderr, want)
	}
	if g, _ := os.ReadFile(got); !bytes.Equal(g, data) {
		t.Fatalf("blob get wrote %d bytes that are not the blob's %d", len(g), len(data))
	}
	if ps := partials(); len(ps) != 0 {
		t.Errorf("partial blobs after completion: %+v", ps)
	}

	// The provider killed after 8 MiB: the partial blob is kept, and
	// blob rm removes it.
	c2, data2 := add(32<<20, 2)
	cutGet(c2, len(data2), 8<<20, func() { killDaemon(t, da) })
	if ps := partials(); len(ps) != 1 || ps[0].CID != c2 || ps[0].Held < 8<<20 {
		t.Fatalf("partial blobs after the provider's end: %+v, want %s", ps, c2)
	}
	if code, stdout, stderr := runBin(t, env, bin, "blob", "rm", c2, "--repo", b); code != 0 || stdout != "removed "+c2+"\n" {
		t.Fatalf("blob rm of a partial blob: exit %d: %q %s", code, stdout, stderr)
	}
	if ps := partials(); len(ps) != 0 {
		t.Errorf("partial blobs after blob rm: %+v", ps)
	}
}
