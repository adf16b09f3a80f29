package store

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/ipfs/go-cid"

	"github.com/wats-network/wats/blobs"
	"github.com/wats-network/wats/eventlog"
	"github.com/wats-network/wats/internal/diskspace"
	"github.com/wats-network/wats/peercache"
)

// StoresOptions configure OpenStores.
type StoresOptions struct {
	// Dir, Log and Statfs are as OpenOptions'.
	Dir    string
	Log    *slog.Logger
	Statfs func(dir string) (free, total uint64, err error)
	// Now is the time a loss found at this start is recorded at.
	Now time.Time
	// MaxPeers is peer_cache.max_peers.
	MaxPeers int
	// MaxBlobBytes and QuotaBytes are blobs.max_blob_bytes and
	// blobs.quota_bytes; Pinned is told of each blob that became complete
	// (blobs.StoreOptions.Pinned).
	MaxBlobBytes, QuotaBytes uint64
	Pinned                   func(cid.Cid)
	// PartialBounds, if set, returns the bounds on the partial blobs kept
	// (blobs.StoreOptions.MaxPartialBytes and MaxPartialAge): the node's
	// is config.BlobsConfig.PartialBounds. Unset: the defaults.
	PartialBounds func() (maxBytes int64, maxAge time.Duration)
}

// Stores are a running node's stores, on one database: the event log
// with its acknowledged mark, the peer cache and the blob store, each
// writing only while the disk guard has room (ADR 0044).
type Stores struct {
	DB     *DB
	Events *eventlog.Log
	// Lost keeps the log's acknowledged mark (ADR 0045); nil for a
	// database in memory.
	Lost  *LostWatch
	Peers *peercache.Cache
	Blobs *blobs.Store
}

// OpenStores opens the stores of the repo at o.Dir (or of a database in
// memory) and logs what they found damaged or dropped. A database that
// pebble finds damaged is a *DamagedError. Close closes what it opened,
// also after an error.
func OpenStores(o StoresOptions) (*Stores, error) {
	s := &Stores{}
	var err error
	if s.DB, err = Open(OpenOptions{Dir: o.Dir, Log: o.Log, Statfs: o.Statfs}); err != nil {
		return s, err
	}
	if s.Events, err = eventlog.Open(s.DB.DB); IsDamage(err) {
		return s, &DamagedError{Repo: o.Dir, Err: err}
	} else if err != nil {
		return s, fmt.Errorf("store: open event log: %w", err)
	}
	s.Events.SetRoom(s.DB.Room)
	if o.Dir != "" {
		if s.Lost, err = OpenLostWatch(s.DB.DB, s.Events, o.Dir, o.Now, o.Log); err != nil {
			return s, fmt.Errorf("store: %w", err)
		}
	}
	var damaged []peercache.DamagedRecord
	s.Peers, damaged, err = peercache.Open(s.DB.DB, &peercache.Options{
		MaxPeers: o.MaxPeers,
		FlushErrors: func(err error) {
			if !errors.Is(err, diskspace.ErrFull) { // the guard says so once
				o.Log.Warn("peer cache flush failed; will retry", "err", err)
			}
		},
		Room: s.DB.Room,
	})
	if err != nil {
		return s, fmt.Errorf("store: open peer cache: %w", err)
	}
	for _, d := range damaged {
		o.Log.Warn("skipped a damaged peer cache record", "key", fmt.Sprintf("%x", d.Key), "err", d.Err)
	}
	if k := s.Peers.Migrated(); k > 0 {
		o.Log.Info("dropped peer cache records of an older version that showed no value (docs/adr/0030)", "count", k)
	}
	bo := &blobs.StoreOptions{
		MaxBlobBytes: o.MaxBlobBytes, QuotaBytes: o.QuotaBytes,
		DataDir: DataDir(s.DB.Dir), FS: s.DB.FilesFS, Pinned: o.Pinned, Room: s.DB.Room,
	}
	if o.PartialBounds != nil {
		bo.MaxPartialBytes, bo.MaxPartialAge = o.PartialBounds()
	}
	if s.Blobs, err = blobs.OpenStore(s.DB.DB, bo); err != nil {
		return s, fmt.Errorf("store: open blob store: %w", err)
	}
	for _, c := range s.Blobs.Dropped() {
		o.Log.Warn("removed a blob damaged by an unclean stop before its data file was synced (docs/adr/0037); fetch it again", "cid", c.String())
	}
	return s, nil
}

// Close closes the stores, the database after a final sync; each store
// is closed once, whatever Close is called how often.
func (s *Stores) Close() error {
	var errs []error
	if s.Peers != nil {
		errs = append(errs, s.Peers.Close())
		s.Peers = nil
	}
	if s.Blobs != nil {
		errs = append(errs, s.Blobs.Close()) // its data files synced
		s.Blobs = nil
	}
	if s.DB != nil {
		errs = append(errs, s.DB.Close())
		s.DB = nil
	}
	if s.Lost != nil {
		errs = append(errs, s.Lost.Close())
		s.Lost = nil
	}
	return errors.Join(errs...)
}
