package httpapi

import (
	"context"
	"errors"
	"net/http"
	"regexp"
	"time"

	"github.com/catalogd/catalogd/internal/store"
)

// maxSince bounds the since parameter: a digest is far shorter.
const maxSince = 256

// digestPattern is the grammar of a content digest, ALGORITHM:ENCODED, as
// openapi.yaml gives it for resolvedDigest (the OCI image spec's). A since
// outside it cannot name any version, so it is the client's mistake (400)
// rather than a version the server no longer remembers (410).
var digestPattern = regexp.MustCompile(`^[a-z0-9]+([+._-][a-z0-9]+)*:[a-zA-Z0-9=_-]+$`)

// getChanges answers what changed between the version of the catalog named
// by since and the one the snapshot serves (store.Snapshot.Changes). Its
// ETag, like every catalogJSON answer's, is the served version's and the
// request's: the answer depends on nothing else.
func (s *Server) getChanges(r *http.Request, snap *store.Snapshot) (any, error) {
	since := r.URL.Query().Get("since")
	switch {
	case since == "":
		return nil, badParam("since", "since is required: the content digest (resolvedDigest) of the earlier version of the catalog")
	case len(since) > maxSince:
		return nil, badParam("since", "since is %d bytes long; a content digest is at most %d", len(since), maxSince)
	case !digestPattern.MatchString(since):
		return nil, badParam("since", "since %s is not a content digest: want ALGORITHM:ENCODED as the catalog's resolvedDigest gives it, "+
			"for example sha256:3f1d9c2a6b5e4f7d8c9b0a1e2d3c4b5a69788796a5b4c3d2e1f0a9b8c7d6e5f4", quoteShort(since))
	}
	changes, err := snap.Changes(r.Context(), since)
	var gone *store.GoneError
	if errors.As(err, &gone) {
		return nil, &problem{status: http.StatusGone, typ: "version-gone", param: "since", members: map[string]string{"oldest": gone.Oldest},
			detail: "version " + quoteShort(since) + " of catalog " + quoteShort(pathParam(r, "catalog")) +
				" is unknown or expired; the oldest version known is " + quoteShort(gone.Oldest)}
	}
	if err != nil {
		return nil, err
	}
	return apiChanges(changes), nil
}

// packageJSON is catalogJSON for answers that depend on one package only,
// the {package} of the path: their ETag is derived from the package's
// version (query's PackageVersion) instead of the catalog's, so a client's copy
// stays current (304) across catalog versions that leave the package
// alone. They carry no Last-Modified, and ignore If-Modified-Since: the
// time the catalog was indexed says nothing of when the package changed,
// and would contradict the ETag.
func (s *Server) packageJSON(fn func(*http.Request, *store.Snapshot) (any, error), params ...string) http.HandlerFunc {
	return s.catalogHandler(func(w http.ResponseWriter, r *http.Request, snap *store.Snapshot) error {
		etag, modified, err := packageETag(r.Context(), snap, pathParam(r, "package"), r)
		if err != nil {
			return err
		}
		if notModified(w, r, etag, modified) {
			return nil
		}
		v, err := fn(r, snap)
		if err != nil {
			return err
		}
		return s.writeJSON(w, r, v, etag, modified)
	}, params...)
}

// packageETag is the ETag and modification time of an answer that depends
// on package pkg only: from the package's version when the catalog has the
// package, without a time; from the catalog's otherwise (an answer that
// the package is missing changes when the catalog does).
func packageETag(ctx context.Context, snap *store.Snapshot, pkg string, r *http.Request) (string, time.Time, error) {
	version, ok, err := snap.Catalog.PackageVersion(ctx, pkg)
	if err != nil || !ok {
		return requestETag(snap.Info.Digest, r), snap.Info.BuiltAt, err
	}
	return requestETag(version, r), time.Time{}, nil
}
