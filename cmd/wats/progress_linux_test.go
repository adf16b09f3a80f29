package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/wats-network/wats/api"
)

// openPTY opens a pseudo-terminal and returns its two ends: what is
// written to the terminal end (a terminal to isTerminal) can be read
// from the other.
func openPTY(t *testing.T) (term, other *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal here: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if err := unix.IoctlSetWinsize(int(s.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 24, Col: 100}); err != nil {
		t.Fatal(err)
	}
	return s, m
}

// onTerminal runs cmd with a pseudo-terminal as its terminal and returns
// its exit code and what it wrote there. The terminal is read as the
// command writes to it (a terminal's buffer is small), up to a mark
// written after the command.
func onTerminal(t *testing.T, cmd func(term *os.File) int) (code int, screen string) {
	t.Helper()
	term, other := openPTY(t)
	const mark = "<end of the command>"
	seen := make(chan string, 1)
	go func() {
		var screen bytes.Buffer
		buf := make([]byte, 4096)
		for !strings.Contains(screen.String(), mark) {
			n, err := other.Read(buf)
			screen.Write(buf[:n])
			if err != nil {
				break
			}
		}
		seen <- screen.String()
	}()
	code = cmd(term)
	io.WriteString(term, mark)
	return code, <-seen
}

// TestBlobAddProgressBar: on a terminal, blob add shows a progress bar
// whether the daemon reads the file (its progress lines) or the file is
// uploaded (the bytes sent); stdout gets the CID:SIZE:NAME line alone.
func TestBlobAddProgressBar(t *testing.T) {
	const size = 3 << 20
	file := filepath.Join(t.TempDir(), "f.bin")
	if err := os.WriteFile(file, make([]byte, size), 0o600); err != nil {
		t.Fatal(err)
	}
	byDescriptor := http.NewServeMux()
	byDescriptor.HandleFunc("POST "+api.PathBlobImport, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", api.ContentTypeNDJSON)
		fmt.Fprintf(w, "{\"bytes\":%d,\"size\":%d}\n{\"bytes\":%d,\"size\":%d,\"done\":true,\"cid\":\"bafyd\"}\n", size/2, size, size, size)
	})
	uploaded := http.NewServeMux() // a daemon that takes no descriptor
	uploaded.HandleFunc("POST "+api.PathBlobs, func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		writeJSON(w, api.BlobInfo{CID: "bafyu", Size: uint64(n)})
	})
	for _, tc := range []struct {
		name string
		h    http.Handler
		cid  string
	}{{"descriptor", byDescriptor, "bafyd"}, {"upload", uploaded, "bafyu"}} {
		dir := fakeDaemon(t, tc.h)
		var out bytes.Buffer
		code, got := onTerminal(t, func(term *os.File) int {
			return run(t.Context(), []string{"blob", "add", file, "--repo", dir}, strings.NewReader(""), &out, term)
		})
		if code != exitOK || out.String() != tc.cid+":3145728:f.bin\n" {
			t.Errorf("%s: exit %d, stdout %q, terminal %q", tc.name, code, out.String(), got)
		}
		// In binary units, as the rest of the CLI: 3 MiB, not 3.1 MB.
		if !strings.Contains(got, "add f.bin") || !strings.Contains(got, "/3.0 MiB") || strings.Contains(got, " MB") {
			t.Errorf("%s: the terminal shows no progress bar of the file's 3.0 MiB: %q", tc.name, got)
		}
	}
}

// TestBlobGetProgressBarSaysWhatItWaits: on a terminal, blob get's bar
// says what the fetch waits for as the daemon's lines say it (providers
// being found, then the provider whose attempt runs), and the last line
// names the provider that served the blob.
func TestBlobGetProgressBarSaysWhatItWaits(t *testing.T) {
	const provider = "12D3KooWQYhTNQdmr3ArTeUHRYzFg94BKyTkoWBDWez9kSCVe2Xo"
	daemon := http.NewServeMux()
	daemon.HandleFunc("POST "+api.PathBlobStreamFile, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", api.ContentTypeNDJSON)
		for _, line := range []string{
			`{"bytes":0,"size":0}`,
			`{"bytes":0,"size":0,"finding":true}`,
			`{"bytes":0,"size":0,"provider":"` + provider + `"}`,
			`{"bytes":0,"size":0,"provider":"` + provider + `","done":true}`,
		} {
			fmt.Fprintln(w, line)
			w.(http.Flusher).Flush()
		}
	})
	dir := fakeDaemon(t, daemon)
	var out bytes.Buffer
	file := filepath.Join(t.TempDir(), "got.bin")
	code, got := onTerminal(t, func(term *os.File) int {
		return run(t.Context(), []string{"blob", "get", "bafkqaaa", "--size", "0", "-o", file, "--repo", dir}, strings.NewReader(""), &out, term)
	})
	if want := "wrote " + file + ": 0 bytes\n    blob bafkqaaa\n    from " + provider + "\n"; code != exitOK || out.String() != want {
		t.Errorf("exit %d, stdout %q, want %q; terminal %q", code, out.String(), want, got)
	}
	for _, want := range []string{"get bafkqaaa: finding providers", "get bafkqaaa from …" + provider[len(provider)-8:]} {
		if !strings.Contains(got, want) {
			t.Errorf("the terminal does not show %q: %q", want, got)
		}
	}
}

// TestBlobGetBarCountsTheRestOnResume: on a terminal, the bar of a blob
// get that resumes (docs/adr/0054) counts the bytes it fetches now out of
// the rest, not the bytes held as fetched at its rate: after "resuming:
// 3.0 MiB of 4.0 MiB already held", a bar out of 1.0 MiB.
func TestBlobGetBarCountsTheRestOnResume(t *testing.T) {
	daemon := http.NewServeMux()
	daemon.HandleFunc("POST "+api.PathBlobStreamFile, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", api.ContentTypeNDJSON)
		for _, line := range []string{
			`{"bytes":3145728,"size":4194304,"resumed":3145728}`,
			`{"bytes":4194304,"size":4194304,"done":true}`,
		} {
			fmt.Fprintln(w, line)
			w.(http.Flusher).Flush()
		}
	})
	dir := fakeDaemon(t, daemon)
	file := filepath.Join(t.TempDir(), "got.bin")
	_, got := onTerminal(t, func(term *os.File) int {
		// The fake daemon writes no byte into the file: the get then
		// fails, after the bar.
		return run(t.Context(), []string{"blob", "get", "bafkqaaa", "--size", "4194304", "-o", file, "--repo", dir},
			strings.NewReader(""), io.Discard, term)
	})
	if !strings.Contains(got, "resuming: 3.0 MiB of 4.0 MiB already held") || !strings.Contains(got, "/1.0 MiB") || strings.Contains(got, "/4.0 MiB") {
		t.Errorf("the terminal does not show a bar of the 1.0 MiB left after the resume line: %q", got)
	}
}
