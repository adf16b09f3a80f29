package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"sort"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/wats-network/wats/api"
	"github.com/wats-network/wats/blobs"
	"github.com/wats-network/wats/core"
	"github.com/wats-network/wats/eventlog"
	"github.com/wats-network/wats/limits"
	"github.com/wats-network/wats/peercache"
	"github.com/wats-network/wats/peers"
	"github.com/wats-network/wats/proto"
	"github.com/wats-network/wats/repo"
)

// Offline reads a repo's database while no daemon runs: what `events ls`,
// `blob ls` and `peers cache` show then. It
// opens the database read-only (nothing is written, not even the upgrades
// of an older version, which the daemon's next start makes) and holds the
// repo lock until Close (repo.RLock): a daemon or reader starting meanwhile
// waits for it (repo.Lock), so the CLI closes an Offline as soon as it has
// read.
type Offline struct {
	r       *repo.Repo
	release func() error
	stores
}

// OpenOffline opens r's database read-only for reading. Close it. A repo
// whose daemon never ran has no database: it holds nothing, and the
// Offline says so (no events, blobs or peers). Damage pebble finds while
// reading ends the process with what to do (Logger), as it does the
// daemon.
//
// If a daemon holds the repo (running, starting or stopping), it returns
// the *repo.LockedError of repo.RLock (errors.Is repo.ErrLocked), with the
// daemon's pid: ask the daemon.
func OpenOffline(r *repo.Repo) (_ *Offline, err error) {
	release, err := r.RLock()
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			release()
		}
	}()
	o := &Offline{r: r, release: release}
	if _, err := os.Stat(r.DBPath()); errors.Is(err, fs.ErrNotExist) {
		return o, nil
	}
	bo := blobs.StoreOptions{MaxBlobBytes: uint64(r.Config.Blobs.MaxBlobBytes), QuotaBytes: uint64(r.Config.Blobs.QuotaBytes)}
	s, problems, err := openStores(r.DBPath(), r.Config.PeerCache.MaxPeers, bo, Logger{Log: slog.New(slog.DiscardHandler), Repo: r.Dir})
	if IsDamage(err) {
		return nil, &DamagedError{Repo: r.Dir, Err: err}
	}
	if err != nil {
		return nil, fmt.Errorf("store: open database %s read-only: %w", r.DBPath(), err)
	}
	if len(problems) > 0 {
		s.close()
		return nil, fmt.Errorf("store: %w", problems[0])
	}
	o.stores = *s
	return o, nil
}

// Close closes the database and releases the repo lock.
func (o *Offline) Close() error { return errors.Join(o.stores.close(), o.release()) }

// ID is the answer of GET api.PathID without a daemon (OfflineID).
func (o *Offline) ID(agent string) (api.ID, error) { return OfflineID(o.r, agent) }

// OfflineID is the answer of GET api.PathID without a daemon, from r's key
// and config alone, with no database opened (a daemon starting meanwhile
// finds it free): the peer ID from the key, and as addresses the
// configured p2p.listen ones (ports 0 and unspecified IPs are resolved
// only by a running daemon).
func OfflineID(r *repo.Repo, agent string) (api.ID, error) {
	id, err := peer.IDFromPrivateKey(r.Key)
	if err != nil {
		return api.ID{}, err
	}
	out := api.ID{PeerID: id.String(), Network: r.Config.Network, Agent: agent, Addrs: []string{}}
	for _, a := range r.Config.P2P.Listen {
		out.Addrs = append(out.Addrs, a+"/p2p/"+id.String())
	}
	return out, nil
}

// Events is the answer of GET api.PathEvents without a daemon.
func (o *Offline) Events(after uint64, limit int) (api.EventPage, error) {
	if o.events == nil {
		return api.EventPage{Events: []jsontext.Value{}}, nil
	}
	if limit <= 0 {
		limit = api.DefaultPageLimit
	}
	events, next, more, err := o.events.Page(core.Cursor(after), min(limit, core.MaxPageEvents), proto.MaxPageBytes)
	if err != nil {
		return api.EventPage{}, err
	}
	if events == nil {
		events = []jsontext.Value{}
	}
	return api.EventPage{Events: events, Next: uint64(next), More: more, Head: uint64(o.events.Head())}, nil
}

// Blobs is the answer of GET api.PathBlobs without a daemon.
func (o *Offline) Blobs() []api.BlobInfo {
	if o.blobs == nil {
		return []api.BlobInfo{}
	}
	return BlobList(o.blobs, o.events)
}

// BlobSize returns the size of the complete blob c held in the repo; ok
// is false when it holds none such (not imported, removed, or a fetch that
// did not complete: ADR 0014 uses only complete blobs).
func (o *Offline) BlobSize(c cid.Cid) (size uint64, ok bool) {
	if o.blobs == nil {
		return 0, false
	}
	return o.blobs.SizeOf(c)
}

// ErrBadBlob is blobs.ErrBadBlob, for the callers of ExportBlob that
// import no blobs package: a leaf damaged on disk.
var ErrBadBlob = blobs.ErrBadBlob

// ExportBlob writes the complete blob c of size bytes held in the repo to
// w (blobs.Store.Export: every leaf checked against its CID as it is
// read); an error wrapping blobs.ErrIncomplete when it holds none such,
// one wrapping ErrBadBlob for a leaf damaged on disk.
func (o *Offline) ExportBlob(ctx context.Context, c cid.Cid, size uint64, w io.Writer) error {
	if o.blobs == nil {
		return blobs.ErrIncomplete
	}
	return o.blobs.Export(ctx, c, size, w)
}

// PartialBlobs is the answer of GET api.PathBlobPartials without a daemon.
func (o *Offline) PartialBlobs() []api.PartialBlob {
	if o.blobs == nil {
		return []api.PartialBlob{}
	}
	return PartialList(o.blobs)
}

// PartialList is the answer of GET api.PathBlobPartials for the store s:
// its partial blobs (docs/adr/0054), the least recently progressed first.
func PartialList(s *blobs.Store) []api.PartialBlob {
	ps := s.Partials()
	out := make([]api.PartialBlob, 0, len(ps))
	for _, p := range ps {
		out = append(out, api.PartialBlob{CID: p.CID.String(), Size: p.Size, Held: p.Held, Bytes: p.Bytes,
			Progressed: p.Progressed.UTC(), Fetching: p.Fetching})
	}
	return out
}

// Peers are the records of the peer cache without a daemon (what
// CachedPeers answers GET api.PathPeerCache with).
func (o *Offline) Peers() []peercache.Entry {
	if o.peers == nil {
		return nil
	}
	return o.peers.All()
}

// BlobList is the answer of GET api.PathBlobs for the store s: each blob
// with its name (docs/adr/0051): the one its add on this node gave it
// (blobs.BlobInfo.Name), else the one the events of l give it
// (eventlog.Log.BlobName; l nil or a failed lookup: none); newest first
// (by the time added; a blob without one last, as the oldest), then by
// CID.
func BlobList(s *blobs.Store, l *eventlog.Log) []api.BlobInfo {
	list := s.List()
	out := make([]api.BlobInfo, 0, len(list))
	for _, b := range list {
		bi := api.BlobInfo{CID: b.CID.String(), Size: b.Size, Added: b.Added, Name: b.Name}
		if bi.Name == "" && l != nil {
			bi.Name, _ = l.BlobName(bi.CID) // a name is a help: a damaged index shows none
		}
		out = append(out, bi)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Added.Equal(out[j].Added) {
			return out[i].Added.After(out[j].Added)
		}
		return out[i].CID < out[j].CID
	})
	return out
}

// CrashGroups groups the crash events of l by fingerprint, most
// recent first. It reads the whole log: fine for the thousands of reports
// a node keeps; an index by kind can come when logs grow.
func CrashGroups(l *eventlog.Log) ([]api.CrashGroup, error) {
	groups := map[string]*api.CrashGroup{}
	for ev, err := range l.All(0) {
		if errors.Is(err, eventlog.ErrDamaged) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if ev.Kind != eventlog.KindCrash {
			continue
		}
		c, err := eventlog.ParseCrash(ev.Body)
		if err != nil {
			continue
		}
		t := time.UnixMilli(ev.Time).UTC()
		g, ok := groups[c.Fingerprint]
		if !ok {
			g = &api.CrashGroup{Fingerprint: c.Fingerprint, Program: c.Program, Reason: c.Reason, FirstSeen: t, LastSeen: t}
			groups[c.Fingerprint] = g
		}
		g.Count++
		if t.Before(g.FirstSeen) {
			g.FirstSeen = t
		}
		if !t.Before(g.LastSeen) {
			// At the same millisecond, the later in the log is the last.
			g.LastSeen, g.LastVersion, g.LastEvent = t, c.Version, ev.ID
		}
	}
	out := make([]api.CrashGroup, 0, len(groups))
	for _, g := range groups {
		out = append(out, *g)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].LastSeen.After(out[j].LastSeen) })
	return out, nil
}

// CachedPeers is the answer of GET api.PathPeerCache for the records
// entries at now, each peer's tier and why worked out from its record;
// live, if not nil and it knows the peer (a running node's peer connected
// in this run), gives its history and whether it is reputed instead of
// those of its record.
func CachedPeers(entries []peercache.Entry, now time.Time, live func(peer.ID) (limits.History, bool, bool)) []api.CachedPeer {
	out := make([]api.CachedPeer, 0, len(entries))
	for _, e := range entries {
		r := e.Record
		h := peers.RecordHistory(r, now)
		reputed := e.MetInEarlierRun
		if live != nil {
			if lh, lr, ok := live(e.ID); ok {
				h, reputed = lh, lr
			}
		}
		t, why := limits.TierOf(h), limits.Explain(h)
		out = append(out, api.CachedPeer{
			PeerID: e.ID.String(), Addrs: append([]string{}, r.Addrs...),
			FirstSeen: r.FirstSeen, LastSeen: r.LastSeen, LastHello: r.LastHello,
			Agent: r.Agent, Features: append([]string{}, r.Features...), Cursor: uint64(r.Cursor),
			Reputed: reputed, MetInEarlierRun: e.MetInEarlierRun,
			Counts:     h.Counts,
			LastUseful: r.LastUseful, Value: r.Value, Tier: t.String(), TierReason: why,
		})
	}
	return out
}
