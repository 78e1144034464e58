package prebuilt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/catalogd/catalogd/internal/index"
)

// find lists the referrers of d that are prebuilt indexes of this
// binary's schema, best first; the query is bounded by the client's
// query timeout. ErrNotPublished, ErrOtherSchema or ErrUnreachable say
// why there is none.
func (c *Client) find(ctx context.Context, ref string) (name.Digest, []v1.Descriptor, error) {
	qctx, cancel := context.WithTimeout(ctx, c.queryTimeout)
	defer cancel()
	d, opts, err := c.digestRef(qctx, ref)
	if err != nil {
		return name.Digest{}, nil, err
	}
	idx, err := remote.Referrers(d, append(opts, remote.WithFilter("artifactType", ArtifactType))...)
	var im *v1.IndexManifest
	if err == nil {
		im, err = idx.IndexManifest()
	}
	if err != nil {
		if qctx.Err() != nil && ctx.Err() == nil {
			return d, nil, fmt.Errorf("%w of %s: no answer within %s", ErrUnreachable, d.DigestStr(), c.queryTimeout)
		}
		return d, nil, fmt.Errorf("%w of %s: %w", ErrUnreachable, d.DigestStr(), err)
	}
	var ours, unlabelled []v1.Descriptor
	var others []string
	for _, m := range im.Manifests {
		if m.ArtifactType != ArtifactType {
			continue
		}
		switch s, ok := m.Annotations[AnnotationSchema]; {
		case s == c.schema:
			ours = append(ours, m)
		case !ok:
			// A registry may leave annotations out of its listing: the
			// manifest says.
			unlabelled = append(unlabelled, m)
		default:
			others = append(others, s)
		}
	}
	// Every replica picks the same one.
	byDigest := func(a, b v1.Descriptor) int { return strings.Compare(a.Digest.String(), b.Digest.String()) }
	slices.SortFunc(ours, byDigest)
	slices.SortFunc(unlabelled, byDigest)
	ours = append(ours, unlabelled...)
	switch {
	case len(ours) > 0:
		return d, ours, nil
	case len(others) > 0:
		return d, nil, fmt.Errorf("%w (%s): published for %s", ErrOtherSchema, c.schema, strings.Join(others, ", "))
	}
	return d, nil, ErrNotPublished
}

// Published returns the reference (repository@digest) of a prebuilt
// index of this binary's schema that refers to ref (repository@digest),
// if there is one: what makes publishing again unnecessary.
func (c *Client) Published(ctx context.Context, ref string) (string, bool, error) {
	d, found, err := c.find(ctx, ref)
	switch {
	case errors.Is(err, ErrNotPublished), errors.Is(err, ErrOtherSchema):
		return "", false, nil
	case err != nil:
		return "", false, err
	}
	return d.Context().Digest(found[0].Digest.String()).String(), true, nil
}

// Download finds the prebuilt index of the catalog at ref
// (repository@digest) in the catalog's own repository and writes its
// files at path, as index.Files(path) names them, for index.Adopt (which
// package store runs) to check. The referrers query is bounded by the
// client's query timeout, the downloads by ctx and by the registry's
// limits: the manifest's size, the layers' declared sizes together, each
// layer read no further than its declared size and checked against its
// digest. The error says why there is no index to use (ErrNotPublished,
// ErrOtherSchema, ErrUnreachable, ErrRefused, or a failed download);
// Reason classifies it.
func (c *Client) Download(ctx context.Context, ref, path string) error {
	d, found, err := c.find(ctx, ref)
	if err != nil {
		return err
	}
	_, opts, err := c.digestRef(ctx, ref)
	if err != nil {
		return err
	}
	// The first that this binary can read, among several published.
	art := d.Context().Digest(found[0].Digest.String())
	m, err := c.manifest(art, d, opts)
	if err != nil {
		return err
	}
	if err := os.Mkdir(index.ContentDir(path), 0o755); err != nil {
		return fmt.Errorf("download prebuilt index: %w", err)
	}
	for _, l := range m.Layers {
		dst := path
		if title := l.Annotations[annotationTitle]; title != databaseTitle {
			dst = filepath.Join(index.ContentDir(path), strings.TrimPrefix(title, contentPrefix))
		}
		if err := downloadLayer(art.Context().Digest(l.Digest.String()), l.Size, dst, opts); err != nil {
			return fmt.Errorf("download prebuilt index %s: %w", art.DigestStr(), err)
		}
	}
	return nil
}

// manifest fetches the artifact's manifest and checks that it is a
// prebuilt index of the catalog at subject, of this binary's schema,
// whose layers name files of an index version within the download limit.
func (c *Client) manifest(art, subject name.Digest, opts []remote.Option) (*v1.Manifest, error) {
	desc, err := remote.Get(art, opts...)
	if err != nil {
		return nil, fmt.Errorf("fetch prebuilt index manifest %s: %w", art.DigestStr(), err)
	}
	var m v1.Manifest
	if err := json.Unmarshal(desc.Manifest, &m); err != nil {
		return nil, fmt.Errorf("%w: manifest %s: %w", ErrRefused, art.DigestStr(), err)
	}
	if err := c.checkManifest(&m, subject.DigestStr()); err != nil {
		return nil, fmt.Errorf("%w: manifest %s: %w", ErrRefused, art.DigestStr(), err)
	}
	var total int64
	for _, l := range m.Layers {
		total += l.Size
		if l.Size < 0 || total > c.reg.MaxDownloadBytes() {
			return nil, fmt.Errorf("%w: manifest %s: its layers declare more than the download limit of %d bytes", ErrRefused, art.DigestStr(), c.reg.MaxDownloadBytes())
		}
	}
	return &m, nil
}

// checkManifest checks what a prebuilt index's manifest says about
// itself; the files' agreement with each other is index.Adopt's to check.
func (c *Client) checkManifest(m *v1.Manifest, digest string) error {
	switch {
	case m.ArtifactType != ArtifactType && string(m.Config.MediaType) != ArtifactType:
		return fmt.Errorf("artifact type %q, not %q", m.ArtifactType, ArtifactType)
	case m.Subject == nil || m.Subject.Digest.String() != digest:
		return fmt.Errorf("its subject is not the catalog %s", digest)
	case m.Annotations[AnnotationCatalog] != digest:
		return fmt.Errorf("annotation %s is %q, not the catalog %s", AnnotationCatalog, m.Annotations[AnnotationCatalog], digest)
	case m.Annotations[AnnotationSchema] != c.schema:
		return fmt.Errorf("%w: annotation %s is %q, this catalogd reads %s", ErrOtherSchema, AnnotationSchema, m.Annotations[AnnotationSchema], c.schema)
	case len(m.Layers) > maxLayers:
		return fmt.Errorf("%d layers, more than an index has (%d)", len(m.Layers), maxLayers)
	}
	seen := map[string]bool{}
	for i, l := range m.Layers {
		title := l.Annotations[annotationTitle]
		want := ContentMediaType
		if title == databaseTitle {
			want = DatabaseMediaType
		} else if file, ok := strings.CutPrefix(title, contentPrefix); !ok || !validFileName(file) {
			return fmt.Errorf("layer %d is named %q, not %s or %s<file>", i, title, databaseTitle, contentPrefix)
		}
		switch {
		case string(l.MediaType) != want:
			return fmt.Errorf("layer %d (%s) has media type %q, not %q", i, title, l.MediaType, want)
		case seen[title]:
			return fmt.Errorf("layer %d names %s again", i, title)
		}
		seen[title] = true
	}
	if !seen[databaseTitle] {
		return fmt.Errorf("no layer is the database (%s)", databaseTitle)
	}
	return nil
}

// validFileName reports whether name is a plain file name: no directory,
// no parent, nothing hidden, so that a layer is written only inside the
// content directory.
func validFileName(name string) bool {
	return name != "" && name == filepath.Base(name) && !strings.HasPrefix(name, ".") && !strings.ContainsAny(name, `/\`)
}

// downloadLayer writes the blob at d, of the size its descriptor
// declares, into a new file at dst: read no further than that size, and
// checked against its digest by go-containerregistry as it is read.
func downloadLayer(d name.Digest, size int64, dst string, opts []remote.Option) error {
	l, err := remote.Layer(d, opts...)
	if err != nil {
		return fmt.Errorf("layer %s: %w", d.DigestStr(), err)
	}
	rc, err := l.Compressed()
	if err != nil {
		return fmt.Errorf("layer %s: %w", d.DigestStr(), err)
	}
	defer rc.Close()
	f, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("layer %s: %w", d.DigestStr(), err)
	}
	n, err := io.Copy(f, io.LimitReader(rc, size+1))
	if closeErr := f.Close(); err == nil {
		err = closeErr
	}
	switch {
	case err != nil:
		return fmt.Errorf("layer %s: %w", d.DigestStr(), err)
	case n != size:
		return fmt.Errorf("%w: layer %s is not of the %d bytes its descriptor declares", ErrRefused, d.DigestStr(), size)
	}
	return nil
}

// Reason names, for a metric label, why err left a catalog without a
// prebuilt index: "absent", "other-schema", "unreachable", "refused"
// (a check failed) or "failed" (a download or a write).
func Reason(err error) string {
	switch {
	case errors.Is(err, ErrNotPublished):
		return "absent"
	case errors.Is(err, ErrOtherSchema), errors.Is(err, index.ErrOtherSchema):
		return "other-schema"
	case errors.Is(err, ErrUnreachable):
		return "unreachable"
	case errors.Is(err, ErrRefused), errors.Is(err, index.ErrRefused):
		return "refused"
	}
	return "failed"
}
