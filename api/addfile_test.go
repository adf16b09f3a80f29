package api

import (
	"errors"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// tempFile writes data to a new file and returns it open.
func tempFile(t *testing.T, data string) *os.File {
	t.Helper()
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// uploads answers POST PathBlobs with the size of the body it read, after
// checking that it came with its Content-Length and Expect: 100-continue.
func uploads(t *testing.T, mux *http.ServeMux) {
	mux.HandleFunc("POST "+PathBlobs, func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil || r.ContentLength != int64(len(b)) || r.Header.Get("Expect") != "100-continue" {
			t.Errorf("upload: %d bytes, Content-Length %d, Expect %q, %v", len(b), r.ContentLength, r.Header.Get("Expect"), err)
		}
		io.WriteString(w, `{"cid":"uploaded","size":`+strconv.Itoa(len(b))+`}`)
	})
}

// TestAddFileFallsBack: a daemon that takes no descriptor (one that does
// not know PathBlobImport: 404, or 405 from an older daemon's GET
// PathBlobs/{cid}; one answering StatusNoDescriptor) gets the file
// uploaded, all of it whatever the file's offset, with progress.
func TestAddFileFallsBack(t *testing.T) {
	for _, status := range []int{http.StatusNotFound, http.StatusMethodNotAllowed, StatusNoDescriptor} {
		mux := http.NewServeMux()
		uploads(t, mux)
		switch status {
		case http.StatusMethodNotAllowed:
			mux.HandleFunc("GET "+PathBlobs+"/{cid}", http.NotFound)
		case StatusNoDescriptor:
			mux.HandleFunc("POST "+PathBlobImport, func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(status)
				io.WriteString(w, `{"error":"no file descriptor came"}`)
			})
		}
		c := fakeDaemon(t, mux)
		f := tempFile(t, "a file of 22 bytes....")
		f.Seek(5, io.SeekStart)
		var read uint64
		bi, err := c.AddFile(t.Context(), f, &AddFileOptions{Progress: func(n uint64) { read = n }})
		if err != nil || *bi != (BlobInfo{CID: "uploaded", Size: 22}) || read != 22 {
			t.Errorf("import answered %d: %+v, %v, %d bytes read", status, bi, err, read)
		}
	}
}

// TestAddFileAnswers: the lines of PathBlobImport's answer as AddFile
// reads them: progress, then the blob; a refusal as the upload's 413; a
// failure as a 500; a stream cut before its last line; a refusal before
// any line (no fallback to an upload).
func TestAddFileAnswers(t *testing.T) {
	for _, tc := range []struct {
		status  int
		lines   string
		want    *BlobInfo
		errWant string
		code    int
	}{
		{200, `{"bytes":1,"size":3}` + "\n" + `{"bytes":3,"size":3,"done":true,"cid":"bafy"}` + "\n", &BlobInfo{CID: "bafy", Size: 3}, "", 0},
		{200, `{"bytes":1,"size":3}` + "\n" + `{"bytes":1,"size":3,"error":"blobs: blob too large","refused":true}` + "\n", nil, "blobs: blob too large", 413},
		{200, `{"bytes":1,"size":3,"error":"disk full"}` + "\n", nil, "disk full", 500},
		{200, `{"bytes":1,"size":3}` + "\n", nil, ErrStreamEnded.Error(), 0},
		{200, `{"bytes":1,` + "\n", nil, "bad progress line", 0},
		{413, `{"error":"blobs: blob quota exceeded"}`, nil, "blobs: blob quota exceeded", 413},
		{400, `{"error":"not a regular file"}`, nil, "not a regular file", 400},
	} {
		mux := http.NewServeMux()
		mux.HandleFunc("POST "+PathBlobs, func(w http.ResponseWriter, r *http.Request) {
			t.Errorf("answer %q: uploaded after the daemon answered the import", tc.lines)
		})
		mux.HandleFunc("POST "+PathBlobImport, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", ContentTypeNDJSON)
			w.WriteHeader(tc.status)
			io.WriteString(w, tc.lines)
		})
		c := fakeDaemon(t, mux)
		var seen []uint64
		bi, err := c.AddFile(t.Context(), tempFile(t, "abc"), &AddFileOptions{Progress: func(n uint64) { seen = append(seen, n) }})
		var ae *Error
		switch {
		case tc.want != nil:
			if err != nil || *bi != *tc.want || len(seen) != 2 || seen[1] != 3 {
				t.Errorf("%q: %+v, %v, progress %v", tc.lines, bi, err, seen)
			}
		case err == nil || !strings.Contains(err.Error(), tc.errWant):
			t.Errorf("%q: %v, want an error with %q", tc.lines, err, tc.errWant)
		case tc.code != 0 && (!errors.As(err, &ae) || ae.Status != tc.code):
			t.Errorf("%q: %v, want an *Error %d", tc.lines, err, tc.code)
		}
	}
}

// TestAddFileRefusesNonFiles: AddFile takes a regular file only.
func TestAddFileRefusesNonFiles(t *testing.T) {
	c := fakeDaemon(t, http.NotFoundHandler())
	d, err := os.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if _, err := c.AddFile(t.Context(), d, nil); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("a directory: %v", err)
	}
}

// TestUploadCopiesByChunk: an upload is read from the file a chunk
// (uploadCopyBytes) at a time, not in net/http's 32 KiB copies.
func TestUploadCopiesByChunk(t *testing.T) {
	mux := http.NewServeMux()
	uploads(t, mux)
	c := fakeDaemon(t, mux)
	const size = 3*uploadCopyBytes + 5
	var last, largest uint64
	bi, err := c.AddFile(t.Context(), tempFile(t, strings.Repeat("x", size)), &AddFileOptions{Upload: true, Progress: func(n uint64) {
		largest, last = max(largest, n-last), n
	}})
	if err != nil || bi.Size != size {
		t.Fatalf("%+v, %v", bi, err)
	}
	if largest != uploadCopyBytes {
		t.Errorf("the largest read of the upload was %d bytes, want %d", largest, uploadCopyBytes)
	}
}

// TestAddFileName: AddFileOptions.Name goes to the daemon as the query
// parameter name, escaped, on both paths (the descriptor's and the
// upload's), and the answer holds it; no name sends no parameter.
func TestAddFileName(t *testing.T) {
	const name = "my report & notes, é?.pdf"
	for _, upload := range []bool{false, true} {
		for _, give := range []string{name, ""} {
			var got []string
			mux := http.NewServeMux()
			mux.HandleFunc("POST "+PathBlobs, func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				got = append(got, "upload:"+r.URL.RawQuery)
				io.WriteString(w, `{"cid":"uploaded","size":3,"name":`+strconv.Quote(r.URL.Query().Get("name"))+`}`)
			})
			mux.HandleFunc("POST "+PathBlobImport, func(w http.ResponseWriter, r *http.Request) {
				got = append(got, "import:"+r.URL.RawQuery)
				w.Header().Set("Content-Type", ContentTypeNDJSON)
				io.WriteString(w, `{"bytes":3,"size":3,"done":true,"cid":"imported"}`+"\n")
			})
			c := fakeDaemon(t, mux)
			bi, err := c.AddFile(t.Context(), tempFile(t, "abc"), &AddFileOptions{Upload: upload, Name: give})
			if err != nil || bi.Name != give {
				t.Errorf("upload %v, name %q: %+v, %v", upload, give, bi, err)
			}
			query := ""
			if give != "" {
				query = url.Values{"name": {give}}.Encode()
			}
			want := "import:" + query
			if upload || !canPassFiles {
				want = "upload:" + query
			}
			if len(got) != 1 || got[0] != want {
				t.Errorf("upload %v, name %q: the daemon saw %q; want %q", upload, give, got, want)
			}
		}
	}
}
