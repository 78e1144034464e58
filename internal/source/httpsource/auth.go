package httpsource

import (
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
)

// Auth is what a Fetcher presents to the URL's host, and the CA it trusts
// in addition to the system's. The names are for messages: a refusal names
// the Secret, never what it holds.
type Auth struct {
	// SecretName names the Secret the credentials come from (http.secretRef).
	SecretName string
	// Username and Password (basic) or BearerToken; at most one kind.
	Username, Password, BearerToken string
	// CABundle is PEM certificates, from http.caSecretRef (key ca.crt).
	CABundle []byte
	// CASecretName names the Secret CABundle comes from.
	CASecretName string
}

// Secret keys AuthFromSecret reads.
const (
	KeyUsername    = "username"
	KeyPassword    = "password"
	KeyBearerToken = "bearerToken"
)

// AuthFromSecret reads the credentials of the Secret name: username and
// password (basic), or bearerToken. Anything else, or both, is an error
// that names the keys found, never their values.
func AuthFromSecret(name string, data map[string][]byte) (Auth, error) {
	_, hasUser := data[KeyUsername]
	_, hasPassword := data[KeyPassword]
	_, hasToken := data[KeyBearerToken]
	switch {
	case hasToken && (hasUser || hasPassword):
		return Auth{}, fmt.Errorf("secret %q holds both %s and %s/%s: keep one kind of credentials", name, KeyBearerToken, KeyUsername, KeyPassword)
	case hasToken:
		token := string(data[KeyBearerToken])
		if err := checkCredential(name, KeyBearerToken, token); err != nil {
			return Auth{}, err
		}
		return Auth{SecretName: name, BearerToken: token}, nil
	case hasUser && hasPassword:
		user, password := string(data[KeyUsername]), string(data[KeyPassword])
		if err := checkCredential(name, KeyUsername, user); err != nil {
			return Auth{}, err
		}
		if strings.Contains(user, ":") {
			return Auth{}, fmt.Errorf("secret %q: key %s holds a colon, which basic authentication cannot carry in a user name", name, KeyUsername)
		}
		if err := checkCredential(name, KeyPassword, password); err != nil {
			return Auth{}, err
		}
		return Auth{SecretName: name, Username: user, Password: password}, nil
	}
	keys := make([]string, 0, len(data))
	for k := range data {
		keys = append(keys, fmt.Sprintf("%q", k))
	}
	slices.Sort(keys)
	found := "no keys"
	if len(keys) > 0 {
		found = "keys " + strings.Join(keys, ", ")
	}
	return Auth{}, fmt.Errorf("secret %q has %s: want %s and %s, or %s", name, found, KeyUsername, KeyPassword, KeyBearerToken)
}

// checkCredential refuses an empty value, and one with a control character,
// which a header cannot carry (often the line break of `echo` without -n).
func checkCredential(secret, key, value string) error {
	if value == "" {
		return fmt.Errorf("secret %q: key %s is empty", secret, key)
	}
	if strings.IndexFunc(value, func(r rune) bool { return r < 0x20 || r == 0x7f }) >= 0 {
		return fmt.Errorf("secret %q: key %s holds a control character or line break (was it written with echo without -n?)", secret, key)
	}
	return nil
}

// present reports whether there are credentials to send.
func (a Auth) present() bool { return a.BearerToken != "" || a.Username != "" }

// header is the Authorization header value.
func (a Auth) header() string {
	if a.BearerToken != "" {
		return "Bearer " + a.BearerToken
	}
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(a.Username+":"+a.Password))
}

// secretName names the Secret in messages.
func (a Auth) secretName() string {
	if a.SecretName == "" {
		return "(unnamed)"
	}
	return fmt.Sprintf("%q", a.SecretName)
}
