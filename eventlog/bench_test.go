package eventlog

import (
	"bytes"
	"crypto/ed25519"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/hdevalence/ed25519consensus"

	"github.com/wats-network/wats/core"
)

// benchBody is a typical small body (~200 bytes).
const benchBody = `{"text":"a note of a typical size, with some words in it","n":42,"tags":["x","y"],"nested":{"a":[1.5,2,3],"b":null}}`

func benchEvents(b *testing.B, n int) ([]*Event, []jsontext.Value) {
	key := testKey(b, 1)
	evs := make([]*Event, n)
	raws := make([]jsontext.Value, n)
	for i := range evs {
		evs[i] = mustNew(b, key, testNow, "note", fmt.Sprintf(`{"i":%d,"body":%s}`, i, benchBody), nil)
		raws[i], _ = evs[i].Marshal()
	}
	return evs, raws
}

func reportEventsPerSec(b *testing.B, perOp int) {
	b.ReportMetric(float64(b.N*perOp)/b.Elapsed().Seconds(), "events/s")
}

func BenchmarkNew(b *testing.B) {
	key := testKey(b, 1)
	body := jsontext.Value(benchBody)
	for b.Loop() {
		if _, err := New(key, testNow, "note", body, nil); err != nil {
			b.Fatal(err)
		}
	}
	reportEventsPerSec(b, 1)
}

func BenchmarkDecode(b *testing.B) {
	_, raws := benchEvents(b, 1)
	for b.Loop() {
		if _, err := Decode(raws[0]); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeFast: an event in the simple form (the bench's body
// without its one fraction) through Decode, which takes the fast path,
// against the general path on the same bytes, its anchor.
func BenchmarkDecodeFast(b *testing.B) {
	body := strings.Replace(benchBody, "1.5", "15", 1)
	raw := mustNew(b, testKey(b, 1), testNow, "note", body, blobsN(1)).mustMarshal(b)
	if decodeFast(raw) == nil {
		b.Fatal("not in the simple form")
	}
	for _, c := range []struct {
		name   string
		decode func([]byte) (*Event, error)
	}{{"fast", Decode}, {"general", decodeGeneral}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.decode(raw); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkVerify(b *testing.B) {
	evs, _ := benchEvents(b, 1)
	for b.Loop() {
		if err := evs[0].Verify(testNow); err != nil {
			b.Fatal(err)
		}
	}
	reportEventsPerSec(b, 1)
}

// BenchmarkDecodeVerify is what a node does per received event.
func BenchmarkDecodeVerify(b *testing.B) {
	_, raws := benchEvents(b, 1)
	for b.Loop() {
		e, err := Decode(raws[0])
		if err != nil {
			b.Fatal(err)
		}
		if err := e.Verify(testNow); err != nil {
			b.Fatal(err)
		}
	}
	reportEventsPerSec(b, 1)
}

// BenchmarkEd25519Verify is the floor: the signature check alone.
func BenchmarkEd25519Verify(b *testing.B) {
	priv := ed25519.NewKeyFromSeed(make([]byte, 32))
	msg := bytes.Repeat([]byte("m"), 300)
	sig := ed25519.Sign(priv, msg)
	pub := priv.Public().(ed25519.PublicKey)
	for b.Loop() {
		if !ed25519.Verify(pub, msg, sig) {
			b.Fatal("bad")
		}
	}
}

func BenchmarkVerifyBatch256(b *testing.B) {
	_, raws := benchEvents(b, 256)
	for b.Loop() {
		ok, rej := VerifyBatch(raws, testNow)
		if len(ok) != 256 || len(rej) != 0 {
			b.Fatal(rej)
		}
	}
	reportEventsPerSec(b, 256)
}

// BenchmarkAppend256 appends batches of 256 new events to a pebble DB on
// disk, each batch synced.
func BenchmarkAppend256(b *testing.B) {
	db, err := pebble.Open(b.TempDir(), testOptions(nil))
	if err != nil {
		b.Fatal(err)
	}
	defer func() { db.Close() }()
	l := openLog(b, db)
	key := testKey(b, 1)
	// Pre-sign enough distinct events outside the timer.
	const maxBatches = 40
	var batches [][]*Event
	for i := range maxBatches {
		evs := make([]*Event, 256)
		for j := range evs {
			evs[j] = mustNew(b, key, testNow, "note", fmt.Sprintf(`{"i":%d,"body":%s}`, i*256+j, benchBody), nil)
		}
		batches = append(batches, evs)
	}
	i := 0
	for b.Loop() {
		if i == maxBatches {
			b.StopTimer()
			db.Close()
			db, _ = pebble.Open(b.TempDir(), testOptions(nil))
			l = openLog(b, db)
			i = 0
			b.StartTimer()
		}
		added, err := l.Append(batches[i])
		if err != nil || len(added) != 256 {
			b.Fatal(len(added), err)
		}
		i++
	}
	reportEventsPerSec(b, 256)
}

func BenchmarkPage256(b *testing.B) {
	l := openLog(b, memDB(b))
	evs, _ := benchEvents(b, 1024)
	if _, err := l.Append(evs); err != nil {
		b.Fatal(err)
	}
	after := core.Cursor(0)
	for b.Loop() {
		page, next, _, err := l.Page(after, 256, 4<<20)
		if err != nil || len(page) != 256 {
			b.Fatal(len(page), err)
		}
		after = next % 1024
	}
	reportEventsPerSec(b, 256)
}

// BenchmarkEd25519VerifyParallel is the floor for VerifyBatch: signature
// checks alone on all cores.
func BenchmarkEd25519VerifyParallel(b *testing.B) {
	priv := ed25519.NewKeyFromSeed(make([]byte, 32))
	msg := bytes.Repeat([]byte("m"), 300)
	sig := ed25519.Sign(priv, msg)
	pub := priv.Public().(ed25519.PublicKey)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if !ed25519.Verify(pub, msg, sig) {
				b.Error("bad")
			}
		}
	})
	reportEventsPerSec(b, 1)
}

// BenchmarkAddOneByOne and BenchmarkAddConcurrent store single events on
// disk, each durable when Add returns: one caller at a time (one sync per
// event: what a node did with gossip before group commit), and 64 callers
// at once (gossip's validators), whose Adds share syncs (ADR 0031). The
// ratio of their events/s is what group commit buys; commits/op says how
// many syncs an event cost.
func BenchmarkAddOneByOne(b *testing.B)   { benchAdd(b, 1) }
func BenchmarkAddConcurrent(b *testing.B) { benchAdd(b, 64) }

func benchAdd(b *testing.B, callers int) {
	db, err := pebble.Open(b.TempDir(), testOptions(nil))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	l := openLog(b, db)
	key := testKey(b, 1)
	evs := make([]*Event, b.N)
	for i := range evs {
		evs[i] = mustNew(b, key, testNow, "note", fmt.Sprintf(`{"i":%d,"body":%s}`, i, benchBody), nil)
	}
	var next atomic.Int64
	b.ResetTimer()
	var wg sync.WaitGroup
	for range callers {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= int64(len(evs)) {
					return
				}
				if ok, err := l.Add(evs[i]); !ok || err != nil {
					b.Error(ok, err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	reportEventsPerSec(b, 1)
	b.ReportMetric(float64(l.Commits())/float64(b.N), "commits/op")
}

// benchPage is a 256-event page by 16 authors, as `wats bench sync` fills.
func benchPage(b *testing.B) []jsontext.Value {
	raws := make([]jsontext.Value, 256)
	for i := range raws {
		e := mustNew(b, testKey(b, byte(1+i%16)), testNow, "note", fmt.Sprintf(`{"i":%d,"body":%s}`, i, benchBody), nil)
		raws[i], _ = e.Marshal()
	}
	return raws
}

// verifyPageSingly verifies a page as VerifyBatch did before ADR 0034:
// each event on its own (decode, checks, one signature check by sigOK) on
// GOMAXPROCS workers that take indexes from a shared counter.
func verifyPageSingly(b *testing.B, raws []jsontext.Value, sigOK func(in *sigInput, msg []byte) bool) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			var buf []byte
			for {
				i := int(next.Add(1) - 1)
				if i >= len(raws) {
					return
				}
				e, err := Decode(raws[i])
				var in sigInput
				if err == nil {
					buf, err = e.checkAllButSignature(testNow, buf[:0], &in, nil, false)
				}
				if err != nil || !sigOK(&in, buf) {
					b.Error("event", i, err)
				}
			}
		})
	}
	wg.Wait()
}

func stdlibSigOK(in *sigInput, msg []byte) bool { return ed25519.Verify(in.pub[:], msg, in.sig[:]) }

// BenchmarkVerifyPage compares three ways of verifying a 256-event page by
// 16 authors on all cores: VerifyBatch (a ZIP 215 batch a worker, ADR
// 0034), one signature at a time under the rule (verifySignature), and
// one at a time with crypto/ed25519 alone (the check before ADR 0034).
// docs/performance.md runs the three in turn, several rounds.
func BenchmarkVerifyPage(b *testing.B) {
	raws := benchPage(b)
	b.Run("batch", func(b *testing.B) {
		for b.Loop() {
			if ok, rej := VerifyBatch(raws, testNow); len(ok) != len(raws) || len(rej) != 0 {
				b.Fatal(rej)
			}
		}
		reportEventsPerSec(b, len(raws))
	})
	b.Run("single", func(b *testing.B) {
		for b.Loop() {
			verifyPageSingly(b, raws, verifySignature)
		}
		reportEventsPerSec(b, len(raws))
	})
	b.Run("single-stdlib", func(b *testing.B) {
		for b.Loop() {
			verifyPageSingly(b, raws, stdlibSigOK)
		}
		reportEventsPerSec(b, len(raws))
	})
}

// BenchmarkSignatures256 is the signature checks alone, 256 of them by 16
// keys on one core: one ZIP 215 batch (batchVerify, one term per key),
// the same with ed25519consensus.BatchVerifier (one term per signature),
// one at a time under the rule (verifySignature: crypto/ed25519 first),
// with ed25519consensus.Verify alone, with crypto/ed25519 alone. us/sig
// is per signature.
func BenchmarkSignatures256(b *testing.B) {
	ins := make([]sigInput, 256)
	msgs := make([][]byte, 256)
	for i := range ins {
		priv := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{byte(i % 16)}, 32))
		msgs[i] = []byte(fmt.Sprintf("wats-event-v1:%d %s", i, benchBody))
		ins[i] = sigInput{pub: [32]byte(priv.Public().(ed25519.PublicKey)), sig: [64]byte(ed25519.Sign(priv, msgs[i]))}
	}
	perSig := func(b *testing.B) {
		b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*len(ins)), "us/sig")
	}
	b.Run("batch", func(b *testing.B) {
		valid := make([]bool, len(ins))
		for b.Loop() {
			verifySignatures(ins, msgs, valid)
		}
		perSig(b)
	})
	b.Run("batch-ed25519consensus", func(b *testing.B) {
		for b.Loop() {
			if !refBatch(ins, msgs) {
				b.Fatal("batch fails")
			}
		}
		perSig(b)
	})
	for _, single := range []struct {
		name string
		ok   func(in *sigInput, msg []byte) bool
	}{
		{"single", verifySignature},
		{"single-ed25519consensus", func(in *sigInput, msg []byte) bool {
			return ed25519consensus.Verify(in.pub[:], msg, in.sig[:])
		}},
		{"single-stdlib", stdlibSigOK},
	} {
		b.Run(single.name, func(b *testing.B) {
			for b.Loop() {
				for i := range ins {
					if !single.ok(&ins[i], msgs[i]) {
						b.Fatal("a signature fails")
					}
				}
			}
			perSig(b)
		})
	}
}
