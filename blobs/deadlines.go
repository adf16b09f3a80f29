package blobs

import (
	"container/heap"
	"time"
)

// deadlines is a set of keys, each with a time and a value, ordered by
// time: a map from key to item and a min-heap of the same items
// (container/heap), kept in step. It is the one such structure of the
// package: the Backoff keeps its providers in one (the time is the end of
// the skip), the Scheduler its waiting retries (the time is when each is
// due). No library does this (golang-lru orders by use, not by a time that
// each update moves), so it is ours, once.
//
// Operations are O(log n) but get and len, which are O(1). The zero value
// is empty and ready to use. It is not safe for concurrent use: its owner
// holds a lock.
type deadlines[K comparable, V any] struct {
	// INVARIANT: byKey and heap hold the same items; heap is a min-heap on
	// at, and item.index is an item's position in it.
	byKey map[K]*deadline[K, V]
	heap  deadlineHeap[K, V]
}

// deadline is one item of a deadlines set.
type deadline[K comparable, V any] struct {
	key   K
	at    time.Time
	val   V
	index int
}

// len returns how many keys the set holds.
func (d *deadlines[K, V]) len() int { return len(d.heap) }

// get returns k's item, or nil. The caller may change the item's val in
// place; a change of at must go through set.
func (d *deadlines[K, V]) get(k K) *deadline[K, V] { return d.byKey[k] }

// set gives k the time at and the value val, adding k if it is new.
func (d *deadlines[K, V]) set(k K, at time.Time, val V) {
	if it := d.byKey[k]; it != nil {
		it.at, it.val = at, val
		heap.Fix(&d.heap, it.index)
		return
	}
	if d.byKey == nil {
		d.byKey = make(map[K]*deadline[K, V])
	}
	it := &deadline[K, V]{key: k, at: at, val: val}
	d.byKey[k] = it
	heap.Push(&d.heap, it)
}

// remove drops k and reports whether it was there.
func (d *deadlines[K, V]) remove(k K) bool {
	it := d.byKey[k]
	if it == nil {
		return false
	}
	heap.Remove(&d.heap, it.index)
	delete(d.byKey, k)
	return true
}

// first returns the item with the earliest time, or nil when empty.
func (d *deadlines[K, V]) first() *deadline[K, V] {
	if len(d.heap) == 0 {
		return nil
	}
	return d.heap[0]
}

// popFirst removes and returns the item with the earliest time. REQUIRES:
// the set is not empty.
func (d *deadlines[K, V]) popFirst() *deadline[K, V] {
	it := heap.Pop(&d.heap).(*deadline[K, V])
	delete(d.byKey, it.key)
	return it
}

// deadlineHeap is a min-heap of items on at (container/heap).
type deadlineHeap[K comparable, V any] []*deadline[K, V]

func (h deadlineHeap[K, V]) Len() int           { return len(h) }
func (h deadlineHeap[K, V]) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h deadlineHeap[K, V]) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index = i
	h[j].index = j
}
func (h *deadlineHeap[K, V]) Push(x any) {
	it := x.(*deadline[K, V])
	it.index = len(*h)
	*h = append(*h, it)
}
func (h *deadlineHeap[K, V]) Pop() any {
	old := *h
	it := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	it.index = -1
	return it
}
