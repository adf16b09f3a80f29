package node

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/wats-network/wats/blobs"
	"github.com/wats-network/wats/eventlog"
	"github.com/wats-network/wats/limits"
	"github.com/wats-network/wats/node/api"
	"github.com/wats-network/wats/peercache"
	"github.com/wats-network/wats/proto"
	"github.com/wats-network/wats/repo"
)

// Offline reads a repo's database while no daemon runs, as `ipfs id` reads
// kubo's: what `wats id`, `events ls`, `blob ls` and `peers cache` show
// then. It opens the database read-only (nothing is written, not even the
// upgrades of an older version, which the daemon's next start makes), and
// pebble's lock on it is held until Close: a daemon starting meanwhile
// fails to open it, so the CLI closes an Offline as soon as it has read.
type Offline struct {
	r      *repo.Repo
	db     *pebble.DB
	events *eventlog.Log
	blobs  *blobs.Store
	peers  *peercache.Cache
}

// OpenOffline opens r's database read-only for reading. Close it. A repo
// whose daemon never ran has no database: it holds nothing, and the
// Offline says so (no events, blobs or peers).
func OpenOffline(r *repo.Repo) (_ *Offline, err error) {
	o := &Offline{r: r}
	if _, err := os.Stat(r.DBPath()); errors.Is(err, fs.ErrNotExist) {
		return o, nil
	}
	opts := dbOptions(slog.New(slog.DiscardHandler))
	opts.ReadOnly = true
	if o.db, err = pebble.Open(r.DBPath(), opts); err != nil {
		return nil, fmt.Errorf("node: open database %s read-only: %w", r.DBPath(), err)
	}
	defer func() {
		if err != nil {
			o.Close()
		}
	}()
	if o.events, err = eventlog.Open(o.db); err != nil {
		return nil, fmt.Errorf("node: read the event log (start the daemon once to upgrade it): %w", err)
	}
	if o.peers, _, err = peercache.OpenWithOptions(o.db, peercache.Options{MaxPeers: r.Config.PeerCache.MaxPeers}); err != nil {
		return nil, fmt.Errorf("node: read the peer cache: %w", err)
	}
	if o.blobs, err = blobs.OpenStore(o.db, blobs.StoreOptions{ReadOnly: true,
		MaxBlobBytes: uint64(r.Config.Blobs.MaxBlobBytes), QuotaBytes: uint64(r.Config.Blobs.QuotaBytes)}); err != nil {
		return nil, fmt.Errorf("node: read the blob store: %w", err)
	}
	return o, nil
}

// Close closes the database.
func (o *Offline) Close() error {
	if o.peers != nil {
		o.peers.Close()
	}
	if o.db == nil {
		return nil
	}
	return o.db.Close()
}

// ID is the answer of GET api.PathID without a daemon: the peer ID from
// the key, and as addresses the configured p2p.listen ones (ports 0 and
// unspecified IPs are resolved only by a running daemon).
func (o *Offline) ID(agent string) (api.ID, error) {
	id, err := peer.IDFromPrivateKey(o.r.Key)
	if err != nil {
		return api.ID{}, err
	}
	out := api.ID{PeerID: id.String(), Network: o.r.Config.Network, Agent: agent, Addrs: []string{}}
	for _, a := range o.r.Config.P2P.Listen {
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
		limit = defaultAPIPageLimit
	}
	events, next, more, err := o.events.Page(after, min(limit, proto.MaxPageEvents), proto.MaxPageBytes)
	if err != nil {
		return api.EventPage{}, err
	}
	if events == nil {
		events = []jsontext.Value{}
	}
	return api.EventPage{Events: events, Next: next, More: more, Head: o.events.Head()}, nil
}

// Blobs is the answer of GET api.PathBlobs without a daemon.
func (o *Offline) Blobs() []api.BlobInfo {
	if o.blobs == nil {
		return []api.BlobInfo{}
	}
	return blobList(o.blobs)
}

// PeerCache is the answer of GET api.PathPeerCache without a daemon.
func (o *Offline) PeerCache() []api.CachedPeer {
	if o.peers == nil {
		return []api.CachedPeer{}
	}
	return cachedPeers(o.peers.All(), time.Now(), func(peer.ID) (limits.History, bool, bool) {
		return limits.History{}, false, false
	})
}
