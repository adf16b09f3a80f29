package blobs

import (
	"fmt"
	"slices"
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/wats-network/wats/core"
)

// TestSourcesCandidates: the one de-duplication of a fetch's providers.
// Each peer once, at its first place in First, Named, Guesses; no empty id
// and never the node itself; at most core.MaxHintsPerBlob Named, at the
// bound and just past it; a guess that is named (even past the bound) is
// no guess; only First is exempt, and only with FirstExempt.
func TestSourcesCandidates(t *testing.T) {
	addr := ma.StringCast("/ip4/127.0.0.1/tcp/4001")
	for _, tc := range []struct {
		name string
		src  Sources
		want []want
	}{
		{"none", Sources{}, []want{}},
		{"first only, exempt", Sources{First: "r", FirstExempt: true}, []want{{id: "r", exempt: true}}},
		{"exempt without first", Sources{FirstExempt: true, Named: infos([]peer.ID{"a"})}, []want{{id: "a"}}},
		{"order, duplicates, empty ids, self",
			Sources{First: "r", Named: infos([]peer.ID{"", "a", "r", "self", "b", "a"}), Guesses: []peer.ID{"g", "b", "r", "", "self", "g", "h"}},
			[]want{{id: "r"}, {id: "a"}, {id: "b"}, {id: "g", guess: true}, {id: "h", guess: true}}},
		{"first is self", Sources{First: "self", FirstExempt: true, Guesses: []peer.ID{"g"}}, []want{{id: "g", guess: true}}},
		{"named at the bound", hinted(ids(core.MaxHintsPerBlob, "h")), wants(ids(core.MaxHintsPerBlob, "h"))},
		{"named past the bound", hinted(ids(core.MaxHintsPerBlob+1, "h")), wants(ids(core.MaxHintsPerBlob, "h"))},
		{"duplicates do not count toward the bound",
			hinted(append([]peer.ID{"h0", "h0", "", "self"}, ids(core.MaxHintsPerBlob, "h")...)), wants(ids(core.MaxHintsPerBlob, "h"))},
		{"first does not count toward the bound",
			Sources{First: "r", Named: infos(ids(core.MaxHintsPerBlob, "h"))}, append([]want{{id: "r"}}, wants(ids(core.MaxHintsPerBlob, "h"))...)},
		{"a guess named past the bound is no guess",
			Sources{Named: infos(ids(core.MaxHintsPerBlob+1, "h")), Guesses: []peer.ID{"h16", "g"}},
			append(wants(ids(core.MaxHintsPerBlob, "h")), want{id: "g", guess: true})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := []want{}
			for _, c := range tc.src.candidates("self") {
				got = append(got, want{c.id, c.guess, c.exempt})
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("candidates %v\nwant %v", got, tc.want)
			}
		})
	}
	// Named keep their addresses; the Sources are not changed.
	src := Sources{Named: []peer.AddrInfo{{ID: "a", Addrs: []ma.Multiaddr{addr}}, {ID: "a"}}}
	before := slices.Clone(src.Named)
	c := src.candidates("")
	if len(c) != 1 || c[0].named != 0 || !src.Named[c[0].named].Addrs[0].Equal(addr) {
		t.Fatalf("candidates %v: want a with its address", c)
	}
	if fmt.Sprint(src.Named) != fmt.Sprint(before) {
		t.Fatal("candidates changed its Sources")
	}
}

// want is a candidate as the test sees it.
type want struct {
	id            peer.ID
	guess, exempt bool
}

// wants are ids as named candidates.
func wants(ids []peer.ID) []want {
	out := make([]want, len(ids))
	for i, id := range ids {
		out[i].id = id
	}
	return out
}
