package api

import (
	"context"
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
	// CID is the blob's CIDv1 (UnixFS, BLAKE3, design §9).
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
