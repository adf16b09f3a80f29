package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/wats-network/wats/api"
	"github.com/wats-network/wats/blobs"
	"github.com/wats-network/wats/metrics"
)

// importBlob stores as a blob the file whose descriptor came with the
// request (api.PathBlobImport, ADR 0036), read through that descriptor
// only, named by the query's name (blobName). Refusals before the first
// byte is read have a status of their own (a bad name: 400); then NDJSON lines report the bytes read, the last the blob or the
// error. The stream starts at its first line, importProgressEvery after
// the start: a quick import answers with one line.
func (h handlers) importBlob(w http.ResponseWriter, r *http.Request) {
	f, size, err := passedFile(r.Context())
	if err != nil {
		writeDescriptorError(w, err)
		return
	}
	defer f.Close()
	name, ok := blobName(w, r)
	if !ok {
		return
	}
	var send func(any)
	line := func(p api.ImportProgress) {
		if send == nil {
			send = ndjsonLines(w)
		}
		send(p)
	}
	rd := &fileReader{ctx: r.Context(), r: io.NewSectionReader(f, 0, size), size: size, last: time.Now(),
		report: func(n int64) { line(api.ImportProgress{Bytes: uint64(n), Size: uint64(size)}) }}
	c, got, err := h.ImportBlob(r.Context(), rd, size, name, metrics.ImportDescriptor)
	switch {
	case err != nil && send == nil:
		writeError(w, importStatus(err), err)
	case err != nil:
		line(api.ImportProgress{Bytes: uint64(rd.n), Size: uint64(size), Error: err.Error(), Refused: importStatus(err) == http.StatusRequestEntityTooLarge})
	default:
		line(api.ImportProgress{Bytes: got, Size: got, Done: true, CID: c.String()})
	}
}

// writeDescriptorError answers a request whose descriptor did not come
// (api.StatusNoDescriptor) or was refused (400).
func writeDescriptorError(w http.ResponseWriter, err error) {
	if errors.Is(err, errNoFile) {
		writeError(w, api.StatusNoDescriptor, err)
		return
	}
	writeError(w, http.StatusBadRequest, err)
}

// importStatus is the status of a failed import: 413 when the blob is
// over blobs.max_blob_bytes or the quota (nothing is stored), else 500.
func importStatus(err error) int {
	if errors.Is(err, blobs.ErrTooLarge) || errors.Is(err, blobs.ErrQuota) {
		return http.StatusRequestEntityTooLarge
	}
	return http.StatusInternalServerError
}

// importProgressEvery is the least time between two progress lines of an
// import by descriptor (a variable for tests).
var importProgressEvery = 100 * time.Millisecond

// fileReader reads a passed file for an import: exactly size bytes of it,
// as an upload of a Content-Length does (a file that shrank meanwhile
// fails the import), until ctx ends (the client went away), telling report
// the bytes read at most every importProgressEvery.
type fileReader struct {
	ctx    context.Context
	r      io.Reader // the file from offset 0, size bytes
	n      int64
	size   int64
	last   time.Time
	report func(read int64)
}

func (fr *fileReader) Read(p []byte) (int, error) {
	if err := fr.ctx.Err(); err != nil {
		return 0, err
	}
	k, err := fr.r.Read(p)
	fr.n += int64(k)
	if err == io.EOF && fr.n < fr.size {
		err = fmt.Errorf("the file shrank to %d bytes while it was read (it had %d): %w", fr.n, fr.size, io.ErrUnexpectedEOF)
	}
	if now := time.Now(); now.Sub(fr.last) >= importProgressEvery {
		fr.last = now
		fr.report(fr.n)
	}
	return k, err
}
