// Package prebuilt publishes a catalog's index beside the catalog in its
// registry, and finds and downloads it there, so that a replica can serve
// a catalog without building its index: the index is built once, where
// the catalog is pushed, rather than once per replica per cluster.
//
// The index is an OCI artifact whose subject is the catalog's manifest
// (OCI 1.1 referrers; registries without the referrers API get the
// distribution spec's fallback tag, sha256-<hex>, which
// go-containerregistry writes and reads). The artifact holds the index
// version's files (index.Files): the database as one layer, each file of
// its content directory as one more, every layer named by its
// org.opencontainers.image.title annotation. A file that zstd makes at
// least an eighth smaller (the database, the content segments) is stored
// compressed, its media type ending in +zstd and its size once
// decompressed in an annotation of its own; the others (the gzip copy's
// segments, deflate data already) as they are. Catalog JSON compresses
// about tenfold, so the download is about the size of the image's own
// gzip-compressed layers rather than nine times it, and a replica spends
// its CPU decompressing rather than receiving and hashing. The
// artifact's annotations name the index schema (migrations.Digest: what
// a reader checks, since a binary reads only the schema it writes), the
// catalogd version that built it, and the catalog's digest. Nothing in it
// depends on when or where it was built, so publishing the same catalog
// twice makes the same artifact, byte for byte, and pushes nothing the
// second time.
//
// Trust stays where it is: a replica takes an index only from the
// catalog's own repository, found as a referrer of the catalog's digest,
// downloaded within the pull's bounds and checked (index.Adopt) before
// it is swapped in. Whoever can push that artifact can push the catalog
// itself; the checks catch a damaged, mismatched or foreign-schema index,
// not a malicious publisher (see README.md, "Prebuilt indexes").
package prebuilt

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/catalogd/catalogd/migrations"
)

// ArtifactType is the artifactType of a prebuilt index, and its config's
// media type as well: registries that list referrers by the config's
// media type (go-containerregistry's, among others) and those that read
// artifactType then list it alike. It names the artifact's format, which
// the index schema does not: v1 stored every file as it is, v2 may
// compress them. A reader lists the referrers of its own artifact type
// only, so a catalogd that reads v1 never downloads a v2 artifact it
// would misread or refuse, but finds none and builds, and artifacts of
// both formats live side by side in a repository.
const ArtifactType = "application/vnd.catalogd.index.v2+json"

// Media types of the layers: the database, and each file of its content
// directory (segment list, content and gzip segments); either ends in
// ZstdSuffix when the layer is the file compressed with zstd.
const (
	DatabaseMediaType = "application/vnd.catalogd.index.database.v1"
	ContentMediaType  = "application/vnd.catalogd.index.content.v1"
	ZstdSuffix        = "+zstd"
)

// Annotations of the artifact's manifest.
const (
	// AnnotationSchema is the index schema (migrations.Digest) the
	// database was built with: a reader takes only its own.
	AnnotationSchema = "io.catalogd.index.schema"
	// AnnotationVersion is the catalogd version that built it, for people.
	AnnotationVersion = "io.catalogd.version"
	// AnnotationCatalog is the digest of the catalog it indexes, which
	// its subject names too.
	AnnotationCatalog = "io.catalogd.catalog.digest"
	// AnnotationSize, on a compressed layer, is the size of its file
	// once decompressed: a layer that decompresses to more is refused
	// as soon as it does, and the sizes together are bounded before any
	// is downloaded.
	AnnotationSize = "io.catalogd.index.size"
	// annotationTitle names a layer's file (OCI's standard annotation):
	// databaseTitle, or contentPrefix and a content file's name.
	annotationTitle = "org.opencontainers.image.title"
	databaseTitle   = "index.db"
	contentPrefix   = "content/"
)

// DefaultQueryTimeout bounds the referrers query of Download: a
// registry that does not answer it within this time is taken to have no
// prebuilt index, and the catalog is built at once. A referrers query is
// one small request, which a registry that answers at all answers well
// within it.
const DefaultQueryTimeout = 3 * time.Second

// maxLayers bounds the files an artifact may hold: an index version has
// two per 8 MiB segment, so 10,000 is tens of GB of content.
const maxLayers = 10_000

// Registry reaches registries with catalogd's credentials and bounds;
// *unpack.Unpacker provides it.
type Registry interface {
	Remote(ctx context.Context, ref string) (name.Reference, []remote.Option, error)
	// MaxDownloadBytes bounds the layers' sizes together, MaxTotalBytes
	// the files written from them (--max-catalog-bytes).
	MaxDownloadBytes() int64
	MaxTotalBytes() int64
}

// Client publishes and downloads prebuilt indexes.
type Client struct {
	reg          Registry
	queryTimeout time.Duration
	// schema is the index schema this binary writes and reads.
	schema string
	// version is the catalogd version it records.
	version string
}

// Options configure a Client; zero fields take the defaults.
type Options struct {
	// QueryTimeout bounds the referrers query (DefaultQueryTimeout).
	QueryTimeout time.Duration
	// Version is the catalogd version the artifacts it publishes record.
	Version string
}

// New returns a Client reaching registries through reg.
func New(reg Registry, opts Options) *Client {
	c := &Client{reg: reg, queryTimeout: opts.QueryTimeout, schema: migrations.Digest(), version: opts.Version}
	if c.queryTimeout <= 0 {
		c.queryTimeout = DefaultQueryTimeout
	}
	return c
}

// Why Download found no index to use; Reason tells them apart.
var (
	// ErrNotPublished: the catalog has no referrer of ArtifactType.
	ErrNotPublished = errors.New("no prebuilt index is published for the catalog")
	// ErrOtherSchema: it has, but none of this binary's schema.
	ErrOtherSchema = errors.New("no prebuilt index of this catalogd's index schema is published")
	// ErrUnreachable: the referrers query failed or timed out.
	ErrUnreachable = errors.New("cannot list the catalog's referrers")
	// ErrRefused: the artifact found is malformed, too large, or not of
	// this catalog (the index's own checks wrap index.ErrRefused).
	ErrRefused = errors.New("prebuilt index refused")
)

// digestRef parses ref, which must name a digest.
func (c *Client) digestRef(ctx context.Context, ref string) (name.Digest, []remote.Option, error) {
	r, opts, err := c.reg.Remote(ctx, ref)
	if err != nil {
		return name.Digest{}, nil, err
	}
	d, ok := r.(name.Digest)
	if !ok {
		return name.Digest{}, nil, fmt.Errorf("%s: a digest reference is required", ref)
	}
	return d, opts, nil
}
