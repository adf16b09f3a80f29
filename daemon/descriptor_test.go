//go:build unix

package daemon

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wats-network/wats/api"
	"github.com/wats-network/wats/config"
	"github.com/wats-network/wats/node"
)

// randFile writes n pseudo-random bytes to a new file and returns its path
// and content.
func randFile(t *testing.T, n int, seed uint64) (string, []byte) {
	t.Helper()
	data := make([]byte, n)
	r := rand.New(rand.NewPCG(seed, 2))
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	path := filepath.Join(t.TempDir(), "f.bin")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path, data
}

// addFile runs c.AddFile on the file at path, opened with flag.
func addFile(t *testing.T, c *api.Client, path string, opts *api.AddFileOptions) (*api.BlobInfo, error) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return c.AddFile(context.Background(), f, opts)
}

// importCount returns wats_blob_imports_total{via, outcome} as the
// daemon's metrics show it ("" when absent).
func importCount(t *testing.T, c *api.Client, via, outcome string) string {
	t.Helper()
	m, err := c.Metrics(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	prefix := `wats_blob_imports_total{outcome="` + outcome + `",via="` + via + `"} `
	for _, line := range strings.Split(m, "\n") {
		if v, ok := strings.CutPrefix(line, prefix); ok {
			return v
		}
	}
	return ""
}

// TestImportByDescriptorSameBlob: a file passed open to the daemon is the
// same blob as its bytes uploaded, whatever the file's size (empty, one
// byte, one chunk exactly, a chunk and a byte, several chunks) and
// whatever the offset of the descriptor passed; the metrics tell the two
// ways apart.
func TestImportByDescriptorSameBlob(t *testing.T) {
	n := startNode(t, nil)
	c := apiClient(t, n)
	ctx := context.Background()
	sizes := []int{0, 1, 1 << 20, 1<<20 + 1, 5<<19 + 7}
	for i, size := range sizes {
		path, data := randFile(t, size, uint64(i))
		want, err := c.AddBlob(ctx, bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		f.Seek(int64(size/2), io.SeekStart) // the blob is the whole file all the same
		byDesc, err := c.AddFile(ctx, f, nil)
		if err != nil || *byDesc != *want {
			t.Fatalf("%d bytes by descriptor: %+v, %v; uploaded: %+v", size, byDesc, err, want)
		}
		f.Seek(int64(size/3), io.SeekStart)
		byUpload, err := c.AddFile(ctx, f, &api.AddFileOptions{Upload: true})
		f.Close()
		if err != nil || *byUpload != *want {
			t.Fatalf("%d bytes uploaded by AddFile: %+v, %v; want %+v", size, byUpload, err, want)
		}
		var out bytes.Buffer
		if err := c.GetBlob(ctx, want.CID, want.Size, &out); err != nil || !bytes.Equal(out.Bytes(), data) {
			t.Fatalf("%d bytes: the blob reads back as %d bytes, %v", size, out.Len(), err)
		}
	}
	if got := importCount(t, c, "descriptor", "stored"); got != "5" {
		t.Errorf("descriptor imports stored: %q, want 5", got)
	}
	if got := importCount(t, c, "upload", "stored"); got != "10" {
		t.Errorf("uploads stored: %q, want 10", got)
	}
}

// TestImportBounds: at blobs.max_blob_bytes and at the quota's room a file
// is stored, by descriptor or uploaded; one byte past either it is refused
// with 413 before a byte of it is read or sent, and nothing is stored.
func TestImportBounds(t *testing.T) {
	const max = 2<<20 + 1
	n := startNode(t, func(cfg *config.Config) {
		cfg.Blobs.MaxBlobBytes = max
		cfg.Blobs.QuotaBytes = max + 1<<20
	})
	c := apiClient(t, n)
	ctx := context.Background()
	refused := func(size int, seed uint64, want string) {
		t.Helper()
		path, _ := randFile(t, size, seed)
		for _, upload := range []bool{false, true} {
			var read uint64
			_, err := addFile(t, c, path, &api.AddFileOptions{Upload: upload, Progress: func(n uint64) { read = n }})
			var ae *api.Error
			if !errors.As(err, &ae) || ae.Status != http.StatusRequestEntityTooLarge || !strings.Contains(ae.Message, want) {
				t.Fatalf("%d bytes (upload %v): %v, want 413 naming %s", size, upload, err, want)
			}
			if read != 0 {
				t.Errorf("%d bytes (upload %v): %d bytes read before the refusal, want 0", size, upload, read)
			}
		}
	}
	refused(max+1, 1, "blobs.max_blob_bytes")
	if list, _ := c.Blobs(ctx); len(list) != 0 || n.Blobs().QuotaUsed() != 0 {
		t.Fatalf("after refusals: %d blobs, %d bytes used", len(list), n.Blobs().QuotaUsed())
	}
	path, _ := randFile(t, max, 2)
	if bi, err := addFile(t, c, path, nil); err != nil || bi.Size != max {
		t.Fatalf("at max_blob_bytes: %+v, %v", bi, err)
	}
	refused(1<<20+1, 3, "blobs.quota_bytes")
	path, _ = randFile(t, 1<<20, 4)
	if bi, err := addFile(t, c, path, nil); err != nil || bi.Size != 1<<20 {
		t.Fatalf("at the quota's room: %+v, %v", bi, err)
	}
	if list, _ := c.Blobs(ctx); len(list) != 2 || n.Blobs().QuotaUsed() != max+1<<20 {
		t.Fatalf("%d blobs, %d bytes used; want 2, %d", len(list), n.Blobs().QuotaUsed(), max+1<<20)
	}
	for _, via := range []string{"descriptor", "upload"} {
		if got := importCount(t, c, via, "refused"); got != "2" {
			t.Errorf("%s imports refused: %q, want 2", via, got)
		}
	}
}

// serveAndDial serves n's control API as serveSocket does and returns
// the socket and a client of it.
func serveAndDial(t *testing.T, n *node.Node) (string, *api.Client) {
	t.Helper()
	sock := serveSocket(t, n)
	c := api.NewClient(sock)
	t.Cleanup(c.Close)
	return sock, c
}

// rawRequest writes parts to a new connection to sock, part i with the
// descriptors fds[i] (if any) as SCM_RIGHTS, and returns the status and
// body of the answer.
func rawRequest(t *testing.T, sock string, parts []string, fds ...[]int) (int, string) {
	t.Helper()
	conn, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	uc := conn.(*net.UnixConn)
	for i, p := range parts {
		var oob []byte
		if i < len(fds) && len(fds[i]) > 0 {
			oob = syscall.UnixRights(fds[i]...)
		}
		if _, _, err := uc.WriteMsgUnix([]byte(p), oob, nil); err != nil {
			t.Fatal(err)
		}
	}
	uc.SetReadDeadline(time.Now().Add(20 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(uc), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

const importHead = "POST " + api.PathBlobImport + " HTTP/1.1\r\nHost: wats\r\nContent-Length: 0\r\n\r\n"

// fdOf returns f's descriptor number (f stays open until the test ends).
func fdOf(t *testing.T, f *os.File) int {
	t.Helper()
	t.Cleanup(func() { f.Close() })
	return int(f.Fd())
}

// TestImportDescriptorRefused: what a client passes is refused with a
// clear error unless it is one regular file open for reading: no
// descriptor, one open for writing only, a directory, a pipe, a device,
// two in one message or in two; a file open for reading and writing is
// taken. The daemon keeps serving after each and stores nothing refused.
func TestImportDescriptorRefused(t *testing.T) {
	sock, c := serveAndDial(t, startNode(t, nil))
	path, _ := randFile(t, 3000, 1)
	open := func(name string, flag int) int {
		f, err := os.OpenFile(name, flag, 0)
		if err != nil {
			t.Fatal(err)
		}
		return fdOf(t, f)
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	rd := open(path, os.O_RDONLY)
	for _, tc := range []struct {
		name   string
		parts  []string
		fds    [][]int
		status int
		want   string
	}{
		{"no descriptor", []string{importHead}, nil, api.StatusNoDescriptor, "no file descriptor came"},
		{"write only", []string{importHead}, [][]int{{open(path, os.O_WRONLY)}}, http.StatusBadRequest, "open for writing only"},
		{"a directory", []string{importHead}, [][]int{{open(t.TempDir(), os.O_RDONLY)}}, http.StatusBadRequest, "is a directory, not a regular file"},
		{"a pipe", []string{importHead}, [][]int{{fdOf(t, pr)}}, http.StatusBadRequest, "is a pipe"},
		{"a device", []string{importHead}, [][]int{{open(os.DevNull, os.O_RDONLY)}}, http.StatusBadRequest, "is a device"},
		{"two in one message", []string{importHead}, [][]int{{rd, rd}}, http.StatusBadRequest, "more than one descriptor"},
		{"two in two messages", []string{importHead[:10], importHead[10:]}, [][]int{{rd}, {rd}}, http.StatusBadRequest, "more than one descriptor"},
		{"read and write", []string{importHead}, [][]int{{open(path, os.O_RDWR)}}, http.StatusOK, `"done":true`},
		{"one, read only", []string{importHead[:10], importHead[10:]}, [][]int{nil, {rd}}, http.StatusOK, `"done":true`},
	} {
		status, body := rawRequest(t, sock, tc.parts, tc.fds...)
		if status != tc.status || !strings.Contains(body, tc.want) {
			t.Errorf("%s: %d %s, want %d with %q", tc.name, status, body, tc.status, tc.want)
		}
		if _, err := c.ID(context.Background()); err != nil {
			t.Fatalf("after %s the daemon does not answer: %v", tc.name, err)
		}
		if list, _ := c.Blobs(context.Background()); tc.status != http.StatusOK && len(list) != 0 {
			t.Fatalf("after %s: %d blobs stored", tc.name, len(list))
		}
	}
	pw.Close()
}

// waitClosed waits until every holder of the write end of the pipe whose
// read end is r has closed it: r then reads EOF.
func waitClosed(t *testing.T, r *os.File, what string) {
	t.Helper()
	r.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := r.Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("%s: the daemon still holds the descriptor (read: %v, want EOF)", what, err)
	}
}

// TestPassedDescriptorsClosed: every descriptor a client passes is closed
// by the daemon once its request is over, taken by an import or not: with
// a request of another path, refused, one of two, or with a request cut
// off.
func TestPassedDescriptorsClosed(t *testing.T) {
	n := startNode(t, nil)
	sock := serveSocket(t, n)
	pipe := func() (*os.File, int) {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		fd, err := syscall.Dup(int(w.Fd()))
		w.Close()
		if err != nil {
			t.Fatal(err)
		}
		return r, fd
	}
	send := func(fds ...int) {
		for _, fd := range fds {
			defer syscall.Close(fd)
		}
		conn, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if _, _, err := conn.(*net.UnixConn).WriteMsgUnix([]byte("GET"), syscall.UnixRights(fds...), nil); err != nil {
			t.Fatal(err)
		}
	}
	// With a GET: answered, the descriptor dropped.
	r1, w1 := pipe()
	if status, _ := rawRequest(t, sock, []string{"GET " + api.PathID + " HTTP/1.1\r\nHost: wats\r\n\r\n"}, []int{w1}); status != http.StatusOK {
		t.Fatalf("GET id with a descriptor: %d", status)
	}
	syscall.Close(w1)
	waitClosed(t, r1, "a GET with a descriptor")
	// Refused by the import (open for writing only).
	r2, w2 := pipe()
	if status, _ := rawRequest(t, sock, []string{importHead}, []int{w2}); status != http.StatusBadRequest {
		t.Fatalf("import of a pipe's write end: %d", status)
	}
	syscall.Close(w2)
	waitClosed(t, r2, "a refused import")
	// Two at once, and a request cut off after its first bytes.
	r3, w3 := pipe()
	r4, w4 := pipe()
	send(w3, w4)
	waitClosed(t, r3, "the first of two")
	waitClosed(t, r4, "the second of two")
	r5, w5 := pipe()
	send(w5)
	waitClosed(t, r5, "a request cut off")
}

// TestImportProgress: an import by descriptor reports the bytes read as
// it goes, up to the file's size.
func TestImportProgress(t *testing.T) {
	defer func(d time.Duration) { importProgressEvery = d }(importProgressEvery)
	importProgressEvery = 0 // a line at every read
	n := startNode(t, nil)
	c := apiClient(t, n)
	const size = 4<<20 + 5
	path, _ := randFile(t, size, 1)
	var seen []uint64
	bi, err := addFile(t, c, path, &api.AddFileOptions{Progress: func(n uint64) { seen = append(seen, n) }})
	if err != nil || bi.Size != size {
		t.Fatalf("%+v, %v", bi, err)
	}
	if len(seen) < 3 || seen[len(seen)-1] != size {
		t.Fatalf("progress %v, want several reports ending at %d", seen, size)
	}
	for i := 1; i < len(seen); i++ {
		if seen[i] < seen[i-1] {
			t.Fatalf("progress went back: %v", seen)
		}
	}
	if got := importCount(t, c, "descriptor", "stored"); got != "1" {
		t.Errorf("descriptor imports: %q, want 1", got)
	}
}

// TestImportThroughForwardedSocket: through a socket forwarded as ssh -L
// forwards one (bytes copied, descriptors not), the daemon takes no
// descriptor, and AddFile uploads the file: the same blob.
func TestImportThroughForwardedSocket(t *testing.T) {
	n := startNode(t, nil)
	sock := serveSocket(t, n)
	fwd := filepath.Join(t.TempDir(), "fwd.sock")
	l, err := net.Listen("unix", fwd)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			in, err := l.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("unix", sock)
			if err != nil {
				in.Close()
				return
			}
			go func() { io.Copy(out, in); out.(*net.UnixConn).CloseWrite() }()
			go func() { io.Copy(in, out); in.Close() }()
		}
	}()
	c := api.NewClient(fwd)
	defer c.Close()
	path, data := randFile(t, 3<<20+3, 1)
	bi, err := addFile(t, c, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	want, err := apiClient(t, n).AddBlob(context.Background(), bytes.NewReader(data))
	if err != nil || *bi != *want {
		t.Fatalf("through the forward: %+v; uploaded directly: %+v, %v", bi, want, err)
	}
	direct := apiClient(t, n)
	if got := importCount(t, direct, "upload", "stored"); got != "2" {
		t.Errorf("uploads: %q, want 2 (the forwarded one and the direct one)", got)
	}
	if got := importCount(t, direct, "descriptor", "stored"); got != "0" {
		t.Errorf("descriptor imports: %q, want none", got)
	}
	// blob get's file, likewise: no descriptor goes through, the bytes do.
	out, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	if k, err := c.StreamBlobToFile(context.Background(), api.FetchRequest{CID: bi.CID, Size: bi.Size}, out, nil); err != nil || k != bi.Size {
		t.Fatalf("stream into a file through the forward: %d bytes, %v", k, err)
	}
	if b, _ := os.ReadFile(out.Name()); !bytes.Equal(b, data) {
		t.Fatalf("the file streamed through the forward: %d bytes, not the blob", len(b))
	}
}

// TestFileReaderShrunk: a passed file that has fewer bytes than it had
// when the import began fails it, as an upload cut short does.
func TestFileReaderShrunk(t *testing.T) {
	for _, tc := range []struct {
		have, size int
		ok         bool
	}{{10, 10, true}, {9, 10, false}, {0, 1, false}, {0, 0, true}} {
		fr := &fileReader{ctx: context.Background(), r: bytes.NewReader(make([]byte, tc.have)), size: int64(tc.size), report: func(int64) {}}
		_, err := io.ReadAll(fr)
		if tc.ok != (err == nil) || (err != nil && !errors.Is(err, io.ErrUnexpectedEOF)) {
			t.Errorf("%d bytes of %d: %v", tc.have, tc.size, err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	fr := &fileReader{ctx: ctx, r: bytes.NewReader(make([]byte, 5)), size: 5, report: func(int64) {}}
	if _, err := fr.Read(make([]byte, 5)); !errors.Is(err, context.Canceled) {
		t.Errorf("read after the client went away: %v", err)
	}
}

// TestDescConnReadFailure: a read that fails (here the peer closed with
// our answer unread: ECONNRESET) returns 0 bytes, never recvmsg's -1,
// which net/http's reader would panic on.
func TestDescConnReadFailure(t *testing.T) {
	l, err := net.Listen("unix", filepath.Join(t.TempDir(), "s.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	dl := wrapListener(l)
	client, err := net.Dial("unix", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server, err := dl.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close()
	if _, err := server.Write([]byte("unread")); err != nil {
		t.Fatal(err)
	}
	client.Close()
	n, err := server.Read(make([]byte, 16))
	if n != 0 || err == nil {
		t.Fatalf("read after the peer reset: %d, %v; want 0 and an error", n, err)
	}
}

// TestStreamIntoPassedFile: blob get's file passed open to the daemon
// (api.PathBlobStreamFile) gets exactly the blob, written by the daemon,
// for every size; a descriptor that is not an empty regular file open for
// writing is refused before anything is written; without a descriptor
// (through a forwarded socket) StreamBlobToFile streams the bytes instead.
func TestStreamIntoPassedFile(t *testing.T) {
	n := startNode(t, nil)
	sock, c := serveAndDial(t, n)
	ctx := context.Background()
	for i, size := range []int{0, 1, 1 << 20, 1<<20 + 1, 5<<19 + 7} {
		_, data := randFile(t, size, uint64(100+i))
		bi, err := c.AddBlob(ctx, bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		out, err := os.Create(filepath.Join(t.TempDir(), "out"))
		if err != nil {
			t.Fatal(err)
		}
		var seen uint64
		got, err := c.StreamBlobToFile(ctx, api.FetchRequest{CID: bi.CID, Size: bi.Size}, out, func(p api.FetchProgress) { seen = p.Bytes })
		out.Close()
		b, _ := os.ReadFile(out.Name())
		if err != nil || got != uint64(size) || !bytes.Equal(b, data) || (size > 0 && seen != uint64(size)) {
			t.Fatalf("%d bytes: wrote %d (progress %d), %v; the file has %d bytes, same %v", size, got, seen, err, len(b), bytes.Equal(b, data))
		}
	}
	_, data := randFile(t, 3000, 200)
	bi, err := c.AddBlob(ctx, bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	body := `{"cid":"` + bi.CID + `","size":3000}`
	head := "POST " + api.PathBlobStreamFile + " HTTP/1.1\r\nHost: wats\r\nContent-Type: application/json\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
	dir := t.TempDir()
	file := func(name string, content []byte, flag int) int {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, content, 0o600); err != nil {
			t.Fatal(err)
		}
		f, err := os.OpenFile(p, flag, 0)
		if err != nil {
			t.Fatal(err)
		}
		return fdOf(t, f)
	}
	// seeked moves the offset of the descriptor fd past the file's end: a
	// write there would leave a hole of zeros before the blob.
	seeked := func(fd int) int {
		if _, err := syscall.Seek(fd, 1000, io.SeekStart); err != nil {
			t.Fatal(err)
		}
		return fd
	}
	for _, tc := range []struct {
		name   string
		fds    [][]int
		status int
		want   string
	}{
		{"no descriptor", nil, api.StatusNoDescriptor, "no file descriptor came"},
		{"read only", [][]int{{file("ro", nil, os.O_RDONLY)}}, http.StatusBadRequest, "not open for writing"},
		{"appending", [][]int{{file("ap", nil, os.O_WRONLY|os.O_APPEND)}}, http.StatusBadRequest, "open for appending"},
		{"not empty, one byte", [][]int{{file("full", []byte{1}, os.O_WRONLY)}}, http.StatusBadRequest, "holds 1 bytes"},
		{"a directory", [][]int{{fdOf(t, mustOpen(t, dir))}}, http.StatusBadRequest, "not open for writing"},
		{"a device", [][]int{{fdOf(t, mustOpenFile(t, os.DevNull, os.O_WRONLY))}}, http.StatusBadRequest, "is a device"},
		{"empty, its offset past its start", [][]int{{seeked(file("seeked", nil, os.O_WRONLY))}}, http.StatusBadRequest, "offset"},
		{"empty, write only", [][]int{{file("ok", nil, os.O_WRONLY)}}, http.StatusOK, `"done":true`},
	} {
		status, resp := rawRequest(t, sock, []string{head}, tc.fds...)
		if status != tc.status || !strings.Contains(resp, tc.want) {
			t.Errorf("%s: %d %s, want %d with %q", tc.name, status, resp, tc.status, tc.want)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "seeked")); len(b) != 0 {
		t.Fatalf("a file passed at offset 1000 was written to: %d bytes", len(b))
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "full")); len(b) != 1 {
		t.Fatalf("a refused file was written to: %d bytes", len(b))
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "ok")); !bytes.Equal(b, data) {
		t.Fatalf("the empty write-only file holds %d bytes, not the blob", len(b))
	}
}

func mustOpen(t *testing.T, path string) *os.File { return mustOpenFile(t, path, os.O_RDONLY) }

func mustOpenFile(t *testing.T, path string, flag int) *os.File {
	t.Helper()
	f, err := os.OpenFile(path, flag, 0)
	if err != nil {
		t.Fatal(err)
	}
	return f
}
