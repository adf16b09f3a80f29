package main

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/wats-network/wats/api"
	"github.com/wats-network/wats/repo"
)

// configSet sets each key of kv in the repo dir with `config set`.
func configSet(t *testing.T, env []string, bin, dir string, kv ...[2]string) {
	t.Helper()
	for _, p := range kv {
		if code, _, stderr := runBin(t, env, bin, "config", "set", p[0], p[1], "--repo", dir); code != 0 {
			t.Fatalf("config set %s %s --repo %s: exit %d: %s", p[0], p[1], dir, code, stderr)
		}
	}
}

// addRandomBlob adds a blob of size random bytes to the daemon of dir and
// returns its CID.
func addRandomBlob(t *testing.T, env []string, bin, dir string, size int) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "blob")
	data := make([]byte, size)
	rand.Read(data)
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := runBin(t, env, bin, "blob", "add", file, "--repo", dir)
	if code != 0 {
		t.Fatalf("blob add: exit %d: %s", code, stderr)
	}
	return strings.SplitN(strings.TrimSpace(out), ":", 2)[0]
}

// blobGet fetches cid of size bytes from the peer at addr into the daemon
// of dir, and returns the exit code, stderr and the time it took.
func blobGet(t *testing.T, env []string, bin, dir, cid string, size int, addr string) (int, string, time.Duration) {
	t.Helper()
	start := time.Now()
	code, _, stderr := runBinWithin(t, 3*time.Minute, env, bin, "blob", "get", cid, "--size", fmt.Sprint(size),
		"--from", addr, "-o", filepath.Join(t.TempDir(), "got"), "--repo", dir)
	return code, stderr, time.Since(start)
}

// statusOf returns `wats status --json` of the daemon of dir.
func statusOf(t *testing.T, env []string, bin, dir string) api.Status {
	t.Helper()
	code, out, stderr := runBin(t, env, bin, "status", "--json", "--repo", dir)
	var st api.Status
	if code != 0 || json.Unmarshal([]byte(out), &st) != nil {
		t.Fatalf("status --json: exit %d: %s%s", code, out, stderr)
	}
	return st
}

// TestBandwidthCapsE2E: between two real daemons, a blob served under a's
// up cap arrives at 60–105% of the cap, and one a reads under its down
// cap likewise; status and its JSON show the caps and the bytes.
func TestBandwidthCapsE2E(t *testing.T) {
	bin, tmp, env := e2eSetup(t)
	a, b := filepath.Join(tmp, "a"), filepath.Join(tmp, "b")
	initDefault(t, env, bin, a, b)
	const up, down = 2 << 20, 1 << 20
	for _, dir := range []string{a, b} {
		configSet(t, env, bin, dir, [2]string{"blobs.auto_fetch", "false"}, [2]string{"p2p.mdns", "false"})
	}
	configSet(t, env, bin, a, [2]string{"bandwidth.up_bytes_per_s", fmt.Sprint(up)}, [2]string{"bandwidth.down_bytes_per_s", fmt.Sprint(down)})
	startBinDaemon(t, env, bin, a)
	startBinDaemon(t, env, bin, b)
	for _, c := range []struct {
		name          string
		from, to      string
		size, capRate int
	}{
		{"a's up cap", a, b, 2 * up, up},
		{"a's down cap", b, a, 2 * down, down},
	} {
		cid := addRandomBlob(t, env, bin, c.from, c.size)
		code, stderr, d := blobGet(t, env, bin, c.to, cid, c.size, idOf(t, env, bin, c.from).Addrs[0])
		if code != 0 {
			t.Fatalf("%s: blob get: exit %d: %s", c.name, code, stderr)
		}
		rate := float64(c.size) / d.Seconds()
		t.Logf("%s: %d bytes in %v: %.0f%% of the cap", c.name, c.size, d, 100*rate/float64(c.capRate))
		if rate < 0.6*float64(c.capRate) || rate > 1.05*float64(c.capRate) {
			t.Errorf("%s: %d bytes in %v, %.0f bytes/s; want 60–105%% of %d", c.name, c.size, d, rate, c.capRate)
		}
	}
	st := statusOf(t, env, bin, a).Bandwidth
	if st.UpBytesPerS != up || st.DownBytesPerS != down || st.UpBytes < 2*up || st.DownBytes < 2*down || st.MonthUpBytes < st.UpBytes {
		t.Errorf("a's status: %+v", st)
	}
	if _, out, _ := runBin(t, env, bin, "status", "--repo", a); !strings.Contains(out, "(cap 2.0 MiB/s)") || !strings.Contains(out, "(cap 1.0 MiB/s)") {
		t.Errorf("status does not show the caps:\n%s", out)
	}
	var peers []api.Peer
	if _, out, _ := runBin(t, env, bin, "peers", "ls", "--json", "--repo", a); json.Unmarshal([]byte(out), &peers) != nil || len(peers) != 1 ||
		peers[0].BytesUp < 2*up || peers[0].BytesDown < 2*down {
		t.Errorf("a's peers: %s", out)
	}
}

// TestBandwidthCapsSyncAndGossipE2E: a's down cap holds what a catch-up
// of b's log (sync pages) and b's new events (gossip, heads and the pulls
// they lead to) bring it, not only blobs: between two real daemons, the
// events' bodies alone, over the time they took to arrive, come at no
// more than the cap (and the catch-up at a fair share of it).
func TestBandwidthCapsSyncAndGossipE2E(t *testing.T) {
	bin, tmp, env := e2eSetup(t)
	a, b := filepath.Join(tmp, "a"), filepath.Join(tmp, "b")
	initDefault(t, env, bin, a, b)
	const down = 256 << 10
	configSet(t, env, bin, a, [2]string{"bandwidth.down_bytes_per_s", fmt.Sprint(down)})
	startBinDaemon(t, env, bin, a)
	startBinDaemon(t, env, bin, b)
	ca, cb := api.NewClient(filepath.Join(a, repo.SocketFile)), api.NewClient(filepath.Join(b, repo.SocketFile))
	body := jsontext.Value(`{"text":"` + strings.Repeat("x", 15000) + `"}`)
	add := func(n int) int {
		for range n {
			if _, err := cb.AddEvent(t.Context(), "note", body); err != nil {
				t.Fatal(err)
			}
		}
		return n * len(body)
	}
	// arrival waits until a holds want events and returns the rate, in
	// bytes a second, of bodies bytes since start.
	arrival := func(want uint64, bodies int, start time.Time) float64 {
		t.Helper()
		for deadline := start.Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
			st, err := ca.Status(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if st.Events >= want {
				return float64(bodies) / time.Since(start).Seconds()
			}
			if time.Now().After(deadline) {
				t.Fatalf("a holds %d events after a minute, want %d", st.Events, want)
			}
		}
	}

	synced := add(64) // 64 × 15 KB: 3.7 s at the cap
	start := time.Now()
	if _, err := ca.Connect(t.Context(), idOf(t, env, bin, b).Addrs[0]); err != nil {
		t.Fatal(err)
	}
	rate := arrival(64, synced, start)
	t.Logf("the catch-up: %d bytes of bodies at %.0f%% of the cap", synced, 100*rate/down)
	if rate > 1.05*down || rate < 0.3*down {
		t.Errorf("the catch-up's bodies came at %.0f bytes/s; want 30–105%% of the cap, %d", rate, down)
	}

	start = time.Now()
	gossiped := add(48)
	rate = arrival(64+48, gossiped, start)
	t.Logf("gossip: %d bytes of bodies at %.0f%% of the cap", gossiped, 100*rate/down)
	if rate > 1.05*down {
		t.Errorf("the new events' bodies came at %.0f bytes/s, over the cap of %d", rate, down)
	}
	if st, err := ca.Status(t.Context()); err != nil || st.Bandwidth.DownBytes < uint64(synced+gossiped) {
		t.Errorf("a's status: %+v, %v; want at least %d bytes received", st.Bandwidth, err, synced+gossiped)
	}
}

// TestMonthlyUpCapE2E: a daemon with a small bandwidth.monthly_up_bytes
// serves a stranger (a peer that dialled it) a blob until the cap, then
// refuses it more; restarted, it still does, with the month's count read
// back from its repo; a peer it dialled (standing) is still served.
func TestMonthlyUpCapE2E(t *testing.T) {
	bin, tmp, env := e2eSetup(t)
	a, s, d := filepath.Join(tmp, "a"), filepath.Join(tmp, "stranger"), filepath.Join(tmp, "dialled")
	initDefault(t, env, bin, a, s, d)
	for _, dir := range []string{a, s, d} {
		configSet(t, env, bin, dir, [2]string{"blobs.auto_fetch", "false"}, [2]string{"p2p.mdns", "false"}, [2]string{"p2p.dht", "off"})
	}
	const monthly = 1 << 20
	configSet(t, env, bin, a, [2]string{"bandwidth.monthly_up_bytes", fmt.Sprint(monthly)})
	proc, _ := startBinDaemonProc(t, env, bin, a)
	startBinDaemon(t, env, bin, s)
	first, second := 3*monthly/2, 64<<10
	cid1, cid2 := addRandomBlob(t, env, bin, a, first), addRandomBlob(t, env, bin, a, second)
	addr := idOf(t, env, bin, a).Addrs[0]
	if code, stderr, _ := blobGet(t, env, bin, s, cid1, first, addr); code != 0 {
		t.Fatalf("the stranger's first blob, under the cap: exit %d: %s", code, stderr)
	}
	st := statusOf(t, env, bin, a).Bandwidth
	if !st.StrangerBlobsStopped || st.MonthUpBytes < uint64(first) || st.Month != time.Now().UTC().Format("2006-01") {
		t.Fatalf("after the cap: %+v", st)
	}
	if code, _, _ := blobGet(t, env, bin, s, cid2, second, addr); code == 0 {
		t.Error("a stranger was served a blob past the monthly cap")
	}

	// A restart: the month's count read back.
	_ = proc.Process.Signal(syscall.SIGTERM)
	_ = proc.Wait()
	var kept struct {
		Month   string `json:"month"`
		UpBytes uint64 `json:"up_bytes"`
	}
	if b, err := os.ReadFile(filepath.Join(a, "bandwidth.json")); err != nil || json.Unmarshal(b, &kept) != nil || kept.UpBytes < st.MonthUpBytes || kept.Month != st.Month {
		t.Fatalf("bandwidth.json after a stop: %+v, %v; status said %+v", kept, err, st)
	}
	startBinDaemon(t, env, bin, a)
	addr = idOf(t, env, bin, a).Addrs[0]
	if st := statusOf(t, env, bin, a).Bandwidth; !st.StrangerBlobsStopped || st.MonthUpBytes < kept.UpBytes {
		t.Errorf("after a restart: %+v, the file held %+v", st, kept)
	}
	if code, _, _ := blobGet(t, env, bin, s, cid2, second, addr); code == 0 {
		t.Error("after a restart, a stranger was served a blob past the monthly cap")
	}
	// A peer a dialled has standing: served.
	startBinDaemon(t, env, bin, d)
	if code, _, stderr := runBin(t, env, bin, "peers", "connect", idOf(t, env, bin, d).Addrs[0], "--repo", a); code != 0 {
		t.Fatalf("peers connect: exit %d: %s", code, stderr)
	}
	if code, stderr, _ := blobGet(t, env, bin, d, cid2, second, addr); code != 0 {
		t.Errorf("a peer with standing past the monthly cap: exit %d: %s", code, stderr)
	}
}

// TestMonthlyUpCapWithTheDHTE2E: with the DHT on, a peer that a's fetch
// found on the DHT and dialled (a provider, whose record any peer can put)
// has no standing at a: past a's monthly cap it is not served a blob, as
// a stranger that dialled a; once a's operator connects to it, it is (ADR
// 0041's addendum). a is a DHT client, so that the provider's own lookups
// never dial it first, and no discovery dials (p2p.conns_low 1).
func TestMonthlyUpCapWithTheDHTE2E(t *testing.T) {
	bin, tmp, env := e2eSetup(t)
	a, m, s := filepath.Join(tmp, "a"), filepath.Join(tmp, "middle"), filepath.Join(tmp, "provider")
	initDefault(t, env, bin, a, m, s)
	for _, dir := range []string{a, m, s} {
		configSet(t, env, bin, dir, [2]string{"blobs.auto_fetch", "false"}, [2]string{"p2p.mdns", "false"}, [2]string{"p2p.conns_low", "1"})
	}
	const monthly = 1 << 20
	configSet(t, env, bin, a, [2]string{"bandwidth.monthly_up_bytes", fmt.Sprint(monthly)}, [2]string{"p2p.dht", "client"})
	for _, dir := range []string{a, m, s} {
		startBinDaemon(t, env, bin, dir)
	}
	addrM := idOf(t, env, bin, m).Addrs[0]
	for _, dir := range []string{a, s} {
		if code, _, stderr := runBin(t, env, bin, "peers", "connect", addrM, "--repo", dir); code != 0 {
			t.Fatalf("peers connect the middle: exit %d: %s", code, stderr)
		}
	}
	// The middle, which a dialled, takes a's month past the cap.
	first, second := 3*monthly/2, 64<<10
	cid1, cid2 := addRandomBlob(t, env, bin, a, first), addRandomBlob(t, env, bin, a, second)
	idA := idOf(t, env, bin, a)
	if code, stderr, _ := blobGet(t, env, bin, m, cid1, first, idA.Addrs[0]); code != 0 {
		t.Fatalf("the middle's blob: exit %d: %s", code, stderr)
	}
	if st := statusOf(t, env, bin, a).Bandwidth; !st.StrangerBlobsStopped {
		t.Fatalf("after the cap: %+v", st)
	}

	// a gets the provider's blob by its CID alone: the DHT names the
	// provider, and a's fetch dials it.
	data := make([]byte, 32<<10)
	_, _ = rand.Read(data)
	file := filepath.Join(tmp, "provided.bin")
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
	idS := idOf(t, env, bin, s)
	if w := getBlob(t, env, bin, a, addBlobFile(t, env, bin, s, file).CID, data, filepath.Join(tmp, "got.bin")); w.Provider != idS.PeerID {
		t.Fatalf("a got the blob from %q, want the provider %s", w.Provider, idS.PeerID)
	}
	var peers []api.Peer
	_, out, _ := runBin(t, env, bin, "peers", "ls", "--json", "--repo", a)
	if err := json.Unmarshal([]byte(out), &peers); err != nil {
		t.Fatal(err)
	}
	dir := ""
	for _, p := range peers {
		if p.PeerID == idS.PeerID {
			dir = p.Direction
		}
	}
	if dir != api.DirectionOutbound {
		t.Fatalf("a's connection to the provider: %q, want one a dialled; a's peers: %s", dir, out)
	}
	if code, _, _ := blobGet(t, env, bin, s, cid2, second, idA.Addrs[0]); code == 0 {
		t.Error("a provider a's fetch dialled was served a blob past the monthly cap")
	}
	if code, _, stderr := runBin(t, env, bin, "peers", "connect", idS.Addrs[0], "--repo", a); code != 0 {
		t.Fatalf("peers connect the provider: exit %d: %s", code, stderr)
	}
	if code, stderr, _ := blobGet(t, env, bin, s, cid2, second, idA.Addrs[0]); code != 0 {
		t.Errorf("a peer a's operator connected to, past the monthly cap: exit %d: %s", code, stderr)
	}
}

// TestBandwidthWords: status's bandwidth line gives each count in the unit
// it reaches, as every byte count of the CLI, and says what a cap means.
func TestBandwidthWords(t *testing.T) {
	for _, tc := range []struct {
		b    api.BandwidthStatus
		want string
	}{
		{api.BandwidthStatus{UpBytes: 26 << 10, DownBytes: 512, Month: "2026-12", MonthUpBytes: 29189},
			"26.0 KiB sent (no cap), 512 B received (no cap) since the start; 28.5 KiB sent in 2026-12 (no monthly cap)"},
		{api.BandwidthStatus{UpBytes: 3 << 20, UpBytesPerS: 8 << 20, DownBytesPerS: 1 << 20, Month: "2026-12", MonthUpBytes: 5 << 30, MonthlyUpBytes: 10 << 30},
			"3.0 MiB sent (cap 8.0 MiB/s), 0 B received (cap 1.0 MiB/s) since the start; 5.0 GiB sent in 2026-12 of the 10.0 GiB a month allowed"},
		{api.BandwidthStatus{Month: "2026-12", MonthUpBytes: 1 << 30, MonthlyUpBytes: 1 << 30, StrangerBlobsStopped: true},
			"0 B sent (no cap), 0 B received (no cap) since the start; 1.0 GiB sent in 2026-12, the monthly cap of 1.0 GiB reached: " +
				"until the month ends, blobs go only to peers this node dialled or has known for a while"},
	} {
		if got := bandwidthWords(tc.b); got != tc.want {
			t.Errorf("bandwidthWords(%+v) =\n%q, want\n%q", tc.b, got, tc.want)
		}
	}
}
