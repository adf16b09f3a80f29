package api

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
)

// PathBlobs takes a POSTed blob (the file's bytes, application/octet-stream)
// and answers with its BlobInfo; answers GET with a JSON array of BlobInfo.
// GET PathBlobs + "/{cid}?size=N" streams a complete blob of exactly N bytes;
// DELETE PathBlobs + "/{cid}" removes one.
const PathBlobs = "/v1/blobs"

// BlobInfo is one stored blob.
type BlobInfo struct {
	// CID is the blob's CIDv1 (UnixFS, BLAKE3, docs/design.md §9).
	CID string `json:"cid"`
	// Size is the file size in bytes.
	Size uint64 `json:"size"`
}

// AddBlob stores the bytes of r as a blob (POST PathBlobs).
func (c *Client) AddBlob(ctx context.Context, r io.Reader) (*BlobInfo, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, baseURL+PathBlobs, r)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/octet-stream")
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
