package gitsource

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Auth is how to authenticate to a repository, from a Secret.
type Auth struct {
	// SecretName names the Secret in messages: "authentication refused
	// with Secret NAME". Nothing else of it is ever shown.
	SecretName string
	// Username and Password (basic) or BearerToken, for https.
	Username, Password, BearerToken string
	// Identity is a private key (PEM or OpenSSH) and KnownHosts the
	// known_hosts lines of the host, for ssh; host keys are always checked.
	Identity, KnownHosts []byte
}

// http reports whether there are credentials for https.
func (a Auth) http() bool { return a.Username != "" || a.Password != "" || a.BearerToken != "" }

// AuthFromSecret reads the data of the Secret named name: "username" and
// "password", or "bearerToken", for https; "identity" and "known_hosts"
// for ssh ("known_hosts" alone for a host that takes no key). Any other
// combination is refused, naming the keys found, never their values.
func AuthFromSecret(name string, data map[string][]byte) (Auth, error) {
	keys := make([]string, 0, len(data))
	for k := range data {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	has := func(want ...string) bool { return slices.Equal(keys, want) }
	a := Auth{SecretName: name}
	switch {
	case has("password", "username"):
		a.Username, a.Password = string(data["username"]), string(data["password"])
		if a.Username == "" || a.Password == "" {
			return Auth{}, fmt.Errorf("the Secret %s has an empty username or password", name)
		}
	case has("bearerToken"):
		a.BearerToken = string(data["bearerToken"])
		if a.BearerToken == "" {
			return Auth{}, fmt.Errorf("the Secret %s has an empty bearerToken", name)
		}
	case has("identity", "known_hosts"), has("known_hosts"):
		a.Identity, a.KnownHosts = data["identity"], data["known_hosts"]
		if len(a.KnownHosts) == 0 {
			return Auth{}, fmt.Errorf("the Secret %s has an empty known_hosts", name)
		}
	default:
		found := "no key"
		if len(keys) > 0 {
			quoted := make([]string, len(keys))
			for i, k := range keys {
				quoted[i] = strconv.Quote(k)
			}
			found = "keys " + strings.Join(quoted, ", ")
		}
		return Auth{}, fmt.Errorf("the Secret %s has %s: a git Secret has username and password, or bearerToken (https), or identity and known_hosts (ssh)", name, found)
	}
	return a, nil
}
