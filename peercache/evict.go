package peercache

import (
	"cmp"
	"net/netip"
	"slices"
	"strings"

	"github.com/cockroachdb/pebble/v2"
	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"
)

// Eviction by value (ADR 0030, after Bitcoin Core's eviction of inbound
// connections): when the cache is full, a record is not simply the least
// recently seen one out. Several independent traits each protect a share of
// the records, so that an attacker must beat the real peers on all of them
// at once to push them out:
//
//   - the longest known (earliest FirstSeen): an attacker cannot make its
//     ids old;
//   - the most useful (most events and blob bytes given);
//   - the most recently useful (latest LastUseful);
//   - the most recently seen record of each distinct address group (IPv4
//     /16, IPv6 /32) of the address the node saw it connect from
//     (Record.RemoteAddr; for older records, the first IP address it
//     claimed): ids made on one machine share a group, whatever their
//     hellos claim.
//
// Each trait protects protectedShare of the capacity (an eighth), so at
// most half the records are protected; among the others, the least
// recently seen go first (then the earliest first seen, then the lowest
// id, for a total order). When the cache is full, a batch of
// evictionBatch records is evicted at once, so that the O(n log n) choice
// is paid once per batch, not per record.

// protectedShare is the share of the capacity each trait protects.
const protectedShare = 8

// evictionBatch is how many records one eviction removes when the cache is
// full: a 64th of the capacity, at least one.
func evictionBatch(capacity int) int { return max(1, capacity/64) }

// evictLocked removes the k least valuable records (all of them if there
// are fewer) and adds their deletions to b.
//
// REQUIRES: c.mu held, c.writeMu held (or Open).
func (c *Cache) evictLocked(b *pebble.Batch, k int) {
	all := make([]*entry, 0, len(c.mu.records))
	for _, e := range c.mu.records {
		all = append(all, e)
	}
	for _, e := range chooseEvictions(all, k, c.opts.MaxPeers/protectedShare) {
		c.removeLocked(e)
		c.mu.evicted++
		// A Delete into a batch fails only for a closed or read-only batch.
		_ = b.Delete(key(e.id), nil)
	}
}

// chooseEvictions returns the k entries of all to evict: the least recently
// seen of those no trait protects, each trait protecting its best n. If
// the protected leave fewer than k, the least recently seen protected ones
// make up the rest. all is reordered.
func chooseEvictions(all []*entry, k, n int) []*entry {
	if k <= 0 {
		return nil
	}
	if k >= len(all) {
		return all
	}
	protected := make(map[*entry]bool, 4*n)
	top := func(cmpFn func(a, b *entry) int, keep func(*entry) bool) {
		slices.SortFunc(all, cmpFn)
		taken := 0
		for _, e := range all {
			if taken == n {
				return
			}
			if keep == nil || keep(e) {
				protected[e] = true
				taken++
			}
		}
	}
	if n > 0 {
		// Longest known.
		top(func(a, b *entry) int { return cmp.Or(a.rec.FirstSeen.Compare(b.rec.FirstSeen), byID(a, b)) }, nil)
		// Most useful.
		top(func(a, b *entry) int { return cmp.Or(cmp.Compare(usefulness(b), usefulness(a)), byID(a, b)) },
			func(e *entry) bool { return usefulness(e) > 0 })
		// Most recently useful.
		top(func(a, b *entry) int { return cmp.Or(b.rec.LastUseful.Compare(a.rec.LastUseful), byID(a, b)) },
			func(e *entry) bool { return !e.rec.LastUseful.IsZero() })
		// The most recently seen of each address group, up to n groups.
		slices.SortFunc(all, func(a, b *entry) int { return -compareSeen(a, b) })
		groups := make(map[string]bool, n)
		for _, e := range all {
			if len(groups) == n {
				break
			}
			if g := recordGroup(&e.rec); g != "" && !groups[g] {
				groups[g] = true
				protected[e] = true
			}
		}
	}
	// Least recently seen first; the unprotected before the protected.
	slices.SortFunc(all, func(a, b *entry) int {
		if pa, pb := protected[a], protected[b]; pa != pb {
			if pa {
				return 1
			}
			return -1
		}
		return compareSeen(a, b)
	})
	return all[:k]
}

// usefulness is what a peer gave: events, and blob bytes at one per 64 KiB.
func usefulness(e *entry) uint64 { return e.rec.Events + e.rec.Bytes/(64<<10) }

func byID(a, b *entry) int { return strings.Compare(string(a.id), string(b.id)) }

// compareSeen orders entries by how recently they were seen: LastSeen, then
// FirstSeen, then ID (a total, deterministic order). Negative: a was seen
// less recently than b.
func compareSeen(a, b *entry) int { return seenOrder(&a.rec, a.id, &b.rec, b.id) }

// seenOrder is compareSeen on records and their ids.
func seenOrder(a *Record, aid peer.ID, b *Record, bid peer.ID) int {
	return cmp.Or(a.LastSeen.Compare(b.LastSeen), a.FirstSeen.Compare(b.FirstSeen), strings.Compare(string(aid), string(bid)))
}

// recordGroup is the address group of r: its RemoteAddr's, observed by the
// node; for a record without one, its claimed Addrs'.
func recordGroup(r *Record) string {
	if r.RemoteAddr != "" {
		return addrGroup([]string{r.RemoteAddr})
	}
	return addrGroup(r.Addrs)
}

// addrGroup is the address group of addrs, from the first IP address:
// the IPv4 /16 or the IPv6 /32 (an operator gets addresses in such blocks,
// so the ids of one machine or one provider share a group); "" when it has
// no IP address.
func addrGroup(addrs []string) string {
	for _, s := range addrs {
		a, err := ma.NewMultiaddr(s)
		if err != nil {
			continue
		}
		for _, code := range []int{ma.P_IP4, ma.P_IP6} {
			v, err := a.ValueForProtocol(code)
			if err != nil {
				continue
			}
			ip, err := netip.ParseAddr(v)
			if err != nil {
				continue
			}
			bits := 16
			if ip.Is6() && !ip.Is4In6() {
				bits = 32
			}
			pfx, err := ip.Prefix(bits)
			if err != nil {
				continue
			}
			return pfx.String()
		}
	}
	return ""
}
