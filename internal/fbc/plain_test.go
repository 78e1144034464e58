package fbc

import (
	"math/rand/v2"
	"testing"
	"unicode/utf8"
)

// TestPlainString checks plainString, which reads eight bytes at a time,
// against the definition a byte at a time, on strings of every length up
// to a few words with each kind of byte at each place.
func TestPlainString(t *testing.T) {
	want := func(body []byte) bool {
		for _, b := range body {
			if b < 0x20 || b == '\\' || b == '"' {
				return false
			}
		}
		return utf8.Valid(body) && !containsRune(body, '\u2028') && !containsRune(body, '\u2029')
	}
	// Bytes at the edges of each class.
	special := []byte{0x00, 0x1f, 0x20, 0x21, '"', 0x23, '\\', 0x5b, 0x5d, 0x7e, 0x7f, 0x80, 0xc3, 0xa9, 0xe2, 0xff}
	rng := rand.New(rand.NewPCG(3, 4))
	for n := 0; n <= 40; n++ {
		for at := 0; at < n; at++ {
			for _, c := range special {
				body := make([]byte, n)
				for i := range body {
					body[i] = 'A' + byte(rng.IntN(26))
				}
				body[at] = c
				tok := append(append([]byte{'"'}, body...), '"')
				if got := plainString(tok); got != want(body) {
					t.Errorf("plainString(%q) = %v", tok, got)
				}
			}
		}
	}
	// And strings of those bytes alone, several to a word.
	for i := 0; i < 5000; i++ {
		body := make([]byte, rng.IntN(40))
		for j := range body {
			body[j] = special[rng.IntN(len(special))]
		}
		tok := append(append([]byte{'"'}, body...), '"')
		if got := plainString(tok); got != want(body) {
			t.Errorf("plainString(%q) = %v", tok, got)
		}
	}
	for _, s := range []string{"é", "\u2028", "AAAAAAA\u2029", "AAAAAAAAé", "AAAAAAAA\xff"} {
		tok := []byte(`"` + s + `"`)
		if got := plainString(tok); got != want([]byte(s)) {
			t.Errorf("plainString(%q) = %v", tok, got)
		}
	}
}

func containsRune(b []byte, r rune) bool {
	for len(b) > 0 {
		c, size := utf8.DecodeRune(b)
		if c == r {
			return true
		}
		b = b[size:]
	}
	return false
}
