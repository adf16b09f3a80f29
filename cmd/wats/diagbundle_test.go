package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/libp2p/go-libp2p/core/crypto"

	"github.com/wats-network/wats/config"
	"github.com/wats-network/wats/repo"
)

// readBundle opens the archive at path and returns its files by name
// within its one top directory, and that directory's name; .gz files
// are returned decompressed.
func readBundle(t *testing.T, path string) (files map[string][]byte, top string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if fi, _ := f.Stat(); fi.Mode().Perm() != 0o600 {
		t.Errorf("%s has mode %v, want 0600", path, fi.Mode().Perm())
	}
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s is not gzip: %v", path, err)
	}
	tr := tar.NewReader(zr)
	files = map[string][]byte{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		dir, name, ok := strings.Cut(h.Name, "/")
		if !ok || (top != "" && dir != top) || strings.Contains(name, "/") {
			t.Fatalf("%s: entry %q is not a file of one top directory %q", path, h.Name, top)
		}
		top = dir
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(name, ".gz") {
			zr, err := gzip.NewReader(bytes.NewReader(data))
			if err != nil {
				t.Fatalf("%s: %s is not gzip: %v", path, name, err)
			}
			if data, err = io.ReadAll(zr); err != nil {
				t.Fatalf("%s: %s: %v", path, name, err)
			}
		}
		files[name] = data
	}
	return files, top
}

// checkNoKey fails if any file holds the repo's identity key: the key
// file's bytes, or its private half raw, in hex or in base64.
func checkNoKey(t *testing.T, dir string, files map[string][]byte) {
	t.Helper()
	file, err := os.ReadFile(filepath.Join(dir, repo.KeyFile))
	if err != nil {
		t.Fatal(err)
	}
	key, err := crypto.UnmarshalPrivateKey(file)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := key.Raw()
	if err != nil {
		t.Fatal(err)
	}
	seed := raw[:32] // Ed25519: the seed, then the public key (which the peer ID holds)
	secrets := [][]byte{file, seed, []byte(hex.EncodeToString(seed)), []byte(base64.StdEncoding.EncodeToString(seed)),
		[]byte(base64.StdEncoding.EncodeToString(file)), []byte(base64.RawURLEncoding.EncodeToString(seed))}
	for name, data := range files {
		for _, s := range secrets {
			if bytes.Contains(data, s) {
				t.Errorf("%s holds the identity key (%d bytes of it)", name, len(s))
			}
		}
	}
}

// TestDiagBundle runs `wats diag bundle` against a real daemon of the
// default profile: the archive holds every part, each what it should, and
// nothing of the identity key.
func TestDiagBundle(t *testing.T) {
	bin, tmp, env := e2eSetup(t)
	dir := filepath.Join(tmp, "node")
	initDefault(t, env, bin, dir)
	startBinDaemon(t, env, bin, dir)
	id := idOf(t, env, bin, dir)

	out := filepath.Join(tmp, "bundle.tar.gz")
	code, stdout, stderr := runBin(t, env, bin, "diag", "bundle", "-o", out, "--cpu-seconds", "1", "--repo", dir)
	if code != 0 {
		t.Fatalf("diag bundle: exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	if !regexp.MustCompile(`^` + regexp.QuoteMeta(out) + ` \(\d+(\.\d)? KiB\)\n$`).MatchString(stdout) {
		t.Errorf("stdout %q does not give the path and size", stdout)
	}
	files, top := readBundle(t, out)
	if want := `^wats-diag-` + id.PeerID[len(id.PeerID)-8:] + `-\d{8}T\d{6}Z$`; !regexp.MustCompile(want).MatchString(top) {
		t.Errorf("top directory %q, want %s", top, want)
	}
	if g := files["goroutine.txt"]; !bytes.HasPrefix(g, []byte("goroutine ")) {
		t.Errorf("goroutine.txt starts %.40q, not with a goroutine's header", g)
	}
	for name, want := range map[string]string{
		"README.txt":       "daemon.log",
		"version.json":     `"go_version"`,
		"id.json":          id.PeerID,
		"config.toml":      "[p2p]",
		"status.json":      id.PeerID,
		"peers.json":       "[",
		"peers-cache.json": "[",
		"limits.json":      `"requests"`,
		"diag.json":        `"requests"`,
		"metrics.txt":      "wats_requests_accepted_total",
		"daemon.log":       `msg="node started"`,
		"goroutine.txt":    "goroutine ",
		"heap.pb.gz":       "",
		"allocs.pb.gz":     "",
		"cpu.pb.gz":        "",
		"repo.txt":         repo.KeyFile,
		"errors.txt":       "every part was written\n",
	} {
		data, ok := files[name]
		switch {
		case !ok:
			t.Errorf("no %s in the archive", name)
		case len(data) == 0:
			t.Errorf("%s is empty", name)
		case !strings.Contains(string(data), want):
			t.Errorf("%s does not hold %q:\n%.2000s", name, want, data)
		}
		delete(files, name)
	}
	if len(files) > 0 {
		t.Errorf("files the test does not know: %v", files)
	}
	files, _ = readBundle(t, out)
	checkNoKey(t, dir, files)
}

// TestDiagBundleOffline: with no daemon, the bundle says so and holds the
// version, the config and the repo's layout, under the default name in
// the current directory.
func TestDiagBundleOffline(t *testing.T) {
	dir := newRepo(t)
	cwd := t.TempDir()
	t.Chdir(cwd)
	code, stdout, stderr := runCLI(t, "", "diag", "bundle", "--repo", dir)
	if code != 0 {
		t.Fatalf("diag bundle: exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	if !strings.Contains(stderr, "no daemon runs for "+dir) {
		t.Errorf("stderr does not say no daemon runs: %q", stderr)
	}
	r, err := repo.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	pid := repo.PeerID(r).String()
	matches, _ := filepath.Glob(filepath.Join(cwd, "wats-diag-"+pid[len(pid)-8:]+"-*T*Z.tar.gz"))
	if len(matches) != 1 || !strings.HasPrefix(stdout, filepath.Base(matches[0])+" (") {
		t.Fatalf("archives %v in the current directory, stdout %q; want one named after the peer ID", matches, stdout)
	}
	files, _ := readBundle(t, matches[0])
	for name, want := range map[string]string{
		"README.txt":   "No daemon was running",
		"version.json": `"go_version"`,
		"config.toml":  "network = ",
		"repo.txt":     repo.KeyFile,
		"errors.txt":   "no daemon runs for " + dir,
	} {
		if !strings.Contains(string(files[name]), want) {
			t.Errorf("%s does not hold %q:\n%s", name, want, files[name])
		}
		delete(files, name)
	}
	if len(files) > 0 {
		t.Errorf("files only a daemon can give, offline: %v", files)
	}
	files, _ = readBundle(t, matches[0])
	checkNoKey(t, dir, files)
	if left, _ := filepath.Glob(filepath.Join(cwd, ".wats-diag-*")); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

// TestDiagBundleCPUSeconds: --cpu-seconds takes 0 to maxCPUSeconds.
func TestDiagBundleCPUSeconds(t *testing.T) {
	for _, s := range []int{0, maxCPUSeconds} {
		if err := checkCPUSeconds(s); err != nil {
			t.Errorf("--cpu-seconds %d: %v", s, err)
		}
	}
	for _, s := range []string{"-1", "301"} {
		code, _, stderr := runCLI(t, "", "diag", "bundle", "--cpu-seconds", s, "--repo", newRepo(t))
		if code != 2 || !strings.Contains(stderr, "--cpu-seconds "+s) {
			t.Errorf("--cpu-seconds %s: exit %d, stderr %q; want a usage error", s, code, stderr)
		}
	}
}

// TestDiagBundlePartBound: a part of bundlePartBytes is kept whole; one
// byte more is cut there, and errors.txt will say so.
func TestDiagBundlePartBound(t *testing.T) {
	var b bundle
	var buf bytes.Buffer
	lb := &limitedBuffer{&buf, bundlePartBytes + 1}
	lb.Write(make([]byte, bundlePartBytes))
	b.add("whole", bytes.Clone(buf.Bytes()))
	lb.Write([]byte{1, 2})
	if buf.Len() != bundlePartBytes+1 {
		t.Fatalf("the buffer holds %d bytes, want %d", buf.Len(), bundlePartBytes+1)
	}
	b.add("cut", buf.Bytes())
	if len(b.files[0].data) != bundlePartBytes || len(b.files[1].data) != bundlePartBytes {
		t.Errorf("kept %d and %d bytes, want %d each", len(b.files[0].data), len(b.files[1].data), bundlePartBytes)
	}
	if len(b.errs) != 1 || !strings.HasPrefix(b.errs[0], "cut: cut at ") {
		t.Errorf("errors %q, want one for the cut part", b.errs)
	}
}

// TestConfigHoldsNoSecret: no key of config.toml is named as a secret is
// (the bundle would redact it: decide then whether the bundle should
// hold it), and redactSecrets hides the value of such a key.
func TestConfigHoldsNoSecret(t *testing.T) {
	for _, k := range config.Keys() {
		name := k[strings.LastIndex(k, ".")+1:]
		if secretKey.MatchString(name + " = 1") {
			t.Errorf("config key %s is named as a secret: decide what diag bundle does with it (docs/adr/0050)", k)
		}
	}
	toml := "network = \"key = x\"\n[relay]\nrelay_psk = \"hunter2\"\n  api_key=\"hunter2\"\nlisten = [\"a\"]\n"
	got := string(redactSecrets([]byte(toml)))
	want := "network = \"key = x\"\n[relay]\nrelay_psk = \"<redacted>\"\n  api_key= \"<redacted>\"\nlisten = [\"a\"]\n"
	if got != want {
		t.Errorf("redactSecrets:\n%s\nwant\n%s", got, want)
	}
}
