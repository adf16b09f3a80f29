package main

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/wats-network/wats/api"
	"github.com/wats-network/wats/core"
	"github.com/wats-network/wats/internal/devnet"
)

// checkFits fails the test for each line of text wider than maxHelpWidth
// runes.
func checkFits(t *testing.T, what, text string) {
	t.Helper()
	for _, line := range strings.Split(text, "\n") {
		if n := utf8.RuneCountInString(line); n > maxHelpWidth {
			t.Errorf("%s: a line of %d columns: %q", what, n, line)
		}
	}
}

// TestEventsLsFits: `events ls` and `events tail` fit in 100 columns for
// the longest kind (core.MaxKindLen), a long body with multi-byte runes
// and whitespace, and blobs with long names: the body is cut with "…"
// ('events get' shows it whole), the blobs go under the row, two of them
// named (a long name cut) and the rest counted; an event without blobs is
// one line; a kind longer than 12 pushes only its own row's body right.
func TestEventsLsFits(t *testing.T) {
	const cidA = "bafkr4ihkr4ld3m4gqkjf4reryxsy2s5tkbxprqkow6fin2iiyvreuzzab4"
	long := strings.Repeat("k", core.MaxKindLen)
	body := `{"text": "` + strings.Repeat("ü ", 100) + `",` + "\n" + `"n": 1}`
	name := strings.Repeat("a-very-long-file-name-", 12) + ".pdf"
	big := `{"id":"` + testEvID + `","author":"` + testPeer + `","time":1767225600000,"kind":"` + long +
		`","body":` + body + `,"blobs":[{"cid":"` + cidA + `","size":1048576,"name":"` + name + `"},` +
		`{"cid":"` + cidA + `","size":3},{"cid":"` + cidA + `","size":5,"name":"x"}],"sig":"x"}`
	events := []jsontext.Value{jsontext.Value(testEv), jsontext.Value(big)}

	text := eventsText(events)
	checkFits(t, "events ls", text)
	lines := strings.SplitAfter(strings.TrimSuffix(text, "\n"), "\n")
	if len(lines) != 5 {
		t.Fatalf("events ls: %d lines, want a header, a line for the event without blobs, three for the one with:\n%s", len(lines), text)
	}
	// KIND is 12 wide: a longer kind pushes its own body right, not the
	// other rows'.
	for i, want := range []string{
		"ID                TIME                      AUTHOR     KIND          BODY\n",
		testEvID[:16] + "  2026-01-01T00:00:00.000Z  …tNd9CqYf  note          {\"n\":42}\n",
		testEvID[:16] + "  2026-01-01T00:00:00.000Z  …tNd9CqYf  " + long + `  {"text":"ü`,
		"    blobs: " + name[:maxBlobNameShown-1] + "… (1.0 MiB),\n",
		"    bafkr4ih…uzzab4 (3 B), +1 more",
	} {
		if !strings.HasPrefix(lines[i], want) {
			t.Errorf("line %d:\n%s\nwant it to start with\n%s", i, lines[i], want)
		}
	}
	if !strings.HasSuffix(lines[2], "…\n") || utf8.RuneCountInString(lines[2]) != maxHelpWidth+1 {
		t.Errorf("the long body is not cut at %d columns with …: %q", maxHelpWidth, lines[2])
	}

	tail := eventHeader(tailKindWidth) + "\n" + eventText(jsontext.Value(big), tailKindWidth) + eventText(jsontext.Value(testEv), tailKindWidth)
	checkFits(t, "events tail", tail)
	if want := testEvID[:16] + "  2026-01-01T00:00:00.000Z  …tNd9CqYf  note      {\"n\":42}\n"; !strings.HasSuffix(tail, want) {
		t.Errorf("events tail:\n%s\nwant it to end with\n%s", tail, want)
	}
}

// TestBlobLsFits: `blob ls` fits in 100 columns for a long name (cut with
// "…": --json has it whole) and the largest sizes, a row a blob (time
// added, size in binary units, name) with its full CID under it, which
// 'blob get' and 'blob rm' take; --bytes shows exact sizes; so does
// --partial, in binary units.
func TestBlobLsFits(t *testing.T) {
	const c1 = "bafkr4ihkr4ld3m4gqkjf4reryxsy2s5tkbxprqkow6fin2iiyvreuzzab4"
	name := strings.Repeat("a-very-long-file-name-", 12) + ".pdf"
	list := []api.BlobInfo{{CID: c1, Size: 1<<53 - 1, Name: name}, {CID: "bafkqaaa", Size: 0}}
	for _, exact := range []bool{false, true} {
		text := blobsText(list, exact)
		checkFits(t, "blob ls", text)
		size := "8.0 PiB"
		if exact {
			size = "9007199254740991"
		}
		if !strings.Contains(text, "  "+size+"  a-very-long-file-name-") || !strings.Contains(text, "\n    "+c1+"\n") ||
			!strings.Contains(text, "…\n") || !strings.Contains(text, "\n    bafkqaaa\n") {
			t.Errorf("blob ls (exact sizes: %v):\n%s", exact, text)
		}
	}
	partial := partialsText([]api.PartialBlob{{CID: c1, Size: 1<<53 - 1, Held: 1 << 40, Bytes: 1<<40 + 5, Fetching: true}}, false)
	checkFits(t, "blob ls --partial", partial)
	if !strings.Contains(partial, "  1.0 TiB  8.0 PiB  1.0 TiB  yes\n    "+c1+"\n") {
		t.Errorf("blob ls --partial:\n%s", partial)
	}
}

// TestBlobGetSaysWhatItWrote: blob get's closing lines fit in 100
// columns with the longest CIDs and peer IDs (a file name of its own
// aside): the file and the size, in binary units and in bytes, then,
// indented, the blob's full CID and the provider's full peer ID (what
// --from takes), each on a line of its own.
func TestBlobGetSaysWhatItWrote(t *testing.T) {
	const cid = "bafkr4ihkr4ld3m4gqkjf4reryxsy2s5tkbxprqkow6fin2iiyvreuzzab4"
	for _, tc := range []struct {
		w    blobWritten
		how  string
		want string
	}{
		{blobWritten{CID: cid, Size: 5<<20 + 3, File: "report.pdf", Provider: testPeer}, "",
			"wrote report.pdf: 5.0 MiB (5242883 bytes)\n    blob " + cid + "\n    from " + testPeer + "\n"},
		{blobWritten{CID: cid, Size: 1<<53 - 1, File: "big.iso"}, ", held in the repo",
			"wrote big.iso: 8.0 PiB (9007199254740991 bytes)\n    blob " + cid + ", held in the repo\n"},
		{blobWritten{CID: "bafkqaaa", Size: 0, File: "empty"}, "", "wrote empty: 0 bytes\n    blob bafkqaaa\n"},
	} {
		got := writtenText(tc.w, tc.how)
		checkFits(t, "blob get", got)
		if got != tc.want {
			t.Errorf("%+v:\n%s\nwant\n%s", tc.w, got, tc.want)
		}
	}
}

// TestDevnetStatusFits: `devnet status` fits in 100 columns with full
// peer IDs, 12-digit events and heads and the most peers a devnet has: the peer ID in its row, the pid and the
// repo under it, and for a node whose API did not answer, dashes and
// why.
func TestDevnetStatusFits(t *testing.T) {
	const big = 999_999_999_999
	repo := "/home/someone/.wats-devnet/node0"
	rows := []devnet.NodeStatus{
		{Index: 0, PeerID: testPeer, PID: 4194304, Alive: true, Peers: 31, Events: big, Head: big, Repo: repo},
		{Index: 31, PeerID: testPeer2, PID: 77, Alive: true, Repo: "/tmp/d/node31", Error: "context deadline exceeded"},
		{Index: 2, PID: 78, Repo: "/tmp/d/node2", Error: "not running"},
	}
	text := devnetText(rows)
	checkFits(t, "devnet status", text)
	for _, want := range []string{
		"NODE  PEER ID",
		"\n0     " + testPeer + "  yes    31     999999999999  999999999999\n    pid 4194304; repo " + repo + "\n",
		"\n31    " + testPeer2 + "  yes    -",
		"\n    pid 77; repo /tmp/d/node31\n    its API did not answer: context deadline exceeded\n",
		"\n2     -",
		"no     -",
		"\n    pid 78; repo /tmp/d/node2\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("devnet status says no %q:\n%s", want, text)
		}
	}
}
