package catalogsync_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/catalogd/catalogd/internal/catalogsync"
)

// TestTruncate cuts around the size of the mark and inside multi-byte
// characters: the result never exceeds n bytes, is valid UTF-8 when s is,
// and is a prefix of s (plus the mark when there was room for it).
func TestTruncate(t *testing.T) {
	const mark = " …(truncated)" // 15 bytes
	long := strings.Repeat("x", 40)
	euro := strings.Repeat("€", 10) // 3 bytes a rune, 30 bytes
	tests := []struct {
		name string
		s    string
		n    int
		want string
	}{
		{"negative n", "abc", -1, ""},
		{"zero n", "abc", 0, ""},
		{"zero n, empty s", "", 0, ""},
		{"fits exactly", "abc", 3, "abc"},
		{"fits", "abc", 10, "abc"},
		{"one byte, no room for the mark", long, 1, "x"},
		{"one byte short of the mark", long, len(mark) - 1, long[:len(mark)-1]},
		{"room for the mark only", long, len(mark), mark},
		{"one byte beside the mark", long, len(mark) + 1, "x" + mark},
		{"no mark, cut inside a rune", euro, 4, "€"},
		{"no mark, cut inside the first rune", euro, 2, ""},
		{"no mark, cut on a rune boundary", euro, 6, "€€"},
		{"mark, cut inside a rune", euro, len(mark) + 5, "€" + mark},
		{"mark, cut on a rune boundary", euro, len(mark) + 6, "€€" + mark},
		{"mark, cut inside the first rune", euro, len(mark) + 2, mark},
		{"four-byte runes", "🙂🙂🙂", 7, "🙂"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := catalogsync.Truncate(tt.s, tt.n)
			if got != tt.want {
				t.Errorf("Truncate(%q, %d) = %q; want %q", tt.s, tt.n, got, tt.want)
			}
			if len(got) > max(tt.n, 0) {
				t.Errorf("Truncate(%q, %d) is %d bytes, over the bound", tt.s, tt.n, len(got))
			}
			if !utf8.ValidString(got) {
				t.Errorf("Truncate(%q, %d) = %q is not valid UTF-8", tt.s, tt.n, got)
			}
			if !strings.HasPrefix(tt.s, strings.TrimSuffix(got, mark)) {
				t.Errorf("Truncate(%q, %d) = %q is not a prefix of s", tt.s, tt.n, got)
			}
		})
	}
}

// FuzzTruncate checks the bound, the validity and the prefix for any s and n.
func FuzzTruncate(f *testing.F) {
	f.Add("€€€ error", 5)
	f.Add("short", 0)
	f.Add(strings.Repeat("🙂", 20), 17)
	f.Fuzz(func(t *testing.T, s string, n int) {
		got := catalogsync.Truncate(s, n)
		if len(got) > max(n, 0) {
			t.Fatalf("Truncate(%q, %d) is %d bytes, over the bound", s, n, len(got))
		}
		if utf8.ValidString(s) && !utf8.ValidString(got) {
			t.Fatalf("Truncate(%q, %d) = %q is not valid UTF-8", s, n, got)
		}
		if !strings.HasPrefix(s, strings.TrimSuffix(got, " …(truncated)")) {
			t.Fatalf("Truncate(%q, %d) = %q is not a prefix of s", s, n, got)
		}
	})
}
