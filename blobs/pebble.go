package blobs

import (
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// separateValuesFrom is the smallest value pebble stores in a blob file
// of its own rather than in its sstables: the leaves of blobs (up to one
// ChunkSize) are, events and peer records (a few KiB at most) are not.
const separateValuesFrom = 64 << 10

// TunePebble sets the options of the node's pebble database that the blob
// store needs (docs/design.md §10, ADR 0029): value separation, so that the 1 MiB
// leaves of blobs are written once to blob files at flush and not
// rewritten by every compaction of the keys around them. It raises the
// format major version to pebble.FormatValueSeparation, which an existing
// database is upgraded to when it opens (a one-way step).
func TunePebble(opts *pebble.Options) {
	if opts.FormatMajorVersion < pebble.FormatValueSeparation {
		opts.FormatMajorVersion = pebble.FormatValueSeparation
	}
	opts.Experimental.ValueSeparationPolicy = func() pebble.ValueSeparationPolicy {
		return pebble.ValueSeparationPolicy{
			Enabled:               true,
			MinimumSize:           separateValuesFrom,
			MaxBlobReferenceDepth: 10,
			RewriteMinimumAge:     time.Hour,
			TargetGarbageRatio:    0.2,
		}
	}
}
