package unpack

import (
	"context"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Remote parses ref and returns the options that reach its registry as
// Resolve and Unpack do: the insecure-registry list, the keychain, the
// CA bundle, and the guarded transport with its bounds on redirects,
// idle bodies and manifest sizes. It is for code that speaks to the same
// registries about something else than a catalog's own layers (a
// prebuilt index published beside it), so that one set of credentials
// and limits holds for every request catalogd makes to a registry.
// Errors are ErrInvalidReference's.
func (u *Unpacker) Remote(ctx context.Context, ref string) (name.Reference, []remote.Option, error) {
	r, err := u.parseReference(ref)
	if err != nil {
		return nil, nil, err
	}
	return r, u.remoteOptions(ctx), nil
}

// MaxDownloadBytes is the bound on the bytes one pull may download
// (Options.MaxDownloadBytes), for downloads made with Remote's options.
func (u *Unpacker) MaxDownloadBytes() int64 { return u.maxDownload }

// MaxTotalBytes is the bound on the bytes of files one fetched catalog
// may write (Options.MaxTotalBytes), for files written from downloads made
// with Remote's options.
func (u *Unpacker) MaxTotalBytes() int64 { return u.maxBytes }
