package blobs

import (
	"fmt"
	"slices"
	"testing"
)

// fakeCache records what a dropBehind asks of the page cache; behind
// lists the ranges writtenBack says are not on the disk yet.
type fakeCache struct {
	calls  []string
	behind map[int64]bool // by offset
}

func (f *fakeCache) writtenBack(off, n int64) bool {
	f.calls = append(f.calls, fmt.Sprintf("written back %d+%d?", off>>20, n>>20))
	return !f.behind[off]
}
func (f *fakeCache) drop(off, n int64) {
	f.calls = append(f.calls, fmt.Sprintf("drop %d+%d", off>>20, n>>20))
}
func (f *fakeCache) startWriteback(off, n int64) {
	f.calls = append(f.calls, fmt.Sprintf("write back %d+%d", off>>20, n>>20))
}

// TestDropBehindSteps: each start begins the writeback of the bytes
// written since the last (none when none were), each settle drops the
// range started before it once that range is on the disk, and the first
// range not on the disk turns the drop-behind off for the rest of the
// file, settle saying so; a file reopened at a size starts from there;
// none without a page cache.
func TestDropBehindSteps(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		name   string
		size   int64    // at the start
		steps  []int64  // the file's size at each step, in MiB
		behind []int64  // offsets (MiB) not on the disk when asked
		want   []string // the calls
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
		{name: "the disk behind", steps: []int64{16, 32, 48, 64, 80}, behind: []int64{16}, want: []string{
			"write back 0+16",
			"written back 0+16?", "drop 0+16", "write back 16+16",
			"written back 16+16?"}},
		{name: "the disk behind at once", steps: []int64{16, 32}, behind: []int64{0}, want: []string{
			"write back 0+16", "written back 0+16?"}},
		{name: "reopened at 40 MiB", size: 40 * mib, steps: []int64{56, 72},
			want: []string{"write back 40+16", "written back 40+16?", "drop 40+16", "write back 56+16"}, on: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fc := &fakeCache{behind: map[int64]bool{}}
			for _, b := range tc.behind {
				fc.behind[b*mib] = true
			}
			d := newDropBehind(fc, tc.size)
			for i, size := range tc.steps {
				on := d.settle()
				if i > 0 && on != d.on {
					t.Errorf("step %d: settle says %v, the drop-behind is %v", i, on, d.on)
				}
				d.start(size * mib)
			}
			if !slices.Equal(fc.calls, tc.want) || d.on != tc.on {
				t.Errorf("calls %q, on %v; want %q, on %v", fc.calls, d.on, tc.want, tc.on)
			}
		})
	}
	d := newDropBehind(nil, 0)
	d.settle() // must not call a nil pageCache
	d.start(64 * mib)
	if d.on {
		t.Error("a drop-behind without a page cache is on")
	}
}
