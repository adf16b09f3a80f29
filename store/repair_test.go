package store

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/ipfs/boxo/ipld/merkledag"
	blocks "github.com/ipfs/go-block-format"
	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/wats-network/wats/blobs"
	"github.com/wats-network/wats/eventlog"
	"github.com/wats-network/wats/repo"
)

// provider is a blob store holding whole blobs, served over bitswap by a
// libp2p host on 127.0.0.1.
type provider struct {
	st *blobs.Store
	x  *blobs.Exchange
}

func newProvider(t *testing.T) *provider {
	t.Helper()
	dir := t.TempDir()
	db, err := pebble.Open(dir, PebbleOptions(slog.New(slog.DiscardHandler), ""))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	st, err := blobs.OpenStore(db, &blobs.StoreOptions{DataDir: DataDir(dir)})
	if err != nil {
		t.Fatal(err)
	}
	x := blobs.NewExchange(newHost(t), st, nil)
	t.Cleanup(x.Close)
	return &provider{st: st, x: x}
}

func newHost(t *testing.T) host.Host {
	t.Helper()
	h, err := libp2p.New(libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// add imports n random bytes and returns the blob's root, size, bytes,
// and its root block and leaves in file order.
func (p *provider) add(t *testing.T, n int, seed uint64) (c cid.Cid, size uint64, data []byte, root blocks.Block, leaves []blocks.Block) {
	t.Helper()
	ctx := context.Background()
	data = make([]byte, n)
	r := rand.New(rand.NewPCG(seed, 7))
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	c, size, err := p.st.Import(ctx, bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	root, err = p.st.GetBlock(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	nd, err := merkledag.DecodeProtobuf(root.RawData())
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range nd.Links() {
		b, err := p.st.GetBlock(ctx, l.Cid)
		if err != nil {
			t.Fatal(err)
		}
		leaves = append(leaves, b)
	}
	return c, size, data, root, leaves
}

// repoBlobs opens the blob store of r's database, as a daemon does, with
// the time each partial progresses at given by now; close closes both.
func repoBlobs(t *testing.T, r *repo.Repo, now func() time.Time) (st *blobs.Store, close func()) {
	t.Helper()
	db, err := pebble.Open(r.DBPath(), PebbleOptions(slog.New(slog.DiscardHandler), ""))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := eventlog.Open(db); err != nil {
		t.Fatal(err)
	}
	maxBytes, maxAge := r.Config.Blobs.PartialBounds()
	st, err = blobs.OpenStore(db, &blobs.StoreOptions{DataDir: DataDir(r.DBPath()), Now: now, MaxPartialBytes: maxBytes, MaxPartialAge: maxAge})
	if err != nil {
		t.Fatal(err)
	}
	return st, func() {
		if err := st.Close(); err != nil {
			t.Error(err)
		}
		if err := db.Close(); err != nil {
			t.Error(err)
		}
	}
}

// cutFetch stores in st, as a fetch of c cut off would, its root and
// leaves, then ends the fetch without completing the blob.
func cutFetch(t *testing.T, st *blobs.Store, c cid.Cid, size uint64, root blocks.Block, leaves []blocks.Block) {
	t.Helper()
	res, err := st.Reserve(c, size)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Release()
	for _, b := range append([]blocks.Block{root}, leaves...) {
		if err := st.PutBlock(context.Background(), c, b); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRepairKeepsPartials: a repair carries over a partial blob (ADR
// 0054, addendum) with the bytes it held and the time it last
// progressed, each leaf checked against its CID: a leaf damaged in its
// data file is not carried, the rest are, and a partial none of whose
// leaves reads is dropped; the fetch that follows, from a provider over
// libp2p, goes on from what was carried and receives only the rest.
func TestRepairKeepsPartials(t *testing.T) {
	const chunk = blobs.ChunkSize
	for _, tc := range []struct {
		name    string
		damaged []int // of the 3 leaves held, those changed in the data file
	}{{"sound", nil}, {"a damaged leaf", []int{1}}, {"every leaf damaged", []int{0, 1, 2}}} {
		t.Run(tc.name, func(t *testing.T) {
			p := newProvider(t)
			c, size, data, root, leaves := p.add(t, 6*chunk, 1)
			r, err := repo.Init(t.TempDir(), nil)
			if err != nil {
				t.Fatal(err)
			}
			at := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
			st, closeStore := repoBlobs(t, r, func() time.Time { return at })
			cutFetch(t, st, c, size, root, leaves[:3])
			closeStore()
			files, _ := filepath.Glob(filepath.Join(DataDir(r.DBPath()), "*.blob"))
			if len(files) != 1 {
				t.Fatalf("data files %q, want the partial's", files)
			}
			f, err := os.OpenFile(files[0], os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, i := range tc.damaged {
				if _, err := f.WriteAt([]byte{0xff, 0x00, 0xff}, int64(i)*chunk+100); err != nil {
					t.Fatal(err)
				}
			}
			f.Close()
			kept, partials := uint64(3-len(tc.damaged))*chunk, 1
			if kept == 0 {
				partials = 0
			}
			// Check reads the partial and says what does not read, which is
			// not damage of the database: its fetch asks for it again.
			if check, err := Check(r, time.Now()); err != nil || check.Damaged() || check.Partials != 1 || (check.PartialsDamaged == 1) != (len(tc.damaged) > 0) {
				t.Errorf("check before the repair: %+v, %v", check, err)
			}

			rep, err := Repair(r, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			if rep.PartialsKept != partials || rep.PartialBytesKept != kept || rep.PartialsDropped != 1-partials ||
				rep.Found.Partials != 1 || (rep.Found.PartialsDamaged == 1) != (len(tc.damaged) > 0) {
				t.Fatalf("repair: %+v, want %d partials kept with %d bytes", rep, partials, kept)
			}
			errs := strings.Join(rep.Found.Errors, "\n")
			for _, i := range tc.damaged {
				if !strings.Contains(errs, "partial blob "+c.String()+": leaf "+leaves[i].Cid().String()) {
					t.Errorf("the repair does not say it did not carry leaf %d: %q", i, rep.Found.Errors)
				}
			}
			if check, err := Check(r, time.Now()); err != nil || check.Damaged() || check.Partials != partials || check.PartialsDamaged != 0 {
				t.Errorf("check after the repair: %+v, %v", check, err)
			}

			st, closeStore = repoBlobs(t, r, time.Now)
			defer closeStore()
			ps := st.Partials()
			if len(ps) != partials || partials == 1 && (!ps[0].CID.Equals(c) || ps[0].Size != size || ps[0].Held != kept || !ps[0].Progressed.Equal(at)) {
				t.Fatalf("partials after the repair: %+v, want %d, %s holding %d bytes, progressed at %v", ps, partials, c, kept, at)
			}
			h := newHost(t)
			x := blobs.NewExchange(h, st, nil)
			defer x.Close()
			var resumed uint64
			ph := p.x.Host()
			err = blobs.NewFetcher(x, st, nil).Fetch(ctx(t), blobs.Request{CID: c, Size: size,
				Sources: blobs.Sources{Named: []peer.AddrInfo{{ID: ph.ID(), Addrs: ph.Addrs()}}},
				Resumed: func(held, _ uint64) { resumed = held }})
			if err != nil {
				t.Fatalf("the fetch after the repair: %v", err)
			}
			if resumed != kept {
				t.Errorf("the fetch resumed from %d bytes, want %d", resumed, kept)
			}
			// The leaves not carried (and the root, with the partial
			// dropped).
			want := size - kept
			if partials == 0 {
				want += uint64(len(root.RawData()))
			}
			if got := x.Stats().ReceivedBytes; got != want {
				t.Errorf("the fetch received %d bytes, want %d: the leaves not carried", got, want)
			}
			var out bytes.Buffer
			if err := st.Export(ctx(t), c, size, &out); err != nil || !bytes.Equal(out.Bytes(), data) {
				t.Fatalf("the blob after the fetch: %v", err)
			}
			if ps := st.Partials(); len(ps) != 0 {
				t.Errorf("partials after the fetch: %+v", ps)
			}
		})
	}
}

// TestRepairPartialBounds: a repair keeps partial blobs within
// blobs.max_partial_bytes and max_partial_age as the daemon's open does:
// the most recently progressed first, while the leaves kept are at most
// the bound (at it all are kept, one byte past it the oldest goes), and
// none to which no leaf was added for longer than the age bound (at it,
// kept). Each keeps the time it last progressed.
func TestRepairPartialBounds(t *testing.T) {
	const chunk = blobs.ChunkSize
	p := newProvider(t)
	now := time.Now().Truncate(time.Millisecond)
	type part struct {
		name   string
		leaves int
		at     time.Time
	}
	parts := []part{
		{"A", 2, now.Add(-2 * time.Hour)},
		{"B", 2, now.Add(-time.Hour)},
		{"C", 1, now.Add(-blobs.DefaultMaxPartialAge - time.Millisecond)}, // past the age bound
		{"D", 1, now.Add(-blobs.DefaultMaxPartialAge)},                    // at it
	}
	for _, tc := range []struct {
		maxBytes int64
		kept     string
	}{{5 * chunk, "ABD"}, {5*chunk - 1, "AB"}} {
		t.Run(fmt.Sprint("max ", tc.maxBytes), func(t *testing.T) {
			r, err := repo.Init(t.TempDir(), nil)
			if err != nil {
				t.Fatal(err)
			}
			var at time.Time
			st, closeStore := repoBlobs(t, r, func() time.Time { return at })
			roots := map[string]cid.Cid{}
			for i, pt := range parts {
				c, size, _, root, leaves := p.add(t, 3*chunk, uint64(10+i))
				at, roots[pt.name] = pt.at, c
				cutFetch(t, st, c, size, root, leaves[:pt.leaves])
			}
			closeStore()
			// The bound set after the partials were made, as by an
			// operator: the repair applies it.
			r.Config.Blobs.MaxPartialBytes = tc.maxBytes
			rep, err := Repair(r, now)
			if err != nil {
				t.Fatal(err)
			}
			at = now
			st, closeStore = repoBlobs(t, r, func() time.Time { return at })
			defer closeStore()
			got := map[string]blobs.PartialInfo{}
			for _, pi := range st.Partials() {
				got[pi.CID.String()] = pi
			}
			var bytes uint64
			for _, pt := range parts {
				pi, ok := got[roots[pt.name].String()]
				if want := strings.Contains(tc.kept, pt.name); ok != want {
					t.Errorf("partial %s kept: %v, want %v", pt.name, ok, want)
					continue
				}
				if ok && (pi.Held != uint64(pt.leaves)*chunk || !pi.Progressed.Equal(pt.at)) {
					t.Errorf("partial %s: %+v, want %d leaves, progressed at %v", pt.name, pi, pt.leaves, pt.at)
				}
				if ok {
					bytes += pi.Held
				}
			}
			if rep.PartialsKept != len(tc.kept) || rep.PartialBytesKept != bytes || rep.PartialsDropped != len(parts)-len(tc.kept) {
				t.Errorf("the report: kept %d partials, %d bytes, dropped %d; want %d, %d, %d",
					rep.PartialsKept, rep.PartialBytesKept, rep.PartialsDropped, len(tc.kept), bytes, len(parts)-len(tc.kept))
			}
		})
	}
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return c
}
