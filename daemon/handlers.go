package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/wats-network/wats/api"
	"github.com/wats-network/wats/blobs"
	"github.com/wats-network/wats/core"
	"github.com/wats-network/wats/eventlog"
	"github.com/wats-network/wats/metrics"
	"github.com/wats-network/wats/node"
	"github.com/wats-network/wats/p2p"
	"github.com/wats-network/wats/peercache"
	"github.com/wats-network/wats/proto"
)

func (h handlers) id(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, api.ID{
		PeerID: h.ID().String(), Addrs: h.FullAddrs(),
		Network: h.RunningConfig().Network, Agent: h.Agent(),
	})
}

func (h handlers) connect(w http.ResponseWriter, r *http.Request) {
	var req api.ConnectRequest
	if !readJSON(w, r, &req) {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	p, err := h.Connect(ctx, req.Addr)
	if err != nil {
		// A failure the operator can act on is its one sentence, which
		// names the address and the peer: not the chain of dial errors
		// under it (docs/adr/0051, second addendum).
		var ce *p2p.ConnectError
		if errors.As(err, &ce) {
			err = ce
		}
		writeError(w, http.StatusBadGateway, err)
		return
	}
	for _, ap := range h.Peers() {
		if ap.PeerID == p.String() {
			writeJSON(w, http.StatusOK, ap)
			return
		}
	}
	writeError(w, http.StatusBadGateway, fmt.Errorf("node: %s disconnected right after connecting", p))
}

// disconnect closes every connection to the peer the request names
// (`wats peers disconnect`) and says how many were open: 0, with nothing
// done, for a peer not connected. The peer may connect again, or be
// dialled again (discovery, a connect): it is not banned.
func (h handlers) disconnect(w http.ResponseWriter, r *http.Request) {
	var req api.DisconnectRequest
	if !readJSON(w, r, &req) {
		return
	}
	p, err := peer.Decode(req.Peer)
	if err != nil {
		writeError(w, http.StatusBadRequest, fmt.Errorf("%q is not a peer ID", req.Peer))
		return
	}
	nw := h.Host().Network()
	open := len(nw.ConnsToPeer(p))
	if open > 0 {
		if err := nw.ClosePeer(p); err != nil {
			writeError(w, http.StatusInternalServerError, fmt.Errorf("close the connections to %s: %w", p, err))
			return
		}
	}
	writeJSON(w, http.StatusOK, api.Disconnected{PeerID: p.String(), Closed: open})
}

// shutdownHandler answers POST api.PathShutdown: 202 with the daemon's
// pid, sent before shutdown (Run's) is called, which stops the daemon as
// SIGINT does; 501 when there is no shutdown (Handler).
func shutdownHandler(shutdown func()) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if shutdown == nil {
			writeError(w, http.StatusNotImplemented, errors.New("this control API runs no daemon it could shut down"))
			return
		}
		writeJSON(w, http.StatusAccepted, api.Shutdown{PID: os.Getpid()})
		// The answer first: the control API closes as the daemon stops.
		_ = http.NewResponseController(w).Flush()
		shutdown()
	}
}

func (h handlers) events(w http.ResponseWriter, r *http.Request) {
	after, err := queryUint(r, "after", 0)
	if err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	limit, err := queryUint(r, "limit", api.DefaultPageLimit)
	if err != nil || limit == 0 {
		writeError(w, http.StatusBadRequest, fmt.Errorf("limit must be a whole number from 1 to %d", core.MaxPageEvents))
		return
	}
	events, next, more, err := h.Events().Page(core.Cursor(after), int(min(limit, core.MaxPageEvents)), proto.MaxPageBytes)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err)
		return
	}
	if events == nil {
		events = []jsontext.Value{}
	}
	page := api.EventPage{Events: events, Next: uint64(next), More: more, Head: uint64(h.Events().Head())}
	switch r.URL.Query().Get("author_use") {
	case "", "0":
	case "1":
		if page.AuthorUse, err = h.authorUse(events); err != nil {
			writeError(w, http.StatusInternalServerError, err)
			return
		}
	default:
		writeError(w, http.StatusBadRequest, fmt.Errorf("author_use must be 0 or 1, not %q", r.URL.Query().Get("author_use")))
		return
	}
	writeJSON(w, http.StatusOK, page)
}

// authorUse is what each author of events holds in the log now
// (api.EventPage.AuthorUse): one lookup an author.
func (h handlers) authorUse(events []jsontext.Value) (map[string]api.AuthorUse, error) {
	out := make(map[string]api.AuthorUse)
	for _, raw := range events {
		var ev struct {
			Author string `json:"author"`
		}
		if err := json.Unmarshal(raw, &ev); err != nil {
			return nil, fmt.Errorf("an event of the log: %w", err)
		}
		if _, ok := out[ev.Author]; ok {
			continue
		}
		u, err := h.Events().AuthorUsage(ev.Author)
		if err != nil {
			return nil, err
		}
		out[ev.Author] = api.AuthorUse{Events: u.Events, Bytes: u.Bytes}
	}
	return out, nil
}

func (h handlers) addEvent(w http.ResponseWriter, r *http.Request) {
	var req api.AddEventRequest
	if !readJSON(w, r, &req) {
		return
	}
	var refs []eventlog.BlobRef
	for _, b := range req.Blobs {
		refs = append(refs, eventlog.BlobRef{CID: b.CID, Size: b.Size, Name: b.Name})
	}
	ev, err := h.AddEvent(r.Context(), req.Kind, req.Body, refs)
	if err != nil {
		status := http.StatusInternalServerError
		if errors.Is(err, node.ErrInvalidEvent) {
			status = http.StatusBadRequest
		}
		writeError(w, status, err)
		return
	}
	writeJSON(w, http.StatusOK, ev)
}

func (h handlers) event(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	ev, _, err := h.Events().Find(id)
	switch {
	case errors.Is(err, eventlog.ErrNotFound):
		writeError(w, http.StatusNotFound, fmt.Errorf("no event with id %q", id))
	case errors.Is(err, eventlog.ErrAmbiguous):
		writeError(w, http.StatusConflict, fmt.Errorf("id prefix %q matches several events; give more characters", id))
	case err != nil:
		writeError(w, http.StatusBadRequest, err)
	default:
		writeJSON(w, http.StatusOK, ev)
	}
}

func (h handlers) tail(w http.ResponseWriter, r *http.Request) {
	after, err := queryUint(r, "after", 0)
	if err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	flusher := startNDJSON(w)
	for {
		changed := h.Events().Changed() // before reading, so no append is missed
		events, next, more, err := h.Events().Page(core.Cursor(after), core.MaxPageEvents, proto.MaxPageBytes)
		if err != nil {
			return
		}
		for _, ev := range events {
			if _, err := w.Write(append(ev, '\n')); err != nil {
				return
			}
		}
		if flusher != nil && len(events) > 0 {
			flusher.Flush()
		}
		after = uint64(next)
		if more {
			continue
		}
		select {
		case <-changed:
		case <-r.Context().Done():
			return
		}
	}
}

func (h handlers) sync(w http.ResponseWriter, r *http.Request) {
	var req api.SyncRequest
	if !readJSON(w, r, &req) {
		return
	}
	if req.All {
		if req.Peer != "" {
			writeError(w, http.StatusBadRequest, errors.New("a sync from all peers names no peer"))
			return
		}
		line := ndjsonLines(w)
		sts, err := h.SyncAll(r.Context(), func(sts []node.SyncProgress) { line(apiSyncShares(sts)) })
		last := apiSyncShares(sts)
		last.Done = err == nil
		if err != nil {
			last.Error = err.Error()
		}
		line(last)
		return
	}
	p, err := h.ResolvePeer(r.Context(), req.Peer)
	if err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	line := ndjsonLines(w)
	st, err := h.SyncPeer(r.Context(), p, func(st node.SyncProgress) { line(apiSyncProgress(st)) })
	last := apiSyncProgress(st)
	if err != nil {
		last.Error = err.Error()
	}
	line(last)
}

func (h handlers) config(w http.ResponseWriter, r *http.Request) {
	cfg := h.RunningConfig()
	b, err := cfg.TOML()
	if err != nil {
		writeError(w, http.StatusInternalServerError, err)
		return
	}
	writeJSON(w, http.StatusOK, api.RunningConfig{TOML: string(b)})
}

func (h handlers) forgetPeer(w http.ResponseWriter, r *http.Request) {
	id, err := peer.Decode(r.PathValue("id"))
	if err != nil {
		writeError(w, http.StatusBadRequest, fmt.Errorf("%q is not a peer ID", r.PathValue("id")))
		return
	}
	writeDone(w, h.ForgetPeer(id), peercache.ErrNotFound, fmt.Errorf("peer %s is not in the peer cache", id))
}

// addBlob stores the request body as a blob, named by the query's name
// (blobName). The store refuses it, having stored nothing, past
// blobs.max_blob_bytes or the quota (413): at once for a Content-Length
// past them, before the body is read (a client that sent "Expect:
// 100-continue" sends none of it).
func (h handlers) addBlob(w http.ResponseWriter, r *http.Request) {
	name, ok := blobName(w, r)
	if !ok {
		return
	}
	c, size, err := h.ImportBlob(r.Context(), r.Body, r.ContentLength, name, metrics.ImportUpload)
	if err != nil {
		writeError(w, importStatus(err), err)
		return
	}
	writeJSON(w, http.StatusOK, api.BlobInfo{CID: c.String(), Size: size, Name: name})
}

// blobName reads the name an add gives its blob: the query parameter
// name of POST api.PathBlobs and api.PathBlobImport, "" for none. It
// must keep the rule of an event's blob name (eventlog.CheckBlobName: at
// most eventlog.MaxBlobNameBytes bytes of UTF-8, no control character);
// a bad one is answered 400, before any byte of the blob is read, and ok
// is false.
func blobName(w http.ResponseWriter, r *http.Request) (name string, ok bool) {
	name = r.URL.Query().Get("name")
	if err := eventlog.CheckBlobName(name); err != nil {
		writeError(w, http.StatusBadRequest, fmt.Errorf("the blob's name %q: %w", name, err))
		return "", false
	}
	return name, true
}

// getBlob streams a blob that is complete and exactly of the declared
// size (ADR 0014: only then is a blob used); 404 otherwise, 409 for another
// size.
func (h handlers) getBlob(w http.ResponseWriter, r *http.Request) {
	c, ok := parseCID(w, r)
	if !ok {
		return
	}
	size, err := queryUint(r, "size", 0)
	if err != nil || r.URL.Query().Get("size") == "" {
		writeError(w, http.StatusBadRequest, errors.New("size=N, the declared size in bytes, is required"))
		return
	}
	complete, err := h.Blobs().Has(c)
	if err != nil || !complete {
		writeError(w, http.StatusNotFound, fmt.Errorf("blob %s is not stored here (or not complete)", c))
		return
	}
	// Export checks the size against the blob's record and root before it
	// writes anything, so the status is chosen when the first byte comes:
	// a mismatch still gets a proper error status, and the blob streams.
	out := &lazyBody{w: w, size: size}
	err = h.Blobs().Export(r.Context(), c, size, out)
	switch {
	case out.started:
		// Headers are sent; a failure now can only cut the body short,
		// which the client sees as fewer bytes than Content-Length.
	case errors.Is(err, blobs.ErrSizeMismatch):
		writeError(w, http.StatusConflict, err)
	case errors.Is(err, blobs.ErrIncomplete):
		writeError(w, http.StatusNotFound, err)
	case err != nil:
		writeError(w, http.StatusInternalServerError, err)
	default:
		out.start() // an empty blob
	}
}

func (h handlers) removeBlob(w http.ResponseWriter, r *http.Request) {
	c, ok := parseCID(w, r)
	if !ok {
		return
	}
	err := h.Blobs().Remove(r.Context(), c)
	if errors.Is(err, blobs.ErrFetching) {
		writeError(w, http.StatusConflict, fmt.Errorf("blob %s is being fetched; its partial bytes are removed once the fetch ends", c))
		return
	}
	writeDone(w, err, blobs.ErrIncomplete, fmt.Errorf("blob %s is not stored here", c))
}

// partialBlobs answers GET api.PathBlobPartials, as store.PartialList
// does without a daemon.
func (h handlers) partialBlobs() []api.PartialBlob {
	ps := h.Blobs().Partials()
	out := make([]api.PartialBlob, 0, len(ps))
	for _, p := range ps {
		out = append(out, api.PartialBlob{CID: p.CID.String(), Size: p.Size, Held: p.Held, Bytes: p.Bytes,
			Progressed: p.Progressed.UTC(), Fetching: p.Fetching})
	}
	return out
}

// status answers GET api.PathStatus: the node's, with its partial blobs.
func (h handlers) status() api.Status {
	st := h.Status()
	for _, p := range h.Blobs().Partials() {
		st.PartialBlobs++
		st.PartialBytes += p.Bytes
	}
	return st
}

func (h handlers) reportCrash(w http.ResponseWriter, r *http.Request) {
	var req api.CrashReportRequest
	if !readJSON(w, r, &req) {
		return
	}
	var to peer.ID
	if req.To != "" {
		var err error
		if to, err = peer.Decode(req.To); err != nil {
			writeError(w, http.StatusBadRequest, fmt.Errorf("%q is not a peer ID", req.To))
			return
		}
	}
	var dump *eventlog.BlobRef
	if req.DumpCID != "" {
		dump = &eventlog.BlobRef{CID: req.DumpCID, Size: req.DumpSize, Name: req.DumpName}
	}
	c := eventlog.Crash{CrashInfo: req.CrashInfo}
	ev, err := h.ReportCrash(r.Context(), c, dump, to)
	switch {
	case errors.Is(err, node.ErrInvalidEvent):
		writeError(w, http.StatusBadRequest, err)
	case err != nil:
		writeError(w, http.StatusBadGateway, err)
	default:
		writeJSON(w, http.StatusOK, ev)
	}
}

func (h handlers) crashes(w http.ResponseWriter, r *http.Request) {
	groups, err := h.CrashGroups()
	if err != nil {
		writeError(w, http.StatusInternalServerError, err)
		return
	}
	writeJSON(w, http.StatusOK, groups)
}

// readFetch reads the FetchRequest of a fetch or a stream, with its CID
// and its from peer ("" for none; a multiaddr is dialled), or answers 400
// and returns false.
func (h handlers) readFetch(w http.ResponseWriter, r *http.Request) (req api.FetchRequest, c cid.Cid, from peer.ID, ok bool) {
	if h.Fetching() == nil {
		writeError(w, http.StatusServiceUnavailable, errors.New("node: not started"))
		return req, c, "", false
	}
	if !readJSON(w, r, &req) {
		return req, c, "", false
	}
	c, err := cid.Decode(req.CID)
	if err != nil {
		writeError(w, http.StatusBadRequest, fmt.Errorf("%q is not a CID", req.CID))
		return req, c, "", false
	}
	if req.From != "" {
		if from, err = h.ResolvePeer(r.Context(), req.From); err != nil {
			writeError(w, http.StatusBadRequest, err)
			return req, c, "", false
		}
	}
	return req, c, from, true
}

// fetchBlob makes a blob complete, fetching it if needed, and streams
// its progress (api.PathBlobFetch).
func (h handlers) fetchBlob(w http.ResponseWriter, r *http.Request) {
	req, c, from, ok := h.readFetch(w, r)
	if !ok {
		return
	}
	lines := newFetchLines(ndjsonLines(w), req.Size)
	err := h.Fetching().FetchAsked(r.Context(), blobs.Asked{CID: c, Size: req.Size, From: from,
		Progress: func(done, _ uint64) { lines.bytes(done) }, Wait: lines.wait, Resumed: lines.resumed})
	lines.end(req.Size, err, func() string { return fetchFailure(c, err, from != "") })
}

// streamBlob makes a blob complete, fetching it if needed, and answers
// with its bytes in order meanwhile, then a trailer that says whether it
// is complete (api.PathBlobStream, ADR 0035).
func (h handlers) streamBlob(w http.ResponseWriter, r *http.Request) {
	req, c, from, ok := h.readFetch(w, r)
	if !ok {
		return
	}
	w.Header().Set("Content-Type", api.ContentTypeBlob)
	w.Header().Set(api.HeaderBlobSize, strconv.FormatUint(req.Size, 10))
	w.Header().Set("Trailer", api.TrailerBlobStatus+", "+api.TrailerBlobError)
	// What a partial blob holds is read before the fetch starts, so that
	// the head, sent now, can say it: the fetch's own word of it
	// (blobs.Asked.Resumed) may come after its first leaf is written.
	for _, p := range h.Blobs().Partials() {
		if p.CID.Equals(c) && p.Size == req.Size && p.Held > 0 {
			w.Header().Set(api.HeaderBlobResumed, strconv.FormatUint(p.Held, 10))
		}
	}
	w.WriteHeader(http.StatusOK)
	out := flushingWriter{w: w, rc: http.NewResponseController(w)}
	_ = out.rc.Flush() // the headers now: the first bytes may take a while
	if _, err := h.Fetching().StreamAsked(r.Context(), blobs.Asked{CID: c, Size: req.Size, From: from}, out); err != nil {
		w.Header().Set(api.TrailerBlobStatus, api.BlobFailed)
		w.Header().Set(api.TrailerBlobError, headerText(fetchFailure(c, err, from != ""), api.MaxBlobErrorBytes))
		return
	}
	w.Header().Set(api.TrailerBlobStatus, api.BlobComplete)
}

// streamBlobFile fetches a blob as streamBlob does and writes its bytes,
// in order as they are verified, to the file whose descriptor came with
// the request (api.PathBlobStreamFile): no byte crosses the socket. NDJSON
// lines report the bytes written, the last Done or Error.
func (h handlers) streamBlobFile(w http.ResponseWriter, r *http.Request) {
	f, err := passedOutput(r.Context())
	if err != nil {
		writeDescriptorError(w, err)
		return
	}
	defer f.Close()
	req, c, from, ok := h.readFetch(w, r)
	if !ok {
		return
	}
	lines := newFetchLines(ndjsonLines(w), req.Size)
	lines.line(api.FetchProgress{Size: req.Size}) // the answer's head now: the first bytes may take a while
	out := &progressWriter{w: f, report: lines.bytes, behind: f}
	n, err := h.Fetching().StreamAsked(r.Context(), blobs.Asked{CID: c, Size: req.Size, From: from, Wait: lines.wait, Resumed: lines.resumed}, out)
	lines.end(n, err, func() string { return fetchFailure(c, err, from != "") })
}

// fetchLines writes the NDJSON progress lines of a fetch
// (api.FetchProgress): the bytes held or written at most every
// fetchProgressEvery, each change of what the fetch waits for at once,
// and the last line, Done with the provider that served or Error. Safe
// for concurrent use: the fetch's goroutine tells it what it waits for,
// the writer of the bytes how many.
type fetchLines struct {
	line func(any)
	mu   sync.Mutex
	p    api.FetchProgress
	last time.Time
}

func newFetchLines(line func(any), size uint64) *fetchLines {
	return &fetchLines{line: line, p: api.FetchProgress{Size: size}}
}

// bytes reports n bytes, unless a line went out less than
// fetchProgressEvery ago.
func (l *fetchLines) bytes(n uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.p.Bytes = n
	if now := time.Now(); now.Sub(l.last) >= fetchProgressEvery {
		l.last = now
		l.line(l.p)
	}
}

// wait reports what the fetch waits for now (blobs.Request.Wait).
func (l *fetchLines) wait(w blobs.Waiting) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.p.Finding, l.p.Provider = w.Finding, ""
	if w.Provider != "" {
		l.p.Provider = w.Provider.String()
	}
	l.line(l.p)
}

// resumed reports the bytes held already when the fetch began
// (blobs.Request.Resumed), at once; every later line carries them.
func (l *fetchLines) resumed(held, _ uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.p.Resumed = held
	l.line(l.p)
}

// end writes the last line of a fetch that ended with err after n bytes:
// Done, with the provider of the last attempt (the one that served), or
// Error, what failure says of err.
func (l *fetchLines) end(n uint64, err error, failure func() string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.p.Bytes, l.p.Finding = n, false
	if err != nil {
		l.line(api.FetchProgress{Bytes: n, Size: l.p.Size, Resumed: l.p.Resumed, Error: failure()})
		return
	}
	l.p.Done = true
	l.line(l.p)
}

// progressWriter writes to w and tells report the bytes written so far.
type progressWriter struct {
	w      io.Writer
	n      uint64
	report func(written uint64)
	// behind, if set, is the file w writes from its start: every
	// writeBehindBytes written, their writeback to the disk is started
	// (startWriteback), so that the fsync that the CLI makes before its
	// rename waits for the last few MiB only, not the whole blob
	// (docs/adr/0053). started is the bytes whose writeback has started.
	behind  *os.File
	started uint64
}

// writeBehindBytes is how many bytes of a blob get's file are written
// before their writeback starts: 8 chunks.
const writeBehindBytes = 8 << 20

// writeback is startWriteback; a variable so that a test can see the
// ranges.
var writeback = startWriteback

func (p *progressWriter) Write(b []byte) (int, error) {
	k, err := p.w.Write(b)
	p.count(int64(k))
	return k, err
}

// ReadFrom copies r to the file (os.File's, copy_file_range between two
// files: the stream's leaves go from the data file to the output without
// being read into the daemon).
func (p *progressWriter) ReadFrom(r io.Reader) (int64, error) {
	var k int64
	var err error
	if rf, ok := p.w.(io.ReaderFrom); ok {
		k, err = rf.ReadFrom(r)
	} else {
		k, err = io.Copy(p.w, r)
	}
	p.count(k)
	return k, err
}

func (p *progressWriter) count(k int64) {
	p.n += uint64(k)
	p.report(p.n)
	if p.behind != nil && p.n-p.started >= writeBehindBytes {
		writeback(p.behind, int64(p.started), int64(p.n-p.started))
		p.started = p.n
	}
}

// replicate asks a peer to replicate blobs (api.PathReplicate).
func (h handlers) replicate(w http.ResponseWriter, r *http.Request) {
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
	p, err := h.ResolvePeer(r.Context(), req.Peer)
	if err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	resp, err := h.Replicate(r.Context(), p, refs)
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

// blobSize says what size the node knows for a blob (GET
// api.PathBlobs/{cid}/size): the blob's own when it is held complete, else
// the one the log's events declare for it.
func (h handlers) blobSize(w http.ResponseWriter, r *http.Request) {
	c, err := cid.Decode(r.PathValue("cid"))
	if err != nil {
		writeError(w, http.StatusBadRequest, fmt.Errorf("%q is not a CID", r.PathValue("cid")))
		return
	}
	if size, complete := h.Blobs().SizeOf(c); complete {
		writeJSON(w, http.StatusOK, api.BlobSize{CID: c.String(), Size: size, Source: "held"})
		return
	}
	size, ok, err := h.Events().BlobSize(c.String())
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

// blobList answers GET api.PathBlobs: the blobs, newest first, the
// newest ?limit=N of them when N > 0.
func (h handlers) blobList(w http.ResponseWriter, r *http.Request) {
	limit, err := queryUint(r, "limit", 0)
	if err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	list := h.BlobList()
	if limit > 0 && uint64(len(list)) > limit {
		list = list[:limit]
	}
	writeJSON(w, http.StatusOK, list)
}
