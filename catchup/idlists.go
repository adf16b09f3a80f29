package catchup

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/wats-network/wats/core"
	"github.com/wats-network/wats/proto"
)

// Lists of ids for the ranges that differ (ADR 0057), negentropy's leaf
// step. When a shard's fingerprint at a peer differs from this node's, the
// peer is asked for the ids it holds in the shard (proto.MaxListIDs an
// answer, one sync token each) if it serves them
// (proto.FeatureSyncIDLists) and this node holds at least half as many
// ids in it as the peer (listPays); this node compares them with its own
// and fetches only the runs of ids it lacks (fetchRanges). A peer that
// lacks events this node holds, and has none it lacks, costs one list a
// shard and sends no event; ADR 0052 alone fetched each such shard again
// whole.

// ownListIDs bounds the ids of its own this node reads to compare with one
// answer of a peer's list: sixteen answers' worth, 65,536 (as many as a
// fingerprint counts, proto.MaxFingerprintIDs). Past it, this node holds
// over sixteen times the peer's ids in the span listed, and the span is
// fetched whole, as ADR 0052 does.
const ownListIDs = 16 * proto.MaxListIDs

// pagesOf is how many requests fetching n ids by id range takes, a page
// holding at most core.MaxPageEvents events (a responder's byte budget
// may make its pages shorter; this counts full ones). At least 1: a range
// that holds nothing still takes a request to learn it.
func pagesOf(n int) int {
	return max(1, (n+core.MaxPageEvents-1)/core.MaxPageEvents)
}

// listPays reports whether a range that differs is reconciled by the
// peer's list of its ids rather than fetched whole, from the
// fingerprints' counts: the peer's (theirs, at most
// proto.MaxFingerprintIDs) and this node's (ours). It is when this node
// holds at least half as many ids in it as the peer: fetched whole, the
// range would bring as many events again as it brings new ones when the
// peer holds ours, where a list costs some 67 bytes an id, one request
// (a request costs a token, as a page of 256 events does), and then only
// the runs this node lacks (fetchRanges: never more requests than the
// span listed fetched whole). A peer that lacks events this node holds
// and has nothing new lists its ids, and nothing is fetched. Below half,
// most of the range is new here (a shard of a fresh catch-up into which
// gossip brought a few events): fetched whole, as ADR 0052 does.
func listPays(theirs, ours int) bool {
	return 2*ours >= theirs
}

// fetchRanges decides what to fetch of a span of a peer's list of ids:
// theirs, the ids it listed, and ours, this node's in the same span, both
// ascending. The ids of theirs not in ours fall in runs (consecutive in
// theirs); each run is fetched by id range, [first, last+1), of which the
// peer sends the events, all missing here: nothing this node holds is
// received again. Unless the runs take more requests than the span
// listed fetched whole (pagesOf(len(theirs)): a request costs a token as
// a page of 256 events does; a list that interleaves missing and held ids
// one by one, a liar's, say, would take one a missing id): then the runs
// closest together (fewest held ids between them, the leftmost first
// among equals) are merged, one gap after another, until they take no
// more, the held ids between merged runs received again. A list thus
// never costs more requests than its span fetched whole. The ranges are
// ascending, apart, and within [theirs[0], theirs[len-1]+1); none when
// ours holds all of theirs.
func fetchRanges(theirs, ours []string) []proto.IDRange {
	type run struct{ first, last int } // indexes in theirs
	var runs []run
	j := 0
	for i, id := range theirs {
		for j < len(ours) && ours[j] < id {
			j++
		}
		switch {
		case j < len(ours) && ours[j] == id: // held
		case len(runs) > 0 && runs[len(runs)-1].last == i-1:
			runs[len(runs)-1].last = i
		default:
			runs = append(runs, run{i, i})
		}
	}
	pages := 0
	for _, r := range runs {
		pages += pagesOf(r.last - r.first + 1)
	}
	// merged[k]: run k is merged with run k+1 (the gap after it closed).
	merged := make([]bool, len(runs))
	if limit := pagesOf(len(theirs)); pages > limit {
		gaps := make([]int, len(runs)-1) // gap k: between runs k and k+1
		for k := range gaps {
			gaps[k] = k
		}
		held := func(k int) int { return runs[k+1].first - runs[k].last - 1 }
		slices.SortStableFunc(gaps, func(a, b int) int { return cmp.Compare(held(a), held(b)) })
		// first[k] and last[k] are the ends of the merged range run k is
		// the leftmost of; start finds a run's leftmost.
		first, last := make([]int, len(runs)), make([]int, len(runs))
		for k, r := range runs {
			first[k], last[k] = r.first, r.last
		}
		start := func(k int) int {
			for k > 0 && merged[k-1] {
				k--
			}
			return k
		}
		for _, k := range gaps {
			if pages <= limit {
				break
			}
			l, r := start(k), k+1
			pages -= pagesOf(last[l]-first[l]+1) + pagesOf(last[r]-first[r]+1)
			merged[k], last[l] = true, last[r]
			pages += pagesOf(last[l] - first[l] + 1)
		}
	}
	var out []proto.IDRange
	for k := 0; k < len(runs); k++ {
		from := runs[k].first
		for merged[k] {
			k++
		}
		to, _ := nextID(theirs[runs[k].last]) // "" after the last id: the end of the space
		out = append(out, proto.IDRange{From: theirs[from], To: to})
	}
	return out
}

// checkIDList checks an answer to an id list request for the ids of r
// from from (ADR 0057): at most proto.MaxListIDs ids, not none when it
// says more, each 64 digits, in [from, r.To), each above the one before.
// It returns the last id; an error wrapping ErrBadPage otherwise, which
// drops the peer from the catch-up as a bad page does (ADR 0052 §4).
func checkIDList(ids []string, more bool, r proto.IDRange, from string) (last string, err error) {
	switch {
	case len(ids) > proto.MaxListIDs:
		return "", fmt.Errorf("%w: %d ids listed, more than %d", ErrBadPage, len(ids), proto.MaxListIDs)
	case len(ids) == 0 && more:
		return "", fmt.Errorf("%w: an empty id list with more", ErrBadPage)
	}
	for i, id := range ids {
		if len(id) != proto.IDHexLen {
			return "", fmt.Errorf("%w: listed id %d is not %d digits", ErrBadPage, i, proto.IDHexLen)
		}
		if err := checkNextID("listed id %d", i, id, r, from, last); err != nil {
			return "", err
		}
		last = id
	}
	return last, nil
}

// fetchMissing makes this node hold every id sp lists in rng (ADR 0057):
// it asks sp for its ids in rng, an answer at a time, and fetches from sp
// only the runs of them this node lacks (fetchRanges); a span in which
// this node holds over ownListIDs ids is fetched whole. moved, if set, is
// told where the next answer's span starts after each span is fetched.
// Each answer counts as a page toward Client.RunPages.
func (r *spreadRun) fetchMissing(sp *spreadPeer, rng proto.IDRange, moved func(next string)) error {
	for from := rng.From; ; {
		if err := r.countPage(sp); err != nil {
			return err
		}
		resp, err := r.ask(sp, &proto.SyncRequest{Limit: core.MaxPageEvents, IDs: &proto.IDRange{From: from, To: rng.To}, IDList: true})
		if err != nil {
			return err
		}
		s := resp.Sync
		switch {
		case s == nil:
			return fmt.Errorf("%w: answered %q to an id list", ErrBadPage, resp.Type)
		case len(s.Events) > 0:
			return fmt.Errorf("%w: %d events answered to an id list", ErrBadPage, len(s.Events))
		}
		last, err := checkIDList(s.IDs, s.More, rng, from)
		if err != nil {
			return err
		}
		end := rng.To // the span listed: [from, end)
		if s.More {
			next, ok := nextID(last)
			if !ok {
				return fmt.Errorf("%w: more ids listed after the last id", ErrBadPage)
			}
			end = next
		}
		ours, over, err := r.c.o.Log.IDs(from, end, ownListIDs)
		if err != nil {
			return fmt.Errorf("catchup: own ids: %w", err)
		}
		fetch := []proto.IDRange{{From: from, To: end}}
		if !over {
			fetch = fetchRanges(s.IDs, ours)
		}
		for _, f := range fetch {
			if err := r.fetch(sp, f, nil); err != nil {
				return err
			}
		}
		if !s.More {
			return nil
		}
		if moved != nil {
			moved(end)
		}
		from = end
	}
}
