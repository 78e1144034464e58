package unpack

import (
	"errors"
	"io/fs"
	"testing"
)

func TestRedactError(t *testing.T) {
	tests := []struct{ in, want string }{
		{in: "no URL here", want: "no URL here"},
		{in: `Get "https://s3.example.com/b/blob?X-Amz-Signature=abc&X-Amz-Credential=k": EOF`, want: `Get "https://s3.example.com/b/blob?REDACTED": EOF`},
		{in: "GET https://cdn.example.com/x?token=abc: unexpected status code 403", want: "GET https://cdn.example.com/x?REDACTED: unexpected status code 403"},
		{in: "<URL>https://cdn.example.com/x?sig=abc</URL>", want: "<URL>https://cdn.example.com/x?REDACTED</URL>"},
		{in: "fetching https://user:pass@registry.example.com/v2/ failed", want: "fetching https://REDACTED@registry.example.com/v2/ failed"},
		{in: "GET https://registry.example.com/v2/repo/blobs/sha256:abc: BLOB_UNKNOWN", want: "GET https://registry.example.com/v2/repo/blobs/sha256:abc: BLOB_UNKNOWN"},
	}
	for _, tt := range tests {
		inner := &fs.PathError{Op: "op", Path: "p", Err: fs.ErrNotExist}
		err := redactError(errors.Join(errors.New(tt.in), inner))
		want := tt.want + "\n" + inner.Error()
		if err.Error() != want {
			t.Errorf("redactError(%q) = %q, want %q", tt.in, err.Error(), want)
		}
		if !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("redactError(%q) lost the wrapped error", tt.in)
		}
	}
}
