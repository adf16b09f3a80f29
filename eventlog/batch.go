package eventlog

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-json-experiment/json/jsontext"
)

// VerifyBatch decodes and verifies raws concurrently, on GOMAXPROCS workers
// (sync catch-up verifies whole pages; docs/design.md §5). ok holds the events that
// passed, in input order; rejected holds one *BatchError per event that did
// not, in input order, giving its index in raws and the reason (a
// *ValidationError, so errors.Is(err, ErrBadSignature) and the like work).
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
	events := make([]*Event, len(raws))
	errs := make([]error, len(raws))
	var dupCount atomic.Int64
	one := func(i int) {
		e, err := Decode(raws[i])
		if err == nil && known != nil && known(e.ID) {
			dupCount.Add(1)
			return
		}
		if err == nil {
			err = e.Verify(now)
		}
		if err != nil {
			errs[i] = &BatchError{Index: i, Err: err}
			return
		}
		events[i] = e
	}
	workers := min(runtime.GOMAXPROCS(0), len(raws))
	if workers <= 1 {
		for i := range raws {
			one(i)
		}
	} else {
		// Workers take indexes from a shared counter, so that a slow event
		// (a large body) does not hold up a fixed share of the batch.
		var next atomic.Int64
		var wg sync.WaitGroup
		for range workers {
			wg.Go(func() {
				for {
					i := int(next.Add(1) - 1)
					if i >= len(raws) {
						return
					}
					one(i)
				}
			})
		}
		wg.Wait()
	}
	ok = make([]*Event, 0, len(raws))
	for i, e := range events {
		switch {
		case e != nil:
			ok = append(ok, e)
		case errs[i] != nil:
			rejected = append(rejected, errs[i])
		}
	}
	return ok, int(dupCount.Load()), rejected
}
