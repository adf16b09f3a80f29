package node

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/wats-network/wats/blobs"
	"github.com/wats-network/wats/core"
	"github.com/wats-network/wats/eventlog"
	"github.com/wats-network/wats/node/api"
	"github.com/wats-network/wats/proto"
)

// The api package's copies of protocol bounds equal the originals: a
// negative array length would not compile.
var (
	_ [api.MaxReplicateBlobs - proto.MaxReplicateBlobs]struct{}
	_ [proto.MaxReplicateBlobs - api.MaxReplicateBlobs]struct{}
)

// fetchProgressEvery is the least time between two progress lines of a
// fetch (the last line is always sent).
const fetchProgressEvery = 100 * time.Millisecond

// apiFetchBlob makes a blob complete, fetching it if needed, and streams
// its progress (api.PathBlobFetch).
func (n *Node) apiFetchBlob(w http.ResponseWriter, r *http.Request) {
	var req api.FetchRequest
	if !readJSON(w, r, &req) {
		return
	}
	c, err := cid.Decode(req.CID)
	if err != nil {
		writeError(w, http.StatusBadRequest, fmt.Errorf("%q is not a CID", req.CID))
		return
	}
	var from peer.ID
	if req.From != "" {
		if from, err = n.resolvePeer(r.Context(), req.From); err != nil {
			writeError(w, http.StatusBadRequest, err)
			return
		}
	}
	w.Header().Set("Content-Type", api.ContentTypeNDJSON)
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	var mu sync.Mutex // the fetch reports from its goroutine
	line := func(p api.FetchProgress) {
		mu.Lock()
		defer mu.Unlock()
		b, _ := json.Marshal(p)
		w.Write(append(b, '\n'))
		if flusher != nil {
			flusher.Flush()
		}
	}
	var last time.Time
	progress := func(done, total uint64) {
		if now := time.Now(); now.Sub(last) >= fetchProgressEvery {
			last = now
			line(api.FetchProgress{Bytes: done, Size: total})
		}
	}
	// The operator asked for it: besides the providers gossip named, the
	// peers connected after hello are asked too (guesses: tried last,
	// never backed off), as an event that came by sync names no provider.
	src := blobs.Sources{First: from, FirstExempt: from != "", Named: n.hints.Get(c), Guesses: n.helloPeerIDs(blobs.MaxAttempts)}
	err = n.FetchBlob(r.Context(), blobs.Request{CID: c, Size: req.Size, Sources: src, Progress: progress})
	n.logFetch("", c, req.Size, "api", err)
	if err != nil {
		line(api.FetchProgress{Size: req.Size, Error: fetchFailure(c, err, from != "")})
		return
	}
	line(api.FetchProgress{Bytes: req.Size, Size: req.Size, Done: true})
}

// apiReplicate asks a peer to replicate blobs (api.PathReplicate).
func (n *Node) apiReplicate(w http.ResponseWriter, r *http.Request) {
	var req api.ReplicateRequest
	if !readJSON(w, r, &req) {
		return
	}
	if len(req.Blobs) == 0 || len(req.Blobs) > proto.MaxReplicateBlobs {
		writeError(w, http.StatusBadRequest, fmt.Errorf("%d blobs; a replicate request names 1..%d", len(req.Blobs), proto.MaxReplicateBlobs))
		return
	}
	refs := make([]proto.BlobRef, 0, len(req.Blobs))
	for _, b := range req.Blobs {
		if _, err := cid.Decode(b.CID); err != nil {
			writeError(w, http.StatusBadRequest, fmt.Errorf("%q is not a CID", b.CID))
			return
		}
		if b.Size > core.MaxSafeInt {
			writeError(w, http.StatusBadRequest, fmt.Errorf("size %d of %s is beyond 2^53", b.Size, b.CID))
			return
		}
		refs = append(refs, proto.BlobRef{CID: b.CID, Size: int64(b.Size)})
	}
	p, err := n.resolvePeer(r.Context(), req.Peer)
	if err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	resp, err := n.Replicate(r.Context(), p, refs)
	if err != nil {
		writeError(w, http.StatusBadGateway, err)
		return
	}
	out := api.ReplicateResult{Stored: resp.Stored, Skipped: resp.Skipped, Failed: []api.FailedBlob{}}
	for _, f := range resp.Failed {
		out.Failed = append(out.Failed, api.FailedBlob{CID: f.CID, Reason: f.Reason})
	}
	if out.Stored == nil {
		out.Stored = []string{}
	}
	if out.Skipped == nil {
		out.Skipped = []string{}
	}
	writeJSON(w, http.StatusOK, out)
}

// fetchFailure says in one sentence why a fetch of c failed (err, from
// FetchBlob), for the operator who asked for it: what the fetcher's
// sentinel means, with the detail it carries, and what to try. from tells
// whether a provider was named (blob get --from).
func fetchFailure(c cid.Cid, err error, from bool) string {
	detail := func(sentinel error) string {
		s := err.Error()
		if i := strings.Index(s, sentinel.Error()); i >= 0 {
			s = strings.TrimPrefix(s[i+len(sentinel.Error()):], ": ")
		}
		return strings.ReplaceAll(s, "blobs: ", "") // one sentence, not a chain of packages
	}
	var why string
	switch {
	case errors.Is(err, blobs.ErrTooLarge), errors.Is(err, blobs.ErrQuota):
		why = strings.TrimPrefix(err.Error(), "blobs: ")
	case errors.Is(err, blobs.ErrNoProvider):
		why = "no peer is left to fetch it from"
		if d := detail(blobs.ErrNoProvider); d != "" {
			why += " (" + d + ")"
		}
		if !from {
			why += "; name a peer that holds it with --from PEER"
		}
	case errors.Is(err, blobs.ErrAttempts):
		why = fmt.Sprintf("the %d providers tried did not deliver it", blobs.MaxAttempts)
		if d := detail(blobs.ErrAttempts); d != "" {
			why += " (the last: " + d + ")"
		}
	case errors.Is(err, blobs.ErrFetchTimeout):
		why = fmt.Sprintf("it was not complete after %v, the most a fetch may take (ADR 0014)", blobs.FetchTimeout)
	case errors.Is(err, blobs.ErrSizeMismatch):
		why = "its content is not of the declared size (is --size right?)"
	case errors.Is(err, blobs.ErrCollection):
		why = "it is a directory or another collection, not a file; collections are not fetched (ADR 0014)"
	case errors.Is(err, blobs.ErrBadBlob):
		why = "what its provider sent is not a well-formed blob"
	default:
		why = err.Error()
	}
	return fmt.Sprintf("could not fetch blob %s: %s", c, why)
}

// apiBlobSize says what size the node knows for a blob (GET
// api.PathBlobs/{cid}/size): the blob's own when it is held complete, else
// the one the log's events declare for it.
func (n *Node) apiBlobSize(w http.ResponseWriter, r *http.Request) {
	c, err := cid.Decode(r.PathValue("cid"))
	if err != nil {
		writeError(w, http.StatusBadRequest, fmt.Errorf("%q is not a CID", r.PathValue("cid")))
		return
	}
	if size, complete := n.blobs.SizeOf(c); complete {
		writeJSON(w, http.StatusOK, api.BlobSize{CID: c.String(), Size: size, Source: "held"})
		return
	}
	size, ok, err := n.events.BlobSize(c.String())
	switch {
	case errors.Is(err, eventlog.ErrSizesDiffer):
		writeError(w, http.StatusConflict, fmt.Errorf("blob %s: events name it with different sizes; give the one you want", c))
	case err != nil:
		writeError(w, http.StatusInternalServerError, err)
	case !ok:
		writeError(w, http.StatusNotFound, fmt.Errorf("blob %s: this node neither holds it nor has an event naming it, so its size is not known", c))
	default:
		writeJSON(w, http.StatusOK, api.BlobSize{CID: c.String(), Size: size, Source: "event"})
	}
}
