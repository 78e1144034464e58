package httpsource_test

import (
	"strings"
	"testing"

	"github.com/catalogd/catalogd/internal/source/httpsource"
)

// TestAuthFromSecret: basic or bearer, and a refusal that names the keys
// found and the Secret, never a value.
func TestAuthFromSecret(t *testing.T) {
	for _, tc := range []struct {
		name    string
		data    map[string]string
		want    httpsource.Auth
		wantErr string
	}{
		{"basic", map[string]string{"username": "u", "password": "s3cr3t"}, httpsource.Auth{SecretName: "s", Username: "u", Password: "s3cr3t"}, ""},
		{"bearer", map[string]string{"bearerToken": "s3cr3t"}, httpsource.Auth{SecretName: "s", BearerToken: "s3cr3t"}, ""},
		{"both", map[string]string{"username": "u", "password": "s3cr3t", "bearerToken": "s3cr3t"}, httpsource.Auth{}, "holds both"},
		{"no password", map[string]string{"username": "u", "token": "s3cr3t"}, httpsource.Auth{}, `secret "s" has keys "token", "username": want username and password, or bearerToken`},
		{"empty", map[string]string{}, httpsource.Auth{}, `secret "s" has no keys`},
		{"empty token", map[string]string{"bearerToken": ""}, httpsource.Auth{}, "key bearerToken is empty"},
		{"line break", map[string]string{"bearerToken": "s3cr3t\n"}, httpsource.Auth{}, "key bearerToken holds a control character"},
		{"colon in user", map[string]string{"username": "a:b", "password": "s3cr3t"}, httpsource.Auth{}, "holds a colon"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := map[string][]byte{}
			for k, v := range tc.data {
				data[k] = []byte(v)
			}
			got, err := httpsource.AuthFromSecret("s", data)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				if strings.Contains(err.Error(), "s3cr3t") {
					t.Errorf("the error shows a value: %v", err)
				}
				return
			}
			if err != nil || got.SecretName != tc.want.SecretName || got.Username != tc.want.Username || got.Password != tc.want.Password || got.BearerToken != tc.want.BearerToken {
				t.Errorf("got %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

// FuzzAuthFromSecret: whatever a Secret holds, the answer is credentials
// or an error, and an error never shows a value.
func FuzzAuthFromSecret(f *testing.F) {
	f.Add("username", "alice", "password", "pw-value-1")
	f.Add("bearerToken", "tok-value-1", "", "")
	f.Add("bearerToken", "tok\nvalue", "username", "u")
	f.Add("", "", "", "")
	f.Fuzz(func(t *testing.T, k1, v1, k2, v2 string) {
		data := map[string][]byte{}
		if k1 != "" {
			data[k1] = []byte(v1)
		}
		if k2 != "" {
			data[k2] = []byte(v2)
		}
		got, err := httpsource.AuthFromSecret("s", data)
		if err == nil {
			if got.BearerToken == "" && (got.Username == "" || got.Password == "") {
				t.Fatalf("accepted without credentials: %+v", got)
			}
			return
		}
		for _, v := range []string{v1, v2} {
			// Values short enough to occur in the message's own words
			// by chance, or within a key's name, prove nothing.
			if len(v) >= 12 && !strings.Contains(k1+" "+k2, v) && strings.Contains(err.Error(), v) {
				t.Fatalf("the error shows a value %q: %v", v, err)
			}
		}
	})
}
