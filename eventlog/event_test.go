package eventlog

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	mh "github.com/multiformats/go-multihash"

	"github.com/wats-network/wats/core"
)

// fullJCS computes the signing bytes the slow, independent way: json.Marshal
// of the object without id and sig, then RFC 8785 Canonicalize of the whole.
func fullJCS(tb testing.TB, e *Event) string {
	tb.Helper()
	blobs := e.Blobs
	if blobs == nil {
		blobs = []BlobRef{}
	}
	obj := struct {
		Kind   string         `json:"kind"`
		Time   int64          `json:"time"`
		Body   jsontext.Value `json:"body"`
		Author string         `json:"author"`
		Blobs  []BlobRef      `json:"blobs"`
	}{e.Kind, e.Time, e.Body, e.Author, blobs}
	b, err := json.Marshal(obj)
	if err != nil {
		tb.Fatal(err)
	}
	v := jsontext.Value(b)
	if err := v.Canonicalize(); err != nil {
		tb.Fatal(err)
	}
	return SigningPrefix + string(v)
}

// randString mixes ASCII, escapes, control characters, non-BMP characters
// and characters whose UTF-16 order differs from their UTF-8 order.
func randString(r *mrand.Rand, n int) string {
	pool := []string{"a", "Z", "0", " ", "\"", "\\", "/", "\b", "\f", "\n", "\r", "\t", "\x00", "\x07", "\x1f", "\x7f",
		"é", "✓", "\u2028", "\ufeff", "\uffff", "😀", "𝄞", "<", ">", "&"}
	var sb strings.Builder
	for range r.IntN(n + 1) {
		sb.WriteString(pool[r.IntN(len(pool))])
	}
	return sb.String()
}

func randJSON(r *mrand.Rand, depth int) any {
	k := r.IntN(8)
	if depth > 3 {
		k = r.IntN(4)
	}
	switch k {
	case 0:
		return randString(r, 8)
	case 1:
		// Numbers JCS prints in several ways: integers, fractions,
		// exponents both ways, negative zero.
		nums := []float64{0, 1, -1, 1.5, 1e21, 1e-7, 123456789012345680000, 0.1, -0.0, 9007199254740993, 5e-324, 1.7976931348623157e308, 333333333.3333333}
		return nums[r.IntN(len(nums))] * float64(r.IntN(3)-1)
	case 2:
		return r.IntN(2) == 0
	case 3:
		return nil
	case 4, 5:
		a := make([]any, r.IntN(4))
		for i := range a {
			a[i] = randJSON(r, depth+1)
		}
		return a
	default:
		m := map[string]any{}
		for range r.IntN(5) {
			m[randString(r, 4)] = randJSON(r, depth+1)
		}
		return m
	}
}

// TestSigningBytesMatchFullJCS cross-checks the direct construction of the
// signing bytes against a full JCS of the object, on random events.
func TestSigningBytesMatchFullJCS(t *testing.T) {
	r := mrand.New(mrand.NewPCG(1, 2))
	key := testKey(t, 1)
	for i := range 300 {
		body := map[string]any{}
		for range r.IntN(6) {
			body[randString(r, 6)] = randJSON(r, 0)
		}
		// Non-canonical input: indented, so New has to canonicalize.
		raw, err := json.Marshal(body, jsontext.Multiline(true))
		if err != nil {
			t.Fatal(err)
		}
		var blobs []BlobRef
		for range r.IntN(3) {
			name := randString(r, 10)
			name = strings.Map(func(c rune) rune {
				if c < 0x20 || c == 0x7f {
					return 'x'
				}
				return c
			}, name)
			blobs = append(blobs, BlobRef{CID: testCID, Size: r.Uint64N(core.MaxSafeInt + 1), Name: name})
		}
		e, err := New(key, time.UnixMilli(r.Int64N(MaxTime)), "k"+fmt.Sprint(i), raw, blobs)
		if err != nil {
			t.Fatalf("event %d: New: %v\nbody %s", i, err, raw)
		}
		sb, err := e.SigningBytes()
		if err != nil {
			t.Fatal(err)
		}
		if want := fullJCS(t, e); string(sb) != want {
			t.Fatalf("event %d:\n got %s\nwant %s", i, sb, want)
		}
		if err := e.Verify(time.UnixMilli(e.Time)); err != nil {
			t.Fatalf("event %d: Verify: %v", i, err)
		}
		m, err := e.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		d, err := Decode(m)
		if err != nil {
			t.Fatalf("event %d: Decode(Marshal): %v\n%s", i, err, m)
		}
		if d.ID != e.ID || d.Sig != e.Sig || !bytes.Equal(d.Body, e.Body) {
			t.Fatalf("event %d: round trip changed the event", i)
		}
	}
}

func TestNewCanonicalizesBody(t *testing.T) {
	e := mustNew(t, testKey(t, 1), testNow, "note", `{ "b" : [1.0, -0, 1E2], "a":"\u0041\u00e9" }`, nil)
	if got, want := string(e.Body), `{"a":"Aé","b":[1,0,100]}`; got != want {
		t.Errorf("body %s, want %s", got, want)
	}
	if e.Blobs == nil {
		t.Error("nil blobs, want empty slice")
	}
	m, _ := e.Marshal()
	if !bytes.Contains(m, []byte(`"blobs":[]`)) {
		t.Errorf("blobs not encoded as []: %s", m)
	}
	if e.Time != testNow.UnixMilli() {
		t.Errorf("time %d", e.Time)
	}
}

func TestNewRefusesNonEd25519Key(t *testing.T) {
	k, _, err := crypto.GenerateSecp256k1Key(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	_, err = New(k, testNow, "note", jsontext.Value(`{}`), nil)
	wantErr(t, err, ErrMalformed)
	_, err = New(nil, testNow, "note", jsontext.Value(`{}`), nil)
	wantErr(t, err, ErrMalformed)
}

// TestTamper changes each field of a signed event and checks Verify's
// sentinel: a forger who keeps the id is caught by the id (ErrBadID); one who
// recomputes it is caught by the signature (ErrBadSignature).
func TestTamper(t *testing.T) {
	key := testKey(t, 1)
	other := testKey(t, 2)
	otherID, _ := peer.IDFromPrivateKey(other)
	orig := mustNew(t, key, testNow, "note", `{"a":1}`, []BlobRef{{CID: testCID, Size: 5, Name: "x"}})
	if err := orig.Verify(testNow); err != nil {
		t.Fatal(err)
	}
	tampers := map[string]func(e *Event){
		"author": func(e *Event) { e.Author = otherID.String() },
		"time":   func(e *Event) { e.Time-- },
		"kind":   func(e *Event) { e.Kind = "notf" },
		"body":   func(e *Event) { e.Body = jsontext.Value(`{"a":2}`) },
		"blobs":  func(e *Event) { e.Blobs[0].Size++ },
		"name":   func(e *Event) { e.Blobs[0].Name = "y" },
		"noblob": func(e *Event) { e.Blobs = nil },
	}
	for name, tamper := range tampers {
		t.Run(name, func(t *testing.T) {
			e := clone(orig)
			tamper(e)
			wantErr(t, e.Verify(testNow), ErrBadID)
			reID(t, e)
			wantErr(t, e.Verify(testNow), ErrBadSignature)
		})
	}
	t.Run("id", func(t *testing.T) {
		e := clone(orig)
		e.ID = strings.Repeat("0", 64)
		wantErr(t, e.Verify(testNow), ErrBadID)
	})
	t.Run("sig", func(t *testing.T) {
		e := clone(orig)
		sig, _ := sigEncoding.DecodeString(e.Sig)
		sig[10] ^= 1
		e.Sig = sigEncoding.EncodeToString(sig)
		wantErr(t, e.Verify(testNow), ErrBadSignature)
	})
	t.Run("sig by other key", func(t *testing.T) {
		e := clone(orig)
		sb, _ := e.SigningBytes()
		sig, _ := other.Sign(sb)
		e.Sig = sigEncoding.EncodeToString(sig)
		wantErr(t, e.Verify(testNow), ErrBadSignature)
	})
	t.Run("sig encoding", func(t *testing.T) {
		for _, s := range []string{
			"", orig.Sig + "==", orig.Sig[:85], orig.Sig[:85] + "+", strings.Repeat("A", 85) + "B", // last: nonzero trailing bits
		} {
			e := clone(orig)
			e.Sig = s
			wantErr(t, e.Verify(testNow), ErrMalformed)
		}
	})
	t.Run("id syntax", func(t *testing.T) {
		for _, s := range []string{"", strings.ToUpper(orig.ID), orig.ID[:63], orig.ID + "0", "g" + orig.ID[1:]} {
			e := clone(orig)
			e.ID = s
			wantErr(t, e.Verify(testNow), ErrMalformed)
		}
	})
}

func TestFutureBound(t *testing.T) {
	key := testKey(t, 1)
	e := mustNew(t, key, testNow, "note", `{}`, nil)
	if err := e.Verify(testNow.Add(-MaxFutureSkew)); err != nil {
		t.Errorf("time exactly now+10min: %v", err)
	}
	wantErr(t, e.Verify(testNow.Add(-MaxFutureSkew-time.Millisecond)), ErrFuture)
	// The past is fine, however far.
	if err := e.Verify(testNow.Add(1000 * time.Hour)); err != nil {
		t.Error(err)
	}
}

func TestTimeRange(t *testing.T) {
	key := testKey(t, 1)
	for _, tm := range []int64{-1, MaxTime + 1} {
		e := mustNew(t, key, testNow, "note", `{}`, nil)
		e.Time = tm
		wantErr(t, e.Verify(time.UnixMilli(MaxTime)), ErrMalformed)
		_, err := e.SigningBytes()
		wantErr(t, err, ErrMalformed)
	}
	e := mustNew(t, key, time.UnixMilli(MaxTime), "note", `{}`, nil)
	if err := e.Verify(time.UnixMilli(MaxTime)); err != nil {
		t.Errorf("time 2^53: %v", err)
	}
	e = mustNew(t, key, time.UnixMilli(0), "note", `{}`, nil)
	if err := e.Verify(testNow); err != nil {
		t.Errorf("time 0: %v", err)
	}
}

// capCase checks one bound through New (which refuses to sign) and through
// Verify of a force-signed event (what a peer could send).
func capCase(t *testing.T, name string, okEvent, badEvent func() *Event, sentinel error) {
	t.Helper()
	key := testKey(t, 1)
	t.Run(name, func(t *testing.T) {
		ok := okEvent()
		e, err := New(key, testNow, ok.Kind, ok.Body, ok.Blobs)
		if err != nil {
			t.Fatalf("at the bound: New: %v", err)
		}
		if err := e.Verify(testNow); err != nil {
			t.Fatalf("at the bound: Verify: %v", err)
		}
		m, err := e.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Decode(m); err != nil {
			t.Fatalf("at the bound: Decode: %v", err)
		}
		bad := badEvent()
		_, err = New(key, testNow, bad.Kind, bad.Body, bad.Blobs)
		wantErr(t, err, sentinel)
		bad.Author = e.Author
		bad.Time = e.Time
		if bad.Body == nil {
			bad.Body = jsontext.Value(`{}`)
		}
		if sb, err := bad.SigningBytes(); err == nil {
			sig, _ := key.Sign(sb)
			bad.Sig = sigEncoding.EncodeToString(sig)
			reID(t, bad)
		} else {
			bad.ID, bad.Sig = e.ID, e.Sig
		}
		wantErr(t, bad.Verify(testNow), sentinel)
	})
}

func bodyOfLen(n int) jsontext.Value {
	return jsontext.Value(`{"x":"` + strings.Repeat("a", n-8) + `"}`)
}

func blobsN(n int) []BlobRef {
	b := make([]BlobRef, n)
	for i := range b {
		b[i] = BlobRef{CID: testCID, Size: uint64(i), Name: fmt.Sprint("f", i)}
	}
	return b
}

func crashBody(stack string) jsontext.Value {
	c := Crash{CrashInfo: core.CrashInfo{Program: "demo", Version: "1", OS: "linux", Arch: "amd64", Reason: "panic", Stack: stack}, Fingerprint: "f"}
	b, err := c.Body()
	if err != nil {
		panic(err)
	}
	return b
}

func TestCaps(t *testing.T) {
	ev := func(kind string, body jsontext.Value, blobs []BlobRef) func() *Event {
		return func() *Event {
			if body == nil {
				body = jsontext.Value(`{}`)
			}
			return &Event{Kind: kind, Body: body, Blobs: blobs}
		}
	}
	capCase(t, "body", ev("note", bodyOfLen(MaxBodyBytes), nil), ev("note", bodyOfLen(MaxBodyBytes+1), nil), ErrTooLarge)
	capCase(t, "blobs", ev("note", nil, blobsN(MaxBlobs)), ev("note", nil, blobsN(MaxBlobs+1)), ErrTooLarge)
	capCase(t, "kind length", ev(strings.Repeat("k", core.MaxKindLen), nil, nil), ev(strings.Repeat("k", core.MaxKindLen+1), nil, nil), ErrTooLarge)
	capCase(t, "kind empty", ev("a", nil, nil), ev("", nil, nil), ErrMalformed)
	for _, k := range []string{"Note", "no te", "a/b", "é", "a+b", "a\x00", "a:b"} {
		capCase(t, "kind "+k, ev("a.b_c-0z9", nil, nil), ev(k, nil, nil), ErrMalformed)
	}
	capCase(t, "size", ev("note", nil, []BlobRef{{CID: testCID, Size: core.MaxSafeInt}}), ev("note", nil, []BlobRef{{CID: testCID, Size: core.MaxSafeInt + 1}}), ErrTooLarge)
	capCase(t, "name length", ev("note", nil, []BlobRef{{CID: testCID, Name: strings.Repeat("é", MaxBlobNameBytes/2) + "a"}}),
		ev("note", nil, []BlobRef{{CID: testCID, Name: strings.Repeat("n", MaxBlobNameBytes+1)}}), ErrTooLarge)
	for _, n := range []string{"a\nb", "\x00", "a\x7f", "\x1f"} {
		capCase(t, fmt.Sprintf("name %q", n), ev("note", nil, []BlobRef{{CID: testCID, Name: "ok ✓ name.txt"}}),
			ev("note", nil, []BlobRef{{CID: testCID, Name: n}}), ErrMalformed)
	}
	capCase(t, "stack", ev(KindCrash, crashBody(strings.Repeat("s", MaxStackBytes)), nil), ev(KindCrash, crashBody(strings.Repeat("s", MaxStackBytes+1)), nil), ErrTooLarge)
	capCase(t, "crash missing member", ev(KindCrash, crashBody(""), nil),
		ev(KindCrash, jsontext.Value(`{"program":"p","version":"1","os":"linux","arch":"amd64","reason":"r","stack":"s"}`), nil), ErrMalformed)
	capCase(t, "crash member type", ev(KindCrash, crashBody(""), nil),
		ev(KindCrash, jsontext.Value(`{"program":"p","version":1,"os":"linux","arch":"amd64","reason":"r","stack":"s","fingerprint":"f"}`), nil), ErrMalformed)
	capCase(t, "crash member null", ev(KindCrash, crashBody(""), nil),
		ev(KindCrash, jsontext.Value(`{"program":"p","version":null,"os":"linux","arch":"amd64","reason":"r","stack":"s","fingerprint":"f"}`), nil), ErrMalformed)
	// Unknown members of a crash body are allowed (the body may grow).
	capCase(t, "crash extra member", ev(KindCrash, jsontext.Value(`{"program":"p","version":"1","os":"linux","arch":"amd64","reason":"r","stack":"s","fingerprint":"f","extra":[1]}`), nil),
		ev(KindCrash, jsontext.Value(`{}`), nil), ErrMalformed)

	// CIDs: CIDv1 in canonical base32 only, at most MaxCIDLen characters.
	c, err := cid.Decode(testCID)
	if err != nil {
		t.Fatal(err)
	}
	b36, _ := c.StringOfBase('k')
	sha, err := mh.Sum([]byte("blob"), mh.SHA2_256, -1)
	if err != nil {
		t.Fatal(err)
	}
	v0 := cid.NewCidV0(sha).String()
	for name, s := range map[string]string{
		"cid garbage": "not a cid", "cid empty": "", "cid upper": strings.ToUpper(testCID),
		"cid base36": b36, "cid v0": v0,
	} {
		capCase(t, name, ev("note", nil, []BlobRef{{CID: testCID}}), ev("note", nil, []BlobRef{{CID: s}}), ErrMalformed)
	}
	capCase(t, "cid length", ev("note", nil, []BlobRef{{CID: cidOfLen(t, MaxCIDLen)}}), ev("note", nil, []BlobRef{{CID: cidOfLen(t, MaxCIDLen+1)}}), ErrTooLarge)

	// Body shape.
	for _, b := range []string{`[]`, `"s"`, `1`, `null`, `true`, ` `, `{"a":1}{}`, `{"a":1,"a":2}`, `{"a":{"b":1,"b":1}}`,
		`{"a":1e400}`, `{"a":-1e309}`, `{"a":"\ud800"}`, "{\"a\":\"\xff\"}", `{"a":}`} {
		capCase(t, "body "+b, ev("note", nil, nil), ev("note", jsontext.Value(b), nil), ErrMalformed)
	}
}

// cidOfLen returns a valid CIDv1 string (raw, identity multihash) of exactly
// n characters.
func cidOfLen(t *testing.T, n int) string {
	t.Helper()
	for l := 1; l < 200; l++ {
		h, err := mh.Sum(bytes.Repeat([]byte{1}, l), mh.IDENTITY, -1)
		if err != nil {
			t.Fatal(err)
		}
		if s := cid.NewCidV1(cid.Raw, h).String(); len(s) == n {
			return s
		}
	}
	t.Fatalf("no identity CID of %d characters", n)
	return ""
}

func TestAuthor(t *testing.T) {
	key := testKey(t, 1)
	e := mustNew(t, key, testNow, "note", `{}`, nil)
	sk, _, err := crypto.GenerateSecp256k1Key(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	secpID, _ := peer.IDFromPrivateKey(sk)
	rsa, _, err := crypto.GenerateRSAKeyPair(2048, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	rsaID, _ := peer.IDFromPrivateKey(rsa)
	edID, _ := peer.Decode(e.Author)
	for name, a := range map[string]string{
		"secp256k1":     secpID.String(),
		"rsa":           rsaID.String(),
		"cid form":      peer.ToCid(edID).String(),
		"garbage":       "12D3KooWnot-a-peer",
		"empty":         "",
		"trailing char": e.Author + "1",
	} {
		t.Run(name, func(t *testing.T) {
			bad := clone(e)
			bad.Author = a
			reID(t, bad)
			wantErr(t, bad.Verify(testNow), ErrMalformed)
		})
	}
}

// TestMaxEventBytes builds the largest valid event and checks that it encodes
// within MaxEventBytes, and that Decode enforces the bound on raw input.
func TestMaxEventBytes(t *testing.T) {
	key := testKey(t, 1)
	blobs := make([]BlobRef, MaxBlobs)
	for i := range blobs {
		// Quotes are escaped: 2 bytes each in JSON.
		blobs[i] = BlobRef{CID: cidOfLen(t, MaxCIDLen), Size: core.MaxSafeInt, Name: strings.Repeat(`"`, MaxBlobNameBytes)}
	}
	e, err := New(key, time.UnixMilli(MaxTime), strings.Repeat("k", core.MaxKindLen), bodyOfLen(MaxBodyBytes), blobs)
	if err != nil {
		t.Fatal(err)
	}
	m, err := e.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if len(m) > MaxEventBytes {
		t.Fatalf("largest valid event is %d bytes, over MaxEventBytes %d", len(m), MaxEventBytes)
	}
	t.Logf("largest valid event: %d bytes of %d", len(m), MaxEventBytes)
	// Pad with whitespace to exactly the bound, then one more byte.
	pad := append(bytes.Clone(m), bytes.Repeat([]byte(" "), MaxEventBytes-len(m))...)
	d, err := Decode(pad)
	if err != nil {
		t.Fatalf("at MaxEventBytes: %v", err)
	}
	if err := d.Verify(time.UnixMilli(MaxTime)); err != nil {
		t.Fatal(err)
	}
	_, err = Decode(append(pad, ' '))
	wantErr(t, err, ErrTooLarge)
}

func TestDecodeStrict(t *testing.T) {
	key := testKey(t, 1)
	e := mustNew(t, key, testNow, "note", `{"a":1}`, []BlobRef{{CID: testCID, Size: 5, Name: "n"}})
	good, err := e.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	d, err := Decode(good)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Verify(testNow); err != nil {
		t.Fatal(err)
	}
	s := string(good)
	rep := replacer(t, s)
	timeStr := fmt.Sprint(e.Time)
	cases := map[string]string{
		"duplicate id":         rep(`{"id":`, `{"id":"x","id":`),
		"duplicate time":       rep(`"kind":`, `"time":1,"kind":`),
		"duplicate in body":    rep(`"body":{"a":1}`, `"body":{"a":1,"a":1}`),
		"duplicate in blob":    rep(`"name":"n"`, `"name":"n","name":"n"`),
		"missing id":           rep(`"id":"`+e.ID+`",`, ``),
		"missing sig":          rep(`,"sig":"`+e.Sig+`"`, ``),
		"missing blobs":        rep(`,"blobs":[{"cid":"`+testCID+`","size":5,"name":"n"}]`, ``),
		"missing body":         rep(`,"body":{"a":1}`, ``),
		"missing blob name":    rep(`,"name":"n"`, ``),
		"missing blob size":    rep(`,"size":5`, ``),
		"unknown member":       rep(`{"id":`, `{"extra":1,"id":`),
		"unknown blob member":  rep(`"name":"n"`, `"name":"n","mime":"x"`),
		"case":                 rep(`"kind":`, `"KIND":`),
		"grease":               rep(`{"id":`, `{"_grease":1,"id":`),
		"time string":          rep(`"time":`+timeStr, `"time":"`+timeStr+`"`),
		"time fraction":        rep(`"time":`+timeStr, `"time":`+timeStr+`.0`),
		"time exponent":        rep(`"time":`+timeStr, `"time":1.767225600000e12`),
		"time overflow":        rep(`"time":`+timeStr, `"time":99999999999999999999`),
		"time null":            rep(`"time":`+timeStr, `"time":null`),
		"kind number":          rep(`"kind":"note"`, `"kind":1`),
		"id null":              rep(`"id":"`+e.ID+`"`, `"id":null`),
		"body string":          rep(`"body":{"a":1}`, `"body":"{}"`),
		"body array":           rep(`"body":{"a":1}`, `"body":[]`),
		"body null":            rep(`"body":{"a":1}`, `"body":null`),
		"blobs object":         rep(`"blobs":[`, `"blobs":{"a":[`) + "}",
		"blobs null":           rep(`"blobs":[{"cid":"`+testCID+`","size":5,"name":"n"}]`, `"blobs":null`),
		"blob not object":      rep(`"blobs":[`, `"blobs":[1,`),
		"size negative":        rep(`"size":5`, `"size":-5`),
		"size fraction":        rep(`"size":5`, `"size":5.5`),
		"size exponent":        rep(`"size":5`, `"size":5e0`),
		"size string":          rep(`"size":5`, `"size":"5"`),
		"size over uint64":     rep(`"size":5`, `"size":18446744073709551616`),
		"trailing data":        s + `{}`,
		"trailing garbage":     s + `x`,
		"not object":           `[` + s + `]`,
		"empty":                ``,
		"truncated":            s[:len(s)-1],
		"invalid utf8":         rep(`"name":"n"`, "\"name\":\"\xff\""),
		"lone surrogate in id": rep(`"kind":"note"`, `"kind":"\udc00"`),
	}
	for name, raw := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Decode([]byte(raw))
			wantErr(t, err, ErrMalformed)
		})
	}
	// Too many blobs stops the decoder with ErrTooLarge.
	many := make([]string, MaxBlobs+1)
	for i := range many {
		many[i] = `{"cid":"` + testCID + `","size":1,"name":""}`
	}
	_, err = Decode([]byte(rep(`"blobs":[{"cid":"`+testCID+`","size":5,"name":"n"}]`, `"blobs":[`+strings.Join(many, ",")+`]`)))
	wantErr(t, err, ErrTooLarge)
	// Whitespace and member order do not matter; the body comes out canonical.
	loose := "\n{ \"sig\" : \"" + e.Sig + "\", \"blobs\":[{\"name\":\"n\",\"size\":5,\"cid\":\"" + testCID + "\"}],\"body\":{ \"a\" : 1.0 }, \"kind\":\"note\",\"time\":" + timeStr +
		",\"author\":\"" + e.Author + "\",\"id\":\"" + e.ID + "\"}\t"
	d, err = Decode([]byte(loose))
	if err != nil {
		t.Fatal(err)
	}
	if string(d.Body) != `{"a":1}` {
		t.Errorf("body %s not canonical", d.Body)
	}
	if err := d.Verify(testNow); err != nil {
		t.Error(err)
	}
	// Size 2^53+1 decodes (it is an integer) and Verify refuses it.
	d, err = Decode([]byte(rep(`"size":5`, `"size":9007199254740993`)))
	if err != nil {
		t.Fatal(err)
	}
	wantErr(t, d.Verify(testNow), ErrTooLarge)
}

// TestDecodeEdges pins edges where json v2's binding and the token reader
// could differ: each input keeps the sentinel it had.
func TestDecodeEdges(t *testing.T) {
	e := mustNew(t, testKey(t, 1), testNow, "note", `{"a":1}`, []BlobRef{{CID: testCID, Size: 5, Name: "n"}})
	good, err := e.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	s := string(good)
	rep := replacer(t, s)
	timeStr := fmt.Sprint(e.Time)
	blob := `{"cid":"` + testCID + `","size":1,"name":""}`
	many := strings.Repeat(blob+",", MaxBlobs) + `{"cid":1}`
	for name, tc := range map[string]struct {
		raw  string
		want error // nil: decodes
	}{
		"time -0":             {rep(`"time":`+timeStr, `"time":-0`), nil}, // an integer within int64, as before; Verify judges it
		"time -1":             {rep(`"time":`+timeStr, `"time":-1`), nil},
		"size -0":             {rep(`"size":5`, `"size":-0`), ErrMalformed},
		"size null":           {rep(`"size":5`, `"size":null`), ErrMalformed},
		"name null":           {rep(`"name":"n"`, `"name":null`), ErrMalformed},
		"time huge exponent":  {rep(`"time":`+timeStr, `"time":1e999999999`), ErrMalformed},
		"dup by escape":       {rep(`{"id":`, `{"\u0069d":"x","id":`), ErrMalformed},
		"name surrogate pair": {rep(`"name":"n"`, `"name":"\ud83d\ude00"`), nil},
		"name lone surrogate": {rep(`"name":"n"`, `"name":"\ud83d"`), ErrMalformed},
		// The 17th blob stops the decoder before it is read, malformed or not.
		"17th blob malformed": {rep(`"blobs":[`, `"blobs":[`+many+`,`), ErrTooLarge},
		// A fault in the body comes before one in the blobs after it.
		"body before blobs":  {rep(`"body":{"a":1}`, `"body":{"a":1e400}`), ErrMalformed},
		"body then 17 blobs": {strings.Replace(rep(`"body":{"a":1}`, `"body":{"a":1e400}`), `"blobs":[`, `"blobs":[`+many+`,`, 1), ErrMalformed},
	} {
		t.Run(name, func(t *testing.T) {
			d, err := Decode([]byte(tc.raw))
			if tc.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				if name == "name surrogate pair" && d.Blobs[0].Name != "😀" {
					t.Fatalf("name %q", d.Blobs[0].Name)
				}
				return
			}
			wantErr(t, err, tc.want)
		})
	}
}

func TestValidationErrorNamesField(t *testing.T) {
	e := mustNew(t, testKey(t, 1), testNow, "note", `{}`, []BlobRef{{CID: testCID}, {CID: testCID}})
	e.Blobs[1].Name = "a\nb"
	err := e.Verify(testNow)
	var ve *ValidationError
	if !errors.As(err, &ve) || ve.Field != "blobs[1].name" {
		t.Fatalf("error %v, want field blobs[1].name", err)
	}
	if !strings.Contains(err.Error(), "blobs[1].name") || !strings.HasPrefix(err.Error(), "eventlog: ") {
		t.Errorf("message %q", err)
	}
}

func TestEventJSONMethods(t *testing.T) {
	e := mustNew(t, testKey(t, 1), testNow, "note", `{"z":1,"a":[]}`, nil)
	wrapped, err := json.Marshal(struct {
		Event *Event `json:"event"`
	}{e})
	if err != nil {
		t.Fatal(err)
	}
	var back struct {
		Event *Event `json:"event"`
	}
	if err := json.Unmarshal(wrapped, &back); err != nil {
		t.Fatal(err)
	}
	if back.Event.ID != e.ID || back.Event.Verify(testNow) != nil {
		t.Errorf("round trip through json: %+v", back.Event)
	}
	// Strict inside another message too.
	if err := json.Unmarshal([]byte(`{"event":{"id":"x"}}`), &back); !errors.Is(err, ErrMalformed) {
		t.Errorf("embedded malformed event: %v", err)
	}
}

func TestParseCrash(t *testing.T) {
	c, err := ParseCrash(crashBody("goroutine 1"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Stack != "goroutine 1" || c.Program != "demo" {
		t.Errorf("%+v", c)
	}
	_, err = ParseCrash(jsontext.Value(`[]`))
	wantErr(t, err, ErrMalformed)
	// The stack bound counts UTF-8 bytes of the decoded string, not escapes.
	_, err = ParseCrash(crashBody(strings.Repeat("\n", MaxStackBytes)))
	if err != nil {
		t.Errorf("8 KiB of newlines (16 KiB escaped): %v", err)
	}
	_, err = ParseCrash(crashBody(strings.Repeat("é", MaxStackBytes/2) + "x"))
	wantErr(t, err, ErrTooLarge)
	if !utf8.ValidString(c.Reason) {
		t.Error("reason")
	}
	// The body's members, by name and in order (docs/design.md §5).
	want := `{"program":"demo","version":"1","os":"linux","arch":"amd64","reason":"panic","stack":"s","fingerprint":"f"}`
	if got := string(crashBody("s")); got != want {
		t.Fatalf("crash body %s, want %s", got, want)
	}
	back, err := ParseCrash(jsontext.Value(want))
	if err != nil || *back != (Crash{CrashInfo: core.CrashInfo{Program: "demo", Version: "1", OS: "linux", Arch: "amd64", Reason: "panic", Stack: "s"}, Fingerprint: "f"}) {
		t.Fatalf("ParseCrash(%s) = %+v, %v", want, back, err)
	}
	rep := replacer(t, want)
	for name, body := range map[string]string{
		"missing":      rep(`"os":"linux",`, ``),
		"null":         rep(`"arch":"amd64"`, `"arch":null`),
		"not a string": rep(`"fingerprint":"f"`, `"fingerprint":1`),
		"duplicate":    rep(`"reason":"panic"`, `"reason":"panic","reason":"x"`),
	} {
		if _, err := ParseCrash(jsontext.Value(body)); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s member: %v, want ErrMalformed", name, err)
		}
	}
	if _, err := ParseCrash(jsontext.Value(rep(`"stack":"s"`, `"stack":"s","more":[1]`))); err != nil {
		t.Errorf("another member: %v; other members are allowed", err)
	}
}

// replacer returns a function that replaces the first old in s by new,
// failing t when s has no old (a test that edits nothing tests nothing).
func replacer(t *testing.T, s string) func(old, new string) string {
	return func(old, new string) string {
		t.Helper()
		if !strings.Contains(s, old) {
			t.Fatalf("test bug: %q not in %s", old, s)
		}
		return strings.Replace(s, old, new, 1)
	}
}
