package blobs

// The bounds a fetch attempt puts on peer input (ADR 0014 "Declared size",
// "Collections"; ADR 0029), each tested at the bound and just past it:
// walk.expand's checks of one received block against what its parent
// claimed, Budget, and FetchFrom's checks before any request.

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ipfs/boxo/ipld/merkledag"
	ft "github.com/ipfs/boxo/ipld/unixfs"
	upb "github.com/ipfs/boxo/ipld/unixfs/pb"
	"github.com/ipfs/go-cid"
	ipld "github.com/ipfs/go-ipld-format"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	mh "github.com/multiformats/go-multihash"

	"github.com/wats-network/wats/core"
)

// pbNode describes a UnixFS dag-pb node to craft.
type pbNode struct {
	typ   upb.Data_DataType
	data  []byte
	sizes []uint64  // block sizes, in order; each adds to the file size
	links []cid.Cid // in order, unnamed
	// fileSizeDelta is added to the file size that data and sizes give,
	// for a node that lies about it.
	fileSizeDelta int64
}

// build encodes n; it returns its CID (CIDBuilder) and its bytes.
func (n pbNode) build(t *testing.T) (cid.Cid, []byte) {
	t.Helper()
	fsn := ft.NewFSNode(n.typ)
	fsn.SetData(n.data)
	for _, s := range n.sizes {
		fsn.AddBlockSize(s)
	}
	fsn.UpdateFilesize(n.fileSizeDelta)
	data, err := fsn.GetBytes()
	if err != nil {
		t.Fatal(err)
	}
	return pbBlock(t, data, n.links)
}

// pbBlock encodes a dag-pb node of the given Data field and links.
func pbBlock(t *testing.T, data []byte, links []cid.Cid) (cid.Cid, []byte) {
	t.Helper()
	nd := merkledag.NodeWithData(data)
	if err := nd.SetCidBuilder(CIDBuilder); err != nil {
		t.Fatal(err)
	}
	for _, c := range links {
		if err := nd.AddRawLink("", &ipld.Link{Cid: c}); err != nil {
			t.Fatal(err)
		}
	}
	return nd.Cid(), nd.RawData()
}

// rawCIDs returns n distinct raw CIDs (of tiny blocks), seeded by seed.
func rawCIDs(t *testing.T, n int, seed byte) []cid.Cid {
	t.Helper()
	cs := make([]cid.Cid, n)
	for i := range cs {
		cs[i] = rawBlock(t, []byte{seed, byte(i), byte(i >> 8)}).Cid()
	}
	return cs
}

// pbCID returns a dag-pb CID (of a block never built), seeded by seed.
func pbCID(t *testing.T, seed byte) cid.Cid {
	t.Helper()
	c, err := CIDBuilder.Sum([]byte{'p', 'b', seed})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// repeat returns n copies of s.
func repeat(s uint64, n int) []uint64 {
	out := make([]uint64, n)
	for i := range out {
		out[i] = s
	}
	return out
}

// children returns the items expand queues for links of the given block
// sizes, below a node at depth.
func children(links []cid.Cid, sizes []uint64, depth int) []item {
	out := make([]item, len(links))
	for i, c := range links {
		out[i] = item{c: c, span: sizes[i], depth: depth + 1}
	}
	return out
}

// expandCase is one block given to walk.expand and what must come of it.
type expandCase struct {
	name  string
	c     cid.Cid
	data  []byte
	span  uint64 // what the parent claims (the declared size at depth 0)
	depth int
	// want is nil, ErrBadBlob, ErrSizeMismatch or ErrCollection.
	want error
	// queued and done are the children queued and the file bytes covered
	// when want is nil; nothing is queued or covered on an error.
	queued []item
	done   uint64
}

var expandFaults = []error{ErrBadBlob, ErrSizeMismatch, ErrCollection}

func runExpand(t *testing.T, cases []expandCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var reported []uint64
			// size: the declared size is not what these cases bound, so
			// MaxBlocks does not come into play (TestMaxBlocksBound).
			w := &walk{out: map[string]item{}, size: core.MaxSafeInt, progress: func(done uint64) { reported = append(reported, done) }}
			err := w.expand(item{c: tc.c, span: tc.span, depth: tc.depth}, tc.data)
			t.Logf("expand: %v", err)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("expand: %v, want it accepted", err)
				}
			} else {
				for _, e := range expandFaults {
					if errors.Is(err, e) != (e == tc.want) {
						t.Fatalf("expand: %v, want exactly %v", err, tc.want)
					}
				}
				if len(w.queue) != 0 || w.done != 0 || len(reported) != 0 {
					t.Fatalf("refused block queued %d children, covered %d bytes, reported %v", len(w.queue), w.done, reported)
				}
				return
			}
			if len(w.queue) != len(tc.queued) {
				t.Fatalf("%d children queued, want %d", len(w.queue), len(tc.queued))
			}
			for i, got := range w.queue {
				want := tc.queued[i]
				if !got.c.Equals(want.c) || got.span != want.span || got.depth != want.depth {
					t.Fatalf("child %d queued as {%s %d depth %d}, want {%s %d depth %d}",
						i, got.c, got.span, got.depth, want.c, want.span, want.depth)
				}
			}
			if w.done != tc.done {
				t.Fatalf("covered %d bytes, want %d", w.done, tc.done)
			}
			var wantReported []uint64
			if tc.done > 0 {
				wantReported = []uint64{tc.done}
			}
			if len(reported) != len(wantReported) || (len(reported) == 1 && reported[0] != wantReported[0]) {
				t.Fatalf("progress reported %v, want %v", reported, wantReported)
			}
			if len(w.out) != 0 {
				t.Fatalf("expand put %d items in flight", len(w.out))
			}
		})
	}
}

// TestExpandRawLeafBound: a raw block is at most ChunkSize and exactly the
// bytes its parent claims; at the root, a raw block of another length than
// declared is a size mismatch.
func TestExpandRawLeafBound(t *testing.T) {
	chunk := rawBlock(t, randBytes(ChunkSize, 201))
	over := rawBlock(t, randBytes(ChunkSize+1, 202))
	small := rawBlock(t, randBytes(1000, 203))
	empty := rawBlock(t, nil)
	runExpand(t, []expandCase{
		{name: "leaf of ChunkSize", c: chunk.Cid(), data: chunk.RawData(), span: ChunkSize, depth: 1, done: ChunkSize},
		{name: "leaf of ChunkSize+1", c: over.Cid(), data: over.RawData(), span: ChunkSize + 1, depth: 1, want: ErrBadBlob},
		{name: "root of ChunkSize", c: chunk.Cid(), data: chunk.RawData(), span: ChunkSize, done: ChunkSize},
		{name: "root of ChunkSize+1", c: over.Cid(), data: over.RawData(), span: ChunkSize + 1, want: ErrBadBlob},
		{name: "leaf at MaxDepth", c: small.Cid(), data: small.RawData(), span: 1000, depth: MaxDepth, done: 1000},
		{name: "leaf shorter than its parent says", c: small.Cid(), data: small.RawData(), span: 1001, depth: 1, want: ErrBadBlob},
		{name: "leaf longer than its parent says", c: small.Cid(), data: small.RawData(), span: 999, depth: 1, want: ErrBadBlob},
		{name: "leaf of ChunkSize, parent says ChunkSize-1", c: chunk.Cid(), data: chunk.RawData(), span: ChunkSize - 1, depth: 1, want: ErrBadBlob},
		{name: "root shorter than declared", c: small.Cid(), data: small.RawData(), span: 1001, want: ErrSizeMismatch},
		{name: "root longer than declared", c: small.Cid(), data: small.RawData(), span: 999, want: ErrSizeMismatch},
		{name: "root of ChunkSize declared ChunkSize+1", c: chunk.Cid(), data: chunk.RawData(), span: ChunkSize + 1, want: ErrSizeMismatch},
		{name: "empty root declared 0", c: empty.Cid(), data: nil, span: 0, done: 0},
		{name: "empty root declared 1", c: empty.Cid(), data: nil, span: 1, want: ErrSizeMismatch},
	})
}

// TestExpandDagPBBlockBound: a dag-pb block, like a raw one, is at most
// ChunkSize bytes.
func TestExpandDagPBBlockBound(t *testing.T) {
	// A UnixFS file node holding its bytes in Data: find the payload that
	// makes the encoded block exactly ChunkSize (the varints of the
	// lengths are 3 bytes throughout this range).
	probe := ChunkSize - 100
	_, b := pbNode{typ: ft.TFile, data: make([]byte, probe)}.build(t)
	payload := probe + ChunkSize - len(b)
	atC, at := pbNode{typ: ft.TFile, data: randBytes(payload, 204)}.build(t)
	pastC, past := pbNode{typ: ft.TFile, data: randBytes(payload+1, 205)}.build(t)
	if len(at) != ChunkSize || len(past) != ChunkSize+1 {
		t.Fatalf("crafted dag-pb blocks of %d and %d bytes, want %d and %d", len(at), len(past), ChunkSize, ChunkSize+1)
	}
	runExpand(t, []expandCase{
		{name: "root of ChunkSize", c: atC, data: at, span: uint64(payload), done: uint64(payload)},
		{name: "root of ChunkSize+1", c: pastC, data: past, span: uint64(payload + 1), want: ErrBadBlob},
		{name: "node of ChunkSize", c: atC, data: at, span: uint64(payload), depth: 3, done: uint64(payload)},
		{name: "node of ChunkSize+1", c: pastC, data: past, span: uint64(payload + 1), depth: 3, want: ErrBadBlob},
	})
}

// TestExpandLinksBound: a node has at most MaxLinks links; at the bound
// every child is queued with its block size, one depth below.
func TestExpandLinksBound(t *testing.T) {
	links := rawCIDs(t, MaxLinks+1, 1)
	sizes := make([]uint64, MaxLinks+1)
	total := uint64(0)
	for i := range sizes {
		sizes[i] = uint64(i%7 + 1)
		total += sizes[i]
	}
	atSpan := total - sizes[MaxLinks]
	atC, at := pbNode{typ: ft.TFile, sizes: sizes[:MaxLinks], links: links[:MaxLinks]}.build(t)
	pastC, past := pbNode{typ: ft.TFile, sizes: sizes, links: links}.build(t)
	runExpand(t, []expandCase{
		{name: "root with MaxLinks", c: atC, data: at, span: atSpan, queued: children(links[:MaxLinks], sizes, 0)},
		{name: "root with MaxLinks+1", c: pastC, data: past, span: total, want: ErrBadBlob},
		{name: "node with MaxLinks", c: atC, data: at, span: atSpan, depth: 2, queued: children(links[:MaxLinks], sizes, 2)},
		{name: "node with MaxLinks+1", c: pastC, data: past, span: total, depth: 2, want: ErrBadBlob},
	})
}

// TestExpandDepthBound: the root is at depth 0 and no node deeper than
// MaxDepth is followed: a node at MaxDepth-1 may have children, one at
// MaxDepth may not (it may still hold data).
func TestExpandDepthBound(t *testing.T) {
	leaves := rawCIDs(t, 2, 2)
	inner := []cid.Cid{pbCID(t, 1), pbCID(t, 2)}
	withLeavesC, withLeaves := pbNode{typ: ft.TFile, sizes: []uint64{600, 400}, links: leaves}.build(t)
	withInnerC, withInner := pbNode{typ: ft.TFile, sizes: []uint64{600, 400}, links: inner}.build(t)
	dataOnlyC, dataOnly := pbNode{typ: ft.TFile, data: randBytes(1000, 206)}.build(t)
	runExpand(t, []expandCase{
		{name: "leaves below MaxDepth-1", c: withLeavesC, data: withLeaves, span: 1000, depth: MaxDepth - 1,
			queued: children(leaves, []uint64{600, 400}, MaxDepth-1)},
		{name: "nodes below MaxDepth-1", c: withInnerC, data: withInner, span: 1000, depth: MaxDepth - 1,
			queued: children(inner, []uint64{600, 400}, MaxDepth-1)},
		{name: "leaves below MaxDepth", c: withLeavesC, data: withLeaves, span: 1000, depth: MaxDepth, want: ErrBadBlob},
		{name: "nodes below MaxDepth", c: withInnerC, data: withInner, span: 1000, depth: MaxDepth, want: ErrBadBlob},
		{name: "data-only node at MaxDepth", c: dataOnlyC, data: dataOnly, span: 1000, depth: MaxDepth, done: 1000},
	})
}

// TestExpandBlockSizes: a node's data and block sizes add up to its file
// size, each block size is above 0 and at most the node's own span, a raw
// child is at most ChunkSize, and there is one block size per link.
func TestExpandBlockSizes(t *testing.T) {
	two := rawCIDs(t, 2, 3)
	one := two[:1]
	inner := []cid.Cid{pbCID(t, 3)}
	type node struct {
		name  string
		n     pbNode
		span  uint64
		depth int
		want  error
		// kids is the block sizes queued, of n.links, when want is nil.
		kids []uint64
		done uint64
	}
	nodes := []node{
		{name: "sizes add up", n: pbNode{typ: ft.TFile, sizes: []uint64{600, 400}, links: two},
			span: 1000, kids: []uint64{600, 400}},
		{name: "data and sizes add up", n: pbNode{typ: ft.TFile, data: randBytes(10, 207), sizes: []uint64{590, 400}, links: two},
			span: 1000, kids: []uint64{590, 400}, done: 10},
		{name: "raw node type", n: pbNode{typ: ft.TRaw, data: randBytes(10, 208), sizes: []uint64{990}, links: one},
			span: 1000, depth: 1, kids: []uint64{990}, done: 10},
		{name: "sizes add up to more than the file size", n: pbNode{typ: ft.TFile, sizes: []uint64{600, 500}, links: two, fileSizeDelta: -100},
			span: 1000, want: ErrBadBlob},
		{name: "sizes add up to less than the file size", n: pbNode{typ: ft.TFile, sizes: []uint64{600, 300}, links: two, fileSizeDelta: 100},
			span: 1000, want: ErrBadBlob},
		{name: "sizes one byte short", n: pbNode{typ: ft.TFile, sizes: []uint64{600, 399}, links: two, fileSizeDelta: 1},
			span: 1000, depth: 1, want: ErrBadBlob},
		{name: "sizes one byte over", n: pbNode{typ: ft.TFile, sizes: []uint64{600, 401}, links: two, fileSizeDelta: -1},
			span: 1000, depth: 1, want: ErrBadBlob},
		{name: "data one byte over", n: pbNode{typ: ft.TFile, data: randBytes(11, 209), sizes: []uint64{590, 400}, links: two, fileSizeDelta: -1},
			span: 1000, want: ErrBadBlob},
		{name: "zero block size", n: pbNode{typ: ft.TFile, sizes: []uint64{0, 1000}, links: two},
			span: 1000, want: ErrBadBlob},
		{name: "zero block size last", n: pbNode{typ: ft.TFile, sizes: []uint64{1000, 0}, links: two},
			span: 1000, depth: 1, want: ErrBadBlob},
		{name: "child claims more than the node", n: pbNode{typ: ft.TFile, sizes: []uint64{2000}, links: inner, fileSizeDelta: -1000},
			span: 1000, want: ErrBadBlob},
		{name: "block sizes that wrap around 2^64", n: pbNode{typ: ft.TFile, sizes: []uint64{600, 1<<64 - 200, 600}, links: []cid.Cid{two[0], inner[0], two[1]}},
			span: 1000, want: ErrBadBlob},
		{name: "raw child of ChunkSize", n: pbNode{typ: ft.TFile, sizes: []uint64{ChunkSize}, links: one},
			span: ChunkSize, kids: []uint64{ChunkSize}},
		{name: "raw child of ChunkSize+1", n: pbNode{typ: ft.TFile, sizes: []uint64{ChunkSize + 1}, links: one},
			span: ChunkSize + 1, want: ErrBadBlob},
		{name: "raw children of ChunkSize and ChunkSize+1", n: pbNode{typ: ft.TFile, sizes: []uint64{ChunkSize, ChunkSize + 1}, links: two},
			span: 2*ChunkSize + 1, depth: 1, want: ErrBadBlob},
		{name: "dag-pb child of ChunkSize+1", n: pbNode{typ: ft.TFile, sizes: []uint64{ChunkSize + 1}, links: inner},
			span: ChunkSize + 1, kids: []uint64{ChunkSize + 1}},
		{name: "more links than sizes", n: pbNode{typ: ft.TFile, sizes: []uint64{1000}, links: two},
			span: 1000, want: ErrBadBlob},
		{name: "more sizes than links", n: pbNode{typ: ft.TFile, sizes: []uint64{600, 400}, links: one},
			span: 1000, want: ErrBadBlob},
		{name: "sizes and no links", n: pbNode{typ: ft.TFile, sizes: []uint64{1000}},
			span: 1000, depth: 1, want: ErrBadBlob},
		{name: "links and no sizes", n: pbNode{typ: ft.TFile, links: two, fileSizeDelta: 1000},
			span: 1000, depth: 1, want: ErrBadBlob},
	}
	var cases []expandCase
	for _, nd := range nodes {
		c, data := nd.n.build(t)
		tc := expandCase{name: nd.name, c: c, data: data, span: nd.span, depth: nd.depth, want: nd.want, done: nd.done}
		if nd.want == nil {
			tc.queued = children(nd.n.links, nd.kids, nd.depth)
		}
		cases = append(cases, tc)
	}
	runExpand(t, cases)
}

// TestExpandNodeKinds: a collection root (a directory, a HAMT shard, a
// symlink) is ErrCollection, one below the root ErrBadBlob; a file node
// whose file size differs from the declared size is ErrSizeMismatch at
// the root, ErrBadBlob below; a codec other than raw and dag-pb, and a
// dag-pb block that is not a UnixFS node, are ErrBadBlob.
func TestExpandNodeKinds(t *testing.T) {
	leaves := rawCIDs(t, 2, 4)
	dirC, dir := pbBlock(t, ft.FolderPBData(), leaves)
	hamtData, err := ft.HAMTShardData(nil, 256, 0x22)
	if err != nil {
		t.Fatal(err)
	}
	hamtC, hamt := pbBlock(t, hamtData, leaves)
	linkData, err := ft.SymlinkData("target")
	if err != nil {
		t.Fatal(err)
	}
	linkC, link := pbBlock(t, linkData, nil)
	fileC, file := pbNode{typ: ft.TFile, sizes: []uint64{600, 400}, links: leaves}.build(t)
	notFSC, notFS := pbBlock(t, []byte{0xff, 0xff, 0xff}, nil)
	cbor, err := cid.V1Builder{Codec: cid.DagCBOR, MhType: mh.BLAKE3}.Sum([]byte{0xa0})
	if err != nil {
		t.Fatal(err)
	}
	runExpand(t, []expandCase{
		{name: "directory root", c: dirC, data: dir, span: 1000, want: ErrCollection},
		{name: "directory root declared 0", c: dirC, data: dir, span: 0, want: ErrCollection},
		{name: "directory below the root", c: dirC, data: dir, span: 1000, depth: 1, want: ErrBadBlob},
		{name: "HAMT shard root", c: hamtC, data: hamt, span: 1000, want: ErrCollection},
		{name: "HAMT shard below the root", c: hamtC, data: hamt, span: 1000, depth: 1, want: ErrBadBlob},
		{name: "symlink root", c: linkC, data: link, span: uint64(len("target")), want: ErrCollection},
		{name: "symlink below the root", c: linkC, data: link, span: uint64(len("target")), depth: 1, want: ErrBadBlob},
		{name: "file root of the declared size", c: fileC, data: file, span: 1000, queued: children(leaves, []uint64{600, 400}, 0)},
		{name: "file root one byte short", c: fileC, data: file, span: 1001, want: ErrSizeMismatch},
		{name: "file root one byte over", c: fileC, data: file, span: 999, want: ErrSizeMismatch},
		{name: "file node one byte short", c: fileC, data: file, span: 1001, depth: 1, want: ErrBadBlob},
		{name: "file node one byte over", c: fileC, data: file, span: 999, depth: 1, want: ErrBadBlob},
		{name: "dag-pb not UnixFS", c: notFSC, data: notFS, span: 3, want: ErrBadBlob},
		{name: "not dag-pb", c: fileC, data: []byte{0xff, 0xff, 0xff, 0xff}, span: 1000, want: ErrBadBlob},
		{name: "dag-cbor root", c: cbor, data: []byte{0xa0}, span: 1, want: ErrBadBlob},
		{name: "dag-cbor leaf", c: cbor, data: []byte{0xa0}, span: 1, depth: 1, want: ErrBadBlob},
	})
}

// TestBudget: Budget(size) is size + MaxMessageBytes + innerAllowance (64)
// bytes per chunk of ChunkSize; MaxMessageBytes is ChunkSize + 32 KiB.
func TestBudget(t *testing.T) {
	for _, tc := range []struct {
		size, want uint64
	}{
		{0, 1081344},                            // 0 + (1048576+32768) + 64*0
		{1, 1081409},                            // 1 + 1081344 + 64*1
		{ChunkSize, 2129984},                    // 1048576 + 1081344 + 64*1
		{ChunkSize + 1, 2130049},                // 1048577 + 1081344 + 64*2
		{64 << 20, 68194304},                    // 67108864 + 1081344 + 64*64
		{core.MaxSafeInt - 1, 9007749011636223}, // 2^53-1 + 1081344 + 64*2^33
		{core.MaxSafeInt, 9007749011636224},     // 2^53 + 1081344 + 64*2^33
	} {
		if got := Budget(tc.size); got != tc.want {
			t.Errorf("Budget(%d) = %d, want %d", tc.size, got, tc.want)
		}
	}
}

// TestBudgetInnerAllowance: innerAllowance covers the inner nodes of
// boxo's balanced layout: a full node of 174 links to raw chunks, as the
// importer writes it, takes less than innerAllowance bytes per link, with
// room for its share (1/174) of the level above.
func TestBudgetInnerAllowance(t *testing.T) {
	const fanout = 174
	fsn := ft.NewFSNode(ft.TFile)
	nd := merkledag.NodeWithData(nil)
	if err := nd.SetCidBuilder(CIDBuilder); err != nil {
		t.Fatal(err)
	}
	for _, c := range rawCIDs(t, fanout, 5) {
		fsn.AddBlockSize(ChunkSize)
		if err := nd.AddRawLink("", &ipld.Link{Cid: c, Size: ChunkSize}); err != nil {
			t.Fatal(err)
		}
	}
	data, err := fsn.GetBytes()
	if err != nil {
		t.Fatal(err)
	}
	nd.SetData(data)
	perLink := float64(len(nd.RawData())) / fanout
	t.Logf("a full node of %d links: %d bytes, %.1f a link", fanout, len(nd.RawData()), perLink)
	if withAbove := perLink * (1 + 1.0/fanout) * 1.01; withAbove > innerAllowance {
		t.Fatalf("a full inner node takes %.1f bytes a link (%.1f with the levels above): more than innerAllowance (%d)",
			perLink, withAbove, innerAllowance)
	}
}

// TestBoundFetchFromDeclaredSize: before any request, FetchFrom refuses a
// raw root declared larger than one chunk (ErrBadBlob), a root of another
// codec than raw or dag-pb (ErrBadBlob) and a size past core.MaxSafeInt
// (ErrTooLarge); at those bounds the provider is asked.
func TestBoundFetchFromDeclaredSize(t *testing.T) {
	n := newPeerNode(t, StoreOptions{}, ExchangeOptions{})
	fp := newFakeProvider(t)
	chunk := rawBlock(t, randBytes(ChunkSize, 210))
	over := rawBlock(t, randBytes(ChunkSize+1, 211))
	fp.put(chunk)
	fp.put(over)
	dagC := pbCID(t, 9) // the provider does not have it
	cbor, err := cid.V1Builder{Codec: cid.DagCBOR, MhType: mh.BLAKE3}.Sum([]byte{0xa0})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		root  cid.Cid
		size  uint64
		want  error // nil: fetched
		asked bool  // whether the provider gets a want
	}{
		// The refused cases first: until a request, no connection is open.
		{"raw root declared ChunkSize+1", over.Cid(), ChunkSize + 1, ErrBadBlob, false},
		{"raw root declared core.MaxSafeInt+1", over.Cid(), core.MaxSafeInt + 1, ErrBadBlob, false},
		{"dag-cbor root", cbor, 1, ErrBadBlob, false},
		{"dag-pb root declared core.MaxSafeInt+1", dagC, core.MaxSafeInt + 1, ErrTooLarge, false},
		{"dag-pb root declared core.MaxSafeInt", dagC, core.MaxSafeInt, ErrDontHave, true},
		{"raw root declared ChunkSize", chunk.Cid(), ChunkSize, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n.h.Peerstore().AddAddrs(fp.h.ID(), fp.h.Addrs(), time.Hour)
			before, _ := fp.stats()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			written, err := n.x.FetchFrom(ctx, fp.h.ID(), tc.root, tc.size, nil)
			if tc.want == nil {
				if err != nil || len(written) != 1 || !written[0].Equals(tc.root) {
					t.Fatalf("FetchFrom: %v, wrote %v; want %s written", err, written, tc.root)
				}
			} else if !errors.Is(err, tc.want) {
				t.Fatalf("FetchFrom: %v, want %v", err, tc.want)
			}
			after, _ := fp.stats()
			if asked := len(after) > len(before); asked != tc.asked {
				t.Fatalf("provider got %d wants, want asked=%v", len(after)-len(before), tc.asked)
			}
			if !tc.asked {
				if len(written) != 0 {
					t.Fatalf("wrote %v before any request", written)
				}
				if conns := n.h.Network().ConnsToPeer(fp.h.ID()); len(conns) != 0 {
					t.Fatalf("%d connections to the provider opened", len(conns))
				}
			}
		})
	}
	// And with a peer that does not exist, nothing but the declared size is
	// looked at: no dial is tried.
	key, _, err := crypto.GenerateEd25519Key(nil)
	if err != nil {
		t.Fatal(err)
	}
	missing, err := peer.IDFromPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	written, err := n.x.FetchFrom(testCtx(t), missing, over.Cid(), ChunkSize+1, nil)
	if !errors.Is(err, ErrBadBlob) || written != nil {
		t.Fatalf("FetchFrom a missing peer: %v, wrote %v; want ErrBadBlob, nothing", err, written)
	}
	if got := n.x.Stats().ReceivedBytes; got != ChunkSize {
		t.Fatalf("%d bytes received in all, want the one chunk fetched (%d)", got, ChunkSize)
	}
}

// TestMaxBlocksBound: a walk visits at most MaxBlocks(size) blocks, the
// root included, however often the DAG names them.
func TestMaxBlocksBound(t *testing.T) {
	const size = ChunkSize // MaxBlocks: 16 + 2*MaxDepth + 1 = 33
	max := int(MaxBlocks(size))
	if max != 16+2*MaxDepth+1 {
		t.Fatalf("MaxBlocks(ChunkSize) = %d", max)
	}
	for _, tc := range []struct {
		links int
		want  error
	}{{max - 1, nil}, {max, ErrBadBlob}} { // the root is the first visit
		leaf := rawCIDs(t, 1, 9)[0]
		links := make([]cid.Cid, tc.links)
		sizes := make([]uint64, tc.links)
		for i := range links {
			links[i], sizes[i] = leaf, 1 // one 1-byte leaf, named again and again
		}
		c, data := pbNode{typ: ft.TFile, sizes: sizes, links: links}.build(t)
		w := &walk{out: map[string]item{}, size: size, visits: 1}
		err := w.expand(item{c: c, span: uint64(tc.links)}, data)
		if (tc.want == nil) != (err == nil) || (tc.want != nil && !errors.Is(err, tc.want)) {
			t.Fatalf("%d links: %v, want %v", tc.links, err, tc.want)
		}
	}
}
