package peakgolden

// Keys. A golden file must name each module so that the next run finds
// it again, and the names XLA gives are of no help: the dump's running
// number (module_0042) changes as soon as the program compiles one more
// function, and one jit function compiled for two shapes gives two modules
// of the same HloModule name. What stays the same across runs, and tells
// those two apart, is the module's name together with its entry
// computation's signature, the shapes it takes and returns. So a key is
//
//	NAME@SIGNATURE           jit_scan@3f2a91c0
//
// SIGNATURE being the first 8 hex digits of the SHA-256 of the entry
// signature written without layouts or spaces,
// "(c128[480,480],s32[])->c128[480,480]" (signatureText). Layouts are left
// out so that a module keeps its key whether it was dumped before or after
// optimization, and whatever layout a target pass gives it.
//
// Two modules of one key (the same function compiled twice for the same
// shapes, with other static arguments) are NAME@SIGNATURE#1, #2, ... in
// input order: the only place where order matters, and a rare one.
//
// Format v1 keyed a module by its name alone, NAME#K when several modules
// had it, K counting them in input order: a second compile of jit_scan
// renamed the line of the first. Such a file is still read and compared by
// those keys (each line of a run carries its v1 key), and an update
// rewrites it as v2.

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"github.com/hlomem/hlomem/hlo"
)

// signatureDigits is how many hex digits of the hash a key keeps: 32 bits,
// to tell apart the few compiles of one function.
const signatureDigits = 8

// Signature returns the fingerprint of m's entry signature that its key
// carries: 8 hex digits.
func Signature(m *hlo.Module) string {
	sum := sha256.Sum256([]byte(signatureText(m)))
	return hex.EncodeToString(sum[:])[:signatureDigits]
}

// signatureText is the entry computation's signature, its parameter and
// result shapes without layouts or spaces: "(f32[8,256],s32[])->f32[8,256]".
func signatureText(m *hlo.Module) string {
	var b strings.Builder
	b.WriteByte('(')
	if e := m.Entry; e != nil {
		for i, p := range e.Params {
			if i > 0 {
				b.WriteByte(',')
			}
			if p == nil {
				b.WriteByte('?')
				continue
			}
			b.WriteString(shapeText(p.Shape))
		}
		b.WriteString(")->")
		if e.Root != nil {
			b.WriteString(shapeText(e.Root.Shape))
		}
	} else {
		b.WriteString(")->")
	}
	return b.String()
}

// keyName makes a module name one word of a key: no space, and none of the
// characters that separate a key's parts or a line's fields.
func keyName(name string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) || r == '|' || r == '#' || r == '@' {
			return '_'
		}
		return r
	}, name)
}

// assignKeys sets the Key and the v1 key of lines (in input order) from
// their Module and Signature.
func assignKeys(lines []Line) {
	keys := make([]string, len(lines))
	for i := range lines {
		keys[i] = keyName(lines[i].Module) + "@" + lines[i].Signature
	}
	number(keys)
	for i := range lines {
		lines[i].Key = keys[i]
	}
	v1 := make([]string, len(lines))
	for i := range lines {
		v1[i] = lines[i].Module
	}
	number(v1)
	for i := range lines {
		lines[i].v1Key = v1[i]
	}
}

// number makes keys unique: when several are the same, each gets #K, K
// counting them from 1 in order.
func number(keys []string) {
	count := map[string]int{}
	for _, k := range keys {
		count[k]++
	}
	seen := map[string]int{}
	for i, k := range keys {
		if count[k] > 1 {
			seen[k]++
			keys[i] = k + "#" + strconv.Itoa(seen[k])
		}
	}
}

// parseKey checks a key read from a golden file of the given format
// version and returns the module name and the signature ("" in v1).
func parseKey(key string, version int) (name, sig string, err error) {
	base, _ := splitOrdinal(key)
	if version == 1 {
		return base, "", nil
	}
	name, sig, ok := strings.Cut(base, "@")
	if !ok || name == "" || len(sig) != signatureDigits || !isHex(sig) {
		return "", "", fmt.Errorf("key %s: want NAME@SIGNATURE, the module's name and %d hex digits (a v1 file has no signature: its first line says v1)", key, signatureDigits)
	}
	return name, sig, nil
}

func isHex(s string) bool {
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// Sort orders lines by key (lessKey).
func Sort(lines []Line) {
	sort.SliceStable(lines, func(i, j int) bool { return lessKey(lines[i].Key, lines[j].Key) })
}

// lessKey orders keys by module name, then signature, then ordinal:
// jit_a@... before jit_a.x@..., NAME@S#2 before NAME@S#10.
func lessKey(a, b string) bool {
	ab, ak := splitOrdinal(a)
	bb, bk := splitOrdinal(b)
	an, as, _ := strings.Cut(ab, "@")
	bn, bs, _ := strings.Cut(bb, "@")
	if an != bn {
		return an < bn
	}
	if as != bs {
		return as < bs
	}
	return ak < bk
}

// splitOrdinal splits KEY#K into KEY and K (0 without one).
func splitOrdinal(s string) (string, int) {
	i := strings.LastIndexByte(s, '#')
	if i < 0 {
		return s, 0
	}
	k, err := strconv.Atoi(s[i+1:])
	if err != nil {
		return s, 0
	}
	return s[:i], k
}
