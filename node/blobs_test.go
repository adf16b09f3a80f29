package node

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/wats-network/wats/blobs"
	"github.com/wats-network/wats/config"
	"github.com/wats-network/wats/core"
	"github.com/wats-network/wats/eventlog"
	"github.com/wats-network/wats/limits"
	"github.com/wats-network/wats/proto"
	"github.com/wats-network/wats/repo"
	"github.com/wats-network/wats/store"
)

func randData(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 2))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// addBlob imports data into n's store.
func addBlob(t *testing.T, n *testNode, data []byte) eventlog.BlobRef {
	t.Helper()
	c, size, err := n.blobs.Import(context.Background(), bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	return eventlog.BlobRef{CID: c.String(), Size: size}
}

// holds reports whether n holds the blob complete.
func holds(n *testNode, ref eventlog.BlobRef) bool {
	c, err := cid.Decode(ref.CID)
	if err != nil {
		return false
	}
	ok, _ := n.blobs.Has(c)
	return ok
}

// waitBlobs waits until every node holds every blob, or fails after timeout.
// Fetches finish in the background; the check is cheap, so it polls.
func waitBlobs(t *testing.T, timeout time.Duration, refs []eventlog.BlobRef, nodes ...*testNode) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		var missing []string
		for i, n := range nodes {
			for _, r := range refs {
				if !holds(n, r) {
					missing = append(missing, fmt.Sprintf("node %d lacks %s", i, r.CID))
				}
			}
		}
		if len(missing) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s", timeout, strings.Join(missing, "; "))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestBlobsAndCrashDumpsReachEveryNodeByGossip(t *testing.T) {
	a := startNode(t, testConfig(true, time.Hour))
	b := startNode(t, testConfig(true, time.Hour))
	c := startNode(t, testConfig(true, time.Hour))
	connect(t, b, a)
	connect(t, c, a)
	connect(t, c, b)
	waitGossipMesh(t, 10*time.Second, map[*testNode]int{a: 2, b: 2, c: 2})

	ctx := context.Background()
	file := addBlob(t, a, randData(3<<20+17, 1))
	file.Name = "demo.bin"
	if _, err := a.AddEvent(ctx, "file", jsontext.Value(`{"text":"a file"}`), []eventlog.BlobRef{file}); err != nil {
		t.Fatal(err)
	}
	// A crash report submitted by b to a, its dump held by b: a fetches
	// the dump from b, and c fetches it after gossip.
	dump := addBlob(t, b, randData(200_000, 2))
	dump.Name = "core.dmp"
	crash := eventlog.Crash{CrashInfo: core.CrashInfo{Program: "demo", Version: "1.0.0", Reason: "panic: boom"}}
	if _, err := b.ReportCrash(ctx, crash, &dump, a.ID()); err != nil {
		t.Fatal(err)
	}
	waitBlobs(t, 20*time.Second, []eventlog.BlobRef{file, dump}, a, b, c)

	// Each blob was fetched twice (the file by b and c, the dump by a and
	// c): the blob bytes fetched count each accepted block once (the
	// file's bytes and the few hundred of its root's links), and the bytes
	// served at least as many.
	var fetched, served float64
	for _, n := range []*testNode{a, b, c} {
		fetched += n.m.Value("wats_blob_bytes_total", "fetched")
		served += n.m.Value("wats_blob_bytes_total", "served")
	}
	if want := float64(2 * (file.Size + dump.Size)); fetched < want || fetched > want+4096 || served < fetched {
		t.Errorf("blob bytes fetched %v and served %v, want %v (and up to 4 KiB of links) fetched and at least as many served", fetched, served, want)
	}
}

func TestAutoFetchBySyncAndOff(t *testing.T) {
	a := startNode(t, testConfig(false, time.Hour))
	b := startNode(t, testConfig(false, time.Hour))
	offCfg := testConfig(false, time.Hour)
	offCfg.Blobs.AutoFetch = false
	off := startNode(t, offCfg)
	connect(t, b, a)
	connect(t, off, a)
	ctx := context.Background()
	ref := addBlob(t, a, randData(1<<20+1, 3))
	if _, err := a.AddEvent(ctx, "file", jsontext.Value(`{}`), []eventlog.BlobRef{ref}); err != nil {
		t.Fatal(err)
	}
	for _, n := range []*testNode{b, off} {
		if _, err := n.SyncPeer(ctx, a.ID(), nil); err != nil {
			t.Fatal(err)
		}
	}
	// b fetches from the event's author, which is also the sync peer.
	waitBlobs(t, 20*time.Second, []eventlog.BlobRef{ref}, b)
	if off.events.Head() != 1 || holds(off, ref) {
		t.Fatalf("with auto_fetch off: head %d, holds the blob %v; want the event only", off.events.Head(), holds(off, ref))
	}
}

func TestReplicateFiveFetchesFourSkipsOne(t *testing.T) {
	a := startNode(t, testConfig(false, time.Hour))
	b := startNode(t, testConfig(false, time.Hour))
	connect(t, a, b)
	var refs []proto.BlobRef
	for i := range 5 {
		r := addBlob(t, a, randData(2<<20+i, uint64(10+i)))
		refs = append(refs, proto.BlobRef{CID: r.CID, Size: int64(r.Size)})
	}
	ctx := context.Background()
	resp, err := a.Replicate(ctx, b.ID(), refs)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Stored) != 4 || len(resp.Skipped) != 1 || len(resp.Failed) != 0 {
		t.Fatalf("replicate of 5: %+v; want 4 stored, 1 skipped", resp)
	}
	if resp.Skipped[0] != refs[4].CID {
		t.Fatalf("skipped %s, want the fifth blob", resp.Skipped[0])
	}
	for _, r := range refs[:4] {
		if !holds(b, eventlog.BlobRef{CID: r.CID}) {
			t.Fatalf("b does not hold %s", r.CID)
		}
	}
	if held, _ := b.run.FetchesHeld(limits.TierNew); held != 0 {
		t.Fatalf("%d peers still hold fetch slots", held)
	}
	// Again: the four complete ones count as stored at no cost, so the
	// fifth gets a slot.
	received := b.fetch.Exchange().Stats().ReceivedBytes
	resp, err = a.Replicate(ctx, b.ID(), refs)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Stored) != 5 || len(resp.Skipped) != 0 {
		t.Fatalf("second replicate: %+v; want 5 stored", resp)
	}
	if got := b.fetch.Exchange().Stats().ReceivedBytes - received; got != uint64(refs[4].Size)+blockOverhead(t, b, refs[4].CID) {
		t.Fatalf("second replicate received %d bytes; want the fifth blob only (%d)", got, refs[4].Size)
	}
}

// blockOverhead is the bytes of the inner nodes of blob c in n's store:
// what a fetch receives beyond the file's bytes.
func blockOverhead(t *testing.T, n *testNode, s string) uint64 {
	t.Helper()
	c, _ := cid.Decode(s)
	blk, err := n.blobs.GetBlock(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	if c.Type() == cid.Raw {
		return 0
	}
	return uint64(len(blk.RawData())) // a blob of a few chunks has one inner node, the root
}

func TestReplicateBounds(t *testing.T) {
	cfg := testConfig(false, time.Hour)
	cfg.Blobs.MaxBlobBytes = 2 << 20
	cfg.Blobs.QuotaBytes = 3 << 20
	a := startNode(t, testConfig(false, time.Hour))
	b := startNode(t, cfg)
	connect(t, a, b)
	ctx := context.Background()
	fits := addBlob(t, a, randData(2<<20, 20))
	tooBig := addBlob(t, a, randData(2<<20+1, 21))
	overQuota := addBlob(t, a, randData(2<<20, 22))
	resp, err := a.Replicate(ctx, b.ID(), []proto.BlobRef{
		{CID: fits.CID, Size: int64(fits.Size)},
		{CID: tooBig.CID, Size: int64(tooBig.Size)},
		{CID: "not-a-cid", Size: 1},
		{CID: fits.CID, Size: int64(fits.Size)}, // named twice: answered once
	})
	if err != nil {
		t.Fatal(err)
	}
	reasons := map[string]string{}
	for _, f := range resp.Failed {
		reasons[f.CID] = f.Reason
	}
	if !slices.Equal(resp.Stored, []string{fits.CID}) || !strings.Contains(reasons[tooBig.CID], "max_blob_bytes") ||
		reasons["not-a-cid"] != "not a CID" || len(resp.Failed) != 2 {
		t.Fatalf("replicate: %+v", resp)
	}
	// A blob complete here but declared at another size fails at no cost.
	resp, err = a.Replicate(ctx, b.ID(), []proto.BlobRef{{CID: fits.CID, Size: int64(fits.Size) + 1}})
	if err != nil || len(resp.Failed) != 1 || !strings.Contains(resp.Failed[0].Reason, "size mismatch") {
		t.Fatalf("a complete blob at another size: %+v, %v", resp, err)
	}
	received := b.fetch.Exchange().Stats().ReceivedBytes
	resp, err = a.Replicate(ctx, b.ID(), []proto.BlobRef{{CID: overQuota.CID, Size: int64(overQuota.Size)}})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Failed) != 1 || !strings.Contains(resp.Failed[0].Reason, "quota") {
		t.Fatalf("over the quota: %+v", resp)
	}
	if got := b.fetch.Exchange().Stats().ReceivedBytes; got != received {
		t.Fatalf("%d bytes received for a blob over the quota; want none (refused before any request)", got-received)
	}
}

// TestBlocksServedOnlyToHelloPeers: by default (blobs.serve = "peers") a
// peer that never completed hello gets DONT_HAVE; with "all" it is served.
func TestBlocksServedOnlyToHelloPeers(t *testing.T) {
	for _, serve := range []string{config.ServePeers, config.ServeAll} {
		t.Run(serve, func(t *testing.T) {
			cfg := testConfig(false, time.Hour)
			cfg.Blobs.Serve = serve
			a := startNode(t, cfg)
			ref := addBlob(t, a, randData(100_000, 30))
			c, _ := cid.Decode(ref.CID)

			// A bare bitswap peer: no /wats/1, so no hello.
			h, err := libp2p.New(libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"))
			if err != nil {
				t.Fatal(err)
			}
			defer h.Close()
			st := scratchStore(t)
			x := blobs.NewExchange(h, st, nil)
			defer x.Close()
			f := blobs.NewFetcher(x, st, nil)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			err = f.Fetch(ctx, blobs.Request{CID: c, Size: ref.Size,
				Sources: blobs.Sources{Named: []peer.AddrInfo{{ID: a.ID(), Addrs: a.Host().Addrs()}}}})
			switch serve {
			case config.ServePeers:
				if !errors.Is(err, blobs.ErrDontHave) {
					t.Fatalf("a peer without hello: %v, want DONT_HAVE", err)
				}
			case config.ServeAll:
				if err != nil {
					t.Fatalf("with serve = all: %v", err)
				}
			}
		})
	}
}

// scratchStore opens a blob store on a pebble DB of its own.
func scratchStore(t *testing.T) *blobs.Store {
	t.Helper()
	dir := t.TempDir()
	db, err := pebble.Open(dir, &pebble.Options{Logger: store.Logger{Log: quietLogger()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	st, err := blobs.OpenStore(db, &blobs.StoreOptions{DataDir: store.DataDir(dir)})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestScanAtStartFetchesMissingBlobs: a node that stored an event while
// blobs.auto_fetch was off fetches its blob at its next start, with it on,
// from the event's author (redialled from the peer cache).
func TestScanAtStartFetchesMissingBlobs(t *testing.T) {
	a := startNode(t, testConfig(false, time.Hour))
	cfg := testConfig(false, time.Hour)
	cfg.Blobs.AutoFetch = false
	r, err := repo.Init(t.TempDir(), &repo.InitOptions{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	b := startRepo(t, r)
	connect(t, b, a)
	ref := addBlob(t, a, randData(2<<20+3, 40))
	if _, err := a.AddEvent(context.Background(), "file", jsontext.Value(`{}`), []eventlog.BlobRef{ref}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.SyncPeer(context.Background(), a.ID(), nil); err != nil {
		t.Fatal(err)
	}
	if holds(b, ref) {
		t.Fatal("fetched with auto_fetch off")
	}
	b.close(t)
	r.Config.Blobs.AutoFetch = true
	b = startRepo(t, r)
	waitBlobs(t, 20*time.Second, []eventlog.BlobRef{ref}, b)
}

// TestAutoFetchRetries: a blob whose only provider (the event's author, a
// guess: the event came by sync) did not have it yet is fetched by a
// retry once the provider holds it; the guess is not backed off.
func TestAutoFetchRetries(t *testing.T) {
	old := retryDelay
	retryDelay = func(int) time.Duration { return 300 * time.Millisecond }
	t.Cleanup(func() { retryDelay = old })
	a := startNode(t, testConfig(false, time.Hour))
	b := startNode(t, testConfig(false, time.Hour))
	connect(t, b, a)
	// a names a blob it does not hold yet (signed by hand: AddEvent would
	// refuse), so b's first fetch gets DONT_HAVE.
	data := randData(1<<20+9, 41)
	scratch := scratchStore(t)
	c, size, err := scratch.Import(context.Background(), bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	ref := eventlog.BlobRef{CID: c.String(), Size: size}
	ev, err := eventlog.New(a.Host().Peerstore().PrivKey(a.ID()), time.Now(), "file", jsontext.Value(`{}`), []eventlog.BlobRef{ref})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.events.Append([]*eventlog.Event{ev}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.SyncPeer(context.Background(), a.ID(), nil); err != nil {
		t.Fatal(err)
	}
	failed := func() float64 { return b.m.Value("wats_blob_fetches_total", "sync", "failed") }
	deadline := time.Now().Add(10 * time.Second)
	for failed() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the first fetch did not fail")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if skipped, _ := b.fetch.Fetcher().Backoff().Skipped(a.ID(), time.Now()); skipped {
		t.Fatal("the event's author, only guessed to hold the blob, was backed off")
	}
	addBlob(t, a, data)
	waitBlobs(t, 10*time.Second, []eventlog.BlobRef{ref}, b)
}

// TestFetchFromAPeerWithoutWats: a provider that speaks bitswap but not
// /wats/1 (another IPFS implementation) is fetched from: its failed hello
// does not fail the fetch.
func TestFetchFromAPeerWithoutWats(t *testing.T) {
	b := startNode(t, testConfig(false, time.Hour))
	h, err := libp2p.New(libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	st := scratchStore(t)
	x := blobs.NewExchange(h, st, nil) // serves every peer
	defer x.Close()
	data := randData(3<<20+1, 50)
	c, size, err := st.Import(context.Background(), bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	b.Host().Peerstore().AddAddrs(h.ID(), h.Addrs(), time.Hour)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := b.fetch.Fetch(ctx, blobs.Request{CID: c, Size: size, Sources: blobs.Sources{First: h.ID()}}); err != nil {
		t.Fatalf("fetch from a bitswap-only peer: %v", err)
	}
	if !holds(b, eventlog.BlobRef{CID: c.String()}) {
		t.Fatal("not stored")
	}
}

// TestHelloFirstUntilThePeerHeardUs: a provider's hello to this node does
// not make it hold this node's (the answer may be on its way, and a want
// sent then is answered DONT_HAVE): helloFirst says hello until this
// node's own hello to the provider was answered.
func TestHelloFirstUntilThePeerHeardUs(t *testing.T) {
	a := startNode(t, testConfig(false, time.Hour))
	b := startNode(t, testConfig(false, time.Hour))
	connect(t, a, b)
	st := b.run.Get(a.ID())
	if st == nil || !st.Helloed() {
		t.Fatal("a's hello not recorded at b")
	}
	st.SetHeardUs(false) // as if b's own hello to a were still on its way
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := (*blobsNode)(b.Node).Prepare(ctx, a.ID()); err != nil {
		t.Fatal(err)
	}
	if !st.HeardUs() {
		t.Error("helloFirst returned before b's hello to a was answered")
	}
}
