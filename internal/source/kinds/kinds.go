// Package kinds chooses the kind of source a source.Spec names: the one
// place where every composition root (`catalogd serve`, `validate` and
// `manager` through internal/daemon, `kubectl catalog` through
// internal/catalogcli) turns a Spec into a Fetcher. A new kind of source is
// one new package and one case here.
package kinds

import (
	"errors"
	"fmt"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/catalogd/catalogd/internal/catalogdir"
	"github.com/catalogd/catalogd/internal/catalogsync"
	"github.com/catalogd/catalogd/internal/prebuilt"
	"github.com/catalogd/catalogd/internal/source"
	"github.com/catalogd/catalogd/internal/source/gitsource"
	"github.com/catalogd/catalogd/internal/source/httpsource"
	"github.com/catalogd/catalogd/internal/unpack"
)

// Kinds holds what fetches each kind of source; one per process, built by
// its composition root with the process's limits.
type Kinds struct {
	// Images pulls images and artifacts from registries, and reads them
	// from OCI layouts on disk.
	Images *unpack.Unpacker
	// Git fetches git repositories.
	Git *gitsource.Client
	// HTTP fetches archives and files over http(s).
	HTTP *httpsource.Client
	// TempDir is where fetched content is unpacked, each fetch into its own
	// directory that its Cleanup removes.
	TempDir string
	// Prebuilt, when set, finds the index published beside an image
	// (catalogsync.PrebuiltSource); nil builds every index here.
	Prebuilt *prebuilt.Client
}

// Fetcher is the fetcher of spec, with creds where its kind takes
// credentials. An error is a Spec of no kind, a kind this binary does not
// fetch, or credentials its kind cannot use.
func (k Kinds) Fetcher(spec source.Spec, creds source.Credentials) (source.Fetcher, error) {
	switch {
	case spec.Dir != "":
		return catalogsync.DirFetcher{Path: spec.Dir, Hashes: catalogdir.NewCache()}, nil
	case spec.Image != "":
		ref, err := name.ParseReference(spec.Image)
		if err != nil {
			return nil, fmt.Errorf("image %s: %w", spec.Image, err)
		}
		f := catalogsync.ImageFetcher{Ref: ref, Unpacker: k.Images, TempDir: k.TempDir}
		if k.Prebuilt != nil {
			// Assigned only when set: a nil *Client in the interface
			// would look for an index.
			f.Prebuilt = k.Prebuilt
		}
		return f, nil
	case spec.Layout != nil:
		return catalogsync.LayoutFetcher{Layout: *spec.Layout, Unpacker: k.Images, TempDir: k.TempDir}, nil
	case spec.Git != nil:
		var auth gitsource.Auth
		if creds.Secret != nil {
			var err error
			// Its errors name the Secret and the keys it wants, never a value.
			if auth, err = gitsource.AuthFromSecret(creds.Secret.Name, creds.Secret.Data); err != nil {
				return nil, err
			}
		}
		return k.Git.Fetcher(*spec.Git, auth, k.TempDir), nil
	case spec.HTTP != nil:
		auth, err := httpAuth(creds)
		if err != nil {
			return nil, err
		}
		return k.HTTP.Fetcher(*spec.HTTP, auth, k.TempDir), nil
	}
	return nil, errors.New("no source given")
}

// caKey is the key of a CA Secret (caSecretRef) that holds its PEM
// certificates, as in a cert-manager or service-account CA Secret.
const caKey = "ca.crt"

// httpAuth is the HTTP source's Auth from the catalog's Secrets; its errors
// name a Secret and the keys it wants, never a value.
func httpAuth(creds source.Credentials) (httpsource.Auth, error) {
	var auth httpsource.Auth
	if creds.Secret != nil {
		var err error
		if auth, err = httpsource.AuthFromSecret(creds.Secret.Name, creds.Secret.Data); err != nil {
			return httpsource.Auth{}, err
		}
	}
	if creds.CA != nil {
		ca := creds.CA.Data[caKey]
		if len(ca) == 0 {
			return httpsource.Auth{}, fmt.Errorf("CA Secret %s has no %s: put the PEM certificates to trust under that key", creds.CA.Name, caKey)
		}
		auth.CABundle, auth.CASecretName = ca, creds.CA.Name
	}
	return auth, nil
}
