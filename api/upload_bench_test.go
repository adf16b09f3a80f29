package api

import (
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkUpload256MiB is the socket's share of an upload: a 256 MiB
// file sent to a daemon that only reads it (1 MiB at a time, as the
// chunker does) and discards it, both ends in this process. "chunked" is
// the upload as it was before ADR 0036 (a body of unknown length, in HTTP
// chunks of net/http's 32 KiB copies); "file" is AddFile's upload
// (Content-Length, 1 MiB copies, a 4 MiB send buffer).
func BenchmarkUpload256MiB(b *testing.B) {
	const size = 256 << 20
	path := filepath.Join(b.TempDir(), "f")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := io.CopyN(f, zeros{}, size); err != nil {
		b.Fatal(err)
	}
	f.Close()
	sock := filepath.Join(b.TempDir(), "s.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		b.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		buf := make([]byte, 1<<20)
		for {
			if _, err := io.ReadFull(r.Body, buf); err != nil {
				break
			}
		}
		io.WriteString(w, `{"cid":"x","size":1}`)
	})}
	go srv.Serve(l)
	defer srv.Close()
	c := NewClient(sock)
	defer c.Close()
	for _, bc := range []string{"chunked", "file"} {
		b.Run(bc, func(b *testing.B) {
			b.SetBytes(size)
			for b.Loop() {
				f, err := os.Open(path)
				if err != nil {
					b.Fatal(err)
				}
				if bc == "chunked" {
					_, err = c.AddBlob(b.Context(), struct{ io.Reader }{f})
				} else {
					_, err = c.AddFile(b.Context(), f, &AddFileOptions{Upload: true})
				}
				f.Close()
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }
