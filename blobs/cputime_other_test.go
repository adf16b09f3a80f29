//go:build !unix

package blobs

import "time"

// cpuTime is 0 where getrusage is missing: cpu-s/op then reads 0.
func cpuTime() time.Duration { return 0 }
