//go:build unix && !linux

package daemon

// oPath is 0 where open(2) has no O_PATH.
const oPath = 0
