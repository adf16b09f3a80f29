package eventlog

import (
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-json-experiment/json/jsontext"
)

// VerifyBatch decodes and verifies raws on GOMAXPROCS workers (sync
// catch-up verifies whole pages; docs/design.md §5). Each worker takes a
// contiguous share of raws, checks everything of Verify but the signature
// event by event, then checks its share's signatures as one Ed25519 batch
// under ZIP 215, and one at a time only when the batch fails, to find the
// bad ones (ADR 0034). The verdict on each event is Verify's. ok holds the
// events that passed, in input order; rejected holds one *BatchError per
// event that did not, in input order, giving its index in raws and the
// reason (a *ValidationError, so errors.Is(err, ErrBadSignature) and the
// like work).
func VerifyBatch(raws []jsontext.Value, now time.Time) (ok []*Event, rejected []error) {
	ok, _, rejected = VerifyNew(raws, now, nil)
	return ok, rejected
}

// VerifyNew is VerifyBatch that skips the signature check of events the
// caller already holds: after decoding, an event whose id known reports is
// counted in dups and left out of ok and rejected. A peer replaying events
// the node has then costs a decode and a lookup each, not a signature
// check. known may be nil (nothing is known) and must be safe for
// concurrent use.
func VerifyNew(raws []jsontext.Value, now time.Time, known func(id string) bool) (ok []*Event, dups int, rejected []error) {
	ok, _, dups, rejected = verifyOn(runtime.GOMAXPROCS(0), raws, now, known, false)
	return ok, dups, rejected
}

// VerifyPage is VerifyNew on the calling goroutine alone: the whole of raws
// is one share, its signatures one batch. For a caller that verifies
// several pages at once, one a goroutine (the sync client keeps GOMAXPROCS
// pages in verification), where a page split across the cores would make
// each core wait for the slower share of every page. It also returns, in
// encoded, each event of ok in the form Log stores (encoded[i] is
// ok[i].Marshal()'s result), made on the goroutine that verified it, for
// Log.AppendEncoded: the sync client's store stage then does not encode
// them (ADR 0038).
func VerifyPage(raws []jsontext.Value, now time.Time, known func(id string) bool) (ok []*Event, encoded [][]byte, dups int, rejected []error) {
	return verifyOn(1, raws, now, known, true)
}

// verifyOn is VerifyNew on at most workers goroutines, encoding the
// events that passed when encode is set.
func verifyOn(workers int, raws []jsontext.Value, now time.Time, known func(id string) bool, encode bool) (ok []*Event, encoded [][]byte, dups int, rejected []error) {
	events := make([]*Event, len(raws))
	errs := make([]error, len(raws))
	var encs [][]byte
	if encode {
		encs = make([][]byte, len(raws))
	}
	var dupCount atomic.Int64
	workers = min(workers, len(raws))
	if workers <= 1 {
		dupCount.Add(int64(verifyShare(raws, 0, now, known, events, errs, encs)))
	} else {
		// Contiguous shares of nearly equal size, one a worker: each is one
		// batch, and a batch costs less per signature the larger it is.
		var wg sync.WaitGroup
		for w := range workers {
			lo, hi := w*len(raws)/workers, (w+1)*len(raws)/workers
			wg.Go(func() {
				var share [][]byte
				if encs != nil {
					share = encs[lo:hi]
				}
				dupCount.Add(int64(verifyShare(raws[lo:hi], lo, now, known, events[lo:hi], errs[lo:hi], share)))
			})
		}
		wg.Wait()
	}
	ok = make([]*Event, 0, len(raws))
	if encode {
		encoded = make([][]byte, 0, len(raws))
	}
	for i, e := range events {
		switch {
		case e != nil:
			ok = append(ok, e)
			if encode {
				encoded = append(encoded, encs[i])
			}
		case errs[i] != nil:
			rejected = append(rejected, errs[i])
		}
	}
	return ok, encoded, int(dupCount.Load()), rejected
}

// share is the scratch space of one worker of VerifyNew, recycled.
type share struct {
	slab   []byte     // the signing bytes of the share's events, one after the other
	ins    []sigInput // keys and signatures of the events whose signature is to check
	msgs   [][]byte   // their signing bytes, within slab
	at     []int      // their indexes in the share
	starts []int      // where each one's signing bytes start in slab
	keys   authorKeys // the share's authors, parsed once
	valid  []bool     // the verdicts
}

var sharePool = sync.Pool{New: func() any { return new(share) }}

// verifyShare verifies raws (indexes base.. of the page) into events and
// errs, which have raws' length, and returns how many known reported.
// With encs (of raws' length too, or nil) it also encodes each event that
// passed in its stored form.
func verifyShare(raws []jsontext.Value, base int, now time.Time, known func(string) bool, events []*Event, errs []error, encs [][]byte) (dups int) {
	sh := sharePool.Get().(*share)
	defer sharePool.Put(sh)
	sh.slab, sh.ins, sh.msgs, sh.at = sh.slab[:0], sh.ins[:0], sh.msgs[:0], sh.at[:0]
	sh.starts = sh.starts[:0]
	if sh.keys == nil {
		sh.keys = authorKeys{}
	}
	clear(sh.keys)
	for i, raw := range raws {
		e, err := Decode(raw)
		if err == nil && known != nil && known(e.ID) {
			dups++
			continue
		}
		var in sigInput
		if err == nil {
			start := len(sh.slab)
			var sb []byte
			if sb, err = e.checkAllButSignature(now, sh.slab, &in, sh.keys, true); err == nil {
				sh.slab = sb
				sh.starts = append(sh.starts, start)
				sh.ins = append(sh.ins, in)
				sh.at = append(sh.at, i)
			}
		}
		if err != nil {
			errs[i] = &BatchError{Index: base + i, Err: err}
			continue
		}
		events[i] = e
	}
	// The slab may have moved while it grew: cut the messages only now.
	for j, start := range sh.starts {
		end := len(sh.slab)
		if j+1 < len(sh.starts) {
			end = sh.starts[j+1]
		}
		sh.msgs = append(sh.msgs, sh.slab[start:end])
	}
	sh.valid = slices.Grow(sh.valid[:0], len(sh.ins))[:len(sh.ins)]
	verifySignatures(sh.ins, sh.msgs, sh.valid)
	for j, i := range sh.at {
		if !sh.valid[j] {
			events[i] = nil
			errs[i] = &BatchError{Index: base + i, Err: errBadSignature()}
			continue
		}
		if encs != nil {
			// Decode left the body canonical (RFC 8785), as Marshal
			// makes it: encoded without canonicalizing it again.
			e := events[i]
			enc, err := e.appendJSON(make([]byte, 0, len(e.Body)+256+len(e.Blobs)*160), e.Body)
			if err != nil {
				events[i], errs[i] = nil, &BatchError{Index: base + i, Err: err}
				continue
			}
			encs[i] = enc
		}
	}
	return dups
}
