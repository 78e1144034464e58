package gitsource_test

import (
	"strings"
	"testing"

	"github.com/catalogd/catalogd/internal/source/gitsource"
)

// FuzzAuthFromSecret: whatever a Secret holds, AuthFromSecret returns
// credentials of exactly one kind or an error, and an error never shows a
// value.
func FuzzAuthFromSecret(f *testing.F) {
	f.Add("username", "me", "password", "s3cret-value")
	f.Add("bearerToken", "t0ken-value", "", "")
	f.Add("identity", "-----BEGIN OPENSSH PRIVATE KEY-----", "known_hosts", "host ssh-ed25519 AAAA")
	f.Add("known_hosts", "host ssh-ed25519 AAAA", "", "")
	f.Add("username", "me", "token", "s3cret-value")
	f.Add(".dockerconfigjson", "{\"auths\":{}}", "", "")
	f.Fuzz(func(t *testing.T, k1, v1, k2, v2 string) {
		data := map[string][]byte{}
		if k1 != "" {
			data[k1] = []byte(v1)
		}
		if k2 != "" {
			data[k2] = []byte(v2)
		}
		a, err := gitsource.AuthFromSecret("name", data)
		if err != nil {
			for _, v := range []string{v1, v2} {
				// A value of a few characters can be part of any message.
				if len(v) >= 8 && strings.Contains(err.Error(), v) && !strings.Contains(k1+k2, v) {
					t.Fatalf("error %q shows a value", err)
				}
			}
			if a.Username != "" || a.Password != "" || a.BearerToken != "" || a.Identity != nil || a.KnownHosts != nil {
				t.Fatalf("error %v with credentials %+v", err, a)
			}
			return
		}
		kinds := 0
		if a.Username != "" || a.Password != "" {
			kinds++
		}
		if a.BearerToken != "" {
			kinds++
		}
		if len(a.KnownHosts) > 0 {
			kinds++
		}
		if kinds != 1 || a.SecretName != "name" {
			t.Fatalf("credentials %+v of %d kinds from keys %q, %q", a, kinds, k1, k2)
		}
	})
}
