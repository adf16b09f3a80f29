package diskspace

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wats-network/wats/internal/scripttest"
)

// fakeDisk is a filesystem the script fills and frees by hand.
type fakeDisk struct {
	free, total uint64
	failStat    bool
	ballast     uint64 // the ballast's size, 0 when there is none
	failBallast bool
}

func parseSize(s string) (uint64, error) {
	mult := uint64(1)
	switch {
	case strings.HasSuffix(s, "M"):
		mult, s = 1<<20, strings.TrimSuffix(s, "M")
	case strings.HasSuffix(s, "K"):
		mult, s = 1<<10, strings.TrimSuffix(s, "K")
	case strings.HasSuffix(s, "G"):
		mult, s = 1<<30, strings.TrimSuffix(s, "G")
	}
	n, err := strconv.ParseUint(s, 10, 64)
	return n * mult, err
}

// TestGuardScript runs testdata/guard.txt: the guard's decisions on a
// disk the script fills and frees, with a clock it moves (backwards too).
func TestGuardScript(t *testing.T) {
	var (
		disk    fakeDisk
		now     = time.Unix(1_700_000_000, 0)
		g       *Guard
		changes []string
		pending uint64
	)
	opts := &Options{
		Statfs: func(string) (uint64, uint64, error) {
			if disk.failStat {
				return 0, 0, errors.New("statfs failed")
			}
			return disk.free, disk.total, nil
		},
		Ballast: func(size uint64) error {
			if disk.failBallast || disk.free < size {
				return errors.New("no room for the ballast")
			}
			disk.free -= size
			disk.ballast = size
			return nil
		},
		Unballast: func() error {
			disk.free += disk.ballast
			disk.ballast = 0
			return nil
		},
		Now:     func() time.Time { return now },
		Pending: func() uint64 { return pending },
		Changed: func(full bool, err error) {
			if full {
				changes = append(changes, "full")
			} else {
				changes = append(changes, "room")
			}
		},
	}
	result := func(err error) string {
		var fe *FullError
		switch {
		case err == nil:
			return "ok"
		case errors.As(err, &fe) && errors.Is(err, ErrFull):
			return fmt.Sprintf("full free=%dM need=%dM", fe.Free>>20, fe.Need>>20)
		default:
			return "error " + err.Error()
		}
	}
	scripttest.Run(t, "testdata/guard.txt", 30, func(f []string) (string, error) {
		size := func(i int) (uint64, error) {
			if len(f) <= i {
				return 0, errors.New("a size is missing")
			}
			return parseSize(f[i])
		}
		switch f[0] {
		case "disk": // disk FREE TOTAL
			free, err := size(1)
			if err != nil {
				return "", err
			}
			total, err := size(2)
			disk.free, disk.total, disk.ballast = free, total, 0
			return "", err
		case "new":
			var err error
			g, err = New("/repo", "", opts)
			if err != nil {
				return "error " + err.Error(), nil
			}
			return "reserve=" + strconv.FormatUint(g.reserve>>20, 10) + "M ballast=" + strconv.FormatUint(g.ballast>>20, 10) + "M", nil
		case "write": // Room, and the bytes written if allowed
			n, err := size(1)
			if err != nil {
				return "", err
			}
			err = g.Room(int(n))
			if err == nil {
				disk.free -= n
			}
			return result(err), nil
		case "fill", "unfill": // another process writes or frees
			n, err := size(1)
			if f[0] == "fill" {
				disk.free -= n
			} else {
				disk.free += n
			}
			return "", err
		case "advance":
			d, err := time.ParseDuration(f[1])
			now = now.Add(d)
			return "", err
		case "look":
			if g.Look().Full {
				return "full", nil
			}
			return "room", nil
		case "pending": // the database's own writes to come
			n, err := size(1)
			pending = n
			return "", err
		case "enospc":
			g.OnDiskFull()
			return "", nil
		case "statfs":
			disk.failStat = f[1] == "fails"
			return "", nil
		case "ballast":
			if len(f) > 1 {
				disk.failBallast = f[1] == "fails"
				return "", nil
			}
			return fmt.Sprintf("disk=%dM guard=%v", disk.ballast>>20, g.State().HasBallast), nil
		case "changes":
			s := strings.Join(changes, " ")
			changes = nil
			if s == "" {
				s = "none"
			}
			return s, nil
		}
		return "", fmt.Errorf("unknown command %q", f[0])
	})
}

// TestReserveBounds checks ReserveFor at and past its bounds.
func TestReserveBounds(t *testing.T) {
	for _, tc := range []struct{ total, want uint64 }{
		{0, MinReserveBytes},
		{16 * MinReserveBytes, MinReserveBytes},
		{16*MinReserveBytes + 16, MinReserveBytes + 1},
		{16 * MaxReserveBytes, MaxReserveBytes},
		{16*MaxReserveBytes + 16, MaxReserveBytes},
		{1 << 50, MaxReserveBytes},
	} {
		if got := ReserveFor(tc.total); got != tc.want {
			t.Errorf("ReserveFor(%d) = %d, want %d", tc.total, got, tc.want)
		}
	}
}

// TestBallastFile makes, checks and removes a real ballast file.
func TestBallastFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ballast")
	if hasBallast(path, 1<<20) {
		t.Fatal("a missing ballast is whole")
	}
	if err := makeBallast(path, 1<<20); err != nil {
		t.Fatal(err)
	}
	if !hasBallast(path, 1<<20) || hasBallast(path, 2<<20) {
		t.Fatal("hasBallast does not tell the ballast's size")
	}
	if err := removeBallast(path); err != nil {
		t.Fatal(err)
	}
	if err := removeBallast(path); err != nil {
		t.Fatalf("removing a removed ballast: %v", err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("ballast still there: %v", err)
	}
}

// TestGuardOnRealDisk: on the test's own filesystem, a guard makes its
// ballast and lets a small write go ahead, and refuses one larger than
// the free space.
func TestGuardOnRealDisk(t *testing.T) {
	dir := t.TempDir()
	g, err := New(dir, filepath.Join(dir, "ballast"), nil)
	if err != nil {
		t.Skipf("no statfs here: %v", err)
	}
	st := g.State()
	if st.Full {
		t.Skipf("the test's disk is nearly full (%d bytes free)", st.Free)
	}
	if !st.HasBallast || !hasBallast(filepath.Join(dir, "ballast"), st.Ballast) {
		t.Fatalf("no ballast of %d bytes made", st.Ballast)
	}
	if err := g.Room(4096); err != nil {
		t.Fatal(err)
	}
	err = g.Room(int(st.Free))
	if !errors.Is(err, ErrFull) || !strings.Contains(err.Error(), dir) {
		t.Fatalf("a write of all the free space: %v, want a disk full naming %s", err, dir)
	}
	g.OnDiskFull()
	if hasBallast(filepath.Join(dir, "ballast"), st.Ballast) || g.State().HasBallast {
		t.Fatal("OnDiskFull kept the ballast")
	}
}
