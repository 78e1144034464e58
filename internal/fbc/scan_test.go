package fbc

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// refScan is valueScan.scan a byte at a time: what the value's lexical
// structure says, to check the searching one against.
func refScan(v *valueScan, buf []byte) (int, bool) {
	for i, c := range buf {
		switch {
		case v.escape:
			v.escape = false
			continue
		case v.inString && c == '\\':
			v.escape = true
			continue
		case v.inString && c == '"':
			v.inString = false
		case v.inString:
			continue
		case c == '"':
			v.inString = true
		case c == '{' || c == '[':
			v.depth++
		case c == '}' || c == ']':
			v.depth--
		}
		if v.depth <= 0 && !v.inString {
			return i + 1, true
		}
	}
	return len(buf), false
}

// TestValueScan feeds values, and values cut into random pieces, to
// valueScan and checks where it ends each against refScan: strings of many
// escapes, escapes across a cut, quotes and backslashes outside strings.
func TestValueScan(t *testing.T) {
	values := []string{
		`"plain"`,
		`"` + strings.Repeat(`\n`, 1000) + `x"`,
		`"` + strings.Repeat(`\\`, 500) + `"`,
		`"` + strings.Repeat(`\"`, 500) + `"`,
		`{"a":"b\"c","d":["\\",{"e":"}"}]}`,
		`["` + strings.Repeat("A", 70000) + `\u0041",` + strings.Repeat(`"\\\"",`, 300) + `1]`,
		`{"a":"unterminated`,
		`{"a":"x\`,
		`{"a":1}}`,
		`[{]}"`,
		// Runs either side of shortRun between escapes and quotes.
		`["` + strings.Repeat(strings.Repeat("a", shortRun-1)+`\"`+strings.Repeat("b", shortRun)+`\\`+strings.Repeat("c", shortRun+1)+`","`, 50) + `"]`,
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 200; i++ {
		var b strings.Builder
		for j := rng.IntN(200); j > 0; j-- {
			b.WriteByte(`"\{}[]ab`[rng.IntN(8)])
		}
		values = append(values, `"`+b.String())
	}
	for _, value := range values {
		for cuts := 0; cuts < 4; cuts++ {
			var got, want valueScan
			rest := []byte(value)
			off := 0
			for len(rest) > 0 {
				piece := len(rest)
				if cuts > 0 {
					piece = 1 + rng.IntN(len(rest))
				}
				gn, gdone := got.scan(rest[:piece])
				wn, wdone := refScan(&want, rest[:piece])
				if gn != wn || gdone != wdone || got != want {
					t.Fatalf("%.60q at %d, %d bytes: scan says %d %v %+v, byte by byte %d %v %+v",
						value, off, piece, gn, gdone, got, wn, wdone, want)
				}
				if gdone {
					break
				}
				rest, off = rest[piece:], off+piece
			}
		}
	}
}
