// Package source says what every kind of catalog source provides, and
// names a source in a form every command accepts. A kind of source (a
// directory, an image, an OCI layout, a git repository, an HTTP archive) is
// one package that implements Fetcher; the composition roots
// (internal/daemon, internal/catalogcli) choose the kind from a Spec, and
// the sync (internal/catalogsync) fetches, indexes and retries without
// knowing which it has.
//
// It holds types only, so that every kind and every consumer can import it
// without importing each other.
package source

import (
	"context"

	"github.com/catalogd/catalogd/internal/index"
)

// Fetcher gets one catalog's content from where it comes from. Keeping
// every kind of source behind this interface is what lets the indexing,
// reporting and retrying code work without caring which it has.
type Fetcher interface {
	// Fetch makes the current content available for indexing. On failure it
	// still returns the content's Ref and Digest when it learnt them. skip reports,
	// for the digest of the content the source holds now, that the content
	// itself is not needed (it is already live, or it failed before): a
	// fetcher that can learn the digest more cheaply than the content (an
	// image tag: one manifest request) then returns a Fetched with only Ref
	// and Digest set.
	Fetch(ctx context.Context, skip func(digest string) bool) (Fetched, error)
	// Describe says where the content comes from, as shown in /catalogs.
	Describe() string
	// Built reports whether an index whose SourceRef is ref was built from
	// this source, so that one left on disk by an earlier run of a different
	// catalog of the same name is not served as this one.
	Built(ref string) bool
}

// Fetched is content made available by Fetcher.Fetch.
type Fetched struct {
	index.Content
	// Pulled says the content was downloaded (an image, an archive, a
	// repository), and Bytes how much it unpacked to, for the pull metrics.
	Pulled bool
	Bytes  int64
	// Form says what the content was found as, where one kind of source
	// can hold a catalog in more than one form: for an image reference,
	// FormImage or FormArtifact. Empty where there is only one.
	Form string
	// Cleanup releases what Fetch made; nil when there is nothing to release.
	Cleanup func()
}

// Forms of content an image reference can name.
const (
	// FormImage: a container image whose config label names the catalog's
	// directory.
	FormImage = "Image"
	// FormArtifact: an OCI artifact whose layers are the catalog (as `oras
	// push` writes a directory or files).
	FormArtifact = "Artifact"
)

// Release calls Cleanup when there is one.
func (f Fetched) Release() {
	if f.Cleanup != nil {
		f.Cleanup()
	}
}

// Secret is the data of a Kubernetes Secret holding a source's
// credentials, with the name it is known by ("namespace/name"), so that
// messages can name it. Each kind of source reads the keys it knows
// (gitsource.AuthFromSecret, httpsource.AuthFromSecret).
type Secret struct {
	Name string
	Data map[string][]byte
}

// Credentials are what a source is fetched with besides its Spec; nil
// members are none.
type Credentials struct {
	// Secret holds a user name and password, a bearer token, or an ssh
	// identity with known hosts.
	Secret *Secret
	// CA holds, in ca.crt, certificate authorities to trust beside the
	// system's.
	CA *Secret
}
