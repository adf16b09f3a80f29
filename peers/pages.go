package peers

import (
	"encoding/hex"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	pool "github.com/libp2p/go-buffer-pool"

	"github.com/wats-network/wats/core"
	"github.com/wats-network/wats/eventlog"
	"github.com/wats-network/wats/limits"
	"github.com/wats-network/wats/proto"
)

// Sync pages served (ADR 0030): the memory of the pages being written to
// peers is reserved from one pool, shared by tier (limits.Pool: strangers
// together at most a quarter, so that a peer that showed value finds its
// room while strangers hold theirs), and bounded per peer, so that a few
// ids that ask for pages and do not read them cannot hold the pool.
const (
	// MaxPagesPerPeer is how many sync pages one peer may be served at
	// once: its sync requests go one at a time, and a requester reads its
	// page a moment before the handler has let go of it.
	MaxPagesPerPeer = 2
	// StrangerPageBytes is the byte budget of a page served to a stranger
	// (new or suspect): an eighth of proto.MaxPageBytes, 512 KiB, a full
	// page of 256 events of 2 KiB. A stranger then holds at most 2 MiB of
	// the pool (two pages, each reserved twice), so it takes sixteen ids
	// to fill the strangers' quarter, until their unread pages make them
	// suspects.
	StrangerPageBytes = proto.MaxPageBytes / 8
	// NormalPageBytes is the same for a normal peer: a quarter of
	// proto.MaxPageBytes, 1 MiB (256 events of 4 KiB). A peer that reads
	// its pages as late as their deadlines allow then holds at most 4 MiB,
	// and filling the share of the peers with records takes two dozen of
	// them, each with a record of its own (made at most 60 a minute).
	// Valued peers get the whole proto.MaxPageBytes.
	NormalPageBytes = proto.MaxPageBytes / 4
	// MinPageBytes is the smallest byte budget of a page served when
	// memory is short: two of the largest events.
	MinPageBytes = 2 * eventlog.MaxEventBytes
)

// pageBudget is the byte budget of a page served to a peer of each tier.
var pageBudget = [limits.NumTiers]int{
	limits.TierSuspect: StrangerPageBytes,
	limits.TierNew:     StrangerPageBytes,
	limits.TierNormal:  NormalPageBytes,
	limits.TierValued:  proto.MaxPageBytes,
}

// Page is the memory one sync page served holds from the pool: twice its
// byte budget until it is read (the events read, and their encoding),
// twice its bytes once read (Keep), nothing once written (Release).
type Page struct {
	pool *limits.Pool
	tier limits.Tier
	// mu guards held: a page being written can be taken back by another
	// goroutine (Table.Page, for a stranger holding none).
	mu   sync.Mutex
	held int64
	// of counts the pages served to the peer; nil for none.
	of *atomic.Int32
	// granted is the monotonic reading at which the page was reserved;
	// unread the set of strangers' pages being written it joins once read
	// (nil: it joins none); takeBack resets its stream and counts the
	// page held unread in its peer's history, for Table.Page.
	granted  time.Duration
	unread   *unreadPages
	takeBack func()
	// Budget is the page's byte budget (at most its tier's, halved while
	// the pool is short, at least MinPageBytes).
	Budget int
}

// Page reserves the memory of a sync page served to st at the monotonic
// reading mono, or returns the refusal to answer with instead: BusyPeer
// when st is served MaxPagesPerPeer pages already, BusyPool when the pool
// cannot give even MinPageBytes within the share of st's tier. The budget
// is its tier's, halved down to MinPageBytes while the pool cannot give
// it, so that many slow readers (each held up to proto.ResponseTimeout)
// get smaller pages instead of growing the heap.
//
// A refusal is not a request served (ADR 0055, addendum): the Served that
// admission counted for it is taken back and a Refused counted instead
// (in its history and on this connection), and it does not make st active for the stranger slots; a page served
// does (its time, and one more request served on this connection). So an
// id that asks again and again while the pool is held gains no good weight
// against its unread pages, and is not spared by the slots for it.
//
// A stranger (TierNew) that holds no page, never held one unread
// (Timeouts) and was refused fewer than maxRefusedToTakeBack requests on
// its connection, and finds the strangers' share full, takes back the page
// of another stranger unread for UnreadPageGrace or more (SecondPageGrace
// if that one is served two pages), the oldest first:
// its stream is reset (reset, which the node gives for each page) and the
// page counted as held unread (a Timeouts in its peer's history), and the
// room is reserved for st at once. retiered is told of a tier these counts
// change, for the node to carry out (the connection manager's tag).
func (t *Table[L]) Page(st *Peer[L], mono time.Duration, reset func() error, retiered func(*Peer[L], limits.Tier)) (*Page, *proto.Refused) {
	refuse := func(busy *proto.Refused) (*Page, *proto.Refused) {
		st.pages.Add(-1)
		st.unserve()
		st.refusedHere.Add(1)
		if tier, changed := st.Add(Refused, 1); changed {
			retiered(st, tier)
		}
		return nil, busy
	}
	first := st.pages.Add(1)
	if first > MaxPagesPerPeer {
		return refuse(BusyPeer)
	}
	tier := st.Tier()
	p := t.PageFor(tier)
	if p == nil && tier == limits.TierNew && first == 1 && st.hist[Timeouts].Load() == 0 &&
		st.refusedHere.Load() < maxRefusedToTakeBack {
		for range maxTakenBack {
			if !t.unread.takeOldest(mono) {
				break
			}
			if p = t.PageFor(tier); p != nil {
				break
			}
		}
	}
	if p == nil {
		return refuse(BusyPool)
	}
	p.of, p.granted = &st.pages, mono
	if tier.Stranger() {
		p.unread = &t.unread
		p.takeBack = func() {
			_ = reset()
			if tier, changed := st.Add(Timeouts, 1); changed {
				retiered(st, tier)
			}
		}
	}
	st.lastActive.Store(int64(mono))
	st.servedHere.Add(1)
	return p, nil
}

// UnreadPageGrace is how long a stranger's page may be written before
// another stranger holding none may take it back when their share of the
// pool is full (Table.Page): 5 s, a page of StrangerPageBytes read at
// 100 KiB/s. SecondPageGrace is the same for a page of a stranger served
// MaxPagesPerPeer pages at once, which holds more than its one page when
// others hold none: half a second. An honest requester reads its page as
// soon as it comes; an id that reads none holds it up to
// proto.ResponseTimeout otherwise.
const (
	UnreadPageGrace = 5 * time.Second
	SecondPageGrace = 500 * time.Millisecond
)

// maxRefusedToTakeBack is how many of its requests a stranger's
// connection may have had refused and still take a page back (Table.Page):
// 12, what a requester that waits out each "too busy" (a second) is
// refused in twice UnreadPageGrace and more. An id that asks again at once
// after each refusal spends them in as many round trips, and then waits
// its turn behind a newcomer, which would otherwise find the page taken
// back each time it came due by the id that asks most often.
const maxRefusedToTakeBack = 12

// maxTakenBack bounds the pages one request takes back: a page read holds
// twice its bytes, which can be less than the MinPageBytes asked for.
const maxTakenBack = 4

// unreadPages are the strangers' pages being written (read, not yet
// released), which Table.Page may take back.
type unreadPages struct {
	mu    sync.Mutex
	pages map[*Page]struct{}
}

// add and remove put p in the set and take it out.
func (u *unreadPages) add(p *Page) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.pages == nil {
		u.pages = make(map[*Page]struct{})
	}
	u.pages[p] = struct{}{}
}

func (u *unreadPages) remove(p *Page) {
	u.mu.Lock()
	defer u.mu.Unlock()
	delete(u.pages, p)
}

// takeOldest takes back, at the monotonic reading mono, the page granted
// first of those unread for UnreadPageGrace, or for SecondPageGrace when
// its peer is served MaxPagesPerPeer pages: it releases its memory and
// calls its takeBack (unless the page was written and released in the
// meantime). It reports whether it found one.
func (u *unreadPages) takeOldest(mono time.Duration) bool {
	u.mu.Lock()
	var oldest *Page
	for p := range u.pages {
		due := p.granted <= mono-UnreadPageGrace ||
			p.granted <= mono-SecondPageGrace && p.of != nil && p.of.Load() >= MaxPagesPerPeer
		if due && (oldest == nil || p.granted < oldest.granted) {
			oldest = p
		}
	}
	if oldest == nil {
		u.mu.Unlock()
		return false
	}
	delete(u.pages, oldest)
	u.mu.Unlock()
	if oldest.release() { // not written in the meantime
		oldest.takeBack()
	}
	return true
}

// The answers to a sync request that Page cannot serve: refusals, which a
// requester waits out and asks again after (a catch-up drops a peer that
// answers with an error, ADR 0055). A catch-up asks a peer from two
// workers at once (ADR 0052), and reads each page a moment before the
// handler has let go of it, so that a third request can meet the peer's
// MaxPagesPerPeer: BusyPeer asks it to wait BusyPeerRetry, that moment
// and more. BusyPool, the pool short for the peer's tier, asks for
// BusyPoolRetry: pages are held up to proto.ResponseTimeout.
var (
	BusyPeer = &proto.Refused{Reason: "too busy to serve a sync page: retry later", RetryAfterMs: BusyPeerRetry.Milliseconds()}
	BusyPool = &proto.Refused{Reason: "too busy to serve a sync page: retry later", RetryAfterMs: BusyPoolRetry.Milliseconds()}
)

// BusyPeerRetry and BusyPoolRetry are the waits BusyPeer and BusyPool ask
// for.
const (
	BusyPeerRetry = 100 * time.Millisecond
	BusyPoolRetry = time.Second
)

// PageFor reserves the memory of a sync page served to a peer of tier
// tier, as Page does but for no peer in particular.
func (t *Table[L]) PageFor(tier limits.Tier) *Page {
	budget := proto.MaxPageBytes
	if tier.Valid() {
		budget = pageBudget[tier]
	}
	for !t.pages.Reserve(tier, int64(2*budget)) {
		if budget /= 2; budget < MinPageBytes {
			return nil
		}
	}
	return &Page{pool: t.pages, tier: tier, held: int64(2 * budget), Budget: budget}
}

// Keep shrinks the reservation, once the page is read, to twice its bytes
// (at most what was reserved: a page holds at most Budget bytes). A
// stranger's page is then being written, and may be taken back (Table.Page).
func (p *Page) Keep(bytes int) {
	p.mu.Lock()
	live := p.held >= 0
	if live {
		keep := min(int64(2*bytes), p.held)
		p.pool.Release(p.tier, p.held-keep)
		p.held = keep
	}
	p.mu.Unlock()
	if live && p.unread != nil {
		p.unread.add(p)
	}
}

// Release gives back what the page holds, once it is written (or taken
// back); calls after the first do nothing.
func (p *Page) Release() {
	if p.unread != nil {
		p.unread.remove(p)
	}
	p.release()
}

// release gives back what the page holds; it reports whether it did (false
// once released).
func (p *Page) release() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.held < 0 {
		return false
	}
	p.pool.Release(p.tier, p.held)
	p.held = -1
	if p.of != nil {
		p.of.Add(-1)
	}
	return true
}

// PagesHeld returns what the pages served to peers of tier tier hold of
// the pool, and how many st is served (st nil: 0).
func (t *Table[L]) PagesHeld(tier limits.Tier, st *Peer[L]) (bytes int64, pages int) {
	if st != nil {
		pages = int(st.pages.Load())
	}
	return t.pages.Held(tier), pages
}

// PageBufBytes is the size of the recycled buffers sync pages are read
// into: a page of 256 events of about 400 bytes fits, a larger one grows
// its buffer (which then goes back to the pool of its size).
const PageBufBytes = 128 << 10

// Read answers sync request r with one page of log in the memory p holds:
// the events after r.After, at most r.Limit (≤ core.MaxPageEvents) and
// p.Budget bytes in all, read into a recycled buffer (the catch-up of a
// peer reads thousands of pages, each a fresh allocation otherwise). Once
// the page is read, p keeps twice its bytes; done gives the buffer and
// the memory back once the response is written. On an error p is released
// already and done does nothing.
//
// A request by id range (proto.FeatureSyncIDs, ADR 0052) is answered with
// the events of the range in id order (eventlog.Log.PageIDsInto), within
// the same bounds, or with its fingerprint (eventlog.Log.Fingerprint, at
// most proto.MaxFingerprintIDs ids counted), next being the log's head.
// An id list request (proto.FeatureSyncIDLists, ADR 0057) is answered
// with the range's ids (ListIDs).
func (p *Page) Read(log *eventlog.Log, r *proto.SyncRequest) (resp *proto.SyncResponse, done func(), err error) {
	if r.IDs != nil && r.IDList {
		return p.ListIDs(log, *r.IDs)
	}
	if r.IDs != nil && r.Fingerprint {
		p.Release()
		count, sum, more, err := log.Fingerprint(r.IDs.From, r.IDs.To, proto.MaxFingerprintIDs)
		if err != nil {
			return nil, func() {}, err
		}
		return &proto.SyncResponse{Next: log.Head(), More: more, Count: int64(count),
			Fingerprint: hex.EncodeToString(sum[:])}, func() {}, nil
	}
	buf := pool.Get(PageBufBytes)[:0]
	var events []jsontext.Value
	var next core.Cursor
	var more bool
	if r.IDs != nil {
		next = log.Head() // read first: the page holds every event up to it in the range
		events, more, err = log.PageIDsInto(&buf, r.IDs.From, r.IDs.To, r.Limit, p.Budget)
	} else {
		events, next, more, err = log.PageInto(&buf, r.After, r.Limit, p.Budget)
	}
	if err != nil {
		pool.Put(buf)
		p.Release()
		return nil, func() {}, err
	}
	bytes := 0
	for _, ev := range events {
		bytes += len(ev)
	}
	p.Keep(bytes)
	return &proto.SyncResponse{Events: events, Next: next, More: more}, func() {
		pool.Put(buf)
		p.Release()
	}, nil
}

// ListIDs answers an id list request for rng (ADR 0057) in the memory p
// holds: the ids of the range from its start, ascending, read from the
// index by id alone (eventlog.Log.IDs), at most proto.MaxListIDs and as
// many as p.Budget holds at proto.ListIDBytes an id (a stranger's budget
// holds all 4,096; one halved to MinPageBytes, 978), more saying whether
// the range holds ids past the last one; next is the log's head, read
// first. done gives the memory back once the response is written; on an
// error p is released already and done does nothing.
func (p *Page) ListIDs(log *eventlog.Log, rng proto.IDRange) (resp *proto.SyncResponse, done func(), err error) {
	head := log.Head()
	ids, more, err := log.IDs(rng.From, rng.To, max(1, min(proto.MaxListIDs, p.Budget/proto.ListIDBytes)))
	if err != nil {
		p.Release()
		return nil, func() {}, err
	}
	p.Keep(len(ids) * proto.ListIDBytes)
	return &proto.SyncResponse{Next: head, More: more, IDs: ids}, p.Release, nil
}
