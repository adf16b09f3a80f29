package config

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/pelletier/go-toml/v2"
)

// This file renders values as TOML for Template, TOML and the messages of
// Validate: strings in double quotes, arrays of strings one entry a line
// with a trailing comma (multiline) or on one line.

// inline renders v as a TOML value on one line.
func inline(v any) string { return formatValue(v, false) }

// formatValue renders v as a TOML value. multiline puts each entry of a
// non-empty array on a line of its own.
func formatValue(v any, multiline bool) string {
	switch x := v.(type) {
	case string:
		return quote(x)
	case bool:
		return strconv.FormatBool(x)
	case int:
		return strconv.Itoa(x)
	case Duration:
		b, _ := x.MarshalText()
		return quote(string(b))
	case []string:
		if len(x) == 0 {
			return "[]"
		}
		var b strings.Builder
		if !multiline {
			b.WriteString("[")
			for i, s := range x {
				if i > 0 {
					b.WriteString(", ")
				}
				b.WriteString(quote(s))
			}
			b.WriteString("]")
			return b.String()
		}
		b.WriteString("[\n")
		for _, s := range x {
			b.WriteString("  " + quote(s) + ",\n")
		}
		b.WriteString("]")
		return b.String()
	}
	// A type added to Config later: let go-toml write it.
	var buf bytes.Buffer
	if err := toml.NewEncoder(&buf).Encode(map[string]any{"v": v}); err != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimPrefix(strings.TrimSpace(buf.String()), "v = ")
}

// quote returns s as a TOML basic string. TOML documents are UTF-8, so an
// invalid byte becomes U+FFFD; no valid Config holds one.
func quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r) // utf8.RuneError for an invalid byte
		}
	}
	b.WriteByte('"')
	return b.String()
}
