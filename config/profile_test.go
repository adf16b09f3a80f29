package config

import (
	"reflect"
	"strings"
	"testing"
)

// TestProfiles: each profile's Keys say exactly what Apply sets (a config
// file of those keys parses to the profile's config), and the result
// validates.
func TestProfiles(t *testing.T) {
	for _, p := range Profiles {
		t.Run(p.Name, func(t *testing.T) {
			got, err := WithProfile(p.Name)
			if err != nil {
				t.Fatal(err)
			}
			if err := got.Validate(); err != nil {
				t.Fatalf("profile %s does not validate: %v", p.Name, err)
			}
			var doc strings.Builder
			last := ""
			for _, k := range p.Keys {
				table, kv, _ := strings.Cut(k, ".")
				if table != last {
					doc.WriteString("[" + table + "]\n")
					last = table
				}
				doc.WriteString(kv + "\n")
			}
			want, err := Parse([]byte(doc.String()), "profile.toml")
			if err != nil {
				t.Fatalf("the profile's keys do not parse: %v\n%s", err, doc.String())
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("Apply and Keys differ:\napply %+v\nkeys  %+v", got, want)
			}
			if reflect.DeepEqual(got, Default()) {
				t.Error("the profile changes nothing")
			}
		})
	}
}

func TestWithProfileUnknown(t *testing.T) {
	if c, err := WithProfile(""); err != nil || !reflect.DeepEqual(c, Default()) {
		t.Errorf(`WithProfile("") = %v, %v; want Default()`, c, err)
	}
	_, err := WithProfile("sever")
	if err == nil || !strings.Contains(err.Error(), `"sever"`) || !strings.Contains(err.Error(), "local, server") {
		t.Errorf("unknown profile: error %v, want one naming it and the profiles", err)
	}
}
