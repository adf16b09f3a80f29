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
// now. If it is not, the step is held: neither the sync nor start, so
// that nothing of the fetch waits for that range, and the next step's
// settle asks again. A range still not on the disk after maxHeldSteps
// steps held in a row (the disk is slower than the fetch, not busy for a
// moment) turns the drop-behind off for the rest of the file, which is written as ADR 0037 writes it,
// with no writeback until it is synced. start starts the writeback of
// the bytes written since the last start. So the sync, which on ext4
// would wait for the blocks of the data file in flight, finds none in
// flight, or waits once, for what is left of one range, on a slow disk;
// and settle's look at the disk is never helped by a sync of the
// fetch's own.
// Not safe for concurrent use: the dataFile's mutex guards it.
type dropBehind struct {
	pc pageCache // nil: off from the start
	// on: the file still writes back and drops behind.
	on bool
	// held counts the steps held in a row for the range started last.
	held int
	// started is the offset below which the writeback of the file has
	// been started; dropped the offset below which its pages were
	// dropped.
	started, dropped int64
}

// maxHeldSteps is how many steps in a row a drop-behind holds for one
// range not on the disk before it turns off: what a busy disk may lag
// behind a fetch, 48 MiB of 16 MiB steps, with the fetch's WAL sync
// waiting meanwhile (partialSyncBytes).
const maxHeldSteps = 3

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
// on the disk, and reports true: the step goes on, to the sync and start.
// A range not on the disk holds the step (false: no sync, no start), up
// to maxHeldSteps in a row; past them it turns the drop-behind off for
// good and the step goes on. Off, or with nothing started since the last
// drop, the step goes on.
func (d *dropBehind) settle() bool {
	if !d.on || d.started == d.dropped {
		return true
	}
	if !d.pc.writtenBack(d.dropped, d.started-d.dropped) {
		if d.held < maxHeldSteps {
			d.held++
			return false
		}
		d.on, d.held = false, 0
		return true
	}
	d.held = 0
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
