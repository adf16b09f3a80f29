package config

import (
	"bytes"
	"reflect"
	"strings"
)

// templateHeader opens every Template.
const templateHeader = `# config.toml: the configuration of a wats node.
#
# Every key is listed below with its value, what it does, the values it
# allows and its default. A key left out of this file takes its default; an
# unknown key is an error. Names are matched exactly, case included:
# "Network" or [Log] is an unknown key. Durations are strings with a unit:
# "500ms", "30s", "5m", "1h".
`

// commentWidth is the width Template wraps its comments to.
const commentWidth = 78

// Template returns c (Default() if c is nil) as a commented config.toml:
// every key, table by table in the order of Config, with its value and a
// comment saying what it does, its unit and allowed range, and its default.
// `wats init` writes it. Parse(Template(c)) equals c for every valid c.
func Template(c *Config) []byte {
	if c == nil {
		c = Default()
	}
	var b bytes.Buffer
	b.WriteString(templateHeader)
	writeTable(&b, schema, reflect.ValueOf(c).Elem(), reflect.ValueOf(Default()).Elem())
	return b.Bytes()
}

// TOML returns c as plain TOML, every key with its value and no comments:
// what `wats config show` prints. Parse(c.TOML()) equals c for every valid
// c. The error is always nil; it is there for formats to come.
func (c *Config) TOML() ([]byte, error) {
	var b bytes.Buffer
	writeTable(&b, schema, reflect.ValueOf(c).Elem(), reflect.Value{})
	return bytes.TrimLeft(b.Bytes(), "\n"), nil
}

// writeTable writes the table tb of the Config v and then its sub-tables.
// With def, a Config holding the defaults, each table and key gets its
// comment; without (the zero Value), none.
func writeTable(b *bytes.Buffer, tb *table, v, def reflect.Value) {
	comments := def.IsValid()
	if tb.name != "" {
		b.WriteString("\n")
		if comments {
			writeComment(b, strings.Repeat("-", commentWidth-2))
			writeComment(b, "["+tb.name+"] "+tableDocs[tb.name])
		}
		b.WriteString("[" + tb.name + "]\n")
	}
	for _, f := range tb.keys {
		if comments {
			doc, ok := keyDocs[f.key]
			if !ok {
				doc.what = "(undocumented)"
			}
			b.WriteString("\n")
			writeComment(b, doc.what)
			writeComment(b, "Allowed: "+doc.allowed+".")
			writeComment(b, "Default: "+inline(def.FieldByIndex(f.index).Interface())+".")
		}
		b.WriteString(f.name + " = " + formatValue(v.FieldByIndex(f.index).Interface(), true) + "\n")
	}
	for _, sub := range tb.tables {
		writeTable(b, sub, v, def)
	}
}

// writeComment writes text as "# " lines wrapped at commentWidth.
func writeComment(b *bytes.Buffer, text string) {
	line := "#"
	for _, w := range strings.Fields(text) {
		if len(line)+1+len(w) > commentWidth && line != "#" {
			b.WriteString(line + "\n")
			line = "#"
		}
		line += " " + w
	}
	b.WriteString(line + "\n")
}
