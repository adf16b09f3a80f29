package config

import (
	"fmt"
	"strings"
	"time"
)

// Duration is a time.Duration written in config.toml as a TOML string that
// time.ParseDuration accepts: "500ms", "30s", "5m", "1h30m". A bare number
// is not a duration (it has no unit) and is refused with ErrType.
type Duration struct{ time.Duration }

// MarshalText writes d in the shortest form time.ParseDuration reads back
// exactly: "30s", "1m", "1h30m" (time.Duration.String without the trailing
// zero units, so "1m" rather than "1m0s").
func (d Duration) MarshalText() ([]byte, error) {
	s := d.Duration.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return []byte(s), nil
}

// UnmarshalText parses b with time.ParseDuration. The error says how a
// duration is written.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return &durationError{text: string(b)}
	}
	d.Duration = v
	return nil
}

// durationError is the error of Duration.UnmarshalText; go-toml turns its
// message into a DecodeError, which Parse reports as ErrInvalid.
type durationError struct{ text string }

func (e *durationError) Error() string {
	return fmt.Sprintf("%q is not a duration: write a number with a unit, such as \"500ms\", \"30s\", \"5m\" or \"1h\"", e.text)
}
