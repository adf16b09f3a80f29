package node

import (
	"fmt"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/wats-network/wats/catchup"
	"github.com/wats-network/wats/core"
	"github.com/wats-network/wats/eventlog"
)

// TestStorePagesWritesAGroup: pages written together land in the log in
// page order, with the counts of all and the cursor of the last.
func TestStorePagesWritesAGroup(t *testing.T) {
	n := startNode(t, testConfig(false, time.Hour))
	key, _, _ := crypto.GenerateEd25519Key(nil)
	now := n.now()
	// Three pages of five events; one event of the middle page is forged:
	// dropped, the rest kept.
	var group []catchup.Page
	var want [][]byte
	for i := range 3 {
		var events []jsontext.Value
		for j := range 5 {
			ev := signed(t, key, now, fmt.Sprintf("event %d", 5*i+j))
			if i == 1 && j == 2 {
				ev.Sig = signed(t, key, now, "another").Sig
			}
			events = append(events, marshal(t, ev))
		}
		ok, raws, _, rejected := eventlog.VerifyPage(events, now, nil)
		group = append(group, catchup.Page{Events: events, Next: core.Cursor(5 * (i + 1)), More: i < 2, OK: ok, Raws: raws, Rejected: rejected})
		want = append(want, raws...)
	}
	last := group[2].Next
	st := SyncProgress{}
	if err := n.storePages(peer.ID("a peer"), group, &st); err != nil {
		t.Fatal(err)
	}
	if st.Received != 15 || st.Stored != 14 || st.Dropped != 1 || st.Cursor != last || st.PeerHead != last {
		t.Fatalf("progress %+v; want 15 received, 14 stored, 1 dropped, cursor and head %d", st, last)
	}
	stored, _, _, err := n.events.Page(0, 100, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if len(stored) != len(want) {
		t.Fatalf("%d events in the log, want %d", len(stored), len(want))
	}
	for i := range want {
		if string(stored[i]) != string(want[i]) {
			t.Fatalf("position %d holds %s, want %s (page order)", i+1, stored[i], want[i])
		}
	}
}
