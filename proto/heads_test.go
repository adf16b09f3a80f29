package proto

import (
	"fmt"
	"strings"
	"testing"

	"github.com/wats-network/wats/core"
)

// headsJSON is an announcement of head with n distinct short ids.
func headsJSON(head, n int) string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf(`"%016x"`, i)
	}
	return fmt.Sprintf(`{"head":"%d","ids":[%s]}`, head, strings.Join(ids, ","))
}

// TestDecodeHeads: the bounds of an announcement at and past each cap,
// and /wats/1's decoding rules (unknown members ignored, duplicates, null
// and wrong types refused, head required).
func TestDecodeHeads(t *testing.T) {
	for _, c := range []struct {
		in   string
		code Code // "" when it decodes
		head core.Cursor
		ids  int
	}{
		{in: `{"head":"0"}`, head: 0},
		{in: `{"head":"0","ids":[]}`, head: 0},
		{in: headsJSON(64, 64), head: 64, ids: MaxHeadIDs},
		{in: headsJSON(1000, 64), head: 1000, ids: MaxHeadIDs},
		{in: headsJSON(100, 65), code: CodeBadRequest}, // one id past MaxHeadIDs
		{in: headsJSON(3, 4), code: CodeBadRequest},    // more ids than positions
		{in: headsJSON(4, 4), head: 4, ids: 4},
		{in: `{"head":"1","ids":["0123456789ABCDEF"]}`, code: CodeBadRequest},
		{in: `{"head":"1","ids":["0123456789abcde"]}`, code: CodeBadRequest},
		{in: `{"head":"1","ids":[1]}`, code: CodeBadRequest},
		{in: `{"head":1}`, code: CodeBadRequest},
		{in: `{"head":null}`, code: CodeBadRequest},
		{in: `{"ids":[]}`, code: CodeBadRequest},
		{in: `{"head":"1","head":"2"}`, code: CodeBadRequest},
		{in: `{"head":"01"}`, code: CodeBadRequest},
		{in: `{"head":"7","HEAD":"x","_grease0":{"a":1},"later":[]}`, head: 7},
		{in: `[]`, code: CodeBadRequest},
		{in: `{"head":"7"} {}`, code: CodeBadRequest},
	} {
		h, err := DecodeHeads([]byte(c.in))
		if c.code != "" {
			if codeOf(err) != c.code {
				t.Errorf("DecodeHeads(%.60s) = %v, want %s", c.in, err, c.code)
			}
			continue
		}
		if err != nil || h.Head != c.head || len(h.IDs) != c.ids {
			t.Errorf("DecodeHeads(%.60s) = %+v, %v; want head %d and %d ids", c.in, h, err, c.head, c.ids)
		}
	}
}

// TestHeadsSize: an announcement of MaxHeadsBytes decodes, one byte more
// is too_large before it is parsed; the largest valid announcement fits
// with room.
func TestHeadsSize(t *testing.T) {
	largest := headsJSON(int(core.MaxSafeInt), MaxHeadIDs)
	if len(largest) > MaxHeadsBytes*2/3 {
		t.Errorf("the largest announcement is %d bytes, near the cap %d", len(largest), MaxHeadsBytes)
	}
	pad := func(n int) string {
		b := `{"head":"1","_grease":"`
		return b + strings.Repeat("g", n-len(b)-2) + `"}`
	}
	if _, err := DecodeHeads([]byte(pad(MaxHeadsBytes))); err != nil {
		t.Errorf("an announcement of MaxHeadsBytes: %v", err)
	}
	if _, err := DecodeHeads([]byte(pad(MaxHeadsBytes + 1))); codeOf(err) != CodeTooLarge {
		t.Errorf("one byte past MaxHeadsBytes: %v, want too_large", err)
	}
}

// TestMarshalHeads: the encoder refuses what the decoder refuses, and
// writes ids as [] when there are none; From names the position before
// the first id.
func TestMarshalHeads(t *testing.T) {
	if b, err := MarshalHeads(&Heads{Head: 5}); err != nil || string(b) != `{"head":"5","ids":[]}` {
		t.Errorf("MarshalHeads without ids = %s, %v", b, err)
	}
	for _, h := range []*Heads{nil, {Head: 1, IDs: make([]core.ShortID, 2)}, {Head: 100, IDs: make([]core.ShortID, MaxHeadIDs+1)}} {
		if _, err := MarshalHeads(h); err == nil {
			t.Errorf("MarshalHeads(%+v) encoded what DecodeHeads refuses", h)
		}
	}
	if h := (&Heads{Head: 10, IDs: make([]core.ShortID, 3)}); h.From() != 7 {
		t.Errorf("From = %d, want 7", h.From())
	}
}
