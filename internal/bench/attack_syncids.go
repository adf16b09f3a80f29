package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/wats-network/wats/api"
	"github.com/wats-network/wats/config"
	"github.com/wats-network/wats/eventlog"
	"github.com/wats-network/wats/internal/attack"
	"github.com/wats-network/wats/internal/devnet"
	"github.com/wats-network/wats/repo"
)

// The scenarios of sync by id range (ADR 0052, ADR 0055, ADR 0057): the
// attacked daemon holds a log of attackLogEvents events, so that a
// whole-space fingerprint counts proto.MaxFingerprintIDs ids and pages and
// id lists are full, and the honest side adds a catch-up that goes by id range: a fresh daemon
// catches up from the attacked one and from a second peer holding the
// same events while the attack runs (HonestCatchUp).

// attackLogEvents is the log of the attacked daemon of a scenario of sync
// by ids: 100,000 events, past proto.MaxFingerprintIDs.
const attackLogEvents = 100_000

// attackLargeEvery: one event in 8 of that log has the largest body
// (eventlog.MaxBodyBytes), so that a page of 256 events from any point of
// the id space holds some 32 of them, over 512 KiB, the budget of a page
// served to a stranger (peers.StrangerPageBytes): pages by id range are
// as large as a responder makes them.
const attackLargeEvery = 8

// catchUpGrace is how long the honest catch-up may go on after the attack
// ends: what it stores then is late, what it lacks after is never
// delivered.
const catchUpGrace = 60 * time.Second

// syncIDsScenarios are the scenarios of sync by ids, "ids-none" their
// baseline (no attack, the same log and catch-up).
var syncIDsScenarios = []AttackScenario{
	{Name: "ids-none", CatchUp: attackLogEvents},
	{Name: "fingerprint-flood-1", Attack: attack.FingerprintFlood, IDs: 1, CatchUp: attackLogEvents},
	{Name: "fingerprint-flood-8", Attack: attack.FingerprintFlood, IDs: 8, CatchUp: attackLogEvents},
	{Name: "fingerprint-flood-open-1", Attack: attack.FingerprintFloodOpen, IDs: 1, CatchUp: attackLogEvents},
	{Name: "fingerprint-flood-open-8", Attack: attack.FingerprintFloodOpen, IDs: 8, CatchUp: attackLogEvents},
	{Name: "fingerprint-sybil-50", Attack: attack.FingerprintSybil, Rate: 50, CatchUp: attackLogEvents},
	{Name: "fingerprint-sybil-330", Attack: attack.FingerprintSybil, Rate: 330, CatchUp: attackLogEvents},
	// The control of the fingerprint Sybils: as many fresh ids, each
	// asking for a page by position instead (sybil-sync's shape).
	{Name: "ids-sybil-sync-330", Attack: attack.SybilSync, Rate: 330, CatchUp: attackLogEvents},
	{Name: "ids-pages-8", Attack: attack.IDsPages, IDs: 8, CatchUp: attackLogEvents},
	{Name: "ids-pages-64", Attack: attack.IDsPages, IDs: 64, CatchUp: attackLogEvents},
	// The id lists of ADR 0057 (4,096 ids, 274 KiB, an answer of this
	// log), whose requests the catch-up also sends where a shard differs.
	{Name: "id-lists-flood-1", Attack: attack.IDListsFlood, IDs: 1, CatchUp: attackLogEvents},
	{Name: "id-lists-flood-8", Attack: attack.IDListsFlood, IDs: 8, CatchUp: attackLogEvents},
	{Name: "id-lists-small-8", Attack: attack.IDListsSmall, IDs: 8, CatchUp: attackLogEvents},
	{Name: "id-lists-open-8", Attack: attack.IDListsOpen, IDs: 8, CatchUp: attackLogEvents},
	{Name: "id-lists-sybil-330", Attack: attack.IDListsSybil, Rate: 330, CatchUp: attackLogEvents},
	{Name: "id-lists-hold-64", Attack: attack.IDListsHold, IDs: 64, CatchUp: attackLogEvents},
}

func init() { AttackScenarios = append(AttackScenarios, syncIDsScenarios...) }

// CatchUpResult is what the honest catch-up of a scenario of sync by ids
// saw: a fresh daemon, started as the attack starts, catching up from the
// attacked daemon and from a second peer holding its preloaded events.
type CatchUpResult struct {
	// Events is what it had to bring: the attacked daemon's events when it
	// started (the preloaded log and the events the bench and the honest
	// peers added, which the second peer lacks).
	Events uint64 `json:"events"`
	// Seconds is the time from its first connect to the end of its sync
	// from every peer (`wats sync`), if that ended within catchUpGrace of
	// the attack's end; 0 otherwise.
	Seconds float64 `json:"seconds"`
	// DuringAttack counts the events it held when the attack ended, Late
	// those it stored in the catchUpGrace after, and Never those it still
	// lacked then (never delivered).
	DuringAttack uint64 `json:"during_attack"`
	Late         uint64 `json:"late"`
	Never        uint64 `json:"never"`
	// FromAttacked and FromOther are the events its sync from every peer
	// stored from each (0 when that sync did not end); Received the events
	// it received from both, those it held already included (ADR 0057: a
	// catch-up fetches each event once, Received close to Events).
	FromAttacked uint64 `json:"from_attacked"`
	FromOther    uint64 `json:"from_other"`
	Received     uint64 `json:"received"`
	// Error is why its sync failed, if it did.
	Error string `json:"error,omitempty"`
}

// attackBody is the body of the seq-th preloaded event: every
// attackLargeEvery-th of the largest size.
func attackBody(seq int) jsontext.Value {
	if seq%attackLargeEvery == 0 {
		pad := strings.Repeat("p", eventlog.MaxBodyBytes-64)
		return jsontext.Value(`{"n":` + strconv.Itoa(seq) + `,"p":"` + pad + `"}`)
	}
	return benchBody(seq)
}

// attackPeerConfig is the config of the second peer and of the honest
// catch-up's daemon: the default profile on 127.0.0.1 on the attacked
// daemon's network, alone until told to connect.
func attackPeerConfig() *config.Config {
	cfg := catchupConfig()
	cfg.Network = "wats-attack" // attackDaemon's
	return cfg
}

// preloadAttack fills the repo the attacked daemon of a devnet in dir will
// run on (node 0, with the config attackDaemon gives it) and the second
// peer's (dir/other) with the same n events, each in an order of its own,
// and returns the second's.
func preloadAttack(ctx context.Context, dir string, n int) (other string, err error) {
	cfg := attackPeerConfig()
	cfg.Sync.Gossip = false
	cfg.P2P.DHT = config.DHTServer // as the devnet makes it
	other = filepath.Join(dir, "other")
	return other, fillRepos(ctx, []string{devnet.NodeDir(dir, 0), other}, cfg, n, attackBody, func(string) {})
}

// HonestCatchUp starts a fresh daemon in dir (index numbers its log), with
// the config attackPeerConfig gives, connects it to peers (full
// multiaddrs: the attacked daemon first, then the second peer) and syncs
// from every peer, for at most catchUpGrace past the attack's end (end);
// want is what it must bring.
func HonestCatchUp(ctx context.Context, dir string, index int, peers []string, want uint64, end time.Time) *CatchUpResult {
	res := &CatchUpResult{Events: want, Never: want}
	fail := func(err error) *CatchUpResult {
		res.Error = err.Error()
		return res
	}
	var ids []string
	for _, p := range peers {
		ai, err := peer.AddrInfoFromString(p)
		if err != nil {
			return fail(err)
		}
		ids = append(ids, ai.ID.String())
	}
	exe, err := os.Executable()
	if err != nil {
		return fail(err)
	}
	if _, err := devnet.PrepareRepo(dir, attackPeerConfig()); err != nil {
		return fail(err)
	}
	d, _, err := startBenchDaemon(ctx, exe, dir, index)
	if err != nil {
		return fail(err)
	}
	defer devnet.StopDaemons([]*devnet.Daemon{d})
	sock, err := repo.SocketPathOf(dir)
	if err != nil {
		return fail(err)
	}
	cl := api.NewClient(sock)
	defer cl.Close()
	t0 := time.Now()
	for _, p := range peers {
		cctx, cancel := context.WithTimeout(ctx, devnet.DefaultUpTimeout)
		_, err := cl.Connect(cctx, p)
		cancel()
		if err != nil {
			return fail(fmt.Errorf("connect to %s: %w", p, err))
		}
	}
	held := func() uint64 {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), devnet.CallTimeout)
		defer cancel()
		st, err := cl.Status(cctx)
		if err != nil {
			return 0
		}
		return min(st.Events, want)
	}
	grace := end.Add(catchUpGrace)
	sctx, cancel := context.WithDeadline(ctx, grace)
	defer cancel()
	during := make(chan uint64, 1)
	go func() { // what it holds when the attack ends
		attack.Pause(sctx, time.Until(end))
		during <- held()
	}()
	final, err := cl.SyncAll(sctx, nil)
	switch {
	case err == nil:
		res.Seconds = time.Since(t0).Seconds()
		for _, sh := range final.Shares {
			res.Received += sh.Received
			switch sh.Peer {
			case ids[0]:
				res.FromAttacked = sh.Stored
			case ids[1]:
				res.FromOther = sh.Stored
			}
		}
	case sctx.Err() == nil:
		res.Error = err.Error()
	}
	// Sync by position, heads and the next sync interval bring the rest.
	for time.Now().Before(grace) && held() < want && ctx.Err() == nil {
		attack.Pause(ctx, devnet.PollInterval)
	}
	res.DuringAttack = <-during
	res.Late = held() - min(held(), res.DuringAttack)
	res.Never = want - min(want, res.DuringAttack+res.Late)
	return res
}

// startOther starts the second peer of the honest catch-up on its repo
// rdir and returns it with its full multiaddr on 127.0.0.1.
func startOther(ctx context.Context, rdir string) (*devnet.Daemon, string, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, "", err
	}
	d, id, err := startBenchDaemon(ctx, exe, rdir, 1)
	if err != nil {
		return nil, "", fmt.Errorf("second peer: %w", err)
	}
	for _, a := range id.Addrs {
		if strings.HasPrefix(a, "/ip4/127.0.0.1/tcp/") {
			return d, a, nil
		}
	}
	devnet.StopDaemons([]*devnet.Daemon{d})
	return nil, "", fmt.Errorf("the second peer has no TCP address on 127.0.0.1: %v", id.Addrs)
}

// startCatchUp runs HonestCatchUp in dir from the attacked daemon of d (at
// t) and the second peer (at otherAddr), to bring every event d holds now,
// the attack ending at end.
func startCatchUp(ctx context.Context, d *devnet.Network, t attack.Target, otherAddr, dir string, end time.Time) *CatchUpResult {
	cctx, cancel := context.WithTimeout(ctx, devnet.CallTimeout)
	st, err := d.Client(0).Status(cctx)
	cancel()
	if err != nil {
		return &CatchUpResult{Error: err.Error()}
	}
	addr := t.Addr.String() + "/p2p/" + t.ID.String()
	return HonestCatchUp(ctx, dir, 2, []string{addr, otherAddr}, st.Events, end)
}
