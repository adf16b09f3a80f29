package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/wats-network/wats/api"
	"github.com/wats-network/wats/internal/diskspace"
	"github.com/wats-network/wats/repo"
)

// BlockCacheBytes is pebble's block cache: big enough to keep the index
// and Bloom filter blocks of a log of millions of events in memory, so that
// the dedupe lookups of a catch-up rarely read the disk.
const BlockCacheBytes = 64 << 20

// OpenOptions configure Open.
type OpenOptions struct {
	// Dir is the repo directory; "" for a database in memory.
	Dir string
	// Log gets pebble's lines (Logger) and the disk guard's.
	Log *slog.Logger
	// Statfs, if set, reads the free and total bytes of Dir's disk in
	// place of statfs(2) (tests of a full disk).
	Statfs func(dir string) (free, total uint64, err error)
	// Changed, if set, is told each change of the disk guard's state:
	// full, and the error that made it so; nil logs each to Log.
	Changed func(full bool, err error)
}

// DB is a running node's database: pebble with PebbleOptions and a block
// cache of BlockCacheBytes, whose writes are checked by a disk guard that
// refuses them before the repo's disk is full (ADR 0044).
type DB struct {
	*pebble.DB
	// Disk is the guard; nil for a database in memory, or where the free
	// space cannot be read.
	Disk *diskspace.Guard
	// Dir is the database's directory; FilesFS is the filesystem of the
	// blob store's data files (DataDir), which are written past the
	// guard's ballast: only the database's own writes get its room back.
	Dir     string
	FilesFS vfs.FS
	// open is the database for WatchMemtables, from any goroutine; nil
	// once closed. memtables is what it read last.
	open      atomic.Pointer[pebble.DB]
	memtables atomic.Uint64
}

// Open opens the database of the repo at o.Dir (or one in memory). A
// database that pebble finds damaged is a *DamagedError.
func Open(o OpenOptions) (*DB, error) {
	d := &DB{}
	if o.Changed == nil {
		o.Changed = func(full bool, err error) {
			if full {
				o.Log.Error("the repo's disk is full: events, blobs and records are refused until space is freed; "+
					"reads and peers are served meanwhile", "err", err)
			} else {
				o.Log.Info("the repo's disk has room again: writes are accepted")
			}
		}
	}
	opts := PebbleOptions(o.Log, o.Dir)
	opts.Cache = pebble.NewCache(BlockCacheBytes)
	defer opts.Cache.Unref() // the database holds its own reference
	d.Dir, d.FilesFS = filepath.Join(o.Dir, repo.DBDir), vfs.Default
	if o.Dir == "" {
		opts.FS, d.Dir = vfs.NewMem(), repo.DBDir
		d.FilesFS = opts.FS
	} else {
		g, err := diskspace.New(o.Dir, filepath.Join(o.Dir, repo.BallastFile), &diskspace.Options{
			Statfs: o.Statfs, Changed: o.Changed, Pending: d.memtables.Load,
		})
		if err != nil {
			o.Log.Warn("the free space of the repo's disk cannot be read; writes are not checked against it", "err", err)
		} else {
			d.Disk = g
			opts.FS = vfs.OnDiskFull(g.FS(vfs.Default), g.OnDiskFull)
		}
	}
	db, err := pebble.Open(d.Dir, opts)
	if IsDamage(err) {
		return nil, &DamagedError{Repo: o.Dir, Err: err}
	}
	if err != nil {
		return nil, fmt.Errorf("store: open database %s: %w", d.Dir, err)
	}
	d.DB = db
	d.open.Store(db)
	return d, nil
}

// Room is what the node's stores ask before they write n bytes: nil, or a
// *diskspace.FullError while the repo's disk is at its reserve (ADR 0044).
// A database in memory always has room.
func (d *DB) Room(n int) error {
	if d.Disk == nil {
		return nil
	}
	return d.Disk.Room(n)
}

// memtablesEvery is how often WatchMemtables reads the memtables'
// capacity; pebble grows it at each rotation, from 256 KiB to the
// memtable's size.
const memtablesEvery = time.Second

// WatchMemtables reads the memtables' capacity every memtablesEvery until
// ctx ends: what the database will write on its own when it flushes them,
// which the guard counts as pending (diskspace.Options.Pending). The guard
// reads no metrics itself: it asks from inside pebble's own writes (a
// WAL's preallocation), where a call back into pebble could wait on a lock
// the caller holds.
func (d *DB) WatchMemtables(ctx context.Context) {
	t := time.NewTicker(memtablesEvery)
	defer t.Stop()
	for {
		if db := d.open.Load(); db != nil {
			d.memtables.Store(db.Metrics().MemTable.Size)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// DiskStatus is the guard's state for status, read from the disk now; nil
// without a guard (or a database).
func (d *DB) DiskStatus() *api.DiskStatus {
	if d == nil || d.Disk == nil {
		return nil
	}
	st := d.Disk.Look()
	return &api.DiskStatus{
		FreeBytes: st.Free, ReserveBytes: st.Reserve + st.Pending, BallastBytes: st.Ballast,
		Ballast: st.HasBallast, Full: st.Full,
	}
}

// Close flushes the memtables and closes the database.
func (d *DB) Close() error {
	d.open.Store(nil)
	return errors.Join(d.DB.Flush(), d.DB.Close())
}
