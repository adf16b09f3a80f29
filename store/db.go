package store

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"

	"github.com/wats-network/wats/blobs"
	"github.com/wats-network/wats/eventlog"
)

// MemTableBytes is pebble's memtable size (docs/design.md §10; ADR 0029):
// sync catch-up ran as fast with 16 MiB as with 64 MiB (docs/performance.md);
// since ADR 0037 it holds no blob bytes, only events, records and the
// leaves' locations.
const MemTableBytes = 16 << 20

// PebbleOptions are the pebble options of a node's database, with log as
// pebble's logger and repo the repo directory a fatal error names (""
// for none: Logger): the memtable
// (MemTableBytes), the blob store's settings (blobs.TunePebble),
// Bloom filters on every level so that the dedupe lookup of a new
// event id (a miss, the common case during sync) rarely reads a block,
// and the log's events in sstables of their own (eventlog.SpanPolicy,
// ADR 0039).
func PebbleOptions(log *slog.Logger, repo string) *pebble.Options {
	opts := &pebble.Options{
		MemTableSize: MemTableBytes,
		Logger:       Logger{Log: log, Repo: repo},
	}
	opts.Levels[0].FilterPolicy = bloom.FilterPolicy(10)
	opts.Experimental.SpanPolicyFunc = eventlog.SpanPolicy
	blobs.TunePebble(opts)
	return opts
}

// DataDir is the directory of the blob store's data files (ADR 0037)
// for the database at dbDir: inside it, so that whatever moves or copies
// the database (repo repair) takes the bytes its records index.
func DataDir(dbDir string) string { return filepath.Join(dbDir, blobs.DataDirName) }

// Logger is pebble's logger: it sends pebble's log lines to Log,
// information at debug level, errors at error level.
type Logger struct {
	Log *slog.Logger
	// Repo, when set, is the repo whose database this is: a fatal error
	// then says what the operator can do (damageAdvice).
	Repo string
}

func (l Logger) Infof(format string, args ...any) {
	l.Log.Debug("pebble: " + fmt.Sprintf(format, args...))
}

func (l Logger) Errorf(format string, args ...any) {
	l.Log.Error("pebble: " + fmt.Sprintf(format, args...))
}

// Fatalf logs pebble's fatal error and ends the process (pebble does not
// go on after one); for a repo's database (Repo set), it first says on stderr
// what the operator can do (damageAdvice).
//
// A full disk is not damage: pebble ends on ENOSPC too (a WAL write or a
// flush that found no room), and then the node says the disk is full and
// that nothing is damaged.
func (l Logger) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	l.Log.Error("pebble: fatal: " + msg)
	switch {
	case l.Repo == "":
	case diskFull(msg, args):
		fmt.Fprintf(fatalOut, "Error: the disk of repo %s is full%s, and the node stops. Nothing is damaged: "+
			"free space on that filesystem and start the daemon again; every event acknowledged before is kept.\n",
			l.Repo, freeSpace(l.Repo))
	default:
		fmt.Fprintf(fatalOut, "Error: the database of repo %s is damaged, and the node stops.\n%s\n", l.Repo, damageAdvice(l.Repo))
	}
	exitProcess(1)
}

// diskFull reports whether a fatal error of pebble's (its message and
// arguments) is a full disk: ENOSPC, or its text.
func diskFull(msg string, args []any) bool {
	for _, a := range args {
		if err, ok := a.(error); ok && errors.Is(err, syscall.ENOSPC) {
			return true
		}
	}
	return strings.Contains(msg, syscall.ENOSPC.Error())
}

// fatalOut and exitProcess are where Logger.Fatalf writes and how it
// ends the process; tests replace them.
var (
	fatalOut    io.Writer = os.Stderr
	exitProcess           = os.Exit
)
