package repo

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// dirOfLen returns a path under base, len(path) == n, made of nested
// directories that exist.
func dirOfLen(t *testing.T, base string, n int) string {
	t.Helper()
	p := base
	for len(p) < n {
		seg := min(50, n-len(p)-1)
		if seg <= 0 {
			t.Fatalf("cannot make a path of %d bytes under %s", n, base)
		}
		p = filepath.Join(p, strings.Repeat("d", seg))
	}
	if len(p) != n {
		t.Fatalf("made %d bytes, want %d", len(p), n)
	}
	if err := os.MkdirAll(p, 0o700); err != nil {
		t.Fatal(err)
	}
	return p
}

// shortTemp returns a new empty directory with a short path, removed at
// the end of the test (t.TempDir's paths carry the test name).
func shortTemp(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("/tmp", "w")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

func TestSocketPathBound(t *testing.T) {
	t.Setenv("TMPDIR", "/tmp")
	base := t.TempDir()
	suffix := len("/" + SocketFile)

	at := dirOfLen(t, base, MaxSocketPathLen-suffix)
	r := &Repo{Dir: at}
	if p := r.SocketPath(); p != filepath.Join(at, SocketFile) || len(p) != MaxSocketPathLen {
		t.Errorf("SocketPath at the bound = %q (%d bytes), want it in the repo", p, len(p))
	}

	past := dirOfLen(t, base, MaxSocketPathLen-suffix+1)
	r = &Repo{Dir: past}
	p := r.SocketPath()
	wantDir := filepath.Join("/tmp", "wats-"+strconv.Itoa(os.Getuid()))
	if filepath.Dir(p) != wantDir || !strings.HasSuffix(p, ".sock") || len(p) > MaxSocketPathLen {
		t.Errorf("SocketPath past the bound = %q, want a short path in %s", p, wantDir)
	}
	if again := (&Repo{Dir: past}).SocketPath(); again != p {
		t.Errorf("SocketPath is not deterministic: %q, %q", p, again)
	}
	other := dirOfLen(t, base, MaxSocketPathLen-suffix+2)
	if q := (&Repo{Dir: other}).SocketPath(); q == p {
		t.Errorf("two repos share the socket %q", p)
	}
}

// TestLongRepoSocketWorks makes a repo whose own socket path is too long
// and checks that a daemon can listen on SocketPath and a client dial it.
func TestLongRepoSocketWorks(t *testing.T) {
	dir := dirOfLen(t, t.TempDir(), 150)
	tmp := shortTemp(t)
	t.Setenv("TMPDIR", tmp)
	r := mustInit(t, dir, &InitOptions{})
	release, err := r.Lock()
	if err != nil {
		t.Fatal(err)
	}
	defer release()

	p, err := r.PrepareSocket()
	if err != nil {
		t.Fatal(err)
	}
	if p != r.SocketPath() || !strings.HasPrefix(p, tmp) {
		t.Fatalf("PrepareSocket = %q, SocketPath = %q", p, r.SocketPath())
	}
	if m := mode(t, filepath.Dir(p)); m != 0o700 {
		t.Errorf("socket dir mode %04o, want 0700", m)
	}
	ln, err := net.Listen("unix", p)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err == nil {
			c.Write([]byte("hi"))
			c.Close()
		}
	}()

	// A client opens the repo on its own and finds the same socket.
	o, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("unix", o.SocketPath())
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 2)
	if _, err := c.Read(buf); err != nil || string(buf) != "hi" {
		t.Errorf("read %q, %v", buf, err)
	}
	c.Close()
}

func TestPrepareSocket(t *testing.T) {
	t.Run("stale socket is removed", func(t *testing.T) {
		r := mustInit(t, t.TempDir(), &InitOptions{})
		ln, err := net.Listen("unix", r.SocketPath())
		if err != nil {
			t.Fatal(err)
		}
		ln.(*net.UnixListener).SetUnlinkOnClose(false)
		ln.Close() // a daemon that died: the socket file stays
		p, err := r.PrepareSocket()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Errorf("stale socket still there: %v", err)
		}
		ln, err = net.Listen("unix", p)
		if err != nil {
			t.Fatal(err)
		}
		ln.Close()
	})
	t.Run("not a socket is kept", func(t *testing.T) {
		r := mustInit(t, t.TempDir(), &InitOptions{})
		if err := os.WriteFile(r.SocketPath(), []byte("data"), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := r.PrepareSocket(); err == nil || !strings.Contains(err.Error(), "is not a socket") {
			t.Errorf("PrepareSocket over a file = %v", err)
		}
		if b := readFile(t, r.SocketPath()); string(b) != "data" {
			t.Error("PrepareSocket removed a file that is not a socket")
		}
	})
	t.Run("open socket dir is refused", func(t *testing.T) {
		r := &Repo{Dir: dirOfLen(t, t.TempDir(), 120)}
		t.Setenv("TMPDIR", shortTemp(t))
		sd := filepath.Dir(r.SocketPath())
		if err := os.Mkdir(sd, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(sd, 0o755); err != nil {
			t.Fatal(err)
		}
		if _, err := r.PrepareSocket(); err == nil || !strings.Contains(err.Error(), "open to others (mode 0755)") {
			t.Errorf("PrepareSocket with dir 0755 = %v", err)
		}
	})
	t.Run("symlinked socket dir is refused", func(t *testing.T) {
		r := &Repo{Dir: dirOfLen(t, t.TempDir(), 120)}
		target := t.TempDir()
		t.Setenv("TMPDIR", shortTemp(t))
		if err := os.Symlink(target, filepath.Dir(r.SocketPath())); err != nil {
			t.Fatal(err)
		}
		if _, err := r.PrepareSocket(); err == nil || !strings.Contains(err.Error(), "not a directory") {
			t.Errorf("PrepareSocket with a symlinked dir = %v", err)
		}
	})
	t.Run("long TMPDIR", func(t *testing.T) {
		r := &Repo{Dir: dirOfLen(t, t.TempDir(), 120)}
		t.Setenv("TMPDIR", "/"+strings.Repeat("t", 100))
		if _, err := r.PrepareSocket(); err == nil || !strings.Contains(err.Error(), "set TMPDIR to a shorter directory") {
			t.Errorf("PrepareSocket with a long TMPDIR = %v", err)
		}
	})
}
