package api

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"runtime"
	"strconv"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/wats-network/wats/core"
)

// PathBlobs takes a POSTed blob (the file's bytes, application/octet-stream)
// and answers with its BlobInfo; answers GET with a JSON array of BlobInfo,
// newest first (GET ?limit=N: the newest N; 0 or none, all). A POST's query parameter name, optional, is the name the blob is kept
// under (BlobInfo.Name): at most 255 bytes of UTF-8 without control
// characters, the rule of an event's blob name (BlobRef.Name); a bad one
// is answered 400 and nothing is stored.
// GET PathBlobs + "/{cid}?size=N" streams a complete blob of exactly N bytes;
// DELETE PathBlobs + "/{cid}" removes one.
const PathBlobs = "/v1/blobs"

// BlobInfo is one stored blob.
type BlobInfo struct {
	// CID is the blob's CIDv1 (UnixFS, BLAKE3, docs/design.md §9).
	CID string `json:"cid"`
	// Size is the file size in bytes.
	Size uint64 `json:"size"`
	// Name is the blob's file name (docs/adr/0051): the one its add on
	// this node gave it (the name query parameter of POST PathBlobs or
	// PathBlobImport: `wats blob add` sends the file's base name, or
	// --name), else the one the first event of the log that named the
	// blob with a name gave it (BlobRef.Name); "" (left out) when neither
	// did. A POST's answer holds the name it gave.
	Name string `json:"name,omitempty"`
	// Added is when the blob was stored here (imported, or fetched to the
	// end), to the millisecond; the zero time (left out) for a blob stored
	// by a version that did not keep it. Only GET PathBlobs fills it in.
	Added time.Time `json:"added,omitzero"`
}

// AddBlob stores the bytes of r as a blob (POST PathBlobs). For a file,
// AddFile is faster: on the daemon's host the daemon reads it itself.
func (c *Client) AddBlob(ctx context.Context, r io.Reader) (*BlobInfo, error) {
	return c.upload(ctx, r, -1, "", nil)
}

// PathBlobImport takes a POST without a body whose request head carries,
// as SCM_RIGHTS ancillary data on the Unix socket, one open file
// descriptor (ADR 0036): a regular file open for reading. The daemon reads
// the file through that descriptor, from its start, as many bytes as its
// size when the import begins, and stores them as POST PathBlobs would
// store the same bytes: the same blob, the same bounds, the same optional
// query parameter name. A refusal before the first byte is read is an
// ErrorBody: StatusNoDescriptor (no descriptor came), 400 (it is not a
// regular file open for reading, more than one came, or the name is
// bad), 413 (over blobs.max_blob_bytes or the quota).
// Otherwise the answer is NDJSON lines of ImportProgress, the last one
// with Done or Error set.
const PathBlobImport = "/v1/blobs/import"

// StatusNoDescriptor is PathBlobImport's answer to a request that carried
// no descriptor: its client sent none, or it came through a socket
// forwarded from another host (ssh -L), which carries none. AddFile then
// uploads the bytes.
const StatusNoDescriptor = http.StatusPreconditionFailed

// ImportProgress is one line of PathBlobImport's answer.
type ImportProgress struct {
	// Bytes is how many bytes of the file the daemon has read; Size is
	// the file's size when the import began, the blob's size.
	Bytes uint64 `json:"bytes"`
	Size  uint64 `json:"size"`
	// Done is set on the last line of an import that stored the blob,
	// with its CID.
	Done bool   `json:"done,omitzero"`
	CID  string `json:"cid,omitempty"`
	// Error is set on the last line of an import that failed, saying
	// why; Refused too when the blob is over blobs.max_blob_bytes or the
	// quota. Nothing is stored then.
	Error   string `json:"error,omitempty"`
	Refused bool   `json:"refused,omitzero"`
}

// AddFileOptions tune AddFile. nil is the zero value: the descriptor
// first, no progress.
type AddFileOptions struct {
	// Upload sends the file's bytes in the request (POST PathBlobs)
	// without offering the daemon the descriptor first.
	Upload bool
	// Progress, if set, is called now and then with the bytes of the file
	// read so far: by the daemon (PathBlobImport's lines) or by this
	// client as it uploads them.
	Progress func(read uint64)
	// Name, if set, is the name the daemon keeps the blob under (the
	// name query parameter; BlobInfo.Name), by the rule of an event's
	// blob name: a bad one is the daemon's 400. "" gives none.
	Name string
}

// AddFile stores the regular file f as a blob: its bytes from its start
// (whatever f's offset), as many as its size when AddFile begins. On the
// daemon's host it passes f's descriptor to the daemon (PathBlobImport),
// which reads the file itself with the access f was opened with and no
// other: the daemon never opens a path for a client. When the daemon
// takes no descriptor (an older daemon, or one reached through a
// forwarded socket), or with opts.Upload, it uploads the bytes (POST
// PathBlobs). The blob is the same either way. A file that shrinks
// meanwhile fails the import, and nothing is stored. f must stay open
// until AddFile returns.
func (c *Client) AddFile(ctx context.Context, f *os.File, opts *AddFileOptions) (*BlobInfo, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("api: %s is not a regular file", f.Name())
	}
	var o AddFileOptions
	if opts != nil {
		o = *opts
	}
	if !o.Upload && canPassFiles {
		bi, err := c.importFile(ctx, f, o.Name, o.Progress)
		if !errors.Is(err, errNoDescriptor) {
			return bi, err
		}
	}
	return c.upload(ctx, io.NewSectionReader(f, 0, fi.Size()), fi.Size(), o.Name, o.Progress)
}

// namedPath is path with the query parameter name=name, or path alone
// for a name of "".
func namedPath(path, name string) string {
	if name == "" {
		return path
	}
	return path + "?" + url.Values{"name": {name}}.Encode()
}

// errNoDescriptor: the daemon took no descriptor (it answered 404 or 405,
// an older daemon, or StatusNoDescriptor).
var errNoDescriptor = errors.New("api: the daemon took no descriptor")

// postFile POSTs body (nil for none) to path on a connection of its own
// whose request head carries f's descriptor (ADR 0036). errNoDescriptor:
// the daemon took none.
func (c *Client) postFile(ctx context.Context, path string, f *os.File, body []byte) (*http.Response, func(), error) {
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			conn, err := c.dialSocket(ctx)
			if err != nil {
				return nil, err
			}
			return withFile(conn, f)
		},
		DisableKeepAlives:  true, // one descriptor, one request, one connection
		DisableCompression: true,
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, baseURL+path, rd)
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Accept", ContentTypeNDJSON)
	if body != nil {
		req.Header.Set("Content-Type", ContentTypeJSON)
	}
	resp, err := c.sendOn(&http.Client{Transport: tr}, req)
	runtime.KeepAlive(f) // its descriptor number went out in the request
	var ae *Error
	if errors.As(err, &ae) && (ae.Status == http.StatusNotFound || ae.Status == http.StatusMethodNotAllowed || ae.Status == StatusNoDescriptor) {
		tr.CloseIdleConnections()
		return nil, nil, errNoDescriptor
	}
	if err != nil {
		tr.CloseIdleConnections()
		return nil, nil, err
	}
	return resp, tr.CloseIdleConnections, nil
}

// StreamBlobToFile has the daemon fetch the blob req names and write its
// bytes to f, an empty regular file open for writing, in order as they are
// verified: on the daemon's host by passing f's descriptor
// (PathBlobStreamFile), so that no byte crosses the socket; where the
// daemon takes none, by StreamBlob into f. progress, if set, is called
// with each progress line: the bytes written so far, now and then, and
// what the fetch waits for as it changes (only the bytes where the
// daemon takes no descriptor); the last line of a success names the
// provider that served it. It returns the bytes
// written; the errors are StreamBlob's. The caller checks f's size and
// syncs it.
func (c *Client) StreamBlobToFile(ctx context.Context, req FetchRequest, f *os.File, progress func(FetchProgress)) (uint64, error) {
	if canPassFiles {
		n, err := c.streamFile(ctx, req, f, progress)
		if !errors.Is(err, errNoDescriptor) {
			return n, err
		}
	}
	var w io.Writer = f
	if progress != nil {
		w = &countingWriter{w: f, fn: func(n uint64) { progress(FetchProgress{Bytes: n, Size: req.Size}) }}
	}
	return c.StreamBlob(ctx, req, w, progress)
}

// countingWriter tells fn the bytes written through it so far.
type countingWriter struct {
	w  io.Writer
	n  uint64
	fn func(uint64)
}

func (cw *countingWriter) Write(b []byte) (int, error) {
	k, err := cw.w.Write(b)
	cw.n += uint64(k)
	cw.fn(cw.n)
	return k, err
}

func (c *Client) streamFile(ctx context.Context, req FetchRequest, f *os.File, progress func(FetchProgress)) (uint64, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return 0, fmt.Errorf("api: encode stream request: %w", err)
	}
	resp, done, err := c.postFile(ctx, PathBlobStreamFile, f, body)
	if err != nil {
		return 0, err
	}
	defer done()
	last, err := readProgress(ctx, c, resp, "stream", func(p FetchProgress) {
		if progress != nil {
			progress(p)
		}
	}, func(p *FetchProgress) (bool, string) { return p.Done, p.Error }, ErrFetchFailed)
	var n uint64
	if last != nil {
		n = last.Bytes
	}
	if err != nil {
		return n, err
	}
	if n != req.Size {
		return n, fmt.Errorf("%w: the daemon said complete after %d of %d bytes", ErrStreamEnded, n, req.Size)
	}
	return n, nil
}

// importFile passes f to the daemon on a connection of its own
// (PathBlobImport, the blob named name) and reads the answer.
func (c *Client) importFile(ctx context.Context, f *os.File, name string, progress func(uint64)) (*BlobInfo, error) {
	resp, done, err := c.postFile(ctx, namedPath(PathBlobImport, name), f, nil)
	if err != nil {
		return nil, err
	}
	defer done()
	last, err := readProgress(ctx, c, resp, "import", func(p ImportProgress) {
		if progress != nil {
			progress(p.Bytes)
		}
	}, func(p *ImportProgress) (bool, string) { return p.Done, p.Error }, errImportFailed)
	switch {
	case errors.Is(err, errImportFailed):
		// As the upload's answer would have been: an *Error.
		status := http.StatusInternalServerError
		if last.Refused {
			status = http.StatusRequestEntityTooLarge
		}
		return nil, &Error{Status: status, Message: last.Error}
	case err != nil:
		return nil, err
	}
	return &BlobInfo{CID: last.CID, Size: last.Size, Name: name}, nil
}

// errImportFailed: PathBlobImport's last line has Error set.
var errImportFailed = errors.New("api: import failed")

// upload POSTs the bytes of r to PathBlobs, the blob named name ("" for
// none): size of them, or, with size -1, as many as r holds (for some
// readers, such as a *bytes.Reader, net/http knows how many). progress,
// if set, sees the bytes read from r.
// A known size goes as Content-Length with "Expect: 100-continue": the
// daemon refuses a blob over its bounds before any byte is sent.
func (c *Client) upload(ctx context.Context, r io.Reader, size int64, name string, progress func(uint64)) (*BlobInfo, error) {
	if size == 0 {
		r = http.NoBody // a Content-Length of 0 with a body means "unknown"
	} else if progress != nil {
		r = &progressReader{r: r, fn: progress}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, baseURL+namedPath(PathBlobs, name), r)
	if err != nil {
		return nil, err
	}
	if size >= 0 {
		req.ContentLength = size
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	if req.ContentLength > 0 {
		req.Header.Set("Expect", "100-continue")
	}
	resp, err := c.send(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var bi BlobInfo
	if err := c.decode(resp.Body, PathBlobs, &bi); err != nil {
		return nil, err
	}
	return &bi, nil
}

// progressReader tells fn the bytes read from r so far, at each read.
type progressReader struct {
	r  io.Reader
	n  uint64
	fn func(uint64)
}

func (p *progressReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	p.n += uint64(n)
	p.fn(p.n)
	return n, err
}

// Blobs lists the stored blobs (GET PathBlobs).
func (c *Client) Blobs(ctx context.Context) ([]BlobInfo, error) {
	var out []BlobInfo
	if err := c.getJSON(ctx, PathBlobs, nil, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// GetBlob writes the blob cid, which must be complete and exactly size
// bytes, to w (GET PathBlobs/{cid}?size=N).
func (c *Client) GetBlob(ctx context.Context, cid string, size uint64, w io.Writer) error {
	resp, err := c.do(ctx, http.MethodGet, PathBlobs+"/"+url.PathEscape(cid),
		url.Values{"size": {strconv.FormatUint(size, 10)}}, nil, "application/octet-stream")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, err = io.Copy(w, resp.Body)
	return err
}

// RemoveBlob removes the blob cid (DELETE PathBlobs/{cid}).
func (c *Client) RemoveBlob(ctx context.Context, cid string) error {
	resp, err := c.do(ctx, http.MethodDelete, PathBlobs+"/"+url.PathEscape(cid), nil, nil, ContentTypeJSON)
	if err != nil {
		return err
	}
	resp.Body.Close()
	return nil
}

// PathBlobFetch takes a POSTed FetchRequest and makes the blob complete in
// the store, fetching it from its providers if needed (ADR 0014's rules).
// It answers with NDJSON lines of FetchProgress, the last one with Done
// or Error set.
const PathBlobFetch = "/v1/blobs/fetch"

// FetchRequest names a blob to fetch.
type FetchRequest struct {
	// CID and Size are the blob and its declared size in bytes.
	CID  string `json:"cid"`
	Size uint64 `json:"size"`
	// From is a peer ID tried before the gossip hints, optional.
	From string `json:"from,omitempty"`
}

// FetchProgress is one line of a fetch's answer.
type FetchProgress struct {
	// Bytes is how many bytes of the blob are held; Size its declared size.
	Bytes uint64 `json:"bytes"`
	Size  uint64 `json:"size"`
	// Resumed is the bytes of the blob the node held already when the
	// fetch began, verified by an earlier fetch that did not complete (a
	// provider gone, a restart, a crash; docs/adr/0054): the fetch goes
	// on from them. Set on every line from the one that says so; 0 for a
	// fetch from nothing.
	Resumed uint64 `json:"resumed,omitzero"`
	// Finding is set while the daemon looks for providers: it asks its
	// connected peers whether they hold the blob, and the DHT, at once
	// (docs/adr/0047). Provider is the peer ID of the provider whose
	// attempt runs; on the last line of a fetch that stored the blob, the
	// one that served it ("" when the node held it already).
	Finding  bool   `json:"finding,omitzero"`
	Provider string `json:"provider,omitempty"`
	// Done is set on the last line of a fetch that stored the blob.
	Done bool `json:"done,omitzero"`
	// Error is set on the last line of a fetch that failed, saying why.
	Error string `json:"error,omitempty"`
}

// FetchBlob asks the daemon to make the blob complete, fetching it if
// needed (POST PathBlobFetch); fn, if set, sees every progress line. A
// failed fetch returns an error wrapping ErrFetchFailed.
func (c *Client) FetchBlob(ctx context.Context, req FetchRequest, fn func(FetchProgress)) error {
	_, err := postProgress(ctx, c, PathBlobFetch, req, "fetch", fn,
		func(p *FetchProgress) (bool, string) { return p.Done, p.Error }, ErrFetchFailed)
	return err
}

// ErrFetchFailed: the daemon could not make the blob complete.
var ErrFetchFailed = errors.New("api: fetch failed")

// PathBlobStream takes a POSTed FetchRequest: the daemon makes the blob
// complete as PathBlobFetch does (the same fetch, ADR 0014's rules) and
// answers with the blob's bytes in order while the fetch runs (ADR 0035):
// 200, ContentTypeBlob, HeaderBlobSize the declared size (and
// HeaderBlobResumed when a partial blob is resumed), a body of the
// file's bytes, each leaf written once it is verified and every byte
// before it has been, then the trailer TrailerBlobStatus: BlobComplete
// when the blob is complete in the node and the body is exactly the
// declared size, else BlobFailed with TrailerBlobError saying why. A
// body without the trailer was cut off (the daemon stopped). A blob the
// node holds is sent from its store. A request it cannot start (a body
// that is not a FetchRequest, a CID or a --from peer it cannot read) is
// answered 400 with an ErrorBody.
const PathBlobStream = "/v1/blobs/stream"

// PathBlobStreamFile takes a POSTed FetchRequest whose request head
// carries, as SCM_RIGHTS ancillary data on the Unix socket, one open file
// descriptor: an empty regular file open for writing (not appending). The
// daemon fetches the blob as PathBlobStream does and writes its bytes to
// that file, in order as they are verified, through that descriptor only:
// no byte crosses the socket (ADR 0036, the other way). A refusal before
// anything is written is an ErrorBody: StatusNoDescriptor (no descriptor
// came), 400 (not an empty regular file open for writing, or a request
// PathBlobStream would refuse). Otherwise the answer is NDJSON lines of
// FetchProgress whose Bytes are the bytes written, the last one with Done
// (the blob complete in the node and exactly Size bytes written) or Error
// (the file then holds a verified prefix of the blob).
const PathBlobStreamFile = "/v1/blobs/stream-file"

// The headers and trailers of a PathBlobStream answer.
const (
	// ContentTypeBlob is the media type of a blob's bytes.
	ContentTypeBlob = "application/octet-stream"
	// HeaderBlobSize is the declared size the body is held to, in bytes.
	HeaderBlobSize = "Wats-Blob-Size"
	// HeaderBlobResumed, when present, is the bytes of the blob the node
	// held already, from a fetch that did not complete, when this one
	// began (ADR 0054); absent when it held none or the blob whole.
	HeaderBlobResumed = "Wats-Blob-Resumed"
	// TrailerBlobStatus is BlobComplete or BlobFailed.
	TrailerBlobStatus = "Wats-Blob-Status"
	// TrailerBlobError says why the blob failed, one sentence of
	// printable ASCII, at most MaxBlobErrorBytes.
	TrailerBlobError = "Wats-Blob-Error"
	// BlobComplete: the body is the whole blob, complete in the node.
	BlobComplete = "complete"
	// BlobFailed: the body is a prefix of the blob (maybe empty), each
	// byte verified, and the blob is not complete in the node.
	BlobFailed = "failed"
)

// MaxBlobErrorBytes bounds the reason of a failed stream
// (TrailerBlobError): Go's HTTP client refuses a trailer longer than its
// read buffer (4 KiB) as a cut-off answer, so the daemon cuts the reason
// to this, and the client keeps no more.
const MaxBlobErrorBytes = 2 << 10

// StreamBlob asks the daemon for the blob req names (POST PathBlobStream)
// and writes its bytes to w as they come, at most req.Size of them. It
// returns the bytes written and nil only when the daemon says the blob is
// complete and exactly req.Size bytes came. Otherwise what was written is
// a prefix of the blob, and the error wraps ErrFetchFailed with the
// daemon's reason, ErrStreamEnded when the answer was cut off, or
// ErrTooLarge when the daemon sent more than req.Size bytes; or it is w's
// error, or ctx's. progress, if set, is told once, before any byte, of
// the bytes the node held already from a fetch that did not complete
// (FetchProgress.Resumed, from HeaderBlobResumed), when there were some.
func (c *Client) StreamBlob(ctx context.Context, req FetchRequest, w io.Writer, progress func(FetchProgress)) (uint64, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return 0, fmt.Errorf("api: encode stream request: %w", err)
	}
	resp, err := c.do(ctx, http.MethodPost, PathBlobStream, nil, body, ContentTypeBlob)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if held, err := strconv.ParseUint(resp.Header.Get(HeaderBlobResumed), 10, 64); err == nil && held > 0 && held < req.Size && progress != nil {
		progress(FetchProgress{Size: req.Size, Resumed: held})
	}
	out := &errWriter{w: w}
	n, err := io.CopyBuffer(out, io.LimitReader(resp.Body, int64(min(req.Size, core.MaxSafeInt))), make([]byte, 256<<10))
	written := uint64(n)
	if err == nil && written == req.Size {
		// The trailer comes with the body's end: read past the last byte.
		var extra [1]byte
		var k int
		k, err = io.ReadFull(resp.Body, extra[:])
		switch {
		case k > 0:
			return written, fmt.Errorf("%w: the daemon sent more than the declared %d bytes", ErrTooLarge, req.Size)
		case err == io.EOF:
			err = nil
		}
	}
	switch {
	case out.err != nil:
		return written, out.err
	case ctx.Err() != nil:
		return written, ctx.Err()
	case err != nil:
		return written, fmt.Errorf("%w: %d of %d bytes came: %v", ErrStreamEnded, written, req.Size, err)
	}
	switch resp.Trailer.Get(TrailerBlobStatus) {
	case BlobComplete:
		if written != req.Size {
			return written, fmt.Errorf("%w: the daemon said complete after %d of %d bytes", ErrStreamEnded, written, req.Size)
		}
		return written, nil
	case BlobFailed:
		msg := resp.Trailer.Get(TrailerBlobError)
		if len(msg) > MaxBlobErrorBytes {
			msg = msg[:MaxBlobErrorBytes]
		}
		return written, fmt.Errorf("%w: %s", ErrFetchFailed, msg)
	}
	return written, fmt.Errorf("%w: %d of %d bytes came, and no status", ErrStreamEnded, written, req.Size)
}

// errWriter is a writer that remembers its first error, to tell a failed
// write from a failed read of one io.Copy.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	n, err := e.w.Write(p)
	if err != nil && e.err == nil {
		e.err = err
	}
	return n, err
}

// PathReplicate takes a POSTed ReplicateRequest: the daemon asks Peer to
// keep copies of Blobs, naming itself as their first provider, and answers
// with the peer's ReplicateResult.
const PathReplicate = "/v1/replicate"

// ReplicateRequest is what PathReplicate takes.
type ReplicateRequest struct {
	// Peer is a peer ID, or a full multiaddr to connect to first.
	Peer  string     `json:"peer"`
	Blobs []BlobInfo `json:"blobs"`
}

// ReplicateResult is the peer's answer to a replicate request.
type ReplicateResult struct {
	Stored  []string     `json:"stored"`
	Skipped []string     `json:"skipped"`
	Failed  []FailedBlob `json:"failed"`
}

// FailedBlob is a blob the peer could not store, and why.
type FailedBlob struct {
	CID    string `json:"cid"`
	Reason string `json:"reason"`
}

// Replicate asks the daemon to ask a peer to replicate blobs (POST
// PathReplicate).
func (c *Client) Replicate(ctx context.Context, req ReplicateRequest) (*ReplicateResult, error) {
	var out ReplicateResult
	if err := c.postJSON(ctx, PathReplicate, req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// BlobSize is the answer of GET PathBlobs/{cid}/size: the size the node
// knows for a blob, and from where.
type BlobSize struct {
	CID  string `json:"cid"`
	Size uint64 `json:"size"`
	// Source is "held" (the node holds the complete blob) or "event" (an
	// event of its log names it with that size).
	Source string `json:"source"`
}

// BlobSize returns the size the node knows for the blob cid (GET
// PathBlobs/{cid}/size): an *Error matching ErrNotFound when it neither
// holds the blob nor has an event naming it, ErrAmbiguous when events
// name it with different sizes.
func (c *Client) BlobSize(ctx context.Context, cid string) (*BlobSize, error) {
	var bs BlobSize
	if err := c.getJSON(ctx, PathBlobs+"/"+url.PathEscape(cid)+"/size", nil, &bs); err != nil {
		return nil, err
	}
	return &bs, nil
}

// PathBlobPartials answers GET with a JSON array of PartialBlob: the
// partial blobs the node keeps (docs/adr/0054), the least recently
// progressed first. DELETE PathBlobs/{cid} removes one (409 while a fetch
// of it runs).
const PathBlobPartials = "/v1/blobs/partials"

// PartialBlob is a blob not complete of which the node keeps what fetches
// verified, never served, for the next fetch to go on from
// (docs/adr/0054).
type PartialBlob struct {
	CID string `json:"cid"`
	// Size is the declared size of its last fetch; Held the bytes of it
	// held (verified, stored); Bytes the bytes of its data file, what
	// counts against blobs.max_partial_bytes.
	Size  uint64 `json:"size"`
	Held  uint64 `json:"held"`
	Bytes uint64 `json:"bytes"`
	// Progressed is when a byte was last added to it (UTC).
	Progressed time.Time `json:"progressed"`
	// Fetching: a fetch of it runs now.
	Fetching bool `json:"fetching"`
}

// PartialBlobs returns the partial blobs the node keeps (GET
// PathBlobPartials).
func (c *Client) PartialBlobs(ctx context.Context) ([]PartialBlob, error) {
	var out []PartialBlob
	if err := c.getJSON(ctx, PathBlobPartials, nil, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// PathBlobFetches answers GET with a JSON array of Fetch: the fetches in
// flight (an operator's, auto-fetches, replicate requests'), oldest first.
const PathBlobFetches = "/v1/blobs/fetches"

// Fetch is a fetch in flight (GET PathBlobFetches).
type Fetch struct {
	CID string `json:"cid"`
	// Size is the declared size and Held the bytes verified and stored so
	// far, in bytes.
	Size uint64 `json:"size"`
	Held uint64 `json:"held"`
	// Started is when the fetch began (UTC).
	Started time.Time `json:"started"`
	// Finding is set while it looks for providers (connected peers asked,
	// the DHT); Provider is the peer ID of the provider it fetches from,
	// "" while none.
	Finding  bool   `json:"finding"`
	Provider string `json:"provider,omitempty"`
}
