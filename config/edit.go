package config

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Keys returns every key of config.toml, dotted ("p2p.listen"), in the
// order Template writes them.
func Keys() []string {
	var out []string
	var add func(*table)
	add = func(tb *table) {
		for _, f := range tb.keys {
			out = append(out, f.key)
		}
		for _, sub := range tb.tables {
			add(sub)
		}
	}
	add(schema)
	return out
}

// ErrNoKey is returned (wrapped) by Get and Set for a key config.toml does
// not have; the message names the nearest key there is.
var ErrNoKey = errors.New("no such key")

// lookup returns the field of key, or an error wrapping ErrNoKey.
func lookup(key string) (field, error) {
	f, ok := fields[key]
	if !ok {
		near := "; config.toml lists every key, commented with its default and what it does"
		if k := nearestKey(key, key[strings.LastIndex(key, ".")+1:]); k != "" {
			near = fmt.Sprintf("; did you mean %s?", k)
		}
		return field{}, fmt.Errorf("config: %q: %w%s", key, ErrNoKey, near)
	}
	return f, nil
}

// Get returns the value of key in c as TOML text, as config.toml writes it
// on one line ("info" quoted, 30 unquoted, lists in brackets).
func (c *Config) Get(key string) (string, error) {
	f, err := lookup(key)
	if err != nil {
		return "", err
	}
	return inline(reflect.ValueOf(c).Elem().FieldByIndex(f.index).Interface()), nil
}

// Diff returns the keys whose values differ between a and b, in the order
// of Keys.
func Diff(a, b *Config) []string {
	va, vb := reflect.ValueOf(a).Elem(), reflect.ValueOf(b).Elem()
	var out []string
	for _, k := range Keys() {
		f := fields[k]
		if !reflect.DeepEqual(va.FieldByIndex(f.index).Interface(), vb.FieldByIndex(f.index).Interface()) {
			out = append(out, k)
		}
	}
	return out
}

// Set returns the config file data with key set to value, every other
// byte (comments, order, blank lines) as it was; the result is checked by
// Parse as the daemon would, and any problem (a bad value, a bound, a rule
// between keys) is the error, with nothing changed.
//
// value is TOML ("debug" quoted, 30, true, ["a", "b"]); for convenience a
// string key also takes its value unquoted (debug), and a list of strings
// a comma-separated list (a,b). A key the file sets has its value replaced
// in place; one it leaves out is added at the top of its table (the table
// too, at the end, if the file has no header for it).
func Set(data []byte, key, val string) ([]byte, error) {
	f, err := lookup(key)
	if err != nil {
		return nil, err
	}
	text, ok := valueText(f, val)
	if !ok {
		return nil, fmt.Errorf("config: %s = %s: not %s; example%s: %s: %w",
			key, val, typeName(f.typ), tableNote(f), keyDocs[f.key].example, ErrType)
	}
	d, err := scan(data)
	if err != nil {
		return nil, fmt.Errorf("config: the file does not parse, so it is not edited: %w", err)
	}
	var out []byte
	if i := slices.IndexFunc(d.values, func(v value) bool { return v.f.key == key }); i >= 0 {
		v := d.values[i]
		out = slices.Concat(data[:v.start], []byte(text), data[v.end:])
	} else {
		out = insertKey(data, f, text)
	}
	if _, err := Parse(out, "config.toml"); err != nil {
		return nil, fmt.Errorf("config: %s = %s: %w", key, text, err)
	}
	return out, nil
}

// valueText returns value as TOML text for the field f: as it is when it
// reads as a TOML value, else quoted (strings, durations) or as a list of
// quoted strings (lists); ok is false for a value that is none of these (a
// number or a bool that does not read as one).
func valueText(f field, value string) (text string, ok bool) {
	v := strings.TrimSpace(value)
	if isTOMLValue(v) {
		return v, true
	}
	switch {
	case f.typ.Kind() == reflect.Slice:
		var parts []string
		for p := range strings.SplitSeq(v, ",") {
			if p = strings.TrimSpace(p); p != "" {
				parts = append(parts, strconv.Quote(p))
			}
		}
		return "[" + strings.Join(parts, ", ") + "]", true
	case f.typ.Kind() == reflect.String || isLeaf(f.typ) && f.typ.Kind() == reflect.Struct:
		return strconv.Quote(v), true
	}
	return "", false
}

// isTOMLValue reports whether v parses as one TOML value.
func isTOMLValue(v string) bool {
	if v == "" {
		return false
	}
	d, err := scan([]byte("network = " + v + "\n"))
	return err == nil && len(d.values) == 1
}

// insertKey returns data with `name = text` added under the header of f's
// table: right after it, or, for a top-level key, before the first header;
// a file without that table gets it at its end.
func insertKey(data []byte, f field, text string) []byte {
	line := []byte(f.name + " = " + text + "\n")
	lines := bytes.SplitAfter(data, []byte("\n"))
	if f.table == "" {
		for i, l := range lines {
			if anyHeader.Match(bytes.TrimSpace(l)) {
				return slices.Concat(bytes.Join(lines[:i], nil), line, bytes.Join(lines[i:], nil))
			}
		}
		return slices.Concat(withNewline(data), line)
	}
	header := regexp.MustCompile(`^\[\s*` + regexp.QuoteMeta(f.table) + `\s*\]\s*(#.*)?$`)
	for i, l := range lines {
		if header.Match(bytes.TrimSpace(l)) {
			return slices.Concat(bytes.Join(lines[:i+1], nil), withNewlineIfLast(lines, i), line, bytes.Join(lines[i+1:], nil))
		}
	}
	return slices.Concat(withNewline(data), []byte("\n["+f.table+"]\n"), line)
}

// anyHeader matches a table header line, [name] or [[name]].
var anyHeader = regexp.MustCompile(`^\[`)

// withNewline returns data ending in a newline (an empty file stays empty).
func withNewline(data []byte) []byte {
	if len(data) > 0 && data[len(data)-1] != '\n' {
		return append(slices.Clip(data), '\n')
	}
	return data
}

// withNewlineIfLast returns "\n" when line i is the last of lines and has
// none, so that what follows it starts on a line of its own.
func withNewlineIfLast(lines [][]byte, i int) []byte {
	if i == len(lines)-1 && !bytes.HasSuffix(lines[i], []byte("\n")) {
		return []byte("\n")
	}
	return nil
}
