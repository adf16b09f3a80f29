package config

import (
	"bytes"
	"errors"
	"fmt"
	"math/big"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/wats-network/wats/core"
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
// not have; the message says what there is instead: a table's keys when
// key names a table, the keys that key is the start of, or the nearest
// key there is.
var ErrNoKey = errors.New("no such key")

// lookup returns the field of key, or an error wrapping ErrNoKey.
func lookup(key string) (field, error) {
	f, ok := fields[key]
	if ok {
		return f, nil
	}
	if keys := TableKeys(key); len(keys) > 0 {
		return field{}, fmt.Errorf("config: %q: %w: [%s] is a table; its keys are %s", key, ErrNoKey, key, strings.Join(keys, ", "))
	}
	near := "; config.toml lists every key, commented with its default and what it does"
	if ks := keysStartingWith(key); len(ks) > 0 {
		near = "; did you mean " + oneOf(ks) + "?"
	} else if k := nearestKey(key, key[strings.LastIndex(key, ".")+1:]); k != "" {
		near = fmt.Sprintf("; did you mean %s?", k)
	}
	return field{}, fmt.Errorf("config: %q: %w%s", key, ErrNoKey, near)
}

// TableKeys returns the keys of the table name ("p2p": "p2p.listen",
// "p2p.conns_low", ...), dotted, in the order of Keys; none when name is
// not a table of config.toml.
func TableKeys(name string) []string {
	var out []string
	if name == "" {
		return nil
	}
	for _, k := range Keys() {
		if fields[k].table == name {
			out = append(out, k)
		}
	}
	return out
}

// maxPrefixSuggestions bounds the keys a "did you mean" lists.
const maxPrefixSuggestions = 4

// keysStartingWith returns the keys that key is the start of, case
// ignored ("blobs.max_blob": "blobs.max_blob_bytes"); for a key without a
// table, those whose last part it starts ("max_blob"). At most
// maxPrefixSuggestions+1, so that the caller knows there are more.
func keysStartingWith(key string) []string {
	key = strings.ToLower(key)
	if key == "" {
		return nil
	}
	var out []string
	for _, k := range Keys() {
		if strings.HasPrefix(k, key) || !strings.Contains(key, ".") && strings.HasPrefix(fields[k].name, key) {
			out = append(out, k)
			if len(out) > maxPrefixSuggestions {
				break
			}
		}
	}
	return out
}

// oneOf says keys as a choice: "a", "a or b", "one of a, b, c", with
// "..." past maxPrefixSuggestions.
func oneOf(keys []string) string {
	switch {
	case len(keys) == 1:
		return keys[0]
	case len(keys) == 2:
		return keys[0] + " or " + keys[1]
	case len(keys) > maxPrefixSuggestions:
		return "one of " + strings.Join(keys[:maxPrefixSuggestions], ", ") + ", ..."
	}
	return "one of " + strings.Join(keys, ", ")
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
		what := typeName(f.typ)
		if isSizeKey(f) {
			what += " (or a size such as 64MiB)"
		}
		return nil, &Error{Key: key, Kind: ErrType, Msg: fmt.Sprintf("%s = %s: not %s; example%s: %s",
			key, val, what, tableNote(f), keyDocs[f.key].example)}
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
// reads as a TOML value, else quoted (strings, durations), as a list of
// quoted strings (lists) or, for a key of bytes (isSizeKey), a size with a
// binary unit as its integer ("64MiB": 67108864); ok is false for a value
// that is none of these (a number or a bool that does not read as one).
func valueText(f field, value string) (text string, ok bool) {
	v := strings.TrimSpace(value)
	if isTOMLValue(v) {
		return v, true
	}
	switch {
	case isSizeKey(f):
		n, ok := parseSize(v)
		if !ok {
			return "", false
		}
		return strconv.FormatUint(n, 10), true
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

// isSizeKey reports whether f is an integer key of bytes
// (blobs.max_blob_bytes, bandwidth.up_bytes_per_s, ...), whose value Set
// also takes as a size with a binary unit.
func isSizeKey(f field) bool {
	return strings.Contains(f.name, "bytes") && f.typ.Kind() >= reflect.Int && f.typ.Kind() <= reflect.Uint64
}

// sizeUnits are the units parseSize takes, binary, as the CLI prints
// sizes (KiB, MiB, GiB).
var sizeUnits = map[string]uint64{"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}

var sizeRE = regexp.MustCompile(`^([0-9]+(?:\.[0-9]+)?)\s*([A-Za-z]+)$`)

// parseSize reads s as a size: a number, whole or decimal, and a unit of
// sizeUnits, case ignored ("64MiB", "1.5 GiB", "512 b", "1gib"); ok is false for anything else,
// for a size that is not a whole number of bytes, and for one of 2^53
// bytes or more (core.MaxSafeInt bounds every count of bytes).
func parseSize(s string) (n uint64, ok bool) {
	m := sizeRE.FindStringSubmatch(s)
	if m == nil {
		return 0, false
	}
	var unit uint64
	for name, u := range sizeUnits {
		if strings.EqualFold(name, m[2]) {
			unit = u
		}
	}
	if unit == 0 || len(m[1]) > 30 {
		return 0, false
	}
	r, ok := new(big.Rat).SetString(m[1])
	if !ok {
		return 0, false
	}
	r.Mul(r, new(big.Rat).SetUint64(unit))
	if !r.IsInt() || !r.Num().IsUint64() || r.Num().Uint64() > core.MaxSafeInt {
		return 0, false
	}
	return r.Num().Uint64(), true
}
