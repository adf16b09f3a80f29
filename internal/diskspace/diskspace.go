// Package diskspace keeps the filesystem under a database from filling
// (ADR 0044). A Guard refuses writes while the free space, less what they
// would write, is below a reserve; a ballast file holds room that pebble
// can be given back when something else filled the disk anyway, since a
// WAL or MANIFEST write that meets ENOSPC ends pebble for good.
//
// The writers of the node's stores ask Guard.Room before each write, with
// the bytes they are about to write; pebble's filesystem is wrapped with
// vfs.OnDiskFull(fs, guard.OnDiskFull), which removes the ballast and
// retries the write once. The guard reads the free space with statfs(2),
// at most once a second while far from the reserve, and before every
// write near it, so that neither a burst of writes nor another process
// filling the disk goes unseen for long.
package diskspace

import (
	"errors"
	"fmt"
	"sync"
	"time"
)

const (
	// MinReserveBytes and MaxReserveBytes bound the reserve, a sixteenth
	// of the filesystem's size (ReserveFor): 4 MiB on a tiny filesystem,
	// 64 MiB (four of the node's memtables, which a flush writes out) on
	// any of a GiB or more.
	MinReserveBytes = 4 << 20
	MaxReserveBytes = 64 << 20

	// refreshEvery is how old the last statfs may be while the free space
	// is far from the reserve; near it, every Room reads it again.
	refreshEvery = time.Second
)

// ErrFull matches the error of Room while the disk is full: a *FullError.
var ErrFull = errors.New("disk full")

// FullError is Room's refusal: the filesystem of Path has Free bytes
// free, and the write would leave less than Reserve (and the ballast, if
// it was given up, to make again).
type FullError struct {
	// Path is the directory whose filesystem is full (the repo).
	Path string
	// Free is the free space, in bytes, when the write was refused.
	Free uint64
	// Need is what the write needed free: its size, the reserve and the
	// ballast to make again.
	Need uint64
}

func (e *FullError) Error() string {
	return fmt.Sprintf("disk full: the filesystem of %s has %s free, under the %s this write needs "+
		"with the reserve the node keeps so that its database never runs out of room; free space there "+
		"(wats blob rm, or other files) and writes are accepted again", e.Path, mib(e.Free), mib(e.Need))
}

// Is reports whether target is ErrFull.
func (e *FullError) Is(target error) bool { return target == ErrFull }

func mib(n uint64) string { return fmt.Sprintf("%.2f MiB", float64(n)/(1<<20)) }

// ReserveFor is the reserve on a filesystem of total bytes: a sixteenth
// of it, within [MinReserveBytes, MaxReserveBytes].
func ReserveFor(total uint64) uint64 {
	return min(max(total/16, MinReserveBytes), MaxReserveBytes)
}

// BallastFor is the size of the ballast on a filesystem of total bytes:
// half the reserve.
func BallastFor(total uint64) uint64 { return ReserveFor(total) / 2 }

// Options configure a Guard. Every field is optional.
type Options struct {
	// Statfs reads the free bytes (available to an unprivileged user)
	// and the total bytes of dir's filesystem; nil means statfs(2).
	Statfs func(dir string) (free, total uint64, err error)
	// Ballast makes the ballast file of the given size and Unballast
	// removes it; nil means a file named Guard.BallastPath, allocated
	// with fallocate(2) where the filesystem has it.
	Ballast   func(size uint64) error
	Unballast func() error
	// Pending, if set, says how many bytes the database may write on its
	// own soon, without asking Room: the memtables it will flush (their
	// capacity). They are kept free on top of the reserve. It is called
	// at each look at the disk, not at each Room.
	Pending func() uint64
	// Now is the clock; nil means time.Now. It may step backwards: the
	// guard then reads the free space again.
	Now func() time.Time
	// Changed, if set, is told each change of state: full with the
	// refusal that made it, or room again (nil). It is called with the
	// guard's lock held: it must not call the guard.
	Changed func(full bool, err error)
}

// Guard decides whether writes to a filesystem may go ahead. It is safe
// for concurrent use.
type Guard struct {
	dir     string
	opts    Options
	reserve uint64
	ballast uint64

	mu struct {
		sync.Mutex
		free       uint64    // the last statfs, less what Room let write since
		pending    uint64    // Options.Pending at the last look
		at         time.Time // of the last statfs
		full       bool
		hasBallast bool // the ballast file is there
	}
}

// New returns the Guard of dir's filesystem, with its ballast at
// ballastPath ("" for none), and makes the ballast if it is missing and
// the disk has room for it. It fails if dir's filesystem cannot be read.
func New(dir, ballastPath string, o *Options) (*Guard, error) {
	g := &Guard{dir: dir}
	if o != nil {
		g.opts = *o
	}
	if g.opts.Statfs == nil {
		g.opts.Statfs = statfs
	}
	if g.opts.Now == nil {
		g.opts.Now = time.Now
	}
	if ballastPath != "" && g.opts.Ballast == nil {
		g.opts.Ballast = func(size uint64) error { return makeBallast(ballastPath, size) }
		g.opts.Unballast = func() error { return removeBallast(ballastPath) }
	}
	free, total, err := g.opts.Statfs(dir)
	if err != nil {
		return nil, fmt.Errorf("diskspace: %s: %w", dir, err)
	}
	g.reserve, g.ballast = ReserveFor(total), BallastFor(total)
	if g.opts.Ballast == nil {
		g.ballast = 0
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.mu.free, g.mu.at = free, g.opts.Now()
	if g.opts.Pending != nil {
		g.mu.pending = g.opts.Pending()
	}
	if g.ballast > 0 && ballastPath != "" && hasBallast(ballastPath, g.ballast) {
		g.mu.hasBallast = true
	}
	g.decide(0)
	return g, nil
}

// Room reports whether n more bytes may be written: nil, or a *FullError
// (matching ErrFull) while the free space less n is below the reserve,
// or below the reserve and the ballast when the ballast was given up (it
// is made again first). Once it refused, it goes on refusing until the
// free space is a quarter of the reserve above that. A statfs that fails
// lets the write go ahead.
func (g *Guard) Room(n int) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.lookBefore(uint64(n))
	return g.decide(uint64(n))
}

// lookBefore reads the disk before a write of n bytes unless the estimate
// is fresh (under refreshEvery old, by a clock that did not step back),
// far from the line (a reserve more than the write needs) and the write
// small (under a quarter of the reserve): a large one, such as a WAL's
// preallocation, is never let through on an estimate another process may
// have made stale.
func (g *Guard) lookBefore(n uint64) {
	now := g.opts.Now()
	if g.mu.free < g.need(n)+g.reserve || n >= g.reserve/4 || now.Sub(g.mu.at) >= refreshEvery || now.Before(g.mu.at) {
		g.refresh(now)
	}
}

// Spare reports whether n bytes the database may do without (a
// preallocation) fit above what Room keeps free, and counts them as
// written if so. Unlike Room it changes nothing else: a refusal is not the
// disk being full.
func (g *Guard) Spare(n int) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.lookBefore(uint64(n))
	if g.mu.free < g.need(uint64(n)) {
		return false
	}
	g.mu.free -= uint64(n)
	return true
}

// need is what must be free for n bytes to be written: n, the reserve,
// what the database has pending, the ballast if it is to be made again,
// and, while the disk is full, a
// quarter of the reserve more, so that a disk at the edge does not take
// and refuse writes in turn (and status does not say it has room for a
// write it refused).
func (g *Guard) need(n uint64) uint64 {
	need := n + g.reserve + g.mu.pending
	if !g.mu.hasBallast {
		need += g.ballast
	}
	if g.mu.full {
		need += g.reserve / 4
	}
	return need
}

// refresh reads the free space; on failure it keeps the estimate.
func (g *Guard) refresh(now time.Time) {
	if g.opts.Pending != nil {
		g.mu.pending = g.opts.Pending()
	}
	free, _, err := g.opts.Statfs(g.dir)
	if err != nil {
		return
	}
	g.mu.free, g.mu.at = free, now
}

// decide is Room's decision on the current estimate: it makes the
// ballast again when there is room for it and the write, counts n as
// written, and tells Changed of a change of state.
func (g *Guard) decide(n uint64) error {
	need := g.need(n)
	if g.mu.free < need {
		err := &FullError{Path: g.dir, Free: g.mu.free, Need: need}
		if !g.mu.full {
			g.mu.full = true
			if g.opts.Changed != nil {
				g.opts.Changed(true, err)
			}
		}
		return err
	}
	if !g.mu.hasBallast && g.ballast > 0 {
		if err := g.opts.Ballast(g.ballast); err == nil {
			g.mu.hasBallast = true
			g.mu.free -= g.ballast
		}
	}
	g.mu.free -= n
	if g.mu.full {
		g.mu.full = false
		if g.opts.Changed != nil {
			g.opts.Changed(false, nil)
		}
	}
	return nil
}

// OnDiskFull is pebble's disk-full callback (vfs.OnDiskFull): a write of
// the database met ENOSPC, so something filled the disk past the reserve.
// It gives up the ballast, so that the write, retried once, finds room,
// and refuses writes until the free space is back above the reserve and
// the ballast is made again. pebble holds every write meanwhile: it does
// no more than remove a file.
func (g *Guard) OnDiskFull() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.mu.hasBallast && g.opts.Unballast != nil {
		if err := g.opts.Unballast(); err == nil {
			g.mu.hasBallast = false
		}
	}
	g.mu.free = 0 // read again at the next Room
	g.decide(0)
}

// State is what a Guard knows of its filesystem.
type State struct {
	// Free is the free space, in bytes, at the last look.
	Free uint64
	// Reserve is what the guard keeps free, in bytes, and Pending what it
	// keeps free on top for the database's own writes (Options.Pending);
	// Ballast the size of the ballast file, in bytes, and HasBallast
	// whether it is there.
	Reserve, Pending, Ballast uint64
	HasBallast                bool
	// Full is whether writes are refused.
	Full bool
}

// Look reads the free space now, decides on it as Room(0) would (making
// the ballast again, telling Changed of a change) and returns the state.
func (g *Guard) Look() State {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.refresh(g.opts.Now())
	g.decide(0)
	return g.stateLocked()
}

// State returns the guard's state at its last look.
func (g *Guard) State() State {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.stateLocked()
}

func (g *Guard) stateLocked() State {
	return State{Free: g.mu.free, Reserve: g.reserve, Pending: g.mu.pending, Ballast: g.ballast, HasBallast: g.mu.hasBallast, Full: g.mu.full}
}
