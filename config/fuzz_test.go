package config

import (
	"reflect"
	"testing"
)

// FuzzParse checks that Parse never panics, and that what it accepts is
// valid and survives Template and TOML unchanged.
func FuzzParse(f *testing.F) {
	f.Add(Template(Default()))
	f.Add(Template(nonDefault()))
	b, _ := nonDefault().TOML()
	f.Add(b)
	for _, s := range []string{
		"", "[p2p]\nlistn = []\n", "p2p = { conns_grace = 30 }\n", "network.x = 1\n",
		"[sync]\ninterval = \"30\"\n", "[[p2p]]\n", "p2p.listen = [[1], {a = 1}]\n",
		"network = \"a\"\nnetwork = \"b\"\n", "[p2p]\nconns_low = 99999999999999999999\n",
		"network = \"a\"\nNetwork = \"b\"\n", "[Log]\nlevel = \"debug\"\n", "p2p = { MDNS = true, mdns = 1 }\n",
		"[p2p]\nmdsn = false\n[sync]\ninterval = 30\n[log]\nlevel = \"verbose\"\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(data, "fuzz.toml")
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error message")
			}
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("Parse accepted an invalid config: %v", err)
		}
		back, err := Parse(Template(c), "template")
		if err != nil || !reflect.DeepEqual(back, c) {
			t.Fatalf("Template round trip: %v\n%+v\n%+v", err, back, c)
		}
		tb, _ := c.TOML()
		back, err = Parse(tb, "toml")
		if err != nil || !reflect.DeepEqual(back, c) {
			t.Fatalf("TOML round trip: %v\n%+v\n%+v", err, back, c)
		}
	})
}

func BenchmarkParseTemplate(b *testing.B) {
	data := Template(Default())
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := Parse(data, "config.toml"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkTemplate(b *testing.B) {
	c := Default()
	b.ReportAllocs()
	for b.Loop() {
		Template(c)
	}
}
