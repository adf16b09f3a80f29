package main

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"

	"github.com/wats-network/wats/api"
	"github.com/wats-network/wats/repo"
)

// TestBlobAddByDescriptor, end to end against a real daemon: blob add
// passes the file open and blob add --upload sends its bytes, to the same
// CID:SIZE:NAME (and --json to the same blob); the daemon's metrics count
// each way. At blobs.max_blob_bytes a file is stored; a byte past it is
// refused both ways with one sentence, and nothing is stored. A file the
// caller cannot read is refused by the CLI before the daemon sees it.
func TestBlobAddByDescriptor(t *testing.T) {
	bin, tmp, env := e2eSetup(t)
	a := filepath.Join(tmp, "a")
	initLocal(t, env, bin, a)
	const max = 3<<20 + 1
	// auto_fetch off: the blobs listed are the ones added here, whatever
	// other daemons on this machine gossip.
	for _, kv := range [][2]string{{"blobs.max_blob_bytes", "3145729"}, {"blobs.auto_fetch", "false"}} {
		if code, _, stderr := runBin(t, env, bin, "config", "set", kv[0], kv[1], "--repo", a); code != 0 {
			t.Fatalf("config set %s: exit %d: %s", kv[0], code, stderr)
		}
	}
	startBinDaemon(t, env, bin, a)
	write := func(name string, n int) string {
		data := make([]byte, n)
		r := rand.New(rand.NewPCG(uint64(n), 3))
		for i := range data {
			data[i] = byte(r.Uint32())
		}
		path := filepath.Join(tmp, name)
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	file := write("at-max.bin", max)
	code, byDesc, stderr := runBin(t, env, bin, "blob", "add", file, "--repo", a)
	if code != 0 || !strings.HasSuffix(byDesc, ":3145729:at-max.bin\n") || stderr != "" {
		t.Fatalf("blob add at max_blob_bytes: exit %d, %q, %q", code, byDesc, stderr)
	}
	if code, byUpload, stderr := runBin(t, env, bin, "blob", "add", "--upload", file, "--repo", a); code != 0 || byUpload != byDesc {
		t.Fatalf("blob add --upload: exit %d, %q %s; by descriptor %q", code, byUpload, stderr, byDesc)
	}
	code, out, stderr := runBin(t, env, bin, "blob", "add", "--json", file, "--repo", a)
	var bi api.BlobInfo
	if code != 0 || json.Unmarshal([]byte(out), &bi) != nil || byDesc != bi.CID+":3145729:at-max.bin\n" {
		t.Fatalf("blob add --json: exit %d, %q %s", code, out, stderr)
	}

	big := write("past-max.bin", max+1)
	for _, args := range [][]string{{"blob", "add", big}, {"blob", "add", "--upload", big}} {
		code, out, stderr := runBin(t, env, bin, append(args, "--repo", a)...)
		if code != 1 || out != "" || !strings.Contains(stderr, "blobs.max_blob_bytes") || strings.Count(stderr, "\n") != 1 ||
			!strings.Contains(stderr, "the daemon says: blob too large") || !strings.Contains(stderr, "and restart the daemon") {
			t.Errorf("%v: exit %d, %q, stderr %q; want one sentence naming blobs.max_blob_bytes and what to do", args, code, out, stderr)
		}
	}
	missing := filepath.Join(t.TempDir(), "no-such.bin")
	if code, _, stderr := runBin(t, env, bin, "blob", "add", missing, "--repo", a); code != 1 || stderr != "Error: "+missing+": no such file\n" {
		t.Errorf("blob add of a missing file: exit %d, stderr %q", code, stderr)
	}
	_, out, _ = runBin(t, env, bin, "blob", "ls", "--json", "--repo", a)
	var list []api.BlobInfo
	if json.Unmarshal([]byte(out), &list) != nil || len(list) != 1 || list[0].CID != bi.CID || list[0].Size != bi.Size || list[0].Added.IsZero() {
		t.Errorf("blob ls after the refusals: %q; want the one blob %+v", out, bi)
	}

	sock, err := repo.SocketPathOf(a)
	if err != nil {
		t.Fatal(err)
	}
	c := api.NewClient(sock)
	defer c.Close()
	m, err := c.Metrics(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`wats_blob_imports_total{outcome="stored",via="descriptor"} 2`,
		`wats_blob_imports_total{outcome="stored",via="upload"} 1`,
		`wats_blob_imports_total{outcome="refused",via="descriptor"} 1`,
		`wats_blob_imports_total{outcome="refused",via="upload"} 1`,
	} {
		if !strings.Contains(m, want+"\n") {
			t.Errorf("metrics lack %s", want)
		}
	}

	t.Run("unreadable", func(t *testing.T) {
		if os.Geteuid() == 0 {
			t.Skip("root reads a file of any mode (CAP_DAC_OVERRIDE); the daemon's side of it is daemon's TestImportRefusesPathOnlyDescriptor")
		}
		secret := write("secret.bin", 10)
		if err := os.Chmod(secret, 0); err != nil {
			t.Fatal(err)
		}
		code, out, stderr := runBin(t, env, bin, "blob", "add", secret, "--repo", a)
		if code != 1 || out != "" || !strings.Contains(stderr, "permission denied") {
			t.Errorf("blob add of an unreadable file: exit %d, %q, stderr %q", code, out, stderr)
		}
	})
}
