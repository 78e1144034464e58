package catalogcli

import "testing"

func TestParseCacheMaxSize(t *testing.T) {
	tests := []struct {
		in      string
		want    int64
		wantErr bool
	}{
		{in: "1Gi", want: 1 << 30},
		{in: "500Mi", want: 500 << 20},
		{in: "1.5Gi", want: 3 << 29},
		{in: "2G", want: 2e9},
		{in: "1048576", want: 1 << 20},
		{in: "0", want: 0},
		{in: "-1Gi", wantErr: true},
		{in: "1 GiB", wantErr: true},
		{in: "lots", wantErr: true},
		{in: "", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := parseCacheMaxSize(tc.in)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Errorf("parseCacheMaxSize(%q) = %d, %v; want %d, error %v", tc.in, got, err, tc.want, tc.wantErr)
			}
		})
	}
}

// FuzzParseCacheMaxSize checks that any value of the flag or variable is
// either a size of at least 0 or an error, never a panic.
func FuzzParseCacheMaxSize(f *testing.F) {
	for _, s := range []string{"1Gi", "0", "-1", "1e400", "9223372036854775807", "1.5Ei", "0.1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if n, err := parseCacheMaxSize(s); err == nil && n < 0 {
			t.Errorf("parseCacheMaxSize(%q) = %d", s, n)
		}
	})
}
