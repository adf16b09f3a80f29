package main

import (
	"bytes"
	"crypto/rand"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/wats-network/wats/api"
	"github.com/wats-network/wats/blobs"
)

// initDefault makes a repo in each of dirs with the default profile (plain
// `wats init`), but for what several daemons on one machine need: listen
// addresses on 127.0.0.1 at ports of their own, and a network of the
// call's own (daemons of other tests are never met).
func initDefault(t *testing.T, env []string, bin string, dirs ...string) {
	t.Helper()
	network := fmt.Sprintf("e2e-%x", mrand.Uint64())
	for _, dir := range dirs {
		for _, args := range [][]string{
			{"init", "--repo", dir},
			{"config", "set", "p2p.listen", "/ip4/127.0.0.1/tcp/0,/ip4/127.0.0.1/udp/0/quic-v1", "--repo", dir},
			{"config", "set", "network", network, "--repo", dir},
		} {
			if code, _, stderr := runBin(t, env, bin, args...); code != 0 {
				t.Fatalf("%s: exit %d: %s", strings.Join(args, " "), code, stderr)
			}
		}
	}
}

// TestDefaultProfileChain: three default-profile daemons on one machine
// in a chain A–B–C (B connected to both; p2p.dht left at auto, which
// AutoNAT never finds public there) find each other's blobs by CID alone
// and each other by peer ID alone: through the LAN DHT, which they serve
// (docs/adr/0047).
func TestDefaultProfileChain(t *testing.T) {
	bin, tmp, env := e2eSetup(t)
	a, b, c := filepath.Join(tmp, "a"), filepath.Join(tmp, "b"), filepath.Join(tmp, "c")
	initDefault(t, env, bin, a, b, c)
	for _, dir := range []string{a, b, c} {
		startBinDaemon(t, env, bin, dir)
	}
	idA, idC := idOf(t, env, bin, a), idOf(t, env, bin, c)
	for _, to := range []string{idA.Addrs[0], idC.Addrs[0]} {
		if code, _, stderr := runBin(t, env, bin, "peers", "connect", to, "--repo", b); code != 0 {
			t.Fatalf("B: peers connect %s: exit %d: %s", to, code, stderr)
		}
	}

	// A blob added on A, got on C by its CID alone.
	data := make([]byte, 3<<20)
	_, _ = rand.Read(data)
	file := filepath.Join(tmp, "blob.bin")
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
	added := addBlobFile(t, env, bin, a, file)
	if w := getBlob(t, env, bin, c, added.CID, data, filepath.Join(tmp, "got.bin")); w.Provider != idA.PeerID {
		t.Errorf("C got the blob from %q, want A (%s)", w.Provider, idA.PeerID)
	}

	// A found by its peer ID alone, from C, once C has forgotten it.
	if code, _, stderr := runBin(t, env, bin, "peers", "connect", idA.PeerID, "--repo", c); code != 0 {
		t.Fatalf("C: peers connect %s (a peer ID alone): exit %d: %s", idA.PeerID, code, stderr)
	}
	var st struct {
		DHT struct {
			Mode            string `json:"mode"`
			Server          bool   `json:"server"`
			LANRoutingTable int    `json:"lan_routing_table"`
		} `json:"dht"`
	}
	code, out, stderr := runBin(t, env, bin, "status", "--json", "--repo", c)
	if code != 0 {
		t.Fatalf("C: status: exit %d: %s", code, stderr)
	}
	if err := json.Unmarshal([]byte(out), &st, json.RejectUnknownMembers(false)); err != nil {
		t.Fatal(err)
	}
	if st.DHT.Mode != "auto" || st.DHT.Server || st.DHT.LANRoutingTable == 0 {
		t.Errorf("C's DHT: %+v; want auto, a client of the network's DHT, peers in the LAN's table", st.DHT)
	}
}

// TestDefaultProfileGetFromAConnectedPeer: of two connected default-profile
// daemons, one gets a blob the other holds without --from, by asking its
// connected peers at once (docs/adr/0047): within one round trip, not
// after the DHT's search, and `blob get` says where it came from.
func TestDefaultProfileGetFromAConnectedPeer(t *testing.T) {
	bin, tmp, env := e2eSetup(t)
	a, b := filepath.Join(tmp, "a"), filepath.Join(tmp, "b")
	initDefault(t, env, bin, a, b)
	startBinDaemon(t, env, bin, a)
	startBinDaemon(t, env, bin, b)
	idA := idOf(t, env, bin, a)
	if code, _, stderr := runBin(t, env, bin, "peers", "connect", idA.Addrs[0], "--repo", b); code != 0 {
		t.Fatalf("B: peers connect: exit %d: %s", code, stderr)
	}
	data := make([]byte, 20<<20)
	_, _ = rand.Read(data)
	file := filepath.Join(tmp, "blob.bin")
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
	added := addBlobFile(t, env, bin, a, file)
	start := time.Now()
	w := getBlob(t, env, bin, b, added.CID, data, filepath.Join(tmp, "got.bin"))
	if took := time.Since(start); took >= blobs.RouteWithGuesses {
		t.Errorf("the blob took %v: the fetch waited for the DHT's search", took)
	}
	if w.Provider != idA.PeerID {
		t.Errorf("blob get --json says provider %q, want A (%s)", w.Provider, idA.PeerID)
	}
	// Without --json, the line says it too.
	code, out, stderr := runBin(t, env, bin, "blob", "get", added.CID, "-o", filepath.Join(tmp, "again.bin"), "--repo", b)
	if want := "\n    from "; code != 0 || !strings.Contains(out, "wrote ") {
		t.Fatalf("blob get of a blob held: exit %d, %q, %s", code, out, stderr)
	} else if strings.Contains(out, want) {
		t.Errorf("a blob the node held is said to come from a peer: %q", out)
	}
}

// addBlobFile adds file on the daemon of dir and returns what `blob add
// --json` says.
func addBlobFile(t *testing.T, env []string, bin, dir, file string) api.BlobInfo {
	t.Helper()
	code, out, stderr := runBin(t, env, bin, "blob", "add", "--json", file, "--repo", dir)
	if code != 0 {
		t.Fatalf("blob add: exit %d: %s", code, stderr)
	}
	var bi api.BlobInfo
	if err := json.Unmarshal([]byte(out), &bi, json.RejectUnknownMembers(false)); err != nil {
		t.Fatalf("blob add --json: %v: %s", err, out)
	}
	return bi
}

// getBlob gets the blob c of data's size on the daemon of dir by its CID
// alone (`blob get --json`, no --from) into out, checks its bytes, and
// returns what the command said.
func getBlob(t *testing.T, env []string, bin, dir, c string, data []byte, out string) blobWritten {
	t.Helper()
	start := time.Now()
	code, stdout, stderr := runBinWithin(t, 90*time.Second, env, bin, "blob", "get", c, "--size", fmt.Sprint(len(data)), "-o", out, "--json", "--repo", dir)
	if code != 0 {
		t.Fatalf("blob get %s by its CID alone: exit %d after %v: %s", c, code, time.Since(start), stderr)
	}
	t.Logf("got blob %s in %v", c, time.Since(start))
	if b, err := os.ReadFile(out); err != nil || !bytes.Equal(b, data) {
		t.Fatalf("got %d bytes, %v; want the %d bytes added", len(b), err, len(data))
	}
	var w blobWritten
	if err := json.Unmarshal([]byte(stdout), &w); err != nil {
		t.Fatalf("blob get --json: %v: %s", err, stdout)
	}
	return w
}
