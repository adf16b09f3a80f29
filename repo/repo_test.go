package repo

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/wats-network/wats/bandwidth"
	"github.com/wats-network/wats/config"
)

func mode(t *testing.T, path string) fs.FileMode {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustInit(t *testing.T, dir string, opts *InitOptions) *Repo {
	t.Helper()
	r, err := Init(dir, opts)
	if err != nil {
		t.Fatalf("Init(%s): %v", dir, err)
	}
	return r
}

func TestInitCreatesRepo(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "parent", "repo")
	r := mustInit(t, dir, &InitOptions{})

	if r.Dir != dir {
		t.Errorf("Dir = %q, want %q", r.Dir, dir)
	}
	if m := mode(t, dir); m != 0o700 {
		t.Errorf("dir mode %04o, want 0700", m)
	}
	if m := mode(t, r.KeyPath()); m != 0o600 {
		t.Errorf("key mode %04o, want 0600", m)
	}
	if m := mode(t, r.ConfigPath()); m != 0o600 {
		t.Errorf("config mode %04o, want 0600", m)
	}
	if got := readFile(t, r.ConfigPath()); !bytes.Equal(got, config.Template(config.Default())) {
		t.Errorf("config.toml is not Template(Default()):\n%s", got)
	}
	if !reflect.DeepEqual(r.Config, config.Default()) {
		t.Errorf("Config = %+v, want Default()", r.Config)
	}
	key, err := crypto.UnmarshalPrivateKey(readFile(t, r.KeyPath()))
	if err != nil {
		t.Fatal(err)
	}
	if !key.Equals(r.Key) || r.Key.Type() != crypto.Ed25519 {
		t.Errorf("identity.key does not hold r.Key, or not Ed25519")
	}
	want, _ := peer.IDFromPublicKey(key.GetPublic())
	if id := PeerID(r); id != want || id == "" {
		t.Errorf("PeerID = %q, want %q", id, want)
	}
	// Nothing else is left: no temporary files; the lock file stays.
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if got := strings.Join(names, " "); got != "config.toml identity.key repo.lock" {
		t.Errorf("repo holds %q", got)
	}

	o, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if o.Dir != r.Dir || !o.Key.Equals(r.Key) || !reflect.DeepEqual(o.Config, r.Config) {
		t.Errorf("Open = %+v, want %+v", o, r)
	}
}

func TestInitWritesGivenConfig(t *testing.T) {
	c := config.Default()
	c.Network = "lab"
	c.P2P.Listen = []string{"/ip4/127.0.0.1/tcp/0"}
	r := mustInit(t, t.TempDir(), &InitOptions{Config: c})
	o, err := Open(r.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(o.Config, c) {
		t.Errorf("Config = %+v, want %+v", o.Config, c)
	}
}

func TestInitRefusesInvalidConfig(t *testing.T) {
	c := config.Default()
	c.Network = ""
	dir := filepath.Join(t.TempDir(), "repo")
	_, err := Init(dir, &InitOptions{Config: c})
	if !errors.Is(err, config.ErrInvalid) || !strings.Contains(err.Error(), "network") {
		t.Fatalf("Init with invalid config = %v", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Init created %s before refusing: %v", dir, err)
	}
}

func TestInitFixesModeOfExistingEmptyDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "repo")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	mustInit(t, dir, &InitOptions{})
	if m := mode(t, dir); m != 0o700 {
		t.Errorf("dir mode %04o, want 0700", m)
	}
}

func TestInitRefusesSecondInit(t *testing.T) {
	dir := t.TempDir()
	r := mustInit(t, dir, &InitOptions{})
	key := readFile(t, r.KeyPath())

	_, err := Init(dir, &InitOptions{})
	if !errors.Is(err, ErrAlreadyInitialized) {
		t.Fatalf("second Init = %v, want ErrAlreadyInitialized", err)
	}
	for _, want := range []string{dir, "already holds a wats repo", "--force"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if !bytes.Equal(readFile(t, r.KeyPath()), key) {
		t.Error("the refused Init changed the key")
	}
}

// TestInitRefusesPartialRepo: any one of the repo's own files makes dir a
// repo that only --force replaces.
func TestInitRefusesPartialRepo(t *testing.T) {
	for _, name := range []string{ConfigFile, KeyFile, DBDir} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			var err error
			if name == DBDir {
				err = os.Mkdir(filepath.Join(dir, name), 0o700)
			} else {
				err = os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o600)
			}
			if err != nil {
				t.Fatal(err)
			}
			if _, err := Init(dir, &InitOptions{}); !errors.Is(err, ErrAlreadyInitialized) || !strings.Contains(err.Error(), name) {
				t.Fatalf("Init = %v, want ErrAlreadyInitialized naming %s", err, name)
			}
			mustInit(t, dir, &InitOptions{Force: true})
		})
	}
}

func TestInitForceReplaces(t *testing.T) {
	dir := t.TempDir()
	old := mustInit(t, dir, &InitOptions{})
	db := old.DBPath()
	if err := os.MkdirAll(filepath.Join(db, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(db, "000001.sst"), []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o750); err != nil {
		t.Fatal(err)
	}

	c := config.Default()
	c.Network = "replaced"
	r, err := Init(dir, &InitOptions{Force: true, Config: c})
	if err != nil {
		t.Fatal(err)
	}
	if PeerID(r) == PeerID(old) {
		t.Error("Force kept the old identity")
	}
	if _, err := os.Stat(db); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Force kept db/: %v", err)
	}
	if m := mode(t, dir); m != 0o700 {
		t.Errorf("dir mode %04o, want 0700", m)
	}
	if m := mode(t, r.KeyPath()); m != 0o600 {
		t.Errorf("key mode %04o, want 0600", m)
	}
	o, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if PeerID(o) != PeerID(r) || o.Config.Network != "replaced" {
		t.Errorf("Open after Force: id %s network %q, want %s %q", PeerID(o), o.Config.Network, PeerID(r), "replaced")
	}
}

// TestInitAfterADaemonRan: a repo in which a daemon ran (its
// acknowledged mark, ballast, month's bandwidth count, a database a
// repair moved aside) is a wats repo, not a foreign directory: Init
// without Force refuses it as one, and Force replaces it, deleting the
// database and its acknowledged mark, keeping the rest.
func TestInitAfterADaemonRan(t *testing.T) {
	dir := t.TempDir()
	old := mustInit(t, dir, &InitOptions{})
	if err := os.MkdirAll(old.DBPath(), 0o700); err != nil {
		t.Fatal(err)
	}
	aside := DBDir + MovedAsideInfix + "20261205T101500Z"
	if err := os.MkdirAll(filepath.Join(dir, aside), 0o700); err != nil {
		t.Fatal(err)
	}
	kept := []string{BallastFile, bandwidth.MonthFile}
	for _, name := range append([]string{AckedFile}, kept...) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Init(dir, &InitOptions{}); !errors.Is(err, ErrAlreadyInitialized) {
		t.Fatalf("Init of a repo a daemon ran in = %v, want ErrAlreadyInitialized", err)
	}
	if _, err := Init(dir, &InitOptions{Force: true}); err != nil {
		t.Fatalf("Init with Force of a repo a daemon ran in: %v", err)
	}
	for _, name := range []string{DBDir, AckedFile} {
		if _, err := os.Stat(filepath.Join(dir, name)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("Force kept %s: %v", name, err)
		}
	}
	for _, name := range append(kept, aside) {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("Force deleted %s: %v", name, err)
		}
	}
}

func TestInitRefusesForeignFiles(t *testing.T) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"notes.txt", ".bashrc", "a", "b"} {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, force := range []bool{false, true} {
		_, err := Init(dir, &InitOptions{Force: force})
		if !errors.Is(err, ErrNotEmpty) || !strings.Contains(err.Error(), "not empty and not a wats repo") ||
			!strings.Contains(err.Error(), "and 1 more") {
			t.Fatalf("Init(force=%v) = %v, want ErrNotEmpty", force, err)
		}
	}
	if m := mode(t, dir); m != 0o755 {
		t.Errorf("refused Init changed the dir mode to %04o", m)
	}
}

func TestInitAcceptsLeftovers(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{LockFile, SocketFile, "." + KeyFile + ".tmp123"} {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	mustInit(t, dir, &InitOptions{})
}

func TestInitRefusesWhileLocked(t *testing.T) {
	dir := t.TempDir()
	r := mustInit(t, dir, &InitOptions{})
	if err := os.Mkdir(r.DBPath(), 0o700); err != nil {
		t.Fatal(err)
	}
	release, err := r.Lock()
	if err != nil {
		t.Fatal(err)
	}
	_, err = Init(dir, &InitOptions{Force: true})
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("Init --force on a locked repo = %v, want ErrLocked", err)
	}
	if _, err := os.Stat(r.DBPath()); err != nil {
		t.Errorf("Init on a locked repo touched db/: %v", err)
	}
	if err := release(); err != nil {
		t.Fatal(err)
	}
	mustInit(t, dir, &InitOptions{Force: true})
}

func TestInitAndOpenResolveSymlinks(t *testing.T) {
	base := t.TempDir()
	real := filepath.Join(base, "real")
	if err := os.Mkdir(real, 0o700); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(base, "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	r := mustInit(t, link, &InitOptions{})
	o, err := Open(link)
	if err != nil {
		t.Fatal(err)
	}
	if r.Dir != real || o.Dir != real {
		t.Errorf("Dir = %q (Init), %q (Open), want %q", r.Dir, o.Dir, real)
	}
}

func TestOpenNotInitialized(t *testing.T) {
	base := t.TempDir()
	spaced := filepath.Join(base, "my repo")
	if err := os.Mkdir(spaced, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ dir, hint string }{
		{filepath.Join(base, "missing"), filepath.Join(base, "missing")},
		{base, base}, // exists, empty
		{spaced, "'" + spaced + "'"},
	} {
		_, err := Open(tc.dir)
		if !errors.Is(err, ErrNotInitialized) {
			t.Fatalf("Open(%s) = %v, want ErrNotInitialized", tc.dir, err)
		}
		want := fmt.Sprintf("repo: no wats repo at %s; run `wats init --repo %s`", tc.dir, tc.hint)
		if err.Error() != want {
			t.Errorf("Open(%s) = %q, want %q", tc.dir, err, want)
		}
	}

	file := filepath.Join(base, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(file); !errors.Is(err, ErrNotInitialized) || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("Open(file) = %v", err)
	}
}

func TestOpenRelativePath(t *testing.T) {
	dir := t.TempDir()
	mustInit(t, dir, &InitOptions{})
	t.Chdir(dir)
	r, err := Open(".")
	if err != nil {
		t.Fatal(err)
	}
	if r.Dir != dir {
		t.Errorf("Dir = %q, want %q", r.Dir, dir)
	}
}

func TestOpenBadKey(t *testing.T) {
	secp, _, err := crypto.GenerateSecp256k1Key(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	secpBytes, _ := crypto.MarshalPrivateKey(secp)
	good := func(r *Repo) []byte {
		b, _ := crypto.MarshalPrivateKey(r.Key)
		return b
	}
	for _, tc := range []struct {
		name  string
		data  func(r *Repo) []byte // nil: remove the file
		dir   bool                 // make identity.key a directory
		wants string
	}{
		{name: "garbage", data: func(*Repo) []byte { return []byte("not a key") }, wants: "not a libp2p private key"},
		{name: "empty", data: func(*Repo) []byte { return nil }, wants: "not a libp2p private key"},
		{name: "truncated", data: func(r *Repo) []byte { return good(r)[:40] }, wants: "not a libp2p private key"},
		{name: "secp256k1", data: func(*Repo) []byte { return secpBytes }, wants: "holds a Secp256k1 key; a wats identity is Ed25519"},
		{name: "at size cap", data: func(*Repo) []byte { return bytes.Repeat([]byte{0xff}, MaxKeyFileSize) }, wants: "not a libp2p private key"},
		{name: "past size cap", data: func(*Repo) []byte { return bytes.Repeat([]byte{0xff}, MaxKeyFileSize+1) }, wants: "larger than 4096 bytes"},
		{name: "missing", wants: "identity.key is missing"},
		{name: "directory", dir: true, wants: "not a regular file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := mustInit(t, t.TempDir(), &InitOptions{})
			if err := os.Remove(r.KeyPath()); err != nil {
				t.Fatal(err)
			}
			switch {
			case tc.dir:
				if err := os.Mkdir(r.KeyPath(), 0o700); err != nil {
					t.Fatal(err)
				}
			case tc.data != nil:
				if err := os.WriteFile(r.KeyPath(), tc.data(r), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			_, err := Open(r.Dir)
			if !errors.Is(err, ErrBadKey) {
				t.Fatalf("Open = %v, want ErrBadKey", err)
			}
			for _, want := range []string{r.KeyPath(), tc.wants, "wats init --force --repo " + r.Dir} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q lacks %q", err, want)
				}
			}
		})
	}
}

func TestOpenKeyPermissions(t *testing.T) {
	r := mustInit(t, t.TempDir(), &InitOptions{})
	for _, m := range []fs.FileMode{0o640, 0o604, 0o660, 0o644, 0o602} {
		if err := os.Chmod(r.KeyPath(), m); err != nil {
			t.Fatal(err)
		}
		_, err := Open(r.Dir)
		if !errors.Is(err, ErrKeyPermissions) {
			t.Fatalf("Open with key mode %04o = %v, want ErrKeyPermissions", m, err)
		}
		for _, want := range []string{fmt.Sprintf("mode %04o", m), "chmod 600 " + r.KeyPath()} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q lacks %q", err, want)
			}
		}
	}
	for _, m := range []fs.FileMode{0o600, 0o400} {
		if err := os.Chmod(r.KeyPath(), m); err != nil {
			t.Fatal(err)
		}
		if _, err := Open(r.Dir); err != nil {
			t.Errorf("Open with key mode %04o: %v", m, err)
		}
	}
}

func TestOpenConfigProblems(t *testing.T) {
	r := mustInit(t, t.TempDir(), &InitOptions{})
	if err := os.WriteFile(r.ConfigPath(), []byte("[p2p]\nlistn = []\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Open(r.Dir)
	if !errors.Is(err, config.ErrUnknownKey) || !strings.HasPrefix(err.Error(), r.ConfigPath()+":2:1: ") {
		t.Errorf("Open with unknown key = %v", err)
	}

	if err := os.Remove(r.ConfigPath()); err != nil {
		t.Fatal(err)
	}
	_, err = Open(r.Dir)
	if !errors.Is(err, ErrIncomplete) || !strings.Contains(err.Error(), r.ConfigPath()+" is missing") {
		t.Errorf("Open without config.toml = %v", err)
	}

	// An empty config.toml means every default.
	if err := os.WriteFile(r.ConfigPath(), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	o, err := Open(r.Dir)
	if err != nil || !reflect.DeepEqual(o.Config, config.Default()) {
		t.Errorf("Open with empty config.toml = %+v, %v", o, err)
	}
}

func TestLock(t *testing.T) {
	r := mustInit(t, t.TempDir(), &InitOptions{})
	release, err := r.Lock()
	if err != nil {
		t.Fatal(err)
	}
	if m := mode(t, r.LockPath()); m != 0o600 {
		t.Errorf("lock file mode %04o, want 0600", m)
	}
	if got, want := string(readFile(t, r.LockPath())), strconv.Itoa(os.Getpid())+"\n"; got != want {
		t.Errorf("lock file holds %q, want %q", got, want)
	}

	// A second Lock, here or in another process, fails and names the holder.
	_, err = r.Lock()
	var le *LockedError
	if !errors.Is(err, ErrLocked) || !errors.As(err, &le) || le.PID != os.Getpid() || le.Dir != r.Dir {
		t.Fatalf("second Lock = %#v, want a LockedError with our pid", err)
	}
	if want := fmt.Sprintf("repo: %s is in use by another wats daemon (pid %d)", r.Dir, os.Getpid()); err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}

	if err := release(); err != nil {
		t.Fatal(err)
	}
	if err := release(); err != nil {
		t.Errorf("second release: %v", err)
	}
	if got := readFile(t, r.LockPath()); len(got) != 0 {
		t.Errorf("lock file holds %q after release", got)
	}
	release2, err := r.Lock()
	if err != nil {
		t.Fatalf("Lock after release: %v", err)
	}
	release2()
}

func TestLockedErrorWithoutPID(t *testing.T) {
	e := &LockedError{Dir: "/r"}
	if got := e.Error(); got != "repo: /r is in use by another wats daemon (pid unknown)" {
		t.Errorf("Error() = %q", got)
	}
}

func TestDefaultPath(t *testing.T) {
	t.Setenv(EnvPath, "/srv/wats")
	if p, err := DefaultPath(); err != nil || p != "/srv/wats" {
		t.Errorf("DefaultPath with $%s = %q, %v", EnvPath, p, err)
	}
	t.Setenv(EnvPath, "")
	t.Setenv("HOME", "/home/ada")
	if p, err := DefaultPath(); err != nil || p != "/home/ada/.wats" {
		t.Errorf("DefaultPath = %q, %v; want /home/ada/.wats", p, err)
	}
}

func TestPeerIDNilKey(t *testing.T) {
	if id := PeerID(&Repo{}); id != "" {
		t.Errorf("PeerID without key = %q", id)
	}
}

// TestImports keeps repo's place in the layers: of wats, it imports config,
// internal/fileio (a leaf: its atomic whole-file write) and bandwidth (the
// name of its file in the repo) only.
func TestImports(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		checked++
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if strings.HasPrefix(path, "github.com/wats-network/wats") && path != "github.com/wats-network/wats/config" &&
				path != "github.com/wats-network/wats/internal/fileio" && path != "github.com/wats-network/wats/bandwidth" {
				t.Errorf("%s imports %s: repo imports no wats package but config, internal/fileio and bandwidth", name, path)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no source files found")
	}
}

// TestLockWaitsForReaders: readers (RLock) take the lock one at a time,
// each waiting for the other; a daemon's Lock waits for the reader, then
// takes it; while it holds it, RLock fails at once and names it.
func TestLockWaitsForReaders(t *testing.T) {
	r := mustInit(t, t.TempDir(), &InitOptions{})
	rel1, err := r.RLock()
	if err != nil {
		t.Fatal(err)
	}
	read2 := make(chan func() error, 1)
	go func() {
		rel, err := r.RLock()
		if err != nil {
			t.Errorf("a second reader: %v", err)
		}
		read2 <- rel
	}()
	select {
	case <-read2:
		t.Fatal("a second reader took the lock while the first held it")
	default:
	}
	rel1()
	rel2 := <-read2
	locked := make(chan error, 1)
	var release func() error
	go func() {
		var err error
		release, err = r.Lock()
		locked <- err
	}()
	select {
	case err := <-locked:
		t.Fatalf("Lock returned (%v) while a reader still held the repo", err)
	default:
	}
	rel2()
	if err := <-locked; err != nil {
		t.Fatalf("Lock after the readers: %v", err)
	}
	defer release()
	_, err = r.RLock()
	var le *LockedError
	if !errors.As(err, &le) || le.PID != os.Getpid() {
		t.Fatalf("RLock while the daemon holds the repo = %v, want a LockedError with its pid", err)
	}
}

// TestLockHolder: a repo without a lock file, or with one no process
// holds, is not held; a daemon's Lock is held with its pid, a reader's
// RLock without one; LockHolder takes no lock a daemon would then find.
func TestLockHolder(t *testing.T) {
	r := mustInit(t, t.TempDir(), &InitOptions{})
	os.Remove(r.LockPath())
	if pid, held, err := LockHolder(r.Dir); err != nil || held || pid != 0 {
		t.Fatalf("no lock file: pid %d, held %v, %v", pid, held, err)
	}
	release, err := r.Lock()
	if err != nil {
		t.Fatal(err)
	}
	if pid, held, err := LockHolder(r.Dir); err != nil || !held || pid != os.Getpid() {
		t.Fatalf("a daemon's lock: pid %d, held %v, %v; want held by %d", pid, held, err, os.Getpid())
	}
	release()
	if pid, held, err := LockHolder(r.Dir); err != nil || held || pid != 0 {
		t.Fatalf("released: pid %d, held %v, %v", pid, held, err)
	}
	rrelease, err := r.RLock()
	if err != nil {
		t.Fatal(err)
	}
	if pid, held, err := LockHolder(r.Dir); err != nil || !held || pid != 0 {
		t.Fatalf("a reader's lock: pid %d, held %v, %v; want held, no pid", pid, held, err)
	}
	rrelease()
	release, err = r.Lock() // LockHolder kept nothing
	if err != nil {
		t.Fatalf("Lock after LockHolder: %v", err)
	}
	release()
}
