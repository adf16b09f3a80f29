package node

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/sstable/block"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/wats-network/wats/core"
	"github.com/wats-network/wats/eventlog"
	"github.com/wats-network/wats/repo"
	"github.com/wats-network/wats/store"
)

// damagedRepo returns a stopped node's repo whose database holds events
// and a blob in sstables (flushed), with damage applied to its files.
func damagedRepo(t *testing.T, damage func(t *testing.T, dbDir string)) *repo.Repo {
	t.Helper()
	r := mustRepo(t)
	n, err := newOnRepo(r, Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 300 {
		// The body names i: two events of one body in one millisecond
		// would be one event (the same id), and the count would fall short.
		body := fmt.Sprintf(`{"n":%d,"pad":"%s"}`, i, strings.Repeat("1", 1+i%5))
		if _, err := n.AddEvent(context.Background(), "note", []byte(body), nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := n.blobs.Import(context.Background(), bytes.NewReader(bytes.Repeat([]byte("blob "), 100_000))); err != nil {
		t.Fatal(err)
	}
	n.Close()
	opts := store.PebbleOptions(quietLogger(), "")
	opts.DisableAutomaticCompactions = true // keep the two tables apart
	db, err := pebble.Open(r.DBPath(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	// A second, smaller table: 100 more events.
	l, err := eventlog.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	var more []*eventlog.Event
	for i := range 100 {
		ev, err := eventlog.New(r.Key, time.Now(), "note", jsontext.Value(fmt.Sprintf(`{"more":%d}`, i)), nil)
		if err != nil {
			t.Fatal(err)
		}
		more = append(more, ev)
	}
	if _, err := l.Append(more); err != nil {
		t.Fatal(err)
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	db.Close()
	damage(t, r.DBPath())
	return r
}

// largestFile returns the largest file of dir matching the glob pattern.
func largestFile(t *testing.T, dir, pattern string) string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, pattern))
	if len(files) == 0 {
		t.Fatalf("no %s in %s", pattern, dir)
	}
	sort.Slice(files, func(i, j int) bool {
		a, _ := os.Stat(files[i])
		b, _ := os.Stat(files[j])
		return a.Size() > b.Size()
	})
	return files[0]
}

// damages are the damage kinds of TestDamagedDatabase, with the events
// (of 400: 300 in a larger table, 100 in a smaller) and blobs (of 1) a
// repair keeps: at least minKept events, at
// most maxKept.
var damages = map[string]struct {
	apply            func(t *testing.T, dbDir string)
	minKept, maxKept int
	blobKept         bool
	// opens: the database opens, and pebble finds the damage when it
	// reads it (store.Logger.Fatalf then stops the node: tested apart).
	opens bool
}{
	// The larger table (300 events and the blob's keys) is lost whole.
	"truncated sstable": {func(t *testing.T, dbDir string) {
		f := largestFile(t, dbDir, "*.sst")
		fi, _ := os.Stat(f)
		if err := os.Truncate(f, fi.Size()/2); err != nil {
			t.Fatal(err)
		}
	}, 100, 100, false, false},
	// One or two data blocks are lost; the rest is read.
	"zeroed run in an sstable": {func(t *testing.T, dbDir string) {
		f := largestFile(t, dbDir, "*.sst")
		b, _ := os.ReadFile(f)
		for i := len(b) / 4; i < len(b)/4+4096 && i < len(b); i++ {
			b[i] = 0
		}
		if err := os.WriteFile(f, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}, 300, 399, true, true},
	// Every table is read as a file: every event is kept; the blob's
	// leaves, in blob files only the MANIFEST ties to keys, are not.
	"zeroed MANIFEST": {func(t *testing.T, dbDir string) {
		f := largestFile(t, dbDir, "MANIFEST-*")
		fi, _ := os.Stat(f)
		if err := os.WriteFile(f, make([]byte, fi.Size()), 0o600); err != nil {
			t.Fatal(err)
		}
	}, 400, 400, false, false},
}

// TestDamagedDatabase: for each damage kind, on a stopped node's repo:
// New refuses with an error naming the repo and what to do, or (damage
// that opening does not read) store.Check finds it; store.Check reports it;
// store.Repair moves the database aside, keeps what can be read (events
// verified, the blob whole), and the node then starts on the new one.
// The undamaged repo checks clean.
func TestDamagedDatabase(t *testing.T) {
	clean := damagedRepo(t, func(*testing.T, string) {})
	if rep, err := store.Check(clean, time.Now()); err != nil || rep.Damaged() || rep.EventsGood != 400 || rep.Blobs != 1 || rep.Scanned == 0 {
		t.Fatalf("an undamaged repo: %+v, %v", rep, err)
	}
	for name, d := range damages {
		t.Run(name, func(t *testing.T) {
			r := damagedRepo(t, d.apply)
			if !d.opens {
				_, err := newOnRepo(r, Options{Logger: quietLogger()})
				var de *store.DamagedError
				if !errors.As(err, &de) || !errors.Is(err, store.ErrDamaged) {
					t.Fatalf("New on a damaged repo: %v (%T), want a DamagedError", err, err)
				}
				for _, want := range []string{r.Dir, "identity key and config.toml are intact", "wats repo check --repo " + r.Dir, "wats repo repair --repo " + r.Dir} {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("the error does not say %q:\n%v", want, err)
					}
				}
			}
			rep, err := store.Check(r, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			if rep.Opened != d.opens {
				t.Errorf("store.Check: opened %v, want %v", rep.Opened, d.opens)
			}
			if !rep.Damaged() {
				t.Fatalf("store.Check found nothing damaged: %+v", rep)
			}
			t.Logf("check: %+v", rep)

			fixed, err := store.Repair(r, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("repair: kept %d events, %d blobs; moved to %s", fixed.EventsKept, fixed.BlobsKept, fixed.MovedTo)
			if fixed.EventsKept < d.minKept || fixed.EventsKept > d.maxKept || (fixed.BlobsKept == 1) != d.blobKept {
				t.Errorf("repair kept %d events and %d blobs; want %d..%d events, the blob %v",
					fixed.EventsKept, fixed.BlobsKept, d.minKept, d.maxKept, d.blobKept)
			}
			if _, err := os.Stat(fixed.MovedTo); err != nil {
				t.Errorf("the damaged database is not at %s: %v", fixed.MovedTo, err)
			}
			if rep2, err := store.Check(r, time.Now()); err != nil || rep2.Damaged() || rep2.EventsGood != uint64(fixed.EventsKept) || rep2.Blobs != fixed.BlobsKept {
				t.Errorf("after repair: %+v, %v; want clean, %d events, %d blobs", rep2, err, fixed.EventsKept, fixed.BlobsKept)
			}
			n, err := newOnRepo(r, Options{Logger: quietLogger()})
			if err != nil {
				t.Fatalf("New after repair: %v", err)
			}
			if got := n.Events().Head(); got != core.Cursor(fixed.EventsKept) {
				t.Errorf("the repaired log holds %d events, want %d", got, fixed.EventsKept)
			}
			n.Close()
		})
	}
}

// TestDamagedBlockAnywhere: a damaged data block wherever it is in the
// larger table (the blob's records, the id index the log reads as it
// opens, the events): the check does not stop at it and reports it, and
// the repair keeps every event outside it. A block of the id index once
// made the check panic (the log's open read it outside any recovery), and
// the repair then kept nothing of the table; the events are now read from
// the tables, past the damaged block.
func TestDamagedBlockAnywhere(t *testing.T) {
	var blocks int
	damagedRepo(t, func(t *testing.T, dbDir string) { blocks = len(dataBlocks(t, largestFile(t, dbDir, "*.sst"))) })
	if blocks < 8 {
		t.Fatalf("the larger table has %d data blocks; the test wants a spread", blocks)
	}
	// The first, the last and every fourth: each repo costs a node's run.
	for i := 0; i < blocks; i++ {
		if i%4 != 0 && i != blocks-1 {
			continue
		}
		t.Run(fmt.Sprint("block ", i), func(t *testing.T) {
			r := damagedRepo(t, func(t *testing.T, dbDir string) {
				f := largestFile(t, dbDir, "*.sst")
				h := dataBlocks(t, f)[i]
				b, _ := os.ReadFile(f)
				clear(b[h.Offset : h.Offset+h.Length])
				if err := os.WriteFile(f, b, 0o600); err != nil {
					t.Fatal(err)
				}
			})
			rep, err := store.Check(r, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			if !rep.Damaged() {
				t.Fatalf("store.Check found nothing damaged: %+v", rep)
			}
			fixed, err := store.Repair(r, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			// A data block holds at most about 4 KiB of events of about 300
			// bytes: 20 is past what one can hold.
			if fixed.EventsKept < 400-20 {
				t.Errorf("repair kept %d events of 400", fixed.EventsKept)
			}
			n, err := newOnRepo(r, Options{Logger: quietLogger()})
			if err != nil {
				t.Fatalf("New after repair: %v", err)
			}
			defer n.Close()
			if got := n.Events().Head(); got != core.Cursor(fixed.EventsKept) {
				t.Errorf("the repaired log holds %d events, want %d", got, fixed.EventsKept)
			}
		})
	}
}

// dataBlocks returns the handles of the data blocks of the sstable f.
func dataBlocks(t *testing.T, f string) []block.Handle {
	t.Helper()
	file, err := vfs.Default.Open(f)
	if err != nil {
		t.Fatal(err)
	}
	readable, err := sstable.NewSimpleReadable(file)
	if err != nil {
		t.Fatal(err)
	}
	r, err := sstable.NewReader(context.Background(), readable, sstable.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	l, err := r.Layout()
	if err != nil {
		t.Fatal(err)
	}
	hs := make([]block.Handle, len(l.Data))
	for i, d := range l.Data {
		hs[i] = d.Handle
	}
	return hs
}
