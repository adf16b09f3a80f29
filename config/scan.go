package config

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2/unstable"
)

// This file walks a config.toml with go-toml's parser and matches every table and key against the schema, exactly (docs/design.md §4
// and §11: names are matched exactly, case included, so `Network` is an
// unknown key, not `network`). It finds, in one pass:
//   - the unknown keys and tables, and values written where a table belongs
//     or tables where a value belongs (document.problems);
//   - each known key with the text of its value (document.values), which
//     Parse decodes one by one so that one bad value hides no other;
//   - the position of each known key and list entry (document.idx), which
//     locates the problems Validate finds.
// go-toml's decoder is not used for this: it matches names case-
// insensitively and stops at the first wrong type.

// document is what scan finds in a config.toml.
type document struct {
	data  []byte
	lines []int // offsets of the line starts of data, for positions
	idx   keyIndex

	// values are the known keys the document sets, in file order.
	values []value
	// problems are the unknown keys and tables and the misplaced values
	// and tables, in file order.
	problems []*Error
	// tooMany is the problem of a document of more than MaxKeys keys and
	// tables, reported alone; scan stops at the key past the bound.
	tooMany *Error
	// keys counts the keys and tables so far, against MaxKeys.
	keys int
	// names maps the offset of each part of a key or table header to the
	// full dotted name (for the messages of go-toml, which give a key
	// without its table). The keys in the inline table of an unknown key
	// are not there.
	names map[int]string
	// failed holds the keys whose value the document sets but Parse does
	// not use (a wrong type, or a table where the value belongs):
	// Validate's findings that read them are not reported (see
	// Error.locate), as the key's default would be judged, not the file.
	failed map[string]bool
}

// value is a known key set by the document.
type value struct {
	f          field
	kind       unstable.Kind // the TOML kind of the value
	keyOff     int           // offset of the key's first part
	start, end int           // the value's text is data[start:end]
}

// keyIndex maps the known keys of a document, and the entries of its arrays
// ("p2p.listen[1]"), to where they are and what TOML kind their value is.
type keyIndex map[string]keyPos

type keyPos struct {
	line, col int
	kind      unstable.Kind
}

// keyPart is one part of a dotted key, with the byte range of its text
// (quotes included) in the document.
type keyPart struct {
	name       string
	start, end int
}

// scan walks data against the schema. It stops at the first syntax error,
// which it returns (what it found before stays in the document), or at the
// key past MaxKeys (document.tooMany).
func scan(data []byte) (*document, error) {
	d := &document{data: data, lines: lineStarts(data), idx: keyIndex{}, failed: map[string]bool{},
		names: map[int]string{}}
	var p unstable.Parser
	p.Reset(data)
	cur := schema // the table of the last header; nil after an unknown one
	curName := "" // the name of the last header
	for p.NextExpression() {
		e := p.Expression()
		if d.keys += countKeys(e); d.keys > MaxKeys {
			line, col := d.pos(keyParts(e.Key())[0].start)
			d.tooMany = &Error{Line: line, Column: col, Kind: ErrInvalid,
				Msg: fmt.Sprintf("more than %d keys and tables: not a wats config file", MaxKeys)}
			return d, nil
		}
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			parts := keyParts(e.Key())
			curName = joinParts("", parts)
			d.name(parts, curName)
			cur = d.header(parts, e.Kind == unstable.ArrayTable)
		case unstable.KeyValue:
			if cur != nil {
				d.keyValue(cur, e)
			} else {
				parts := keyParts(e.Key())
				d.name(parts, joinParts(curName, parts))
			}
		}
	}
	return d, p.Error()
}

// countKeys returns the number of keys and tables the expression e
// defines: 1 for a table header or a key, plus the keys of the inline
// tables in its value, at any depth.
func countKeys(e *unstable.Node) int {
	n := 1
	if e.Kind == unstable.KeyValue {
		n += countValueKeys(e.Value())
	}
	return n
}

func countValueKeys(v *unstable.Node) int {
	n := 0
	for c := v.Children(); c.Next(); {
		switch c.Node().Kind {
		case unstable.KeyValue:
			n += countKeys(c.Node())
		case unstable.Array, unstable.InlineTable:
			n += countValueKeys(c.Node())
		}
	}
	return n
}

// header matches the table header [parts] (or [[parts]] if isArray) and
// returns the table whose keys follow it, or nil when the header is
// reported as a problem (the keys below it are then not looked at: they
// would all repeat the same mistake).
func (d *document) header(parts []keyPart, isArray bool) *table {
	full := joinParts("", parts)
	t := schema
	for i, part := range parts {
		if sub := t.sub(part.name); sub != nil {
			t = sub
			continue
		}
		if f, ok := t.key(part.name); ok {
			// [network] or [network.x]: a value, not a table.
			msg := notATable(full, f)
			if i == len(parts)-1 {
				msg = wrongType(f, "a table")
			}
			d.problem(ErrType, full, parts[0].start, msg)
			d.failed[f.key] = true
			return nil
		}
		d.problem(ErrUnknownKey, full, parts[0].start, unknownKeyMessage(full, true))
		return nil
	}
	if isArray {
		d.problem(ErrType, t.name, parts[0].start,
			t.name+": wrong type: "+t.name+" is a table, not an array of tables; "+tableHint(t.name))
		d.failTable(t)
		return nil
	}
	return t
}

// keyValue matches the key-value e found in table t: a known key is
// recorded with its value, an inline table for a known table is walked.
func (d *document) keyValue(t *table, e *unstable.Node) {
	parts := keyParts(e.Key())
	full := joinParts(t.name, parts)
	d.name(parts, full)
	v := e.Value()
	start := valueStart(d.data, parts[len(parts)-1].end)
	end := int(e.Raw.Offset + e.Raw.Length)
	for i, part := range parts {
		if sub := t.sub(part.name); sub != nil {
			t = sub
			continue
		}
		f, ok := t.key(part.name)
		switch {
		case !ok:
			d.problem(ErrUnknownKey, full, parts[0].start, unknownKeyMessage(full, false))
		case i < len(parts)-1:
			// network.x = 1: a key below a value.
			d.problem(ErrType, full, parts[i+1].start, notATable(full, f))
			d.failed[f.key] = true
		default:
			d.setValue(f, v, parts[0].start, start, end)
		}
		return
	}
	// Every part names a table: the value must be an inline table.
	if v.Kind != unstable.InlineTable {
		d.problem(ErrType, t.name, start, t.name+": wrong type: "+t.name+" is a table; "+tableHint(t.name))
		d.failTable(t)
		return
	}
	for c := v.Children(); c.Next(); {
		if c.Node().Kind == unstable.KeyValue {
			d.keyValue(t, c.Node())
		}
	}
}

// setValue records the value v, the text data[start:end], of the known key
// f written at offset keyOff, and the positions of the key and of the
// entries of an array.
func (d *document) setValue(f field, v *unstable.Node, keyOff, start, end int) {
	d.values = append(d.values, value{f: f, kind: v.Kind, keyOff: keyOff, start: start, end: end})
	line, col := d.pos(keyOff)
	d.idx[f.key] = keyPos{line: line, col: col, kind: v.Kind}
	if v.Kind != unstable.Array {
		return
	}
	i := 0
	for c := v.Children(); c.Next(); i++ {
		pos := keyPos{line: line, col: col, kind: c.Node().Kind}
		if r := c.Node().Raw; r.Length > 0 {
			pos.line, pos.col = d.pos(int(r.Offset))
		}
		d.idx[f.key+"["+strconv.Itoa(i)+"]"] = pos
	}
}

// name records full as the name of the key or header made of parts.
func (d *document) name(parts []keyPart, full string) {
	for _, p := range parts {
		d.names[p.start] = full
	}
}

// nameAt returns the full name of the key or header with a part at line,
// col, or "".
func (d *document) nameAt(line, col int) string {
	if line < 1 || line > len(d.lines) {
		return ""
	}
	return d.names[d.lines[line-1]+col-1]
}

// problem records a problem with key, located at the byte offset off.
func (d *document) problem(kind error, key string, off int, msg string) {
	line, col := d.pos(off)
	d.problems = append(d.problems, &Error{Line: line, Column: col, Key: key, Kind: kind, Msg: msg})
}

// failTable marks every key of t and its sub-tables as failed.
func (d *document) failTable(t *table) {
	for _, f := range t.keys {
		d.failed[f.key] = true
	}
	for _, sub := range t.tables {
		d.failTable(sub)
	}
}

// pos returns the line and column, both from 1 and the column in bytes as
// go-toml counts it, of the byte offset off.
func (d *document) pos(off int) (line, col int) {
	i := sort.SearchInts(d.lines, off+1) - 1 // the last line start <= off
	return i + 1, off - d.lines[i] + 1
}

// lineStarts returns the offsets at which the lines of data start.
func lineStarts(data []byte) []int {
	starts := []int{0}
	for i, b := range data {
		if b == '\n' {
			starts = append(starts, i+1)
		}
	}
	return starts
}

// valueStart returns the offset of the value of a key-value whose key ends
// at off: past the blanks, the '=' and the blanks.
func valueStart(data []byte, off int) int {
	for off < len(data) && (data[off] == ' ' || data[off] == '\t') {
		off++
	}
	if off < len(data) && data[off] == '=' {
		off++
	}
	for off < len(data) && (data[off] == ' ' || data[off] == '\t') {
		off++
	}
	return off
}

// keyParts returns the parts of a (possibly dotted) key.
func keyParts(it unstable.Iterator) []keyPart {
	var parts []keyPart
	for it.Next() {
		n := it.Node()
		parts = append(parts, keyPart{
			name:  string(n.Data),
			start: int(n.Raw.Offset),
			end:   int(n.Raw.Offset + n.Raw.Length),
		})
	}
	return parts
}

// joinParts returns the full dotted name of the key parts in the table
// named table ("" for the top level).
func joinParts(table string, parts []keyPart) string {
	var b strings.Builder
	b.WriteString(table)
	for _, p := range parts {
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(p.name)
	}
	return b.String()
}

// locate sets p's position to that of its key in the document, or of the
// first of its locate keys that is there; for an entry of a list that is
// not, to the list's.
func (idx keyIndex) locate(p *Error) {
	keys := append([]string{p.Key}, p.locate...)
	if base, _, ok := strings.Cut(p.Key, "["); ok {
		keys = append(keys, base)
	}
	for _, k := range keys {
		if pos, ok := idx[k]; ok {
			p.Line, p.Column = pos.line, pos.col
			return
		}
	}
}
