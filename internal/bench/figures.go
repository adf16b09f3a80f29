package bench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// currentRSS returns a process's resident set in bytes (VmRSS), or 0.
func currentRSS(pid int) uint64 { return procStatusKB(pid, "VmRSS:") }

// samplePeakRSS reads the resident set of process pid every 250 ms until
// ctx ends; peak, once ctx has ended, waits for the sampler and returns
// the highest reading, the last one taken then included.
func samplePeakRSS(ctx context.Context, pid int) (peak func() uint64) {
	var top uint64
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for {
			top = max(top, currentRSS(pid))
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	})
	return func() uint64 {
		wg.Wait()
		return max(top, currentRSS(pid))
	}
}

// procStatusKB reads a "kB" field of /proc/PID/status, in bytes; 0 where
// that is not available.
func procStatusKB(pid int, field string) uint64 {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field); ok {
			kb, err := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				return 0
			}
			return kb << 10
		}
	}
	return 0
}

// countLines counts the lines of a file (0 if it cannot be read).
func countLines(path string) int {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		n++
	}
	return n
}

// peakRSS returns a process's peak resident set in bytes (VmHWM in
// /proc/PID/status), or 0 where that is not available.
func peakRSS(pid int) uint64 { return procStatusKB(pid, "VmHWM:") }

// cpuTime returns the user and system CPU time a process has used
// (/proc/PID/stat, in clock ticks of 10 ms), or 0 where that is not
// available.
func cpuTime(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The fields after the command name (in parentheses, which may hold
	// spaces): state is field 3, utime 14 and stime 15.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0
	}
	u, err1 := strconv.ParseUint(f[11], 10, 64)
	s, err2 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0
	}
	return time.Duration(u+s) * 10 * time.Millisecond
}

// processCPU returns the user and system CPU time this process has used
// (getrusage), or 0 where that is not available.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// ms returns d in milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func pctOf(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return 100 * float64(a) / float64(b)
}

// quantileMs is the q-quantile of ds in ms (0 for none).
func quantileMs(ds []time.Duration, q float64) float64 {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return float64(s[min(len(s)-1, int(q*float64(len(s))))]) / float64(time.Millisecond)
}

// duBytes is the disk space the files under dir take (allocated blocks,
// as du counts them), and the sum of their sizes.
func duBytes(dir string) (du, size uint64) {
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if info, err := d.Info(); err == nil {
			if st, ok := info.Sys().(*syscall.Stat_t); ok {
				du += uint64(st.Blocks) * 512
			}
			if info.Mode().IsRegular() {
				size += uint64(info.Size())
			}
		}
		return nil
	})
	return du, size
}

// threadsNiced counts the threads of pid at nice value nice, of all its
// threads (Linux; 0, 0 elsewhere).
func threadsNiced(pid, nice int) (niced, total int) {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return 0, 0
	}
	for _, t := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/stat", pid, t.Name()))
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		// After the command name: state is field 3, nice field 19.
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 17 {
			continue
		}
		total++
		if v, err := strconv.Atoi(f[16]); err == nil && v == nice {
			niced++
		}
	}
	return niced, total
}
