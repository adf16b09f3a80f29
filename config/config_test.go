package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestDefaultIsValid(t *testing.T) {
	if err := Default().Validate(); err != nil {
		t.Fatalf("Default().Validate() = %v", err)
	}
}

func TestDefaultReturnsFreshSlices(t *testing.T) {
	a := Default()
	a.P2P.Listen[0] = "/ip4/127.0.0.1/tcp/1"
	a.P2P.Bootstrap = append(a.P2P.Bootstrap, "x")
	b := Default()
	if b.P2P.Listen[0] != "/ip4/0.0.0.0/tcp/9287" || len(b.P2P.Bootstrap) != 0 {
		t.Fatalf("Default shares slices between calls: %+v", b.P2P)
	}
}

func TestParseEmptyIsDefault(t *testing.T) {
	for _, doc := range []string{"", "# nothing\n", "[p2p]\n[sync]\n"} {
		c, err := Parse([]byte(doc), "config.toml")
		if err != nil {
			t.Fatalf("Parse(%q): %v", doc, err)
		}
		if !reflect.DeepEqual(c, Default()) {
			t.Errorf("Parse(%q) = %+v, want Default()", doc, c)
		}
	}
}

func TestParseOmittedKeysKeepDefaults(t *testing.T) {
	doc := `network = "testnet"
[p2p]
listen = ["/ip4/127.0.0.1/tcp/0"]
conns_grace = "1m"
[sync]
gossip = false
`
	c, err := Parse([]byte(doc), "config.toml")
	if err != nil {
		t.Fatal(err)
	}
	want := Default()
	want.Network = "testnet"
	want.P2P.Listen = []string{"/ip4/127.0.0.1/tcp/0"} // replaced, not appended to
	want.P2P.ConnsGrace = Duration{time.Minute}
	want.Sync.Gossip = false
	if !reflect.DeepEqual(c, want) {
		t.Fatalf("got  %+v\nwant %+v", c, want)
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(path, []byte("network = \"lab\"\n[p2p]\nlistn = []\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path)
	if !errors.Is(err, ErrUnknownKey) || !strings.HasPrefix(err.Error(), path+":3:1: ") {
		t.Fatalf("Load with unknown key: %v", err)
	}

	if err := os.WriteFile(path, []byte("network = \"lab\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(path)
	if err != nil || c.Network != "lab" {
		t.Fatalf("Load = %+v, %v", c, err)
	}

	_, err = Load(filepath.Join(dir, "missing.toml"))
	if !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "missing.toml") {
		t.Fatalf("Load(missing) = %v, want ErrNotExist naming the file", err)
	}
}

func TestLoadTooLarge(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.toml")
	// At the bound: a comment of exactly MaxFileSize bytes loads.
	at := append([]byte("#"), []byte(strings.Repeat("x", MaxFileSize-2)+"\n")...)
	if err := os.WriteFile(path, at, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path); err != nil {
		t.Fatalf("Load of %d bytes: %v", len(at), err)
	}
	// Past it: refused.
	if err := os.WriteFile(path, append(at, '\n'), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), path) {
		t.Fatalf("Load of %d bytes = %v, want ErrInvalid naming the file", len(at)+1, err)
	}
}

func TestDurationText(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		text string
	}{
		{0, "0s"},
		{500 * time.Millisecond, "500ms"},
		{10 * time.Second, "10s"},
		{30 * time.Second, "30s"},
		{time.Minute, "1m"},
		{90 * time.Second, "1m30s"},
		{time.Hour, "1h"},
		{time.Hour + 10*time.Minute, "1h10m"},
		{time.Hour + time.Second, "1h0m1s"},
		{24 * time.Hour, "24h"},
		{-time.Minute, "-1m"},
	} {
		b, err := Duration{tc.d}.MarshalText()
		if err != nil || string(b) != tc.text {
			t.Errorf("MarshalText(%v) = %q, %v; want %q", tc.d, b, err, tc.text)
		}
		var back Duration
		if err := back.UnmarshalText(b); err != nil || back.Duration != tc.d {
			t.Errorf("UnmarshalText(%q) = %v, %v; want %v", b, back.Duration, err, tc.d)
		}
	}
	var d Duration
	for _, bad := range []string{"", "30", "abc", "1x"} {
		if err := d.UnmarshalText([]byte(bad)); err == nil || !strings.Contains(err.Error(), `"30s"`) {
			t.Errorf("UnmarshalText(%q) = %v, want an error with an example", bad, err)
		}
	}
}

func TestQuoteRoundTrips(t *testing.T) {
	for _, s := range []string{"", "plain", `a"b`, `a\b`, "tab\there", "nl\nx", "cr\rx", "\x00\x01\x1f\x7f", "'single'", "ünïcödé ✓", "\\u0041"} {
		doc := "network = " + quote(s) + "\n"
		var v struct {
			Network string `toml:"network"`
		}
		if err := decodeForTest([]byte(doc), &v); err != nil {
			t.Fatalf("quote(%q) = %s: %v", s, quote(s), err)
		}
		if v.Network != s {
			t.Errorf("quote(%q) = %s decodes to %q", s, quote(s), v.Network)
		}
	}
}
