package eventlog

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha512"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"filippo.io/edwards25519"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/hdevalence/ed25519consensus"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	"lukechampine.com/blake3"
)

// The signature rule's edge cases (ADR 0034): small-order and mixed-order
// keys and R, non-canonical encodings of A and R, S at and past ℓ. Each is
// an event whose fields and id are right, so that only the signature
// decides; Verify (one at a time) and VerifyBatch (a batch) must give the
// ZIP 215 verdict on every one, alone and among good events.

// scalarLMinus1 is ℓ-1 (little-endian), ℓ = 2^252 + 27742317777372353535851937790883648493
// the order of the prime-order subgroup.
var scalarLMinus1 = mustHex("ecd3f55c1a631258d69cf7a2def9de1400000000000000000000000000000010")

// scalarL is ℓ itself: a non-canonical S.
var scalarL = mustHex("edd3f55c1a631258d69cf7a2def9de1400000000000000000000000000000010")

func mustHex(s string) []byte {
	b, err := hex.DecodeString(s)
	if err != nil {
		panic(err)
	}
	return b
}

// torsion returns the eight points of order dividing 8, [i]T for a point
// T of order 8, i = 0..7.
func torsion(tb testing.TB) []*edwards25519.Point {
	tb.Helper()
	lm1, err := edwards25519.NewScalar().SetCanonicalBytes(scalarLMinus1)
	if err != nil {
		tb.Fatal(err)
	}
	// [ℓ]P kills P's prime-order part and keeps its torsion part; try
	// points until that part has order 8.
	for i := byte(2); ; i++ {
		enc := make([]byte, 32)
		enc[0] = i
		p, err := new(edwards25519.Point).SetBytes(enc)
		if err != nil {
			continue
		}
		t := new(edwards25519.Point).ScalarMult(lm1, p)
		t.Add(t, p)
		four := new(edwards25519.Point).Add(t, t)
		four.Add(four, four)
		if four.Equal(edwards25519.NewIdentityPoint()) == 1 {
			continue
		}
		pts := []*edwards25519.Point{edwards25519.NewIdentityPoint()}
		for j := 1; j < 8; j++ {
			pts = append(pts, new(edwards25519.Point).Add(pts[j-1], t))
		}
		return pts
	}
}

func isSmallOrder(p *edwards25519.Point) bool {
	return new(edwards25519.Point).MultByCofactor(p).Equal(edwards25519.NewIdentityPoint()) == 1
}

// smallOrderEncodings returns every 32-byte string that decodes to a point
// of small order: the eight canonical encodings and the six non-canonical
// ones (y+p for y = 0 and y = 1, each sign; the sign bit set on x = 0 for
// y = 1 and y = -1), canonical first.
func smallOrderEncodings(tb testing.TB) [][32]byte {
	tb.Helper()
	var out [][32]byte
	add := func(e [32]byte) {
		if slices.Contains(out, e) {
			return
		}
		p, err := new(edwards25519.Point).SetBytes(e[:])
		if err == nil && isSmallOrder(p) {
			out = append(out, e)
		}
	}
	for _, t := range torsion(tb) {
		add([32]byte(t.Bytes()))
	}
	canonical := slices.Clone(out)
	for _, e := range canonical {
		flipped := e
		flipped[31] ^= 0x80
		add(flipped)
		if y0 := e[0]; y0 < 19 && isZero(e[1:31]) && e[31]&0x7f == 0 {
			// y + p, p = 2^255-19: little-endian 0xed+y, 0xff…, 0x7f.
			var nc [32]byte
			nc[0] = 0xed + y0
			for i := 1; i < 31; i++ {
				nc[i] = 0xff
			}
			nc[31] = 0x7f
			add(nc)
			nc[31] |= 0x80
			add(nc)
		}
	}
	if len(canonical) != 8 || len(out) != 14 {
		tb.Fatalf("%d small-order encodings (%d canonical), want 14 (8)", len(out), len(canonical))
	}
	return out
}

func isZero(b []byte) bool { return !slices.ContainsFunc(b, func(c byte) bool { return c != 0 }) }

// secretScalar is the signing scalar of an Ed25519 private key (RFC 8032
// §5.1.5: the clamped first half of SHA-512 of the seed).
func secretScalar(tb testing.TB, key ed25519.PrivateKey) *edwards25519.Scalar {
	tb.Helper()
	h := sha512.Sum512(key.Seed())
	a, err := edwards25519.NewScalar().SetBytesWithClamping(h[:32])
	if err != nil {
		tb.Fatal(err)
	}
	return a
}

// signWith signs msg as RFC 8032 does, but with R = [r]B + rTorsion (a
// mixed-order R when rTorsion is not the identity) and the key's encoding
// pubEnc in the hash.
func signWith(a *edwards25519.Scalar, pubEnc []byte, rTorsion *edwards25519.Point, msg []byte, nonce byte) [64]byte {
	rh := sha512.Sum512(append([]byte{nonce}, msg...))
	r, _ := edwards25519.NewScalar().SetUniformBytes(rh[:])
	R := new(edwards25519.Point).ScalarBaseMult(r)
	R.Add(R, rTorsion)
	kh := sha512.New()
	kh.Write(R.Bytes())
	kh.Write(pubEnc)
	kh.Write(msg)
	k, _ := edwards25519.NewScalar().SetUniformBytes(kh.Sum(nil))
	S := edwards25519.NewScalar().MultiplyAdd(k, a, r)
	var sig [64]byte
	copy(sig[:32], R.Bytes())
	copy(sig[32:], S.Bytes())
	return sig
}

// craftedEvent is an event by the raw key pub whose signature sign makes
// from the signing bytes; its id is right.
func craftedEvent(tb testing.TB, pub [32]byte, n int, sign func(msg []byte) [64]byte) *Event {
	tb.Helper()
	pk, err := crypto.UnmarshalEd25519PublicKey(pub[:])
	if err != nil {
		tb.Fatal(err)
	}
	id, err := peer.IDFromPublicKey(pk)
	if err != nil {
		tb.Fatal(err)
	}
	e := &Event{Author: id.String(), Time: testNow.UnixMilli(), Kind: "note", Body: jsontext.Value(fmt.Sprintf(`{"n":%d}`, n))}
	sb, err := e.SigningBytes()
	if err != nil {
		tb.Fatal(err)
	}
	sum := blake3.Sum256(sb)
	e.ID = hex.EncodeToString(sum[:])
	sig := sign(sb)
	e.Sig = sigEncoding.EncodeToString(sig[:])
	return e
}

// edgeCase is one crafted signature and its verdicts.
type edgeCase struct {
	name string
	ev   *Event
	// zip215 is the verdict of the rule (ZIP 215), which Verify and
	// VerifyBatch must both give.
	zip215 bool
	// stdlib is crypto/ed25519's verdict where it does not depend on the
	// hash (nil where it does), to show where the two rules part.
	stdlib *bool
}

func edgeCases(tb testing.TB) []edgeCase {
	tb.Helper()
	yes, no := new(bool), new(bool)
	*yes = true
	priv := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, 32))
	pub := [32]byte(priv.Public().(ed25519.PublicKey))
	a := secretScalar(tb, priv)
	tors := torsion(tb)
	id := tors[0]
	var cases []edgeCase
	n := 0
	add := func(name string, zip215 bool, stdlib *bool, pub [32]byte, sign func(msg []byte) [64]byte) {
		n++
		cases = append(cases, edgeCase{name: name, ev: craftedEvent(tb, pub, n, sign), zip215: zip215, stdlib: stdlib})
	}
	honest := func(msg []byte) [64]byte { return [64]byte(ed25519.Sign(priv, msg)) }

	add("honest RFC 8032 signature", true, yes, pub, honest)
	add("honest, one bit of S flipped", false, no, pub, func(msg []byte) [64]byte { s := honest(msg); s[40] ^= 1; return s })
	add("honest, one bit of R flipped", false, no, pub, func(msg []byte) [64]byte { s := honest(msg); s[3] ^= 1; return s })
	add("honest, S+ℓ (non-canonical S, top bits clear)", false, no, pub, func(msg []byte) [64]byte {
		s := honest(msg)
		S, _ := edwards25519.NewScalar().SetCanonicalBytes(s[32:])
		copy(s[32:], addL(S))
		return s
	})
	add("honest, top three bits of S set", false, no, pub, func(msg []byte) [64]byte { s := honest(msg); s[63] |= 0xe0; return s })
	for i, order := range []int{8, 4, 2} {
		t := tors[[]int{1, 2, 4}[i]]
		add(fmt.Sprintf("mixed-order R (torsion of order %d)", order), true, no, pub, func(msg []byte) [64]byte {
			return signWith(a, pub[:], t, msg, byte(order))
		})
	}
	mixedA := new(edwards25519.Point).ScalarBaseMult(a)
	mixedA.Add(mixedA, tors[1])
	mixedAEnc := [32]byte(mixedA.Bytes())
	add("mixed-order A (key + torsion of order 8)", true, nil, mixedAEnc, func(msg []byte) [64]byte {
		return signWith(a, mixedAEnc[:], id, msg, 9)
	})
	offCurve := notOnCurve(tb)
	add("A not on the curve", false, no, offCurve, honest)
	add("R not on the curve", false, no, pub, func(msg []byte) [64]byte { s := honest(msg); copy(s[:32], offCurve[:]); return s })

	// Small-order A and R with S = 0: [8]([0]B - R - [k]A) = 0 for any
	// message, so ZIP 215 accepts all 14×14 (its own test vectors are
	// these); S = ℓ, the same value not reduced, is past the bound.
	encs := smallOrderEncodings(tb)
	for ai, aEnc := range encs {
		for ri, rEnc := range encs {
			add(fmt.Sprintf("small-order A #%d, R #%d, S = 0", ai, ri), true, nil, aEnc, func([]byte) [64]byte {
				var s [64]byte
				copy(s[:32], rEnc[:])
				return s
			})
		}
	}
	add("small-order A and R, S = ℓ (non-canonical)", false, no, encs[0], func([]byte) [64]byte {
		var s [64]byte
		copy(s[:32], encs[3][:])
		copy(s[32:], scalarL)
		return s
	})
	add("small-order A and R, S = ℓ-1", false, nil, encs[0], func([]byte) [64]byte {
		var s [64]byte
		copy(s[:32], encs[3][:])
		copy(s[32:], scalarLMinus1)
		return s
	})
	return cases
}

// addL returns the 32 little-endian bytes of S + ℓ (S < ℓ, so < 2^253).
func addL(S *edwards25519.Scalar) []byte {
	s := S.Bytes()
	out := make([]byte, 32)
	carry := 0
	for i := range out {
		v := int(s[i]) + int(scalarL[i]) + carry
		out[i], carry = byte(v), v>>8
	}
	return out
}

// notOnCurve returns an encoding that decodes to no point.
func notOnCurve(tb testing.TB) [32]byte {
	tb.Helper()
	for i := byte(2); ; i++ {
		var e [32]byte
		e[0] = i
		if _, err := new(edwards25519.Point).SetBytes(e[:]); err != nil {
			return e
		}
	}
}

func marshalAll(tb testing.TB, evs []*Event) []jsontext.Value {
	tb.Helper()
	raws := make([]jsontext.Value, len(evs))
	for i, e := range evs {
		m, err := e.Marshal()
		if err != nil {
			tb.Fatal(err)
		}
		raws[i] = m
	}
	return raws
}

// checkVerdicts checks VerifyBatch's verdicts on raws against want (by
// index): the valid ones in ok in order, the others rejected with
// ErrBadSignature.
func checkVerdicts(t *testing.T, raws []jsontext.Value, want []bool, name func(i int) string) {
	t.Helper()
	ok, rejected := VerifyBatch(raws, testNow)
	var wantOK []int
	for i, w := range want {
		if w {
			wantOK = append(wantOK, i)
		}
	}
	if len(ok) != len(wantOK) || len(ok)+len(rejected) != len(raws) {
		t.Errorf("VerifyBatch: %d ok, %d rejected of %d; want %d ok", len(ok), len(rejected), len(raws), len(wantOK))
	}
	for _, err := range rejected {
		var be *BatchError
		if !errors.As(err, &be) || !errors.Is(err, ErrBadSignature) {
			t.Fatalf("rejection %v, want a *BatchError of ErrBadSignature", err)
		}
		if want[be.Index] {
			t.Errorf("VerifyBatch rejected %s, valid under ZIP 215", name(be.Index))
		}
	}
	for j, e := range ok {
		if j < len(wantOK) {
			if m, _ := e.Marshal(); !bytes.Equal(m, raws[wantOK[j]]) {
				t.Errorf("ok[%d] is not %s", j, name(wantOK[j]))
			}
		}
	}
}

// TestSignatureEdgeCases: on every crafted case, Verify gives the ZIP 215
// verdict, crypto/ed25519 the verdict noted where it is fixed, and
// VerifyBatch the same verdict as Verify: all the cases in one page, each
// case alone, and each (a sample of the 196 small-order ones) at a
// varying place among 255 good events.
func TestSignatureEdgeCases(t *testing.T) {
	cases := edgeCases(t)
	stdlibAccepts, zipAccepts := 0, 0
	for _, c := range cases {
		err := c.ev.Verify(testNow)
		if (err == nil) != c.zip215 {
			t.Errorf("%s: Verify: %v, want valid=%v", c.name, err, c.zip215)
		}
		if err != nil && !errors.Is(err, ErrBadSignature) {
			t.Errorf("%s: Verify: %v, want ErrBadSignature", c.name, err)
		}
		pub, sig, sb := rawSig(t, c.ev)
		std := ed25519.Verify(pub, sb, sig)
		if c.stdlib != nil && std != *c.stdlib {
			t.Errorf("%s: crypto/ed25519 says %v, the case notes %v", c.name, std, *c.stdlib)
		}
		if std {
			stdlibAccepts++
			if !c.zip215 {
				t.Errorf("%s: crypto/ed25519 accepts what ZIP 215 refuses", c.name)
			}
		}
		if c.zip215 {
			zipAccepts++
		}
	}
	t.Logf("%d crafted signatures: ZIP 215 accepts %d, crypto/ed25519 %d", len(cases), zipAccepts, stdlibAccepts)

	// The valid ones as one batch, ours and ed25519consensus's; and with
	// each invalid one added.
	var ins []sigInput
	var msgs [][]byte
	var bad []int
	for i, c := range cases {
		var in sigInput
		pub, sig, sb := rawSig(t, c.ev)
		in.pub, in.sig = [32]byte(pub), [64]byte(sig)
		if !c.zip215 {
			bad = append(bad, i)
			continue
		}
		ins, msgs = append(ins, in), append(msgs, sb)
	}
	if !batchVerify(ins, msgs) || !refBatch(ins, msgs) {
		t.Errorf("the %d valid cases as one batch: batchVerify %v, ed25519consensus %v", len(ins), batchVerify(ins, msgs), refBatch(ins, msgs))
	}
	for _, i := range bad {
		pub, sig, sb := rawSig(t, cases[i].ev)
		ins2 := append(slices.Clone(ins), sigInput{pub: [32]byte(pub), sig: [64]byte(sig)})
		msgs2 := append(slices.Clone(msgs), sb)
		if batchVerify(ins2, msgs2) || refBatch(ins2, msgs2) {
			t.Errorf("%s among the valid cases: a batch passes", cases[i].name)
		}
	}

	// All the cases in one page.
	evs := make([]*Event, len(cases))
	want := make([]bool, len(cases))
	for i, c := range cases {
		evs[i], want[i] = c.ev, c.zip215
	}
	checkVerdicts(t, marshalAll(t, evs), want, func(i int) string { return cases[i].name })

	// Each case alone, and at a varying place among 255 good events.
	good := makeEvents(t, testKey(t, 3), testNow, 255, 0)
	for ci, c := range cases {
		checkVerdicts(t, marshalAll(t, []*Event{c.ev}), []bool{c.zip215}, func(int) string { return c.name })
		if strings.HasPrefix(c.name, "small-order A #") && ci%16 != 0 {
			continue // all of them are in the page above; a sample among good ones
		}
		at := (ci * 37) % 256
		page := slices.Insert(slices.Clone(good), at, c.ev)
		want := make([]bool, len(page))
		for i := range want {
			want[i] = i != at || c.zip215
		}
		checkVerdicts(t, marshalAll(t, page), want, func(i int) string {
			if i == at {
				return c.name
			}
			return fmt.Sprintf("good event %d", i)
		})
	}
}

// refBatch is ed25519consensus.BatchVerifier's verdict on ins over msgs.
func refBatch(ins []sigInput, msgs [][]byte) bool {
	v := ed25519consensus.NewBatchVerifier()
	for i := range ins {
		v.Add(ins[i].pub[:], msgs[i], ins[i].sig[:])
	}
	return v.Verify()
}

// rawSig returns an event's raw key, signature and signing bytes.
func rawSig(tb testing.TB, e *Event) (ed25519.PublicKey, []byte, []byte) {
	tb.Helper()
	var in sigInput
	if err := authorKey(e.Author, &in.pub); err != nil {
		tb.Fatal(err)
	}
	sig, err := sigEncoding.DecodeString(e.Sig)
	if err != nil {
		tb.Fatal(err)
	}
	sb, err := e.SigningBytes()
	if err != nil {
		tb.Fatal(err)
	}
	return in.pub[:], sig, sb
}

// TestVerifyBatchFindsTheBadOne: a page of 256 with one bad signature at
// each place in turn rejects exactly that one; all good, all pass; an
// empty page gives nothing.
func TestVerifyBatchFindsTheBadOne(t *testing.T) {
	evs := makeEvents(t, testKey(t, 4), testNow, 256, 0)
	raws := marshalAll(t, evs)
	if ok, rej := VerifyBatch(raws, testNow); len(ok) != 256 || len(rej) != 0 {
		t.Fatalf("all good: %d ok, %v", len(ok), rej)
	}
	if ok, rej := VerifyBatch(nil, testNow); len(ok) != 0 || len(rej) != 0 {
		t.Fatalf("empty page: %d ok, %v", len(ok), rej)
	}
	if ok, rej := VerifyBatch([]jsontext.Value{}, testNow); len(ok) != 0 || len(rej) != 0 {
		t.Fatalf("empty page: %d ok, %v", len(ok), rej)
	}
	for _, at := range []int{0, 1, 127, 128, 200, 255} {
		bad := clone(evs[at])
		sig, _ := sigEncoding.DecodeString(bad.Sig)
		sig[10] ^= 0x40
		bad.Sig = sigEncoding.EncodeToString(sig)
		page := slices.Clone(raws)
		page[at], _ = bad.Marshal()
		ok, rej := VerifyBatch(page, testNow)
		var be *BatchError
		if len(ok) != 255 || len(rej) != 1 || !errors.As(rej[0], &be) || be.Index != at || !errors.Is(rej[0], ErrBadSignature) {
			t.Fatalf("bad signature at %d: %d ok, rejected %v", at, len(ok), rej)
		}
		if wantErr := bad.Verify(testNow); !errors.Is(wantErr, ErrBadSignature) {
			t.Fatalf("Verify of the bad one: %v", wantErr)
		}
	}
}

// FuzzBatchAgrees: for any key, signature and message, the check one at a
// time gives ed25519consensus.Verify's verdict (ZIP 215), batchVerify
// ed25519consensus.BatchVerifier's, and verifySignatures the verdict of
// the check one at a time, beside itself and beside good signatures.
func FuzzBatchAgrees(f *testing.F) {
	for _, c := range edgeCases(f) {
		pub, sig, sb := rawSig(f, c.ev)
		f.Add([]byte(pub), sig, sb)
	}
	priv := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{9}, 32))
	goodMsg := []byte("wats-event-v1:a good one")
	good := sigInput{pub: [32]byte(priv.Public().(ed25519.PublicKey)), sig: [64]byte(ed25519.Sign(priv, goodMsg))}
	f.Fuzz(func(t *testing.T, pub, sig, msg []byte) {
		if len(pub) != 32 || len(sig) != 64 {
			return
		}
		in := sigInput{pub: [32]byte(pub), sig: [64]byte(sig)}
		single := verifySignature(&in, msg)
		if zip := ed25519consensus.Verify(pub, msg, sig); single != zip {
			t.Fatalf("verifySignature %v, ed25519consensus.Verify %v", single, zip)
		}
		for _, batch := range [][]sigInput{{in, in}, {good, in}, {in, good, good}} {
			msgs := make([][]byte, len(batch))
			for i, b := range batch {
				msgs[i] = msg
				if b == good {
					msgs[i] = goodMsg
				}
			}
			if got, want := batchVerify(batch, msgs), refBatch(batch, msgs); got != want {
				t.Fatalf("batch of %d: batchVerify %v, ed25519consensus.BatchVerifier %v", len(batch), got, want)
			}
			valid := make([]bool, len(batch))
			verifySignatures(batch, msgs, valid)
			for i, b := range batch {
				if want := b == good || single; valid[i] != want {
					t.Fatalf("batch of %d, entry %d: %v, single check %v", len(batch), i, valid[i], want)
				}
			}
		}
	})
}

// TestVerifyBatchAuthors: a share parses each author once and remembers
// only those that parse: the same bad author twice is refused twice, and
// events by a remembered author still need their own valid signature.
func TestVerifyBatchAuthors(t *testing.T) {
	key := testKey(t, 5)
	evs := makeEvents(t, key, testNow, 6, 0)
	id, err := peer.Decode(evs[0].Author)
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{1, 4} {
		evs[i].Author = peer.ToCid(id).String() // the same peer, not in canonical form
		reID(t, evs[i])
	}
	evs[3].Sig = evs[2].Sig // a remembered author, another event's signature
	reID(t, evs[3])
	ok, rejected := VerifyBatch(marshalAll(t, evs), testNow)
	if len(ok) != 3 || len(rejected) != 3 {
		t.Fatalf("%d ok, rejected %v", len(ok), rejected)
	}
	for j, want := range map[int]error{1: ErrMalformed, 3: ErrBadSignature, 4: ErrMalformed} {
		found := false
		for _, err := range rejected {
			var be *BatchError
			if errors.As(err, &be) && be.Index == j {
				found = true
				if !errors.Is(err, want) {
					t.Errorf("event %d: %v, want %v", j, err, want)
				}
			}
		}
		if !found {
			t.Errorf("event %d not rejected", j)
		}
	}
}
