package bandwidth

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"time"

	"github.com/wats-network/wats/internal/fileio"
)

// MonthFile is the file in the repo that keeps the bytes sent this
// calendar month across restarts (docs/adr/0048), as JSON:
// {"month":"2026-05","up_bytes":123}.
const MonthFile = "bandwidth.json"

// MaxMonthFileBytes bounds what ReadMonth reads of MonthFile.
const MaxMonthFileBytes = 4 << 10

// MonthLayout is the form of a Month: the calendar month in UTC.
const MonthLayout = "2006-01"

// MonthOf returns the calendar month (UTC) of t, as MonthLayout.
func MonthOf(t time.Time) string { return t.UTC().Format(MonthLayout) }

// Month is the bytes sent in one calendar month (UTC).
type Month struct {
	// Month is the calendar month, MonthLayout ("2006-01").
	Month string `json:"month"`
	// UpBytes is the bytes sent in it, in bytes.
	UpBytes uint64 `json:"up_bytes"`
}

// Add counts n bytes sent at now: into a new month, from 0, when now is
// in a later month than m's; into m's month otherwise, also when now is
// in an earlier one (a clock stepped backwards counts on where it was: a
// month never goes back, so a step back cannot clear what was sent). It
// returns the count after.
func (m *Month) Add(now time.Time, n uint64) uint64 {
	m.roll(now)
	m.UpBytes += n
	return m.UpBytes
}

// roll starts the month of now if it is later than m's.
func (m *Month) roll(now time.Time) {
	if cur := MonthOf(now); cur > m.Month {
		m.Month, m.UpBytes = cur, 0
	}
}

// ReadMonth reads the Month kept in path; a missing file is the zero Month
// (nothing sent yet). A file that is not one (over MaxMonthFileBytes, not
// JSON, a month not in MonthLayout) is an error that names it.
func ReadMonth(path string) (Month, error) {
	var m Month
	b, err := fileio.ReadCapped(path, nil, MaxMonthFileBytes)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return m, nil
	case err != nil:
		return m, fmt.Errorf("bandwidth: read the month's count: %w", err)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return Month{}, fmt.Errorf("bandwidth: %s is not a month's count (remove it to count from 0): %w", path, err)
	}
	if _, err := time.Parse(MonthLayout, m.Month); err != nil {
		return Month{}, fmt.Errorf("bandwidth: %s names the month %q, not YYYY-MM (remove it to count from 0)", path, m.Month)
	}
	return m, nil
}

// WriteMonth writes m to path atomically (fileio.WriteAtomic: the old
// count or the new one survives a crash, never a part), mode 0600.
func WriteMonth(path string, m Month) error {
	b, _ := json.Marshal(m)
	if err := fileio.WriteAtomic(path, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("bandwidth: write the month's count: %w", err)
	}
	return nil
}

// FileIn returns the path of MonthFile in the repo directory dir; "" (a
// node in memory) for "".
func FileIn(dir string) string {
	if dir == "" {
		return ""
	}
	return filepath.Join(dir, MonthFile)
}
