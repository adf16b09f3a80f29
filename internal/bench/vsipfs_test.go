package bench

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
)

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		xs   []float64
		want float64
	}{
		{nil, 0},
		{[]float64{3}, 3},
		{[]float64{5, 1, 3}, 3},
		{[]float64{4, 1, 3, 2}, 2.5},
		{[]float64{136, 120, 150, 90, 140}, 136},
	} {
		if got := median(c.xs); got != c.want {
			t.Errorf("median(%v) = %v, want %v", c.xs, got, c.want)
		}
	}
	xs := []float64{3, 1, 2}
	median(xs)
	if xs[0] != 3 || xs[1] != 1 {
		t.Fatal("median sorted its argument in place")
	}
}

// TestVsIPFSSummary: the medians are of one implementation's rounds of one
// operation each, the ratios are wats over kubo, and the table shows them.
func TestVsIPFSSummary(t *testing.T) {
	r := &VsIPFSResult{Bytes: 256 << 20, Rounds: 3, Transport: "tcp"}
	var measured []VsIPFSFigure
	o := VsIPFSOptions{Measured: func(f VsIPFSFigure) { measured = append(measured, f) }}
	for i, s := range []float64{2, 1, 4} { // kubo: 128, 256, 64 MiB/s
		r.add(o, VsIPFSFigure{Round: i + 1, Impl: "kubo", Op: "fetch", Bytes: 256 << 20, Seconds: Seconds(time.Duration(s * float64(time.Second)))})
		r.add(o, VsIPFSFigure{Round: i + 1, Impl: "wats", Op: "fetch", Bytes: 256 << 20, Seconds: Seconds(time.Duration(s / 2 * float64(time.Second)))})
		r.add(o, VsIPFSFigure{Round: i + 1, Impl: "wats", Op: "import", Bytes: 256 << 20, Seconds: Seconds(time.Second)})
	}
	if len(measured) != 9 || measured[1].Impl != "wats" || measured[1].MiBPerS != 256 {
		t.Fatalf("measured %+v", measured)
	}
	k, w := side(r.Figures, "kubo", 0, 0), side(r.Figures, "wats", 0, 0)
	if k.FetchMiBPerS != 128 || w.FetchMiBPerS != 256 || w.ImportMiBPerS != 256 || k.ImportMiBPerS != 0 {
		t.Fatalf("kubo %+v, wats %+v", k, w)
	}
	r.Kubo, r.Wats = k, w
	r.Kubo.ProviderPeakRSS, r.Kubo.FetcherPeakRSS = 100<<20, 200<<20
	r.Wats.ProviderPeakRSS, r.Wats.FetcherPeakRSS = 50<<20, 300<<20
	r.Ratios = VsIPFSRatios{Fetch: ratio(w.FetchMiBPerS, k.FetchMiBPerS), Import: ratio(w.ImportMiBPerS, k.ImportMiBPerS),
		ProviderRSS: ratio(50, 100), FetcherRSS: ratio(300, 200)}
	var b strings.Builder
	VsIPFSTable(&b, r)
	for _, want := range []string{"fetch 256.0 MiB", "128 MiB/s", "256 MiB/s", "2.00", "import 256.0 MiB", "0.00",
		"100 / 200 MiB", "50 / 300 MiB", "0.5 / 1.5"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
}

// TestKuboConfigure: dotted keys set nested members, creating the objects
// on the way, and leave the others as they were.
func TestKuboConfigure(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "config"), []byte(`{"Routing":{"Type":"auto","Other":1},"Identity":{"PeerID":"x"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	k := &kuboDaemon{repo: dir}
	if err := k.configure(map[string]any{"Routing.Type": "none", "Provide.Enabled": false, "Addresses.Swarm": []string{"/ip4/127.0.0.1/tcp/0"}}); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "config"))
	var got struct {
		Routing struct {
			Type  string
			Other int
		}
		Provide   struct{ Enabled *bool }
		Addresses struct{ Swarm []string }
		Identity  struct{ PeerID string }
	}
	if err := json.Unmarshal(b, &got, json.MatchCaseInsensitiveNames(false)); err != nil {
		t.Fatal(err)
	}
	if got.Routing.Type != "none" || got.Routing.Other != 1 || got.Provide.Enabled == nil || *got.Provide.Enabled ||
		len(got.Addresses.Swarm) != 1 || got.Identity.PeerID != "x" {
		t.Fatalf("config after: %s", b)
	}
	if err := os.WriteFile(filepath.Join(dir, "config"), []byte(`not json`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := k.configure(map[string]any{"A": 1}); err == nil {
		t.Fatal("a config that is not JSON was edited")
	}
}

// TestCheckFile: a fetched file passes only with the original's size and
// bytes.
func TestCheckFile(t *testing.T) {
	dir := t.TempDir()
	src, got := filepath.Join(dir, "src"), filepath.Join(dir, "got")
	sum, err := writeRandomFile(src, 1<<20+1, 7)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(src)
	if err := os.WriteFile(got, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := checkFile(got, 1<<20+1, sum); err != nil {
		t.Fatal(err)
	}
	if err := checkFile(got, 1<<20, sum); err == nil {
		t.Fatal("a file one byte longer than declared passed")
	}
	b[len(b)/2] ^= 1
	if err := os.WriteFile(got, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := checkFile(got, 1<<20+1, sum); err == nil {
		t.Fatal("a file with one bit flipped passed")
	}
	if other, _ := writeRandomFile(filepath.Join(dir, "other"), 1<<20+1, 8); other == sum {
		t.Fatal("two rounds' files are the same")
	}
}

// TestVsIPFSRefusesWhatIsNotKubo: no binary is ErrNoKubo; a binary that is
// not kubo is refused before anything starts.
func TestVsIPFSRefusesWhatIsNotKubo(t *testing.T) {
	if _, err := VsIPFS(context.Background(), VsIPFSOptions{}); !errors.Is(err, ErrNoKubo) {
		t.Fatalf("no binary: %v", err)
	}
	fake := filepath.Join(t.TempDir(), "ipfs")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\necho 'go-ipfs-lookalike 1.0'\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	_, err := VsIPFS(context.Background(), VsIPFSOptions{IPFS: fake, Dir: t.TempDir(), Size: 1, Rounds: 1, Transport: "tcp"})
	if err == nil || !strings.Contains(err.Error(), "not a kubo binary") {
		t.Fatalf("a binary that is not kubo: %v", err)
	}
}
