package bandwidth

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/wats-network/wats/api"
)

// How often the month's count is written (docs/adr/0048): every
// FlushInterval while it grows, and as soon as FlushBytes are sent since
// the last write or the monthly cap is reached. A kill -9 loses at most
// FlushBytes of the count (less when FlushInterval sends less), plus what
// the node sends during one write of the file (milliseconds).
const (
	FlushInterval = time.Second
	FlushBytes    = 8 << 20
)

// ClassTTL is how long a peer's Class is used before Options.Standing is
// asked again: standing changes over minutes (reputed at ten), and
// asking it may read the event log.
const ClassTTL = time.Second

// Options configure a Meter. The zero Options meter without caps, keep
// the month in memory and count every peer a stranger.
type Options struct {
	// UpBytesPerS and DownBytesPerS cap the bytes a second sent and
	// received on the node's streams (bandwidth.up_bytes_per_s,
	// bandwidth.down_bytes_per_s): 0 unlimited, else
	// MinBytesPerS..MaxBytesPerS.
	UpBytesPerS, DownBytesPerS int64
	// MonthlyUpBytes is bandwidth.monthly_up_bytes: past it this calendar
	// month (UTC), Serves refuses peers without standing; 0 is none.
	MonthlyUpBytes int64
	// File is the path of MonthFile in the repo; "" keeps the month's
	// count in memory only.
	File string
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// Standing reports whether p has standing (peers.Table.Standing);
	// nil: no peer has.
	Standing func(p peer.ID) bool
	// Log gets the month file's write errors (slog.Default when nil).
	Log *slog.Logger
}

// Meter is the node's traffic on its libp2p streams (docs/adr/0048): it
// wraps every stream (Wrap, Host) to count its bytes, in all and per peer
// while connected, and to hold them to the caps, peers with standing
// first; and it keeps the month's count of bytes sent, in File.
type Meter struct {
	o        Options
	up, down *Limiter // nil: unlimited

	upTotal, downTotal atomic.Uint64

	peersMu sync.RWMutex
	peers   map[peer.ID]*peerCount

	// pending is the bytes sent not yet added to month; monthMu guards
	// month and written (month.UpBytes at the last write of File).
	pending atomic.Uint64
	writeMu sync.Mutex
	monthMu sync.Mutex
	month   Month
	written Month
	flush   chan struct{}
	// base is month.UpBytes as of the last fold, for the hot path's
	// check against the monthly cap.
	base atomic.Uint64

	ctx    context.Context // cancelled by Close: waits end
	cancel context.CancelFunc
}

// peerCount is one connected peer's traffic and class.
type peerCount struct {
	up, down atomic.Uint64
	class    atomic.Uint32
	classAt  atomic.Int64 // unix ns of the class's reading; 0 never read
}

// New returns a Meter of o. It reads the month's count from o.File: a
// file that is not a count is an error (its message says to remove it);
// so are caps out of range.
func New(o Options) (*Meter, error) {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.MonthlyUpBytes < 0 {
		return nil, fmt.Errorf("bandwidth: monthly_up_bytes %d is negative", o.MonthlyUpBytes)
	}
	m := &Meter{o: o, peers: make(map[peer.ID]*peerCount), flush: make(chan struct{}, 1)}
	var err error
	if o.UpBytesPerS != 0 {
		if m.up, err = NewLimiter(o.UpBytesPerS, o.Now); err != nil {
			return nil, fmt.Errorf("%w (up_bytes_per_s)", err)
		}
	}
	if o.DownBytesPerS != 0 {
		if m.down, err = NewLimiter(o.DownBytesPerS, o.Now); err != nil {
			return nil, fmt.Errorf("%w (down_bytes_per_s)", err)
		}
	}
	if o.File != "" {
		if m.month, err = ReadMonth(o.File); err != nil {
			return nil, err
		}
	}
	m.month.roll(o.Now())
	m.written = m.month
	m.base.Store(m.month.UpBytes)
	m.ctx, m.cancel = context.WithCancel(context.Background())
	return m, nil
}

// peer returns p's count, made on its first stream.
func (m *Meter) peer(p peer.ID) *peerCount {
	m.peersMu.RLock()
	pc := m.peers[p]
	m.peersMu.RUnlock()
	if pc != nil {
		return pc
	}
	m.peersMu.Lock()
	defer m.peersMu.Unlock()
	if pc = m.peers[p]; pc == nil {
		pc = new(peerCount)
		m.peers[p] = pc
	}
	return pc
}

// Standing reports whether p's bytes are of class Standing now, as the
// caps class them (at most ClassTTL old): what the node's other counts by
// class (blob bytes served and fetched) use, so that they agree with the
// caps and never ask Options.Standing on a hot path.
func (m *Meter) Standing(p peer.ID) bool { return m.classOf(p, m.peer(p)) == Standing }

// classOf returns p's class, asking Options.Standing at most once a
// ClassTTL.
func (m *Meter) classOf(p peer.ID, pc *peerCount) Class {
	now := m.o.Now().UnixNano()
	if at := pc.classAt.Load(); at != 0 && now >= at && now-at < int64(ClassTTL) {
		return Class(pc.class.Load())
	}
	c := Stranger
	if m.o.Standing != nil && m.o.Standing(p) {
		c = Standing
	}
	pc.class.Store(uint32(c))
	pc.classAt.Store(now)
	return c
}

// sent counts n bytes sent to pc's peer.
func (m *Meter) sent(pc *peerCount, n int) {
	if n <= 0 {
		return
	}
	m.upTotal.Add(uint64(n))
	pc.up.Add(uint64(n))
	pending := m.pending.Add(uint64(n))
	// Written soon: FlushBytes not written, or the cap just reached.
	limit, base := uint64(m.o.MonthlyUpBytes), m.base.Load()
	if pending >= FlushBytes || limit > 0 && base < limit && base+pending >= limit {
		select {
		case m.flush <- struct{}{}:
		default:
		}
	}
}

// received counts n bytes received from pc's peer.
func (m *Meter) received(pc *peerCount, n int) {
	if n > 0 {
		m.downTotal.Add(uint64(n))
		pc.down.Add(uint64(n))
	}
}

// Disconnected forgets p's counts once no connection to it is left (a
// network.Notifiee's: Host registers it).
func (m *Meter) disconnected(nw network.Network, c network.Conn) {
	p := c.RemotePeer()
	if nw.Connectedness(p) == network.Connected {
		return
	}
	m.peersMu.Lock()
	delete(m.peers, p)
	m.peersMu.Unlock()
}

// Peer returns the bytes sent to and received from p on its streams
// while it is connected.
func (m *Meter) Peer(p peer.ID) (up, down uint64) {
	m.peersMu.RLock()
	pc := m.peers[p]
	m.peersMu.RUnlock()
	if pc == nil {
		return 0, 0
	}
	return pc.up.Load(), pc.down.Load()
}

// fold adds the bytes pending into the month of now. m.monthMu is held.
func (m *Meter) fold(now time.Time) {
	m.month.Add(now, m.pending.Swap(0))
	m.base.Store(m.month.UpBytes)
}

// Month returns the month's count as of now: the bytes sent in the
// current calendar month (UTC), this run and the runs before.
func (m *Meter) Month() Month {
	m.monthMu.Lock()
	defer m.monthMu.Unlock()
	m.fold(m.o.Now())
	return m.month
}

// Stopped reports whether the monthly cap is reached this month: blobs
// are then served only to peers with standing (Serves).
func (m *Meter) Stopped() bool {
	return m.o.MonthlyUpBytes > 0 && m.Month().UpBytes >= uint64(m.o.MonthlyUpBytes)
}

// Serves reports whether blobs may be served to p as far as the monthly
// cap goes: always but while it is reached, and then only to a peer with
// standing (docs/adr/0048).
func (m *Meter) Serves(p peer.ID) bool {
	if !m.Stopped() {
		return true
	}
	return m.o.Standing != nil && m.o.Standing(p)
}

// Status returns the traffic and the caps as the control API shows them.
func (m *Meter) Status() api.BandwidthStatus {
	mo := m.Month()
	return api.BandwidthStatus{
		UpBytes: m.upTotal.Load(), DownBytes: m.downTotal.Load(),
		UpBytesPerS: uint64(m.o.UpBytesPerS), DownBytesPerS: uint64(m.o.DownBytesPerS),
		MonthlyUpBytes: uint64(m.o.MonthlyUpBytes), MonthUpBytes: mo.UpBytes, Month: mo.Month,
		StrangerBlobsStopped: m.o.MonthlyUpBytes > 0 && mo.UpBytes >= uint64(m.o.MonthlyUpBytes),
	}
}

// Counts are what the metrics read of a Meter (metrics.Bandwidth has the
// same fields): bytes in each direction since start, the caps (0
// unlimited), the month's bytes sent and its cap, and the grants that
// waited by direction (0 up, 1 down) and Class.
type Counts struct {
	Up, Down              uint64
	UpCap, DownCap        uint64
	MonthUp, MonthlyUpCap uint64
	Waits                 [2][NumClasses]uint64
}

// Counts returns the Meter's Counts now.
func (m *Meter) Counts() Counts {
	c := Counts{Up: m.upTotal.Load(), Down: m.downTotal.Load(),
		UpCap: uint64(m.o.UpBytesPerS), DownCap: uint64(m.o.DownBytesPerS),
		MonthUp: m.Month().UpBytes, MonthlyUpCap: uint64(m.o.MonthlyUpBytes)}
	for d, l := range []*Limiter{m.up, m.down} {
		if l != nil {
			for k := range NumClasses {
				c.Waits[d][k] = l.Waits(Class(k))
			}
		}
	}
	return c
}

// Run writes the month's count to Options.File every FlushInterval while
// it grows and when Meter.sent asks (FlushBytes sent, or the cap
// reached), until ctx ends; then it writes it a last time and ends the
// waits of every stream (Close). A write that fails is logged and tried
// again at the next.
func (m *Meter) Run(ctx context.Context) {
	t := time.NewTicker(FlushInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			m.Close()
			return
		case <-t.C:
		case <-m.flush:
		}
		if err := m.Flush(); err != nil {
			m.o.Log.Warn("could not keep the month's bytes sent (bandwidth.monthly_up_bytes)", "err", err)
		}
	}
}

// Flush writes the month's count to Options.File if it changed since the
// last write. The count is read under monthMu and written outside it, so
// that a slow fsync never holds Status or Serves; writeMu orders the
// writes.
func (m *Meter) Flush() error {
	m.writeMu.Lock()
	defer m.writeMu.Unlock()
	m.monthMu.Lock()
	m.fold(m.o.Now())
	mo, written := m.month, m.written
	m.monthMu.Unlock()
	if m.o.File == "" || mo == written {
		return nil
	}
	if err := WriteMonth(m.o.File, mo); err != nil {
		return err
	}
	m.monthMu.Lock()
	m.written = mo
	m.monthMu.Unlock()
	return nil
}

// Close ends the waits of every stream and writes the month's count a
// last time.
func (m *Meter) Close() error {
	m.cancel()
	return m.Flush()
}
