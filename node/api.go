package node

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/wats-network/wats/blobs"
	"github.com/wats-network/wats/eventlog"
	"github.com/wats-network/wats/limits"
	"github.com/wats-network/wats/node/api"
	"github.com/wats-network/wats/peercache"
	"github.com/wats-network/wats/proto"

	"github.com/wats-network/wats/core"
)

// maxAPIBodyBytes bounds a control API request body: an event body is at
// most 16 KiB (docs/design.md §5), so 64 KiB leaves room for its JSON escaping.
const maxAPIBodyBytes = 64 << 10

// defaultAPIPageLimit is the number of events GET /v1/events returns when
// the request does not say; at most proto.MaxPageEvents are returned.
const defaultAPIPageLimit = 100

// Handler returns the control API (docs/design.md §12) as an http.Handler. See
// package node/api for the paths and shapes.
func (n *Node) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+api.PathID, n.apiID)
	mux.HandleFunc("GET "+api.PathStatus, n.apiStatus)
	mux.HandleFunc("GET "+api.PathPeers, n.apiPeers)
	mux.HandleFunc("POST "+api.PathConnect, n.apiConnect)
	mux.HandleFunc("GET "+api.PathEvents, n.apiEvents)
	mux.HandleFunc("POST "+api.PathEvents, n.apiAddEvent)
	mux.HandleFunc("GET "+api.PathEvent+"{id}", n.apiEvent)
	mux.HandleFunc("GET "+api.PathTail, n.apiTail)
	mux.HandleFunc("POST "+api.PathSync, n.apiSync)
	mux.HandleFunc("POST "+api.PathCrashes, n.apiReportCrash)
	mux.HandleFunc("GET "+api.PathCrashes, n.apiCrashes)
	mux.HandleFunc("POST "+api.PathBlobs, n.apiAddBlob)
	mux.HandleFunc("GET "+api.PathBlobs, n.apiBlobs)
	mux.HandleFunc("GET "+api.PathBlobs+"/{cid}", n.apiGetBlob)
	mux.HandleFunc("GET "+api.PathBlobs+"/{cid}/size", n.apiBlobSize)
	mux.HandleFunc("DELETE "+api.PathBlobs+"/{cid}", n.apiRemoveBlob)
	mux.HandleFunc("POST "+api.PathBlobFetch, n.apiFetchBlob)
	mux.HandleFunc("POST "+api.PathReplicate, n.apiReplicate)
	mux.HandleFunc("GET "+api.PathPeerCache, n.apiPeerCache)
	mux.HandleFunc("DELETE "+api.PathPeerCache+"/{id}", n.apiForgetPeer)
	mux.HandleFunc("GET "+api.PathLimits, n.apiLimits)
	mux.HandleFunc("GET "+api.PathConfig, n.apiConfig)
	mux.HandleFunc("GET "+api.PathDiag, n.apiDiag)
	mux.Handle("GET "+api.PathMetrics, n.MetricsHandler())
	// Go's profiles, for operators on the machine only (the control API is
	// the repo's Unix socket): curl --unix-socket … http://wats/debug/pprof/.
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	return mux
}

// MetricsHandler serves the node's Prometheus metrics.
func (n *Node) MetricsHandler() http.Handler {
	return promhttp.HandlerFor(n.m.reg, promhttp.HandlerOpts{})
}

// ServeAPI serves the control API on a Unix socket at path (mode 0600)
// until ctx ends, then removes the socket.
//
// REQUIRES: nothing exists at path (repo.Repo.PrepareSocket sees to it).
func (n *Node) ServeAPI(ctx context.Context, path string) error {
	l, err := net.Listen("unix", path)
	if err != nil {
		return fmt.Errorf("node: listen on control socket %s: %w", path, err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		l.Close()
		return fmt.Errorf("node: control socket %s: %w", path, err)
	}
	return n.serveHTTP(ctx, l, n.Handler(), func() { os.Remove(path) })
}

// serveHTTP serves h on l until ctx ends, then shuts down within 5 s.
func (n *Node) serveHTTP(ctx context.Context, l net.Listener, h http.Handler, cleanup func()) error {
	// Requests' contexts end when the server shuts down, so that streams
	// (tail, sync) end at once instead of holding Shutdown for its timeout.
	base, cancelRequests := context.WithCancel(n.ctx)
	defer cancelRequests()
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return base },
	}
	srv.RegisterOnShutdown(cancelRequests)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(l) }()
	select {
	case <-ctx.Done():
	case err := <-errc:
		return err
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := srv.Shutdown(sctx)
	if cleanup != nil {
		cleanup()
	}
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}

func (n *Node) apiID(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, api.ID{
		PeerID: n.host.ID().String(), Addrs: n.FullAddrs(),
		Network: n.cfg.Network, Agent: n.agent,
	})
}

// Status returns a summary of the node's state.
func (n *Node) Status() api.Status {
	tiers := map[string]int{}
	n.run.each(func(st *peerState) { tiers[st.Tier().String()]++ })
	return api.Status{
		PeerTiers:         tiers,
		StrangerSlots:     strangerSlots(n.cfg),
		StrangerSlotsUsed: n.run.strangerCount(),

		PeerID:        n.host.ID().String(),
		Network:       n.cfg.Network,
		Agent:         n.agent,
		Peers:         len(n.helloPeers()),
		Events:        uint64(n.events.Head()),
		Head:          uint64(n.events.Head()),
		Gossip:        n.gossip != nil,
		UptimeSeconds: int64(n.now().Sub(n.started) / time.Second),
		Dropped:       n.m.droppedTotal(),
		InFlight:      n.inFlight.Load(),

		ChallengeEffort:  n.issuer.Effort(n.mono(n.now())),
		ChallengesIssued: n.m.issuedN.Load(),
		ChallengesSolved: n.m.solvedN.Load(),
		ChallengesFailed: n.m.failedN.Load(),

		Blobs:          len(n.blobs.List()),
		BlobBytes:      n.blobs.QuotaUsed(),
		BlobQuotaBytes: uint64(n.cfg.Blobs.QuotaBytes),
		Log:            n.logUsage(),
	}
}

// logUsage is what the event log holds against its quotas.
func (n *Node) logUsage() api.LogUsage {
	u, authors := n.events.Usage()
	q := n.cfg.Events
	return api.LogUsage{Events: u.Events, Bytes: u.Bytes, Authors: authors,
		MaxEvents: uint64(q.MaxEvents), MaxBytes: uint64(q.MaxBytes),
		MaxEventsPerAuthor: uint64(q.MaxEventsPerAuthor), MaxBytesPerAuthor: uint64(q.MaxBytesPerAuthor),
		Commits: n.events.Commits()}
}

func (n *Node) apiStatus(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, n.Status())
}

// Peers returns the connected peers.
func (n *Node) Peers() []api.Peer {
	conns := n.host.Network().Peers()
	mono := n.mono(n.now())
	out := make([]api.Peer, 0, len(conns))
	for _, p := range conns {
		ap := api.Peer{PeerID: p.String(), Cursor: uint64(n.cursorOf(p)), Addrs: []string{}, Direction: api.DirectionOutbound}
		for _, c := range n.host.Network().ConnsToPeer(p) {
			ap.Addrs = append(ap.Addrs, c.RemoteMultiaddr().String())
		}
		if st := n.run.get(p); st != nil {
			h, dir := st.helloAndDirection()
			if dir == network.DirInbound {
				ap.Direction = api.DirectionInbound
			}
			if h != nil {
				ap.Hello, ap.Agent, ap.Head = true, h.Agent, uint64(h.Head)
			}
			ap.NotWats = st.notWats.Load()
			hist := st.History()
			ap.Tier, ap.TierReason, ap.Reputed = limits.TierOf(hist).String(), limits.Explain(hist), st.reputed(mono)
		}
		if n.gossip != nil {
			ap.Score, ap.HasScore = n.gossip.Score(p)
		}
		out = append(out, ap)
	}
	return out
}

func (n *Node) apiPeers(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, n.Peers())
}

func (n *Node) apiConnect(w http.ResponseWriter, r *http.Request) {
	var req api.ConnectRequest
	if !readJSON(w, r, &req) {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	p, err := n.Connect(ctx, req.Addr)
	if err != nil {
		writeError(w, http.StatusBadGateway, err)
		return
	}
	for _, ap := range n.Peers() {
		if ap.PeerID == p.String() {
			writeJSON(w, http.StatusOK, ap)
			return
		}
	}
	writeError(w, http.StatusBadGateway, fmt.Errorf("node: %s disconnected right after connecting", p))
}

func (n *Node) apiEvents(w http.ResponseWriter, r *http.Request) {
	after, err := queryUint(r, "after", 0)
	if err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	limit, err := queryUint(r, "limit", defaultAPIPageLimit)
	if err != nil || limit == 0 {
		writeError(w, http.StatusBadRequest, errors.New("limit must be a whole number from 1 to 256"))
		return
	}
	events, next, more, err := n.events.Page(core.Cursor(after), int(min(limit, proto.MaxPageEvents)), proto.MaxPageBytes)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err)
		return
	}
	if events == nil {
		events = []jsontext.Value{}
	}
	writeJSON(w, http.StatusOK, api.EventPage{Events: events, Next: uint64(next), More: more, Head: uint64(n.events.Head())})
}

func (n *Node) apiAddEvent(w http.ResponseWriter, r *http.Request) {
	var req api.AddEventRequest
	if !readJSON(w, r, &req) {
		return
	}
	var refs []eventlog.BlobRef
	for _, b := range req.Blobs {
		refs = append(refs, eventlog.BlobRef{CID: b.CID, Size: b.Size, Name: b.Name})
	}
	ev, err := n.AddEvent(r.Context(), req.Kind, req.Body, refs)
	if err != nil {
		status := http.StatusInternalServerError
		if errors.Is(err, ErrInvalidEvent) {
			status = http.StatusBadRequest
		}
		writeError(w, status, err)
		return
	}
	writeJSON(w, http.StatusOK, ev)
}

func (n *Node) apiEvent(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	ev, _, err := n.events.Find(id)
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

func (n *Node) apiTail(w http.ResponseWriter, r *http.Request) {
	after, err := queryUint(r, "after", 0)
	if err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	w.Header().Set("Content-Type", api.ContentTypeNDJSON)
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	for {
		changed := n.events.Changed() // before reading, so no append is missed
		events, next, more, err := n.events.Page(core.Cursor(after), proto.MaxPageEvents, proto.MaxPageBytes)
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

func (n *Node) apiSync(w http.ResponseWriter, r *http.Request) {
	var req api.SyncRequest
	if !readJSON(w, r, &req) {
		return
	}
	p, err := n.resolvePeer(r.Context(), req.Peer)
	if err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	w.Header().Set("Content-Type", api.ContentTypeNDJSON)
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	line := func(st api.SyncProgress) {
		b, _ := json.Marshal(st)
		w.Write(append(b, '\n'))
		if flusher != nil {
			flusher.Flush()
		}
	}
	st, err := n.SyncPeer(r.Context(), p, func(st SyncProgress) { line(apiSyncProgress(st)) })
	last := apiSyncProgress(st)
	if err != nil {
		last.Error = err.Error()
	}
	line(last)
}

// apiSyncProgress is st as the control API reports it.
func apiSyncProgress(st SyncProgress) api.SyncProgress {
	return api.SyncProgress{Peer: st.Peer.String(), Received: st.Received, Stored: st.Stored, Dropped: st.Dropped,
		Cursor: uint64(st.Cursor), PeerHead: uint64(st.PeerHead), Done: st.Done}
}

// resolvePeer reads a peer given by the API: a peer ID, or a full
// multiaddr, which is dialled (hello included) within 30 s.
func (n *Node) resolvePeer(ctx context.Context, s string) (peer.ID, error) {
	if strings.HasPrefix(s, "/") {
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		return n.Connect(ctx, s)
	}
	p, err := peer.Decode(s)
	if err != nil {
		return "", fmt.Errorf("%q is neither a peer ID (12D3KooW…) nor a full multiaddr (/ip4/…/tcp/…/p2p/12D3KooW…)", s)
	}
	return p, nil
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

// readJSON decodes a request body of at most maxAPIBodyBytes into v, or
// answers 400 and returns false.
func readJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxAPIBodyBytes))
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

func writeError(w http.ResponseWriter, status int, err error) {
	writeJSON(w, status, api.ErrorBody{Error: err.Error()})
}

// Limits returns the effective rate limits.
func (n *Node) Limits() api.Limits {
	l := n.cfg.Limits
	out := api.Limits{
		BlobFetchesPerPeer: l.BlobFetchesPerPeer,
		Challenge:          l.Challenge, ChallengeBaseBits: l.ChallengeBaseBits, ChallengeMaxBits: l.ChallengeMaxBits,
		OverloadInFlight: l.OverloadInFlight, SolvedPerMin: l.SolvedPerMin,
		MaxTrackedPeers: n.adm.table.MaxPeers(),
		MissPerMin:      l.MissPerMin, SuspectPercent: l.SuspectPercent, ValuedPercent: l.ValuedPercent,
		StrangerReportPerMin: l.StrangerReportPerMin,
		Gossip: api.GossipLimits{PerPeer: l.GossipPerMin, Strangers: l.StrangerGossipPerMin,
			PerAuthor: l.AuthorPerMin, NewAuthors: l.StrangerAuthorPerMin, NewAuthorMinutes: l.NewAuthorMinutes},
	}
	pl := n.adm.table.Policy()
	for t := range limits.Tier(limits.NumTiers) {
		tl := api.TierLimits{Tier: t.String(), PerMin: map[string]int{"miss": pl.MissRate(t).PerMin()}}
		for _, k := range core.Requests() {
			tl.PerMin[k.String()] = pl.Rate(t, k).PerMin()
		}
		out.Tiers = append(out.Tiers, tl)
	}
	for _, k := range core.Requests() {
		r := n.adm.table.Rate(k)
		rl := api.RequestLimit{Type: k.String(), Key: limits.RateKey(k), PerMin: r.PerMin()}
		if !r.Unlimited() {
			rl.Burst, rl.IntervalNs = r.Burst(), int64(r.Interval())
		}
		out.Requests = append(out.Requests, rl)
	}
	return out
}

func (n *Node) apiConfig(w http.ResponseWriter, r *http.Request) {
	cfg := *n.cfg // a shallow copy: its lists are only read
	if n.logLevel != nil {
		cfg.Log.Level = strings.ToLower(n.logLevel.Level().String())
	}
	b, err := cfg.TOML()
	if err != nil {
		writeError(w, http.StatusInternalServerError, err)
		return
	}
	writeJSON(w, http.StatusOK, api.RunningConfig{TOML: string(b)})
}

func (n *Node) apiLimits(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, n.Limits())
}

// Diag returns the admission counters.
func (n *Node) Diag() api.Diag {
	s := n.adm.table.Snapshot()
	d := api.Diag{SharedAtCap: s.SharedAtCap, TrackedPeers: s.TrackedPeers, PeerLinesLogged: n.plog.cap.Logged()}
	for _, k := range core.Requests() {
		c := s.Of(k)
		d.Requests = append(d.Requests, api.RequestCounts{Type: k.String(), Accepted: c.Accepted, Refused: c.Refused})
	}
	return d
}

func (n *Node) apiDiag(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, n.Diag())
}

// PeerCache returns every record of the peer cache, most recently seen
// first, with each peer's tier and why.
func (n *Node) PeerCache() []api.CachedPeer {
	now := n.now()
	mono := n.mono(now)
	return cachedPeers(n.peers.All(), now, func(id peer.ID) (limits.History, bool, bool) {
		if st := n.run.get(id); st != nil {
			return st.History(), st.reputed(mono), true // with this run's counts not folded yet
		}
		return limits.History{}, false, false
	})
}

// cachedPeers is the answer of GET api.PathPeerCache for entries at now;
// live, if it knows the peer (connected in this run), gives its history
// and whether it is reputed instead of those of its record.
func cachedPeers(entries []peercache.Entry, now time.Time, live func(peer.ID) (limits.History, bool, bool)) []api.CachedPeer {
	out := make([]api.CachedPeer, 0, len(entries))
	for _, e := range entries {
		r := e.Record
		h := history(recordCounts(&r), true, recordAged(r.FirstSeen, now))
		reputed := e.MetInEarlierRun
		if lh, lr, ok := live(e.ID); ok {
			h, reputed = lh, lr
		}
		t, why := limits.TierOf(h), limits.Explain(h)
		out = append(out, api.CachedPeer{
			PeerID: e.ID.String(), Addrs: append([]string{}, r.Addrs...),
			FirstSeen: r.FirstSeen, LastSeen: r.LastSeen, LastHello: r.LastHello,
			Agent: r.Agent, Features: append([]string{}, r.Features...), Cursor: uint64(r.Cursor),
			Reputed: reputed, MetInEarlierRun: e.MetInEarlierRun,
			Served: h.Served, Refused: r.Refused, Challenged: r.Challenged, Solved: h.Solved, Misses: h.Misses,
			Invalid: h.Invalid, Failed: h.Failed, Timeouts: h.Timeouts, Events: h.Events, Bytes: h.Bytes,
			LastUseful: r.LastUseful, Value: r.Value, Tier: t.String(), TierReason: why,
		})
	}
	return out
}

func (n *Node) apiPeerCache(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, n.PeerCache())
}

func (n *Node) apiForgetPeer(w http.ResponseWriter, r *http.Request) {
	id, err := peer.Decode(r.PathValue("id"))
	if err != nil {
		writeError(w, http.StatusBadRequest, fmt.Errorf("%q is not a peer ID", r.PathValue("id")))
		return
	}
	switch err := n.peers.Forget(id); {
	case errors.Is(err, peercache.ErrNotFound):
		writeError(w, http.StatusNotFound, fmt.Errorf("peer %s is not in the peer cache", id))
	case err != nil:
		writeError(w, http.StatusInternalServerError, err)
	default:
		writeJSON(w, http.StatusOK, struct{}{})
	}
}

// apiAddBlob stores the request body as a blob. The store refuses it,
// having stored nothing, past blobs.max_blob_bytes or the quota (413).
func (n *Node) apiAddBlob(w http.ResponseWriter, r *http.Request) {
	c, size, err := n.blobs.Import(r.Context(), r.Body)
	switch {
	case errors.Is(err, blobs.ErrTooLarge) || errors.Is(err, blobs.ErrQuota):
		writeError(w, http.StatusRequestEntityTooLarge, err)
	case err != nil:
		writeError(w, http.StatusInternalServerError, err)
	default:
		writeJSON(w, http.StatusOK, api.BlobInfo{CID: c.String(), Size: size})
	}
}

func (n *Node) apiBlobs(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, blobList(n.blobs))
}

// blobList is the answer of GET api.PathBlobs for the store s.
func blobList(s *blobs.Store) []api.BlobInfo {
	list := s.List()
	out := make([]api.BlobInfo, 0, len(list))
	for _, b := range list {
		out = append(out, api.BlobInfo{CID: b.CID.String(), Size: b.Size})
	}
	return out
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

// apiGetBlob streams a blob that is complete and exactly of the declared
// size (ADR 0014: only then is a blob used); 404 otherwise, 409 for another
// size.
func (n *Node) apiGetBlob(w http.ResponseWriter, r *http.Request) {
	c, ok := parseCID(w, r)
	if !ok {
		return
	}
	size, err := queryUint(r, "size", 0)
	if err != nil || r.URL.Query().Get("size") == "" {
		writeError(w, http.StatusBadRequest, errors.New("size=N, the declared size in bytes, is required"))
		return
	}
	complete, err := n.blobs.Has(c)
	if err != nil || !complete {
		writeError(w, http.StatusNotFound, fmt.Errorf("blob %s is not stored here (or not complete)", c))
		return
	}
	// Export checks the size against the blob's record and root before it
	// writes anything, so the status is chosen when the first byte comes:
	// a mismatch still gets a proper error status, and the blob streams.
	out := &lazyBody{w: w, size: size}
	err = n.blobs.Export(r.Context(), c, size, out)
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

func (n *Node) apiRemoveBlob(w http.ResponseWriter, r *http.Request) {
	c, ok := parseCID(w, r)
	if !ok {
		return
	}
	switch err := n.blobs.Remove(r.Context(), c); {
	case errors.Is(err, blobs.ErrIncomplete):
		writeError(w, http.StatusNotFound, fmt.Errorf("blob %s is not stored here", c))
	case err != nil:
		writeError(w, http.StatusInternalServerError, err)
	default:
		writeJSON(w, http.StatusOK, struct{}{})
	}
}

func (n *Node) apiReportCrash(w http.ResponseWriter, r *http.Request) {
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
	c := eventlog.Crash{Program: req.Program, Version: req.Version, OS: req.OS, Arch: req.Arch, Reason: req.Reason, Stack: req.Stack}
	ev, err := n.ReportCrash(r.Context(), c, dump, to)
	switch {
	case errors.Is(err, ErrInvalidEvent):
		writeError(w, http.StatusBadRequest, err)
	case err != nil:
		writeError(w, http.StatusBadGateway, err)
	default:
		writeJSON(w, http.StatusOK, ev)
	}
}

func (n *Node) apiCrashes(w http.ResponseWriter, r *http.Request) {
	groups, err := n.CrashGroups()
	if err != nil {
		writeError(w, http.StatusInternalServerError, err)
		return
	}
	writeJSON(w, http.StatusOK, groups)
}
