package daemon

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/ipfs/go-cid"

	"github.com/wats-network/wats/api"
	"github.com/wats-network/wats/blobs"
	"github.com/wats-network/wats/node"
)

// apiSyncProgress is st as the control API reports it.
func apiSyncProgress(st node.SyncProgress) api.SyncProgress {
	return api.SyncProgress{Peer: st.Peer.String(), Received: st.Received, Stored: st.Stored, Dropped: st.Dropped,
		Cursor: uint64(st.Cursor), PeerHead: uint64(st.PeerHead), Done: st.Done}
}

// apiSyncShares is a sync from several peers as the control API reports
// it: the counts summed, with each peer's share (api.SyncShare). Done is
// the caller's to set.
func apiSyncShares(sts []node.SyncProgress) api.SyncProgress {
	out := api.SyncProgress{Shares: make([]api.SyncShare, 0, len(sts))}
	for _, st := range sts {
		out.Received, out.Stored, out.Dropped = out.Received+st.Received, out.Stored+st.Stored, out.Dropped+st.Dropped
		out.PeerHead = max(out.PeerHead, uint64(st.PeerHead))
		out.Shares = append(out.Shares, api.SyncShare{Peer: st.Peer.String(), Received: st.Received, Stored: st.Stored,
			Dropped: st.Dropped, Cursor: uint64(st.Cursor), PeerHead: uint64(st.PeerHead), Done: st.Done})
	}
	return out
}

// queryUint reads a decimal uint64 query parameter, def when absent.
func queryUint(r *http.Request, name string, def uint64) (uint64, error) {
	s := r.URL.Query().Get(name)
	if s == "" {
		return def, nil
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s must be a whole number, not %q", name, s)
	}
	return v, nil
}

// readJSON decodes a request body of at most maxBodyBytes into v, or
// answers 400 and returns false.
func readJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if err == nil {
		err = json.Unmarshal(b, v)
	}
	if err != nil {
		writeError(w, http.StatusBadRequest, fmt.Errorf("bad request body: %w", err))
		return false
	}
	return true
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":"could not encode the response"}`)
	}
	w.Header().Set("Content-Type", api.ContentTypeJSON)
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

// startNDJSON starts a 200 response of JSON lines (api.ContentTypeNDJSON)
// and returns w's flusher, nil if it has none.
func startNDJSON(w http.ResponseWriter) http.Flusher {
	w.Header().Set("Content-Type", api.ContentTypeNDJSON)
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	return flusher
}

// ndjsonLines starts a 200 response of JSON lines and returns the function
// that writes one line of v and flushes it. It may be called from several
// goroutines (a fetch reports from its own).
func ndjsonLines(w http.ResponseWriter) func(v any) {
	flusher := startNDJSON(w)
	var mu sync.Mutex
	return func(v any) {
		mu.Lock()
		defer mu.Unlock()
		// Invalid UTF-8 (in an error's text, say) becomes U+FFFD rather
		// than an empty line.
		b, err := json.Marshal(v, jsontext.AllowInvalidUTF8(true))
		if err != nil {
			b, _ = json.Marshal(api.ErrorBody{Error: "could not encode a line: " + err.Error()}, jsontext.AllowInvalidUTF8(true))
		}
		w.Write(append(b, '\n'))
		if flusher != nil {
			flusher.Flush()
		}
	}
}

// answer is the handler of a GET that only reports what get returns, as
// JSON with 200.
func answer[T any](get func() T) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, http.StatusOK, get()) }
}

// writeDone answers a request that deletes something: {} for a nil err,
// 404 with notFoundErr when err is notFound, 500 with err otherwise.
func writeDone(w http.ResponseWriter, err, notFound, notFoundErr error) {
	switch {
	case errors.Is(err, notFound):
		writeError(w, http.StatusNotFound, notFoundErr)
	case err != nil:
		writeError(w, http.StatusInternalServerError, err)
	default:
		writeJSON(w, http.StatusOK, struct{}{})
	}
}

// writeError answers err with status, or 507 Insufficient Storage for a
// write refused on a full disk (node.ErrDiskFull), whatever the handler
// expected.
func writeError(w http.ResponseWriter, status int, err error) {
	if errors.Is(err, node.ErrDiskFull) {
		status = http.StatusInsufficientStorage
	}
	writeJSON(w, status, api.ErrorBody{Error: err.Error()})
}

// parseCID reads the {cid} of a blob path, or answers 400.
func parseCID(w http.ResponseWriter, r *http.Request) (cid.Cid, bool) {
	c, err := cid.Decode(r.PathValue("cid"))
	if err != nil {
		writeError(w, http.StatusBadRequest, fmt.Errorf("%q is not a CID", r.PathValue("cid")))
		return cid.Undef, false
	}
	return c, true
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
	case errors.Is(err, node.ErrDiskFull):
		// The guard's sentence alone, without the packages it came through.
		why = err.Error()
		why = why[max(strings.Index(why, node.ErrDiskFull.Error()), 0):]
	default:
		why = err.Error()
	}
	return fmt.Sprintf("could not fetch blob %s: %s", c, why)
}

// lazyBody sends a blob's success headers at its first write.
type lazyBody struct {
	w       http.ResponseWriter
	size    uint64
	started bool
}

func (b *lazyBody) start() {
	b.w.Header().Set("Content-Type", "application/octet-stream")
	b.w.Header().Set("Content-Length", strconv.FormatUint(b.size, 10))
	b.w.WriteHeader(http.StatusOK)
	b.started = true
}

func (b *lazyBody) Write(p []byte) (int, error) {
	if !b.started {
		b.start()
	}
	return b.w.Write(p)
}

// flushingWriter writes a stream's bytes to the client as they are
// written: each write is flushed.
type flushingWriter struct {
	w  http.ResponseWriter
	rc *http.ResponseController
}

func (f flushingWriter) Write(p []byte) (int, error) {
	n, err := f.w.Write(p)
	if err == nil {
		err = f.rc.Flush()
	}
	return n, err
}

// headerText is s as a header or trailer value can carry it: one line of
// printable ASCII, any other character (a newline, a control character,
// non-ASCII) as "?", cut to max bytes.
func headerText(s string, max int) string {
	s = strings.Map(func(r rune) rune {
		if r < ' ' || r > '~' {
			return '?'
		}
		return r
	}, s)
	if len(s) > max {
		s = s[:max]
	}
	return s
}

// maxBodyBytes bounds a control API request body: an event body is at
// most 16 KiB (docs/design.md §5), so 64 KiB leaves room for its JSON
// escaping.
const maxBodyBytes = 64 << 10

// fetchProgressEvery is the least time between two progress lines of a
// fetch (the last line is always sent).
const fetchProgressEvery = 100 * time.Millisecond

// fetches is the answer of GET api.PathBlobFetches: the fetches in
// flight, oldest first.
func fetches(in []blobs.InFlight) []api.Fetch {
	out := make([]api.Fetch, 0, len(in))
	for _, f := range in {
		af := api.Fetch{CID: f.CID.String(), Size: f.Size, Held: f.Held, Started: f.Started.UTC(), Finding: f.Finding}
		if f.Provider != "" {
			af.Provider = f.Provider.String()
		}
		out = append(out, af)
	}
	return out
}
