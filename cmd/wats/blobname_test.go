package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/go-json-experiment/json"

	"github.com/wats-network/wats/api"
)

// TestBlobAddKeepsName, end to end against a real default-profile
// daemon: blob add keeps the file's base name as the blob's name (by
// descriptor and --upload), --name overrides it, and blob ls and blob ls
// --json show those names, with the daemon and offline once it stops. A
// --name that breaks the rule of an event's blob name (a newline, 256
// bytes) is a usage error that stores nothing; a base name that breaks
// it (a tab in the file name) is dropped with a note, the blob stored
// without a name ("-").
func TestBlobAddKeepsName(t *testing.T) {
	bin, tmp, env := e2eSetup(t)
	a := filepath.Join(tmp, "a")
	initDefault(t, env, bin, a)
	proc, _ := startBinDaemonProc(t, env, bin, a)
	write := func(name, content string) string {
		path := filepath.Join(tmp, name)
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	add := func(args ...string) (string, string) {
		t.Helper()
		code, out, stderr := runBin(t, env, bin, append(append([]string{"blob", "add"}, args...), "--repo", a)...)
		if code != 0 {
			t.Fatalf("blob add %q: exit %d: %s", args, code, stderr)
		}
		return strings.TrimSuffix(out, "\n"), stderr
	}
	want := map[string]string{} // CID → name
	for _, tc := range []struct {
		args []string
		name string
	}{
		{[]string{write("report 2026.txt", "the report")}, "report 2026.txt"},
		{[]string{"--upload", write("uploaded.bin", "sent as bytes")}, "uploaded.bin"},
		{[]string{"--name", "notes é.md", write("ignored.txt", "named by --name")}, "notes é.md"},
		{[]string{"--upload", "--name", strings.Repeat("n", 255), write("x.txt", "a name at the bound")}, strings.Repeat("n", 255)},
	} {
		out, _ := add(tc.args...)
		cid, size, _ := strings.Cut(out, ":")
		if !strings.HasSuffix(size, ":"+tc.name) {
			t.Errorf("blob add %q printed %q; want CID:SIZE:%s", tc.args, out, tc.name)
		}
		want[cid] = tc.name
	}
	out, stderr := add(write("tab\there.bin", "a file name with a tab"))
	if strings.Count(out, ":") != 1 || !strings.Contains(stderr, "is not kept as the blob's name") {
		t.Errorf("a file name with a tab: printed %q, said %q; want CID:SIZE and a note", out, stderr)
	}
	cid, _, _ := strings.Cut(out, ":")
	want[cid] = ""
	for _, bad := range []string{"two\nlines", strings.Repeat("n", 256)} {
		code, out, stderr := runBin(t, env, bin, "blob", "add", "--name", bad, write("bad.txt", "never stored"), "--repo", a)
		if code != 2 || out != "" || !strings.Contains(stderr, "--name") {
			t.Errorf("--name %q: exit %d, %q, %q; want a usage error", bad, code, out, stderr)
		}
	}
	check := func(when string) {
		t.Helper()
		code, out, stderr := runBin(t, env, bin, "blob", "ls", "--json", "--repo", a)
		var list []api.BlobInfo
		if err := json.Unmarshal([]byte(out), &list); code != 0 || err != nil {
			t.Fatalf("%s: blob ls --json: exit %d, %v: %s%s", when, code, err, out, stderr)
		}
		if len(list) != len(want) {
			t.Errorf("%s: blob ls --json lists %d blobs, want %d: %s", when, len(list), len(want), out)
		}
		for _, b := range list {
			if name, ok := want[b.CID]; !ok || b.Name != name {
				t.Errorf("%s: blob ls --json: %s named %q; want %q", when, b.CID, b.Name, name)
			}
		}
		code, out, stderr = runBin(t, env, bin, "blob", "ls", "--repo", a)
		if code != 0 {
			t.Fatalf("%s: blob ls: exit %d: %s", when, code, stderr)
		}
		// A row a blob, its name last (cut to fit), its CID under it.
		lines := strings.Split(out, "\n")
		for cid, name := range want {
			if name == "" {
				name = "-"
			}
			name = cutRunes(name, maxBlobNameInRow)
			found := false
			for i := 1; i < len(lines); i++ {
				if lines[i] == "    "+cid {
					found = strings.HasSuffix(lines[i-1], "  "+name)
				}
			}
			if !found {
				t.Errorf("%s: blob ls has no row with %q over %s:\n%s", when, name, cid, out)
			}
		}
	}
	check("with the daemon")
	_ = proc.Process.Signal(syscall.SIGTERM)
	_ = proc.Wait()
	check("offline")
}
