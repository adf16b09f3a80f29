package blobs

import (
	"github.com/cockroachdb/pebble/v2"
)

// TunePebble sets the options of the node's pebble database that the blob
// store needs (docs/design.md §10). Since ADR 0037 no leaf is a pebble
// value, so pebble's value separation (ADR 0029) is off: its compactions
// checked every key's value for separation (6% of a catch-up's CPU) for
// none to separate. The format stays at pebble.FormatValueSeparation, to
// which a database of ADR 0029's time was upgraded when it opened (a
// one-way step): their separated leaves are read as before, and written
// back into sstables by the compactions that reach them.
func TunePebble(opts *pebble.Options) {
	if opts.FormatMajorVersion < pebble.FormatValueSeparation {
		opts.FormatMajorVersion = pebble.FormatValueSeparation
	}
	opts.Experimental.ValueSeparationPolicy = func() pebble.ValueSeparationPolicy {
		return pebble.ValueSeparationPolicy{Enabled: false}
	}
}
