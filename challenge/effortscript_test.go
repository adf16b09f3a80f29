package challenge

import (
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/wats-network/wats/internal/scripttest"
)

// TestEffortScript steps through testdata/effort.txt.
func TestEffortScript(t *testing.T) {
	var e *Effort
	seconds := func(s string) (time.Duration, error) {
		f, err := strconv.ParseFloat(s, 64)
		return time.Duration(f * float64(time.Second)), err
	}
	scripttest.Run(t, "testdata/effort.txt", 40, func(f []string) (string, error) {
		switch f[0] {
		case "effort":
			base, err1 := strconv.Atoi(f[1])
			max, err2 := strconv.Atoi(f[2])
			if err := errors.Join(err1, err2); err != nil {
				return "", err
			}
			ne, err := NewEffort(base, max)
			if err != nil {
				if !errors.Is(err, ErrConfig) {
					return "", fmt.Errorf("NewEffort: %v, want ErrConfig", err)
				}
				return "error", nil
			}
			e = ne
			return "ok", nil
		case "pressure":
			at, err := seconds(f[1])
			if err != nil {
				return "", err
			}
			e.Pressure(at)
			return "ok", nil
		case "bits":
			at, err := seconds(f[1])
			if err != nil {
				return "", err
			}
			return strconv.Itoa(e.Bits(at)), nil
		}
		return "", fmt.Errorf("unknown command %q", f[0])
	})
}
