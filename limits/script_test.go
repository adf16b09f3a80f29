package limits

import (
	"fmt"
	"github.com/wats-network/wats/internal/scripttest"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestBucketScripts runs the step tests of testdata/buckets.txt: each line
// is a command on one Bucket and the output expected (see the file's
// header). The expectations were worked out by hand from ADR 0014.
func TestBucketScripts(t *testing.T) {
	var b *Bucket
	scripttest.Run(t, "testdata/buckets.txt", 50, func(f []string) (string, error) {
		return runBucketCommand(&b, f)
	})
}

// runBucketCommand runs one script command on *b.
func runBucketCommand(b **Bucket, f []string) (string, error) {
	if len(f) == 0 {
		return "", fmt.Errorf("empty command")
	}
	if f[0] != "rate" && *b == nil {
		return "", fmt.Errorf("no bucket yet: start with rate")
	}
	switch {
	case f[0] == "rate" && len(f) == 2:
		n, err := strconv.Atoi(f[1])
		if err != nil {
			return "", err
		}
		r, err := NewRate(n)
		if err != nil {
			return "", err
		}
		*b = NewBucket(r)
		return r.String(), nil
	case f[0] == "allow" && len(f) == 2:
		now, err := scriptTime(f[1])
		if err != nil {
			return "", err
		}
		return answer((*b).Allow(now)), nil
	case f[0] == "allown" && len(f) == 3:
		k, err := strconv.Atoi(f[1])
		if err != nil {
			return "", err
		}
		now, err := scriptTime(f[2])
		if err != nil {
			return "", err
		}
		if (*b).AllowN(k, now) {
			return "ok", nil
		}
		return "refused", nil
	case f[0] == "take" && len(f) == 2:
		now, err := scriptTime(f[1])
		if err != nil {
			return "", err
		}
		for n := 0; n < 100_000; n++ {
			if ok, retry := (*b).Allow(now); !ok {
				return fmt.Sprintf("%d allowed, then %s", n, answer(ok, retry)), nil
			}
		}
		return "unlimited (100000 allowed)", nil
	case f[0] == "attempts" && len(f) == 3:
		n, err := strconv.Atoi(f[1])
		if err != nil {
			return "", err
		}
		now, err := scriptTime(f[2])
		if err != nil {
			return "", err
		}
		allowed := 0
		for range n {
			if ok, _ := (*b).Allow(now); ok {
				allowed++
			}
		}
		return fmt.Sprintf("%d allowed, %d refused", allowed, n-allowed), nil
	case f[0] == "every" && len(f) == 3:
		step, err := time.ParseDuration(f[1])
		if err != nil || step <= 0 {
			return "", fmt.Errorf("bad step %q", f[1])
		}
		from, to, ok := strings.Cut(f[2], "..")
		if !ok {
			return "", fmt.Errorf("want @A..B, got %q", f[2])
		}
		a, err := scriptTime(from)
		if err != nil {
			return "", err
		}
		z, err := scriptTime("@" + to)
		if err != nil {
			return "", err
		}
		allowed, refused := 0, 0
		for now := a; now < z; now += int64(step) {
			if ok, _ := (*b).Allow(now); ok {
				allowed++
			} else {
				refused++
			}
		}
		return fmt.Sprintf("%d allowed, %d refused", allowed, refused), nil
	case f[0] == "full" && len(f) == 2:
		now, err := scriptTime(f[1])
		if err != nil {
			return "", err
		}
		if (*b).Full(now) {
			return "yes", nil
		}
		return "no", nil
	}
	return "", fmt.Errorf("unknown command %q", strings.Join(f, " "))
}

func answer(ok bool, retry time.Duration) string {
	if ok {
		if retry != 0 {
			return fmt.Sprintf("ok, but retry after %v", retry)
		}
		return "ok"
	}
	return fmt.Sprintf("refused: retry after %v", retry)
}

// scriptTime parses @DURATION, @min or @max into ns.
func scriptTime(s string) (int64, error) {
	s, ok := strings.CutPrefix(s, "@")
	if !ok {
		return 0, fmt.Errorf("want @time, got %q", s)
	}
	switch s {
	case "min":
		return math.MinInt64, nil
	case "max":
		return math.MaxInt64, nil
	}
	d, err := time.ParseDuration(s)
	return int64(d), err
}
