package eventlog

import (
	"encoding/hex"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// sumsLog returns a log holding events whose ids are at, next to and
// between the buckets' boundaries of the fingerprint sums, and many at
// random, and those ids in ascending order. The events carry one
// signature each, not theirs: Append checks only an id's form, and a
// fingerprint reads only ids.
func sumsLog(t *testing.T, random int) (*Log, []string) {
	t.Helper()
	l := openLog(t, memDB(t))
	e0 := mustNew(t, testKey(t, 3), testNow, "note", `{"x":1}`, nil)
	set := map[[32]byte]bool{}
	for _, b := range []int{0, 1, 2, 100, 101, 102, sumBuckets - 2, sumBuckets - 1} {
		start := bucketStart(b)
		set[start] = true
		next := start
		next[31] = 1
		set[next] = true
		last := start
		last[1] |= 0x0f
		for i := 2; i < 32; i++ {
			last[i] = 0xff
		}
		set[last] = true
	}
	rng := rand.New(rand.NewPCG(7, 11))
	for range random {
		var id [32]byte
		for i := range id {
			id[i] = byte(rng.Uint32())
		}
		if rng.IntN(4) == 0 { // crowd a few buckets
			id[0], id[1] = 0, id[1]&0x1f
		}
		set[id] = true
	}
	var evs []*Event
	var ids []string
	for id := range set {
		e := clone(e0)
		e.ID = hex.EncodeToString(id[:])
		evs, ids = append(evs, e), append(ids, e.ID)
	}
	rng.Shuffle(len(evs), func(i, j int) { evs[i], evs[j] = evs[j], evs[i] })
	for len(evs) > 0 { // several commits
		k := min(len(evs), 1+rng.IntN(700))
		if _, err := l.Append(evs[:k]); err != nil {
			t.Fatal(err)
		}
		evs = evs[k:]
	}
	slices.Sort(ids)
	return l, ids
}

// countIDs is Fingerprint by counting ids (ascending): the reference its
// sums must equal.
func countIDs(ids []string, from, to string, max int) (count int, sum [32]byte, more bool) {
	i, _ := slices.BinarySearch(ids, from)
	for ; i < len(ids) && (to == "" || ids[i] < to); i++ {
		if count == max {
			return count, sum, true
		}
		raw, _ := hex.DecodeString(ids[i])
		AddID(&sum, [32]byte(raw))
		count++
	}
	return count, sum, false
}

// TestFingerprintBySums: Fingerprint, which adds up the sums of the
// buckets a range holds whole (ADR 0055), answers as counting every id of
// the range does, for ranges from and to bucket boundaries, ids and the
// points next to them, within one bucket and across many, to the end of
// the space or not, with max under, at and past the range's count; and a
// log opened again on the same store (its sums built by the scan of Open,
// not by the commits) answers the same.
func TestFingerprintBySums(t *testing.T) {
	l, ids := sumsLog(t, 4000)
	again := openLog(t, l.db)
	rng := rand.New(rand.NewPCG(3, 5))
	point := func() string {
		switch rng.IntN(5) {
		case 0:
			b := bucketStart(rng.IntN(sumBuckets))
			if rng.IntN(3) == 0 {
				b = bucketStart([]int{0, 1, 2, 101, sumBuckets - 1}[rng.IntN(5)])
			}
			return hex.EncodeToString(b[:])
		case 1:
			return nextID(t, ids[rng.IntN(len(ids))])
		case 2:
			var b [32]byte
			for i := range b {
				b[i] = byte(rng.Uint32())
			}
			return hex.EncodeToString(b[:])
		}
		return ids[rng.IntN(len(ids))]
	}
	zero := strings.Repeat("0", 64)
	for trial := range 3000 {
		from, to := point(), point()
		switch {
		case trial%7 == 0:
			from = zero
		case trial%5 == 0:
			to = ""
		}
		if to != "" && to <= from {
			from, to = to, from
			if to == from {
				continue
			}
		}
		n, _, _ := countIDs(ids, from, to, len(ids))
		max := []int{1, 2, 7, 300, max(n-1, 1), max(n, 1), n + 1, 1 + rng.IntN(len(ids))}[rng.IntN(8)]
		wn, wsum, wmore := countIDs(ids, from, to, max)
		for _, lg := range []*Log{l, again} {
			gn, gsum, gmore, err := lg.Fingerprint(from, to, max)
			if err != nil || gn != wn || gsum != wsum || gmore != wmore {
				t.Fatalf("[%s, %q) max %d: %d, more %v, %v; want %d, more %v (sums equal %v)",
					from, to, max, gn, gmore, err, wn, wmore, gsum == wsum)
			}
		}
	}
	// The whole space, at and past the log's count.
	if n, _, more, _ := l.Fingerprint(zero, "", len(ids)); n != len(ids) || more {
		t.Fatalf("whole space at its count: %d, more %v", n, more)
	}
	if n, _, more, _ := l.Fingerprint(zero, "", len(ids)-1); n != len(ids)-1 || !more {
		t.Fatalf("whole space one under its count: %d, more %v", n, more)
	}
}
