package main

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
)

// TestLibp2pInfoIsDebug: libp2p's info lines reach the daemon's handler at
// debug level (dropped at info), identify's warnings too, other warnings
// as warnings, and fx's lines never.
func TestLibp2pInfoIsDebug(t *testing.T) {
	for _, tc := range []struct {
		level slog.Level
		want  []string
		not   []string
	}{
		{slog.LevelInfo, []string{"a warning"}, []string{"an info line", "fx line", "identify failed"}},
		{slog.LevelDebug, []string{"a warning", "level=DEBUG msg=\"an info line\"", "level=DEBUG msg=\"identify failed\""}, []string{"fx line"}},
	} {
		var buf bytes.Buffer
		h := dropFx{slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: tc.level})}
		log := slog.New(h)
		log.Info("an info line")
		log.Warn("a warning")
		slog.New(h.WithAttrs([]slog.Attr{slog.String("system", "fx")})).Warn("fx line")
		slog.New(h.WithAttrs([]slog.Attr{slog.String("logger", "net/identify")})).Warn("identify failed")
		if !h.Enabled(context.Background(), slog.LevelWarn) {
			t.Errorf("at %v: warnings not enabled", tc.level)
		}
		out := buf.String()
		for _, w := range tc.want {
			if !strings.Contains(out, w) {
				t.Errorf("at %v: %q missing from %q", tc.level, w, out)
			}
		}
		for _, w := range tc.not {
			if strings.Contains(out, w) {
				t.Errorf("at %v: %q in %q", tc.level, w, out)
			}
		}
	}
}
