package blobs

import (
	"fmt"
	"slices"
	"testing"
)

// fakeCache records what a dropBehind asks of the page cache; behind
// counts, by offset, the times writtenBack says a range is not on the
// disk yet before it says it is.
type fakeCache struct {
	calls  []string
	behind map[int64]int
}

func (f *fakeCache) writtenBack(off, n int64) bool {
	f.calls = append(f.calls, fmt.Sprintf("written back %d+%d?", off>>20, n>>20))
	if f.behind[off] > 0 {
		f.behind[off]--
		return false
	}
	return true
}
func (f *fakeCache) drop(off, n int64) {
	f.calls = append(f.calls, fmt.Sprintf("drop %d+%d", off>>20, n>>20))
}
func (f *fakeCache) startWriteback(off, n int64) {
	f.calls = append(f.calls, fmt.Sprintf("write back %d+%d", off>>20, n>>20))
}

// TestDropBehindSteps: each start begins the writeback of the bytes
// written since the last (none when none were), each settle drops the
// range started before it once that range is on the disk; a range not on
// the disk holds its step (no start) up to maxHeldSteps times in a row,
// and past them turns the drop-behind off for the rest of the file; a
// file reopened at a size starts from there; none without a page cache.
func TestDropBehindSteps(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		name   string
		size   int64         // at the start
		steps  []int64       // the file's size at each step, in MiB
		behind map[int64]int // offsets (MiB): times not on the disk when asked
		want   []string      // the calls
		held   []int         // the steps held
		on     bool
	}{
		{name: "nothing written", steps: []int64{0, 0}, on: true},
		{name: "one step", steps: []int64{16}, want: []string{"write back 0+16"}, on: true},
		{name: "steps of any size", steps: []int64{17, 17, 33, 40},
			want: []string{"write back 0+17", "written back 0+17?", "drop 0+17", "write back 17+16",
				"written back 17+16?", "drop 17+16", "write back 33+7"}, on: true},
		{name: "four steps", steps: []int64{16, 32, 48, 64}, want: []string{
			"write back 0+16",
			"written back 0+16?", "drop 0+16", "write back 16+16",
			"written back 16+16?", "drop 16+16", "write back 32+16",
			"written back 32+16?", "drop 32+16", "write back 48+16"}, on: true},
		{name: "the disk behind for a step", steps: []int64{16, 32, 48, 64, 80}, behind: map[int64]int{16: 1}, want: []string{
			"write back 0+16",
			"written back 0+16?", "drop 0+16", "write back 16+16",
			"written back 16+16?",
			"written back 16+16?", "drop 16+16", "write back 32+32",
			"written back 32+32?", "drop 32+32", "write back 64+16"}, held: []int{2}, on: true},
		{name: "the disk behind for a step, twice", steps: []int64{16, 32, 48, 64, 80, 96},
			behind: map[int64]int{0: 1, 32: 1}, want: []string{
				"write back 0+16",
				"written back 0+16?",
				"written back 0+16?", "drop 0+16", "write back 16+32",
				"written back 16+32?", "drop 16+32", "write back 48+16",
				"written back 48+16?", "drop 48+16", "write back 64+16",
				"written back 64+16?", "drop 64+16", "write back 80+16"}, held: []int{1}, on: true},
		{name: "the disk behind for the most steps held", steps: []int64{16, 32, 48, 64, 80, 96, 112},
			behind: map[int64]int{16: maxHeldSteps}, want: []string{
				"write back 0+16",
				"written back 0+16?", "drop 0+16", "write back 16+16",
				"written back 16+16?", "written back 16+16?", "written back 16+16?",
				"written back 16+16?", "drop 16+16", "write back 32+64",
				"written back 32+64?", "drop 32+64", "write back 96+16"}, held: []int{2, 3, 4}, on: true},
		{name: "the disk behind", steps: []int64{16, 32, 48, 64, 80, 96, 112}, behind: map[int64]int{16: maxHeldSteps + 1},
			want: []string{
				"write back 0+16",
				"written back 0+16?", "drop 0+16", "write back 16+16",
				"written back 16+16?", "written back 16+16?", "written back 16+16?",
				"written back 16+16?"}, held: []int{2, 3, 4}},
		{name: "the disk behind at once", steps: []int64{16, 32, 48, 64, 80}, behind: map[int64]int{0: 99}, want: []string{
			"write back 0+16", "written back 0+16?", "written back 0+16?", "written back 0+16?",
			"written back 0+16?"}, held: []int{1, 2, 3}},
		{name: "reopened at 40 MiB", size: 40 * mib, steps: []int64{56, 72},
			want: []string{"write back 40+16", "written back 40+16?", "drop 40+16", "write back 56+16"}, on: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fc := &fakeCache{behind: map[int64]int{}}
			for off, n := range tc.behind {
				fc.behind[off*mib] = n
			}
			d := newDropBehind(fc, tc.size)
			var held []int
			for i, size := range tc.steps {
				if !d.settle() {
					held = append(held, i)
					continue
				}
				d.start(size * mib)
			}
			if !slices.Equal(fc.calls, tc.want) || d.on != tc.on || !slices.Equal(held, tc.held) {
				t.Errorf("calls %q, held %v, on %v; want %q, held %v, on %v", fc.calls, held, d.on, tc.want, tc.held, tc.on)
			}
		})
	}
	d := newDropBehind(nil, 0)
	if !d.settle() { // must not call a nil pageCache
		t.Error("a drop-behind without a page cache held a step")
	}
	d.start(64 * mib)
	if d.on {
		t.Error("a drop-behind without a page cache is on")
	}
}
