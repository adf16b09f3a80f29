package blobs

// dropBehind is the state of a fetch's data file's drop-behind (ADR 0053,
// addendum): its leaves are written to the disk as the fetch goes, and
// their pages leave the page cache one step behind, so that a fetch
// reuses the few pages it dropped rather than taking new ones for every
// byte of the blob, the dearest part of a fetch on a virtual machine
// whose memory is given to it page by page.
//
// A step is taken at each sync of pebble's WAL that a fetch makes
// (partialSyncBytes), in this order: settle, the sync, start. settle
// drops the range started at the step before, if it is on the disk by
// now; if it is not (the disk is slower than the fetch), the drop-behind
// turns off for the rest of the file, and the file is written as ADR
// 0037 writes it, with no writeback until it is synced. start then
// starts the writeback of the bytes written since. So the sync, which on
// ext4 would wait for the blocks of the data file in flight, finds none
// in flight, or waits once, for one step's bytes, on a slow disk; and
// settle's look at the disk is never helped by a sync of the fetch's own.
// Not safe for concurrent use: the dataFile's mutex guards it.
type dropBehind struct {
	pc pageCache // nil: off from the start
	// on: the file still writes back and drops behind.
	on bool
	// started is the offset below which the writeback of the file has
	// been started; dropped the offset below which its pages were
	// dropped.
	started, dropped int64
}

// pageCache is what dropBehind asks of the kernel about one file's page
// cache (fileCache on Linux; a test's fake).
type pageCache interface {
	// writtenBack reports whether none of the n bytes at off is dirty or
	// being written back; false when the kernel cannot say.
	writtenBack(off, n int64) bool
	// drop asks the kernel to drop the pages of the n bytes at off (a
	// hint: pages still dirty stay).
	drop(off, n int64)
	// startWriteback starts writing the n bytes at off to the disk and
	// returns at once (a hint: the file's sync writes whatever is left).
	startWriteback(off, n int64)
}

// newDropBehind returns the drop-behind of a file of size bytes already,
// whose page cache pc describes: off when pc is nil.
func newDropBehind(pc pageCache, size int64) dropBehind {
	return dropBehind{pc: pc, on: pc != nil, started: size, dropped: size}
}

// settle drops the range whose writeback the last start began, if it is
// on the disk; if it is not, it turns the drop-behind off for good. It
// reports whether the drop-behind is still on.
func (d *dropBehind) settle() bool {
	if !d.on || d.started == d.dropped {
		return d.on
	}
	if !d.pc.writtenBack(d.dropped, d.started-d.dropped) {
		d.on = false
		return false
	}
	d.pc.drop(d.dropped, d.started-d.dropped)
	d.dropped = d.started
	return true
}

// start starts the writeback of the bytes written since the last start,
// the file being size bytes now, if the drop-behind is on.
func (d *dropBehind) start(size int64) {
	if !d.on || size <= d.started {
		return
	}
	d.pc.startWriteback(d.started, size-d.started)
	d.started = size
}
