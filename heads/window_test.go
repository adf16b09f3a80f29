package heads

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/wats-network/wats/core"
	"github.com/wats-network/wats/internal/scripttest"
	"github.com/wats-network/wats/proto"
)

// TestDecideScript runs the step tests of testdata/decide.txt (see its
// header): announcements into a Window, and what Decide makes of them.
func TestDecideScript(t *testing.T) {
	var w *Window
	held := map[core.ShortID]bool{}
	scripttest.Run(t, "testdata/decide.txt", 25, func(f []string) (string, error) {
		if len(f) == 0 {
			return "", fmt.Errorf("empty command")
		}
		if f[0] != "reset" && w == nil {
			return "", fmt.Errorf("start with reset")
		}
		switch f[0] {
		case "reset":
			w, held = &Window{}, map[core.ShortID]bool{}
			return "ok", nil
		case "announce":
			if len(f) < 2 {
				return "", fmt.Errorf("announce HEAD [ID ...]")
			}
			head, err := strconv.ParseUint(f[1], 10, 64)
			if err != nil {
				return "", err
			}
			h := &proto.Heads{Head: core.Cursor(head)}
			for _, name := range f[2:] {
				h.IDs = append(h.IDs, named(name))
			}
			w.Add(h)
			return "ok", nil
		case "hold":
			for _, name := range f[1:] {
				held[named(name)] = true
			}
			return "ok", nil
		case "head":
			return w.Head().String(), nil
		case "decide":
			if len(f) != 2 {
				return "", fmt.Errorf("decide CURSOR")
			}
			c, err := strconv.ParseUint(f[1], 10, 64)
			if err != nil {
				return "", err
			}
			calls := 0
			d := Decide(core.Cursor(c), w, func(id core.ShortID) bool { calls++; return held[id] })
			if calls > WindowSize {
				return "", fmt.Errorf("has called %d times", calls)
			}
			out := "advance " + d.Advance.String()
			if d.Pull {
				out += " pull"
			}
			return out, nil
		}
		return "", fmt.Errorf("unknown command %q", f[0])
	})
}

// named is the short id a script names by a word: its bytes, padded.
func named(name string) core.ShortID {
	var id core.ShortID
	copy(id[:], name)
	id[core.ShortIDBytes-1] ^= 0x80 // never all zero
	return id
}

// TestDecideBoundedByWindow: however far the head is past the cursor, has
// is asked about at most WindowSize positions, and an id announced for a
// position older than the window is not kept.
func TestDecideBoundedByWindow(t *testing.T) {
	w := &Window{}
	ids := make([]core.ShortID, proto.MaxHeadIDs)
	for i := range ids {
		ids[i] = named(strconv.Itoa(i))
	}
	for head := core.Cursor(proto.MaxHeadIDs); head <= 3*WindowSize; head += proto.MaxHeadIDs {
		w.Add(&proto.Heads{Head: head, IDs: ids})
	}
	calls := 0
	d := Decide(2*WindowSize, w, func(core.ShortID) bool { calls++; return true })
	if d.Advance != 3*WindowSize || d.Pull || calls != WindowSize {
		t.Errorf("cursor one window behind: %+v after %d calls, want advance %d, no pull, %d calls", d, calls, 3*WindowSize, WindowSize)
	}
	calls = 0
	if d := Decide(2*WindowSize-1, w, func(core.ShortID) bool { calls++; return true }); d.Advance != 2*WindowSize-1 || !d.Pull || calls != 0 {
		t.Errorf("cursor one past the window: %+v after %d calls, want a pull from the cursor", d, calls)
	}
	old := &Window{head: 5 * WindowSize}
	old.Add(&proto.Heads{Head: 10, IDs: []core.ShortID{named("z")}})
	if _, ok := old.id(10); ok || old.Head() != 5*WindowSize {
		t.Error("an id older than the window was kept, or the head lowered")
	}
}
