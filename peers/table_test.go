package peers

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/wats-network/wats/api"
	"github.com/wats-network/wats/core"
	"github.com/wats-network/wats/internal/scripttest"
	"github.com/wats-network/wats/limits"
	"github.com/wats-network/wats/peercache"
	"github.com/wats-network/wats/proto"
)

// epoch is the wall clock of the scripts' time 0.
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// scriptID returns a peer ID with an Ed25519 key made from name, so that a
// script's peers are the same in every run and can be sent challenges.
func scriptID(t testing.TB, name string) peer.ID {
	seed := sha256.Sum256([]byte(name))
	sk, _, err := crypto.GenerateEd25519Key(strings.NewReader(string(seed[:])))
	if err != nil {
		t.Fatal(err)
	}
	id, err := peer.IDFromPrivateKey(sk)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// scriptWorld is a Table on a peer cache in memory, and the clocks and
// names of a script.
type scriptWorld struct {
	t     testing.TB
	db    *pebble.DB
	cache *peercache.Cache
	table *Table[struct{}]
	cfg   limits.Config
	slots int
	// quota and maxBlob are blobs.quota_bytes and max_blob_bytes;
	// pagePool the page pool's bytes.
	quota, maxBlob, pagePool int64
	// pages are the sync pages being served, by peer (or tier) name.
	pages map[string][]*Page
	// said are what the pages taken back told: a stream reset, a tier.
	said  []string
	wall  time.Time
	mono  time.Duration
	ids   map[string]peer.ID
	names map[peer.ID]string
	// linked are the peers connected (for Leave and SetHello).
	linked map[peer.ID]bool
	// firsts are the times the log stored each author's first event.
	firsts map[string]time.Time
	// releases end the fetches held.
	releases []func()
	// dhtPool is the strangers' shared budget of DHT requests that pays
	// for greeted allowances (Options.Greeting: nil with the DHT off);
	// dhtServing whether a DHT serves strangers.
	dhtPool    *limits.Bucket
	dhtServing bool
}

func newScriptWorld(t testing.TB) *scriptWorld {
	w := &scriptWorld{t: t}
	t.Cleanup(func() { w.closeDB() })
	return w
}

// reset starts from no peers and an empty peer cache.
func (w *scriptWorld) reset() error {
	w.closeDB()
	db, err := pebble.Open("", &pebble.Options{FS: vfs.NewMem(), Logger: quietLogger{}})
	if err != nil {
		return err
	}
	w.db, w.wall, w.mono = db, epoch, 0
	w.ids, w.names, w.linked = map[string]peer.ID{}, map[peer.ID]string{}, map[peer.ID]bool{}
	w.firsts = map[string]time.Time{}
	return w.open()
}

func (w *scriptWorld) closeDB() {
	if w.cache != nil {
		_ = w.cache.Close()
		w.cache = nil
	}
	if w.db != nil {
		_ = w.db.Close()
		w.db = nil
	}
}

// open (re)opens the peer cache and makes a new Table: a node's start.
func (w *scriptWorld) open() error {
	if w.cache != nil {
		if err := w.cache.Close(); err != nil {
			return err
		}
	}
	c, _, err := peercache.Open(w.db, nil)
	if err != nil {
		return err
	}
	w.cache = c
	var greeting Greeting
	if w.dhtPool != nil {
		greeting = func(k int, mono time.Duration) (bool, bool) {
			return w.dhtServing && w.dhtPool.AllowN(k, int64(mono)), w.dhtServing
		}
	}
	w.table, err = NewTable[struct{}](Options{Cache: c, Slots: w.slots, Limits: w.cfg, QuotaBytes: w.quota, MaxBlobBytes: w.maxBlob, PagePoolBytes: w.pagePool,
		AuthorFirst: func(a string) (time.Time, bool) { t, ok := w.firsts[a]; return t, ok }, Greeting: greeting})
	w.linked = map[peer.ID]bool{}
	return err
}

func (w *scriptWorld) id(name string) peer.ID {
	if id, ok := w.ids[name]; ok {
		return id
	}
	id := peer.ID(name) // no key: cannot be sent a challenge
	if !strings.HasPrefix(name, "nokey-") {
		id = scriptID(w.t, name)
	}
	w.ids[name], w.names[id] = id, name
	return id
}

func (w *scriptWorld) peer(name string) (*Peer[struct{}], error) {
	st := w.table.Get(w.id(name))
	if st == nil {
		return nil, fmt.Errorf("%s is not connected", name)
	}
	return st, nil
}

// change prints a Change.
func (w *scriptWorld) change(c Change[struct{}]) string {
	var out []string
	if c.Persisted != "" {
		out = append(out, "record "+c.Persisted)
	}
	if c.Deferred {
		out = append(out, "deferred")
	}
	if c.Err != nil {
		out = append(out, "error")
	}
	if c.Retiered {
		out = append(out, "tier "+c.Tier.String())
	}
	if len(out) == 0 {
		return "ok"
	}
	return strings.Join(out, ", ")
}

// describe prints what the Table knows of a peer.
func (w *scriptWorld) describe(name string) string {
	p := w.id(name)
	st := w.table.Get(p)
	if st == nil {
		h, ok := w.table.History(p, w.wall, w.mono)
		if !ok {
			return "unknown"
		}
		return fmt.Sprintf("away tier=%v reputed=%v record=%v cursor=%d %s", limits.TierOf(h), w.table.ReputedAway(p, w.mono),
			h.Persisted, w.table.Cursor(p), countsText(h.Counts))
	}
	return fmt.Sprintf("tier=%v reputed=%v record=%v hello=%v cursor=%d %s", st.Tier(), st.Reputed(w.mono), st.Persisted(),
		st.Helloed(), w.table.Cursor(p), countsText(st.History().Counts))
}

// countsText prints the non-zero counts of c.
func countsText(c core.Counts) string {
	var out []string
	for _, f := range []struct {
		name string
		v    uint64
	}{{"served", c.Served}, {"refused", c.Refused}, {"challenged", c.Challenged}, {"solved", c.Solved},
		{"misses", c.Misses}, {"invalid", c.Invalid}, {"failed", c.Failed}, {"timeouts", c.Timeouts},
		{"events", c.Events}, {"bytes", c.Bytes}} {
		if f.v != 0 {
			out = append(out, fmt.Sprintf("%s=%d", f.name, f.v))
		}
	}
	return "[" + strings.Join(out, " ") + "]"
}

var tierNames = map[string]limits.Tier{"suspect": limits.TierSuspect, "new": limits.TierNew, "normal": limits.TierNormal,
	"valued": limits.TierValued}

var counterNames = map[string]Counter{"served": Served, "refused": Refused, "challenged": Challenged, "solved": Solved,
	"misses": Misses, "invalid": Invalid, "failed": Failed, "timeouts": Timeouts, "events": Events, "bytes": Bytes}

func (w *scriptWorld) run(f []string) (string, error) {
	switch f[0] {
	case "table":
		w.cfg, w.slots, w.quota, w.maxBlob, w.pagePool = limits.DefaultConfig(), 4, 64<<20, 4<<20, 128<<20
		w.pages = map[string][]*Page{}
		w.dhtPool, w.dhtServing = nil, false
		for _, kv := range f[1:] {
			k, v, _ := strings.Cut(kv, "=")
			if kv == "dht=client" { // a DHT that serves no stranger
				r, _ := limits.NewRate(12_000)
				w.dhtPool = limits.NewBucket(r)
				continue
			}
			n, err := strconv.Atoi(v)
			if err != nil {
				return "", err
			}
			switch k {
			case "slots":
				w.slots = n
			case "reports":
				w.cfg.StrangerReportPerMin = n
			case "report":
				w.cfg.ReportPerMin = n
			case "sync":
				w.cfg.SyncPerMin = n
			case "fetches":
				w.cfg.BlobFetchesPerPeer = n
			case "quota":
				w.quota = int64(n)
			case "maxblob":
				w.maxBlob = int64(n)
			case "dht":
				// dht=N: a DHT serving strangers, their shared budget
				// N requests a minute (limits.stranger_dht_per_min,
				// which also bounds the allowances solutions pay for).
				r, err := limits.NewRate(n)
				if err != nil {
					return "", err
				}
				w.dhtPool, w.dhtServing = limits.NewBucket(r), true
				w.cfg.StrangerDHTPerMin = n
			case "challenge":
				w.cfg.Challenge = n != 0
			case "pages":
				w.pagePool = int64(n)
			default:
				return "", fmt.Errorf("unknown option %q", k)
			}
		}
		if err := w.reset(); err != nil {
			return "", err
		}
		return "ok", nil
	case "at":
		// at T: both clocks at T after the start; at T wall=W: the wall
		// clock apart (it may step back).
		d, err := time.ParseDuration(f[1])
		if err != nil {
			return "", err
		}
		w.mono, w.wall = d, epoch.Add(d)
		for _, kv := range f[2:] {
			if v, ok := strings.CutPrefix(kv, "wall="); ok {
				wd, err := time.ParseDuration(v)
				if err != nil {
					return "", err
				}
				w.wall = epoch.Add(wd)
			}
		}
		return "ok", nil
	case "connect":
		dir := network.DirInbound
		if len(f) > 2 && (f[2] == "out" || f[2] == "chosen") {
			dir = network.DirOutbound
		}
		p := w.id(f[1])
		w.linked[p] = true
		done := func(bool) {}
		if len(f) > 2 && f[2] == "chosen" {
			done = w.table.Choose(p)
		}
		c := w.table.Connect(p, dir, "", w.wall, w.mono)
		done(true)
		switch {
		case !c.Created:
			return "known", nil
		case c.Evicted != nil:
			return fmt.Sprintf("tier %v, evict %s ban %v", c.Peer.Tier(), w.names[c.Evicted.ID()], c.Ban), nil
		}
		return fmt.Sprintf("tier %v", c.Peer.Tier()), nil
	case "choose":
		w.table.Choose(w.id(f[1]))(len(f) < 3 || f[2] != "failed")
		return "ok", nil
	case "always":
		w.table.ChooseAlways(w.id(f[1]))
		return "ok", nil
	case "hello":
		p := w.id(f[1])
		h := &proto.Hello{Version: 1, Network: "test", Agent: "script"}
		for _, a := range f[2:] {
			if a == "challenge" {
				h.Features = append(h.Features, proto.FeatureChallenge)
			} else if v, ok := strings.CutPrefix(a, "sync="); ok {
				n, _ := strconv.ParseInt(v, 10, 64)
				h.Limits = &proto.HelloLimits{SyncPerMin: n}
			} else if v, ok := strings.CutPrefix(a, "head="); ok {
				n, _ := strconv.ParseUint(v, 10, 64)
				h.Head = core.Cursor(n)
			}
		}
		st, first, err := w.table.SetHello(p, h, func() *Peer[struct{}] { return w.table.Connect(p, network.DirInbound, "", w.wall, w.mono).Peer },
			func(p peer.ID) bool { return w.linked[p] }, w.wall, w.mono)
		if err != nil {
			return "", err
		}
		pace := "unpaced"
		if pc := w.table.Pacer(p); pc.Rate().PerMin() != 0 {
			pace = fmt.Sprintf("paced %d/min", pc.Rate().PerMin())
		}
		return fmt.Sprintf("first=%v %s live=%v", first, pace, w.table.Get(p) == st), nil
	case "request":
		// request ID TYPE [hit|miss|expected] [solved] [load=N]
		st, err := w.peer(f[1])
		if err != nil {
			return "", err
		}
		k, ok := core.ParseRequest(f[2])
		if !ok {
			return "", fmt.Errorf("unknown request %q", f[2])
		}
		class, solved, load := limits.ClassHit, false, 1
		var hello *proto.Hello
		if k == core.Hello {
			hello = &proto.Hello{Version: 1, Network: "test", Agent: "script"}
		}
		for _, a := range f[3:] {
			switch {
			case a == "challenge" && hello != nil: // the hello advertises it
				hello.Features = append(hello.Features, proto.FeatureChallenge)
			case a == "miss":
				class = limits.ClassMiss
			case a == "expected":
				class = limits.ClassExpected
			case a == "solved":
				solved = true
			case strings.HasPrefix(a, "load="):
				load, _ = strconv.Atoi(a[len("load="):])
			default:
				return "", fmt.Errorf("unknown argument %q", a)
			}
		}
		v := w.table.Admit(st, k, hello, class, solved, load, w.mono)
		out := []string{v.Verdict.String()}
		if v.Verdict != limits.Serve {
			out = append(out, v.Reason.String())
		}
		if v.Verdict == limits.Refuse {
			out = append(out, "retry "+v.RetryAfter.String())
		}
		for _, flag := range []struct {
			on   bool
			name string
		}{{v.Miss, "miss"}, {v.Shared, "shared"}, {v.Throttled, "throttled"}, {v.FirstSolution, "first-solution"},
			{v.Pressure, "pressure"}, {v.Greeted, "greeted"}} {
			if flag.on {
				out = append(out, flag.name)
			}
		}
		if v.Retiered {
			out = append(out, "tier "+v.Tier.String())
		}
		return strings.Join(out, ", "), nil
	case "requests":
		// requests ID TYPE N: N requests at once; prints how many of each verdict.
		st, err := w.peer(f[1])
		if err != nil {
			return "", err
		}
		k, _ := core.ParseRequest(f[2])
		n, err := strconv.Atoi(f[3])
		if err != nil {
			return "", err
		}
		got := map[string]int{}
		for range n {
			got[w.table.Admit(st, k, nil, limits.ClassHit, false, 1, w.mono).Verdict.String()]++
		}
		keys := slices.Sorted(func(yield func(string) bool) {
			for k := range got {
				if !yield(k) {
					return
				}
			}
		})
		var out []string
		for _, k := range keys {
			out = append(out, fmt.Sprintf("%s=%d", k, got[k]))
		}
		return strings.Join(out, " "), nil
	case "dht":
		// dht ID N: N DHT requests of ID drawn on its greeted allowance:
		// how many it had, and what is left.
		n, err := strconv.Atoi(f[2])
		if err != nil {
			return "", err
		}
		took := 0
		for range n {
			if w.table.TakeGreeted(w.id(f[1]), w.mono) {
				took++
			}
		}
		return fmt.Sprintf("%d from the allowance, %d left", took, w.table.Greeted(w.id(f[1]))), nil
	case "greetings":
		// greetings: the allowances given, by what paid, and the solved
		// hellos served with none.
		d := w.table.Greetings(api.DHTStatus{})
		return fmt.Sprintf("budget=%d solved=%d over=%d", d.AllowancesBudget, d.AllowancesSolved, d.AllowancesOverSolved), nil
	case "count":
		// count ID COUNTER N
		st, err := w.peer(f[1])
		if err != nil {
			return "", err
		}
		c, ok := counterNames[f[2]]
		if !ok {
			return "", fmt.Errorf("unknown counter %q", f[2])
		}
		n, err := strconv.ParseUint(f[3], 10, 64)
		if err != nil {
			return "", err
		}
		t, changed := st.Add(c, n)
		if changed {
			return "tier " + t.String(), nil
		}
		return "ok", nil
	case "crowd":
		// crowd PREFIX N: N peers PREFIX1..PREFIXN dial out and give one
		// event each at once; prints how many got a record.
		n, err := strconv.Atoi(f[2])
		if err != nil {
			return "", err
		}
		made, deferred := 0, 0
		for i := 1; i <= n; i++ {
			p := w.id(f[1] + strconv.Itoa(i))
			w.linked[p] = true
			w.table.Connect(p, network.DirOutbound, "", w.wall, w.mono)
			c, _ := w.table.Gave(p, 1, 0, w.wall, w.mono)
			if c.Persisted != "" {
				made++
			}
			if c.Deferred {
				deferred++
			}
		}
		return fmt.Sprintf("%d records, %d deferred", made, deferred), nil
	case "gave":
		// gave ID EVENTS BYTES
		events, err1 := strconv.ParseUint(f[2], 10, 64)
		bytes, err2 := strconv.ParseUint(f[3], 10, 64)
		if err := errors.Join(err1, err2); err != nil {
			return "", err
		}
		c, ok := w.table.Gave(w.id(f[1]), events, bytes, w.wall, w.mono)
		if !ok {
			return "not credited", nil
		}
		return w.change(c), nil
	case "value":
		st, err := w.peer(f[1])
		if err != nil {
			return "", err
		}
		return w.change(w.table.ShowedValue(st, f[2], w.wall, w.mono)), nil
	case "flood":
		// flood ID N: N streams over its caps within this second; prints
		// the refusal that bans it, if one does.
		st, err := w.peer(f[1])
		if err != nil {
			return "", err
		}
		n, err := strconv.Atoi(f[2])
		if err != nil {
			return "", err
		}
		out := "no ban"
		for i := range n {
			if flood, t, _ := st.OverCap(w.mono); flood {
				out = fmt.Sprintf("ban at %d, tier %v", i+1, t)
			}
		}
		return out, nil
	case "fold":
		changes := w.table.Fold(w.wall, w.mono)
		if len(changes) == 0 {
			return "none", nil
		}
		var out []string
		for _, c := range changes {
			out = append(out, w.names[c.Peer.ID()]+": "+w.change(c))
		}
		slices.Sort(out)
		return strings.Join(out, "; "), nil
	case "disconnect":
		p := w.id(f[1])
		delete(w.linked, p)
		if w.table.Leave(p, func(p peer.ID) bool { return w.linked[p] }, w.wall, w.mono) == nil {
			return "none", nil
		}
		return "ok", nil
	case "cursor":
		n, err := strconv.ParseUint(f[2], 10, 64)
		if err != nil {
			return "", err
		}
		if err := w.table.SaveCursor(w.id(f[1]), core.Cursor(n), true); err != nil {
			return "", err
		}
		return "ok", nil
	case "gater":
		if w.table.AdmitStranger(w.id(f[1]), w.mono) {
			return "admit", nil
		}
		return "refuse", nil
	case "restart":
		// The node stops (every peer leaves) and starts again on the
		// same peer cache; the monotonic clock starts again from 0.
		for p := range w.linked {
			w.table.Leave(p, nil, w.wall, w.mono)
		}
		if err := w.open(); err != nil {
			return "", err
		}
		w.mono = 0
		return "ok", nil
	case "peer":
		return w.describe(f[1]), nil
	case "listed":
		// listed ID: its requests as the peers list shows them (Describe).
		var ap api.Peer
		w.table.Describe(&ap, w.id(f[1]), w.mono)
		return fmt.Sprintf("served=%d challenged=%d refused=%d", ap.Served, ap.Challenged, ap.Refused), nil
	case "pages":
		// pages ID N: page ID N times; what each said, once with its count
		// when all said the same.
		n, err := strconv.Atoi(f[2])
		if err != nil {
			return "", err
		}
		var outs []string
		for range n {
			out, err := w.run([]string{"page", f[1]})
			if err != nil {
				return "", err
			}
			outs = append(outs, out)
		}
		if len(outs) > 0 && slices.Equal(outs, slices.Repeat(outs[:1], len(outs))) {
			return fmt.Sprintf("%s x%d", outs[0], n), nil
		}
		return strings.Join(outs, "; "), nil
	case "headof":
		// headof ID CURSOR: the head the peers list shows of ID (Describe)
		// when this node has synced its log to CURSOR.
		cursor, err := strconv.ParseUint(f[2], 10, 64)
		if err != nil {
			return "", err
		}
		ap := api.Peer{Cursor: cursor}
		w.table.Describe(&ap, w.id(f[1]), w.mono)
		return fmt.Sprintf("head=%d", ap.Head), nil
	case "page", "pagefor":
		// page ID: a sync page served to ID (its tier, its count);
		// pagefor TIER [N]: N pages for a peer of TIER, counted.
		var pg *Page
		if f[0] == "page" {
			st, err := w.peer(f[1])
			if err != nil {
				return "", err
			}
			name := f[1]
			reset := func() error { w.said = append(w.said, name+" reset"); return nil }
			retiered := func(p *Peer[struct{}], t limits.Tier) { w.said = append(w.said, w.names[p.ID()]+" "+t.String()) }
			pg, busy := w.table.Page(st, w.mono, reset, retiered)
			if pg == nil {
				out := "busy (pool)"
				if busy == BusyPeer {
					out = "busy (peer)"
				}
				return strings.Join(append([]string{out}, w.took()...), "; "), nil
			}
			w.pages[f[1]] = append(w.pages[f[1]], pg)
			return strings.Join(append([]string{fmt.Sprintf("budget %d", pg.Budget)}, w.took()...), "; "), nil
		} else {
			tier, ok := tierNames[f[1]]
			if !ok {
				return "", fmt.Errorf("unknown tier %q", f[1])
			}
			n := 1
			if len(f) > 2 {
				n, _ = strconv.Atoi(f[2])
			}
			if n > 1 {
				served := 0
				for range n {
					if pg := w.table.PageFor(tier); pg != nil {
						served++
						w.pages[f[1]] = append(w.pages[f[1]], pg)
					}
				}
				return fmt.Sprintf("%d served, %d busy", served, n-served), nil
			}
			pg = w.table.PageFor(tier)
		}
		if pg == nil {
			return "busy", nil
		}
		w.pages[f[1]] = append(w.pages[f[1]], pg)
		return fmt.Sprintf("budget %d", pg.Budget), nil
	case "keep":
		// keep ID BYTES: the last page of ID is read: BYTES bytes.
		ps := w.pages[f[1]]
		if len(ps) == 0 {
			return "", fmt.Errorf("no page of %s", f[1])
		}
		n, err := strconv.Atoi(f[2])
		if err != nil {
			return "", err
		}
		ps[len(ps)-1].Keep(n)
		return fmt.Sprintf("holds %d", ps[len(ps)-1].held), nil
	case "done":
		// done ID: every page of ID is written.
		for _, pg := range w.pages[f[1]] {
			pg.Release()
			pg.Release() // twice: nothing more
		}
		delete(w.pages, f[1])
		return "ok", nil
	case "pool":
		// pool TIER [ID]: what pages of TIER hold, and ID's pages.
		tier, ok := tierNames[f[1]]
		if !ok {
			return "", fmt.Errorf("unknown tier %q", f[1])
		}
		var st *Peer[struct{}]
		if len(f) > 2 {
			st = w.table.Get(w.id(f[2]))
		}
		bytes, pages := w.table.PagesHeld(tier, st)
		return fmt.Sprintf("%d bytes, %d pages", bytes, pages), nil
	case "fetch":
		// fetch ID SIZE: a fetch ID asked for, of a blob of SIZE bytes.
		size, err := strconv.ParseUint(f[2], 10, 64)
		if err != nil {
			return "", err
		}
		release, ok := w.table.Fetch(w.id(f[1]), size, w.wall, w.mono)
		if !ok {
			return "refused", nil
		}
		w.releases = append(w.releases, release)
		return "held", nil
	case "release":
		// release: every fetch held ends.
		for _, r := range w.releases {
			r()
		}
		w.releases = nil
		slots, newBytes := w.table.FetchesHeld(limits.TierNew)
		_, normalBytes := w.table.FetchesHeld(limits.TierNormal)
		return fmt.Sprintf("%d peers hold slots, %d+%d bytes held", slots, newBytes, normalBytes), nil
	case "author":
		// author ID: the log stores ID's first event now.
		w.firsts[w.id(f[1]).String()] = w.wall
		return "ok", nil
	case "standing":
		// standing ID: the author's standing and, if connected, the peer's.
		tier, est := w.table.AuthorStanding(w.id(f[1]).String(), w.wall, w.mono)
		out := fmt.Sprintf("author %v established=%v", tier, est)
		if st := w.table.Get(w.id(f[1])); st != nil {
			out += fmt.Sprintf(", peer standing=%v pull=%v", w.table.Standing(st, w.wall, w.mono), w.table.PullTier(st, w.wall, w.mono))
		}
		return out, nil
	case "forward":
		// forward ID AUTHOR N: N envelopes of AUTHOR from ID at once.
		n, err := strconv.Atoi(f[3])
		if err != nil {
			return "", err
		}
		author := w.id(f[2]).String()
		got := map[string]int{}
		for range n {
			err, spammed := w.table.Forward(w.id(f[1]), author, w.wall, w.mono)
			switch {
			case errors.Is(err, ErrOverPeerBudget):
				got["peer-budget"]++
			case errors.Is(err, ErrOverAuthorBudget):
				got["author-budget"]++
			case err != nil:
				return "", err
			default:
				if !w.table.AdmitAuthor(w.id(f[1]), author, 100, true, w.wall, w.mono) {
					got["author-taken"]++
				} else {
					got["ok"]++
				}
			}
			if spammed { // the node counts it as spam
				got["spam"]++
				w.table.Spam(w.id(f[1]), 1, w.wall, w.mono)
			}
		}
		var out []string
		for _, k := range []string{"ok", "peer-budget", "author-budget", "author-taken", "spam"} {
			if got[k] > 0 {
				out = append(out, fmt.Sprintf("%s=%d", k, got[k]))
			}
		}
		return strings.Join(out, " "), nil
	case "spam":
		// spam ID K: K envelopes of ID's spam; the ban, if one.
		k, err := strconv.ParseUint(f[2], 10, 64)
		if err != nil {
			return "", err
		}
		st, ban, tier, retiered := w.table.Spam(w.id(f[1]), k, w.wall, w.mono)
		switch {
		case st == nil:
			return "none", nil
		case ban:
			return fmt.Sprintf("ban, tier %v retiered=%v", tier, retiered), nil
		}
		return "ok", nil
	case "score":
		return fmt.Sprint(w.table.AppScore(w.id(f[1]), w.mono)), nil
	case "pulls":
		// pulls ID N: N pulls at once; how many were allowed.
		n, err := strconv.Atoi(f[2])
		if err != nil {
			return "", err
		}
		k := 0
		for range n {
			if ok, _ := w.table.AllowPull(w.id(f[1]), w.wall, w.mono); ok {
				k++
			}
		}
		return fmt.Sprintf("%d allowed", k), nil
	case "slots":
		var held []string
		for name, p := range w.ids {
			if st := w.table.Get(p); st != nil && w.table.Slots().Holds(st) {
				held = append(held, name)
			}
		}
		slices.Sort(held)
		return fmt.Sprintf("%d %v", w.table.Slots().Len(), held), nil
	}
	return "", fmt.Errorf("unknown command %q", f[0])
}

// took returns and forgets what the pages taken back told.
func (w *scriptWorld) took() []string {
	said := w.said
	w.said = nil
	return said
}

// TestTableScripts steps through the Table's scripts in testdata/.
func TestTableScripts(t *testing.T) {
	for _, name := range []string{"value", "admit", "strangers", "restart", "standing", "fetch", "pages", "greeted", "head"} {
		t.Run(name, func(t *testing.T) {
			w := newScriptWorld(t)
			scripttest.Run(t, "testdata/"+name+".txt", 10, w.run)
		})
	}
}

// TestReconnectingKeepsTheHistory: connections and disconnections of one
// peer racing each other (many goroutines at once) never lose what a
// disconnection remembered: the history the Table keeps of the peer never
// goes back, so a peer cannot shed its history by reconnecting at the
// right moment.
func TestReconnectingKeepsTheHistory(t *testing.T) {
	w := newScriptWorld(t)
	if _, err := w.run([]string{"table"}); err != nil {
		t.Fatal(err)
	}
	p := scriptID(t, "racer")
	var wg sync.WaitGroup
	var back atomic.Int64
	for range 8 {
		wg.Go(func() {
			last := uint64(0)
			for range 2000 {
				st := w.table.Connect(p, network.DirOutbound, "", epoch, 0).Peer
				st.Add(Misses, 1)
				w.table.Leave(p, nil, epoch, 0)
				if rp, ok := w.table.recent.Peek(p); ok {
					if rp.hist.Misses < last {
						back.Add(1)
					}
					last = rp.hist.Misses
				}
			}
		})
	}
	wg.Wait()
	if back.Load() > 0 {
		t.Fatalf("the remembered history went back %d times", back.Load())
	}
	if rp, ok := w.table.recent.Peek(p); !ok || rp.hist.Misses == 0 {
		t.Fatalf("nothing remembered: %+v %v", rp, ok)
	}
}

// quietLogger drops pebble's log lines.
type quietLogger struct{}

func (quietLogger) Infof(string, ...any)  {}
func (quietLogger) Errorf(string, ...any) {}
func (quietLogger) Fatalf(format string, args ...any) {
	panic(fmt.Sprintf(format, args...))
}

// TestTakeBackRacesRelease: strangers' pages taken back while their
// handlers write and release them, from many goroutines at once, leave
// the pool empty and every peer's count of pages at zero once all are
// released (run with -race): a page is released once, by whichever comes
// first, and one written in the meantime is not counted as held unread.
func TestTakeBackRacesRelease(t *testing.T) {
	w := newScriptWorld(t)
	if _, err := w.run([]string{"table", "pages=8388608", "slots=64"}); err != nil {
		t.Fatal(err)
	}
	var sts []*Peer[struct{}]
	for i := range 16 {
		name := fmt.Sprintf("s%d", i)
		if _, err := w.run([]string{"connect", name}); err != nil {
			t.Fatal(err)
		}
		st, err := w.peer(name)
		if err != nil {
			t.Fatal(err)
		}
		sts = append(sts, st)
	}
	var wg sync.WaitGroup
	var timeouts atomic.Int64
	for i, st := range sts {
		wg.Go(func() {
			for k := range 200 {
				mono := time.Duration(i*200+k) * time.Second // every page old enough to take back
				pg, _ := w.table.Page(st, mono, func() error { timeouts.Add(1); return nil }, func(*Peer[struct{}], limits.Tier) {})
				if pg == nil {
					continue
				}
				pg.Keep(pg.Budget)
				pg.Release()
			}
		})
	}
	wg.Wait()
	if held, _ := w.table.PagesHeld(limits.TierNew, nil); held != 0 {
		t.Fatalf("%d bytes held once every page was released", held)
	}
	for _, st := range sts {
		if n := st.pages.Load(); n != 0 {
			t.Fatalf("a peer still counts %d pages", n)
		}
	}
	t.Logf("%d pages taken back", timeouts.Load())
}

// gatedFS is an in-memory FS whose files' syncs wait while gate is set
// (the peer cache's durable writes held, as on a slow disk).
type gatedFS struct {
	vfs.FS
	gate atomic.Pointer[chan struct{}]
	// waiting is told once a sync waits at the gate.
	waiting chan struct{}
	once    sync.Once
}

func (fs *gatedFS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.Create(name, c)
	return gatedFile{f, fs}, err
}

func (fs *gatedFS) ReuseForWrite(oldname, newname string, c vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.ReuseForWrite(oldname, newname, c)
	return gatedFile{f, fs}, err
}

type gatedFile struct {
	vfs.File
	fs *gatedFS
}

func (f gatedFile) wait() {
	if g := f.fs.gate.Load(); g != nil {
		f.fs.once.Do(func() { close(f.fs.waiting) })
		<-*g
	}
}
func (f gatedFile) Sync() error     { f.wait(); return f.File.Sync() }
func (f gatedFile) SyncData() error { f.wait(); return f.File.SyncData() }
func (f gatedFile) SyncTo(n int64) (bool, error) {
	f.wait()
	return f.File.SyncTo(n)
}

// TestCursorSavedWhileTheRecordIsWritten: a sync cursor saved after a
// peer's record was taken (it showed value) and before the record is
// written (the peer cache's writes held by a slow sync of another's) is
// the cursor the record keeps: before, it was kept nowhere, and the peer
// was synced again from the cursor of before.
func TestCursorSavedWhileTheRecordIsWritten(t *testing.T) {
	w := newScriptWorld(t)
	if _, err := w.run([]string{"table"}); err != nil {
		t.Fatal(err)
	}
	fs := &gatedFS{FS: vfs.NewMem(), waiting: make(chan struct{})}
	db, err := pebble.Open("", &pebble.Options{FS: fs, Logger: quietLogger{}})
	if err != nil {
		t.Fatal(err)
	}
	w.closeDB()
	w.db = db
	if err := w.open(); err != nil {
		t.Fatal(err)
	}
	p, other := scriptID(t, "saver"), scriptID(t, "other")
	st := w.table.Connect(p, network.DirOutbound, "", epoch, 0).Peer
	if err := w.table.SaveCursor(p, 10, false); err != nil {
		t.Fatal(err)
	}
	gate := make(chan struct{})
	fs.gate.Store(&gate)
	var wg sync.WaitGroup
	wg.Go(func() { _ = w.cache.Update(other, true, func(*peercache.Record) {}) })
	<-fs.waiting // other's write holds the cache's writes
	wg.Go(func() { w.table.ShowedValue(st, peercache.ValueEvents, epoch, 0) })
	for !st.Persisted() { // taken, its write waiting
		runtime.Gosched()
	}
	if err := w.table.SaveCursor(p, 500, false); err != nil {
		t.Fatal(err)
	}
	fs.gate.Store(nil)
	close(gate)
	wg.Wait()
	if got := w.table.Cursor(p); got != 500 {
		t.Fatalf("cursor %d after saving 500 as the record was written", got)
	}
}
