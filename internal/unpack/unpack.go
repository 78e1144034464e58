// Package unpack resolves image references to digests and extracts the
// file-based catalog (FBC) an image or an OCI artifact holds to disk; it is
// also the one extractor of every other source that delivers a catalog as
// an archive (ExtractArchive, FileArchive).
//
// A catalog image says where its FBC lives with the image config label
// operators.operatorframework.io.index.configs.v1 (for example "/configs").
// Unpack extracts only that directory, streaming one layer at a time and
// applying OCI whiteouts, so the rest of the image (often an opm base image)
// is read but never written. An OCI artifact (as `oras push` writes one:
// an artifactType, or a config that is not an image config) has no such
// label: its layers are the catalog, tar layers as directories and any
// other layer as one file named by its title annotation. Resolve and
// Unpack are split so that a controller can poll a tag with a single
// manifest HEAD and fetch blobs only when the digest changes. An OCI image
// layout on disk is read the same way (ResolveLayout, UnpackLayout).
//
// Errors are classified by IsTerminal; see there for the rule.
package unpack

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/catalogd/catalogd/internal/source"
)

// ConfigsDirLabel is the image config label holding the path of the FBC
// configs directory inside a catalog image.
const ConfigsDirLabel = "operators.operatorframework.io.index.configs.v1"

const (
	// DefaultMaxTotalBytes is the default for Options.MaxTotalBytes: 1 GiB.
	DefaultMaxTotalBytes int64 = 1 << 30
	// DefaultMaxFiles is the default for Options.MaxFiles.
	DefaultMaxFiles int64 = 100_000
	// DefaultMaxManifestBytes is the default for Options.MaxManifestBytes:
	// 4 MiB, the size the OCI distribution spec says registries should
	// accept at least.
	DefaultMaxManifestBytes int64 = 4 << 20
	// DefaultMaxConfigBytes is the default for Options.MaxConfigBytes: 4 MiB;
	// image configs are kilobytes.
	DefaultMaxConfigBytes int64 = 4 << 20
	// DefaultMaxDownloadBytes is the default for Options.MaxDownloadBytes: 4 GiB.
	DefaultMaxDownloadBytes int64 = 4 << 30
	// DefaultMaxUncompressedBytes is the default for
	// Options.MaxUncompressedBytes: 8 GiB.
	DefaultMaxUncompressedBytes int64 = 8 << 30

	// DefaultRequestTimeout is the default for Options.RequestTimeout.
	DefaultRequestTimeout = time.Minute
	// DefaultIdleTimeout is the default for Options.IdleTimeout.
	DefaultIdleTimeout = time.Minute
	// DefaultPullTimeout is the default for Options.PullTimeout: generous,
	// as a pull that keeps making progress is not stuck. Catalog images
	// are tens to hundreds of MB, which a registry nearby serves in
	// seconds and a link of 1 MB/s in a few minutes.
	DefaultPullTimeout = 10 * time.Minute
)

// Options configures an Unpacker. The zero value is usable: anonymous pulls,
// system CAs, TLS for every registry, default limits, no logging.
type Options struct {
	// Keychain supplies registry credentials. Nil means anonymous; the host's
	// docker config is deliberately not consulted, so a controller only ever
	// uses the credentials it was given. The manager builds one from pull
	// secrets with package pullsecret.
	Keychain authn.Keychain

	// CABundle is PEM-encoded certificates trusted in addition to the system
	// pool, for registries behind a private CA.
	CABundle []byte

	// InsecureRegistries lists registries, as host or host:port, that are
	// spoken to over plain HTTP. No other registry is ever contacted over
	// plain HTTP, including loopback and private addresses, for which
	// go-containerregistry would otherwise fall back to HTTP by itself. This
	// does not disable TLS certificate verification for anything.
	InsecureRegistries []string

	// UserAgent is sent with every registry request when non-empty.
	UserAgent string

	// Logger receives debug messages (V(1)). Credentials are never logged.
	Logger logr.Logger

	// MaxTotalBytes bounds the bytes of regular-file content written while
	// extracting one image, counted across all layers, including content a
	// later layer deletes, so a crafted image cannot make Unpack do unbounded
	// work. Zero means DefaultMaxTotalBytes.
	MaxTotalBytes int64

	// MaxFiles bounds the number of files, directories and links created
	// while extracting one image, counted the same way as MaxTotalBytes. Zero
	// means DefaultMaxFiles.
	MaxFiles int64

	// MaxManifestBytes bounds the size of a manifest or index body; a larger
	// one is refused before or while it is read. Zero means
	// DefaultMaxManifestBytes.
	MaxManifestBytes int64

	// MaxConfigBytes bounds the image config blob. The size the manifest
	// declares is checked before the blob is requested, and the download is
	// read no further than that size and checked against its digest. Zero
	// means DefaultMaxConfigBytes.
	MaxConfigBytes int64

	// MaxDownloadBytes bounds the sizes the manifest declares for the config
	// and all layers together, checked before any blob is requested; each
	// download is read no further than its declared size. Zero means
	// DefaultMaxDownloadBytes.
	MaxDownloadBytes int64

	// MaxUncompressedBytes bounds the decompressed bytes read from all layers
	// together, including content outside the configs directory and anything
	// after a layer's tar end, so that a small layer cannot make Unpack
	// decompress without end. Zero means DefaultMaxUncompressedBytes.
	MaxUncompressedBytes int64

	// RequestTimeout bounds how long a registry (or a server it redirects
	// to) may take to answer a request with response headers. Zero means
	// DefaultRequestTimeout.
	RequestTimeout time.Duration

	// IdleTimeout bounds how long a response body may go without delivering
	// a byte while it is being read. Zero means DefaultIdleTimeout.
	IdleTimeout time.Duration

	// PullTimeout bounds one pull as a whole, however steadily data
	// arrives: one Resolve or Unpack call, or all the calls made with one
	// PullContext. Zero means DefaultPullTimeout.
	PullTimeout time.Duration
}

// Unpacker resolves and unpacks catalog images and artifacts. It is safe for concurrent
// use; each call works on its own destination.
type Unpacker struct {
	keychain  authn.Keychain
	transport http.RoundTripper
	insecure  map[string]bool
	userAgent string
	log       logr.Logger
	maxBytes  int64
	maxFiles  int64

	maxManifest     int64
	maxConfig       int64
	maxDownload     int64
	maxUncompressed int64
	pullTimeout     time.Duration
}

// New returns an Unpacker configured by opts. It fails only when CABundle
// holds no usable certificate.
func New(opts Options) (*Unpacker, error) {
	u := &Unpacker{
		keychain:  opts.Keychain,
		insecure:  make(map[string]bool, len(opts.InsecureRegistries)),
		userAgent: opts.UserAgent,
		log:       opts.Logger,
		maxBytes:  orDefault(opts.MaxTotalBytes, DefaultMaxTotalBytes),
		maxFiles:  orDefault(opts.MaxFiles, DefaultMaxFiles),

		maxManifest:     orDefault(opts.MaxManifestBytes, DefaultMaxManifestBytes),
		maxConfig:       orDefault(opts.MaxConfigBytes, DefaultMaxConfigBytes),
		maxDownload:     orDefault(opts.MaxDownloadBytes, DefaultMaxDownloadBytes),
		maxUncompressed: orDefault(opts.MaxUncompressedBytes, DefaultMaxUncompressedBytes),
		pullTimeout:     orDefault(opts.PullTimeout, DefaultPullTimeout),
	}
	if u.keychain == nil {
		// An empty multi-keychain resolves everything to anonymous.
		u.keychain = authn.NewMultiKeychain()
	}
	for _, r := range opts.InsecureRegistries {
		u.insecure[strings.ToLower(strings.TrimSpace(r))] = true
	}

	base := http.DefaultTransport.(*http.Transport).Clone()
	base.ResponseHeaderTimeout = orDefault(opts.RequestTimeout, DefaultRequestTimeout)
	if len(opts.CABundle) > 0 {
		pool, err := x509.SystemCertPool()
		if err != nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(opts.CABundle) {
			return nil, errors.New("creating unpacker: CA bundle holds no PEM certificate")
		}
		base.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	u.transport = &guardTransport{
		next:        base,
		allowed:     u.insecure,
		idle:        orDefault(opts.IdleTimeout, DefaultIdleTimeout),
		maxManifest: u.maxManifest,
	}
	return u, nil
}

// withoutPath drops the path from a *fs.PathError about the destination:
// it is the server's, and errors reach users. Paths inside the destination
// are relative already (os.Root reports them as given).
func withoutPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %w", pe.Op, pe.Err)
	}
	return err
}

// orDefault returns v, or def when v is zero or negative.
func orDefault[T int64 | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

// PullContext starts one pull: the Resolve and Unpack calls made with the
// returned context share a single Options.PullTimeout, counted from now,
// instead of each having one of its own, so that resolving a tag and then
// pulling its digest is bounded as a whole. cancel releases the timer.
func (u *Unpacker) PullContext(ctx context.Context) (context.Context, context.CancelFunc) {
	pullCtx, cancel := context.WithTimeoutCause(ctx, u.pullTimeout, errPullTimeout)
	return context.WithValue(pullCtx, pullKey{}, ctx), cancel
}

// pullKey holds, in a context made by PullContext, the context it was made
// from: its expiry is the caller's business, not a pull timeout.
type pullKey struct{}

// withPullTimeout bounds one call by Options.PullTimeout, unless ctx comes
// from PullContext and is bounded already. done turns an error the expiry
// caused into a TimeoutError that says so, and removes URL query strings
// and credentials from the error's text (see redactError).
func (u *Unpacker) withPullTimeout(ctx context.Context, op string) (context.Context, func(error) error) {
	outer, shared := ctx.Value(pullKey{}).(context.Context)
	pullCtx, cancel := ctx, context.CancelFunc(func() {})
	if !shared {
		outer = ctx
		pullCtx, cancel = context.WithTimeoutCause(ctx, u.pullTimeout, errPullTimeout)
	}
	return pullCtx, func(err error) error {
		expired := errors.Is(context.Cause(pullCtx), errPullTimeout)
		cancel()
		if err == nil {
			return nil
		}
		if expired && outer.Err() == nil {
			err = &TimeoutError{Op: op, After: u.pullTimeout, Err: err}
		}
		return redactError(err)
	}
}

var errPullTimeout = errors.New("pull timeout")

// Result describes a finished Unpack.
type Result struct {
	// Ref is the digest reference that was unpacked, as repository@digest.
	Ref string
	// Digest is the digest from Ref. It names either an image or an index.
	Digest string
	// ImageDigest is the digest of the image manifest whose layers were
	// extracted: Digest itself, or the platform's entry when Digest names an
	// index.
	ImageDigest string
	// ConfigsDir is the value of the configs label as found in the image;
	// empty for an artifact.
	ConfigsDir string
	// Form is source.FormImage for a catalog image, source.FormArtifact
	// for an OCI artifact whose layers are the catalog; empty for
	// ExtractArchive.
	Form string
	// Files is the number of regular files in the destination.
	Files int64
	// Bytes is the total size of those files.
	Bytes int64

	// hashes holds the SHA-256 of each file, taken while extracting.
	hashes map[string][sha256.Size]byte
}

// FileHash returns the SHA-256 of the regular file at name, a
// slash-separated path relative to the destination, as extracting it
// computed; a link to a regular file has that file's hash under its own
// name, as catalogdir.FS shows it. It has the signature of
// index.Content.FileHash: an incremental index build tells unchanged files
// by it without reading them again.
func (r Result) FileHash(name string) ([sha256.Size]byte, bool) {
	sum, ok := r.hashes[name]
	return sum, ok
}

// Resolve turns a tag or digest reference into repository@sha256:... .
//
// A reference that already has a digest is returned normalised without
// contacting the registry: content at a digest cannot change, and Unpack
// fails cleanly if it does not exist. A tag costs one manifest HEAD, or a
// GET when the registry mishandles HEAD; no blob is fetched. When the tag
// names an index, the index digest is returned; Unpack picks the platform.
func (u *Unpacker) Resolve(ctx context.Context, ref string) (_ string, err error) {
	ctx, done := u.withPullTimeout(ctx, "resolving "+ref)
	defer func() { err = done(err) }()
	r, err := u.parseReference(ref)
	if err != nil {
		return "", err
	}
	if d, ok := r.(name.Digest); ok {
		return d.Context().Name() + "@" + d.DigestStr(), nil
	}

	opts := u.remoteOptions(ctx)
	desc, headErr := remote.Head(r, opts...)
	if headErr == nil {
		digestRef := r.Context().Name() + "@" + desc.Digest.String()
		u.log.V(1).Info("resolved image reference", "ref", ref, "digestRef", digestRef)
		return digestRef, nil
	}
	if errors.Is(headErr, syscall.ECONNREFUSED) {
		// Said first: the plain-HTTP attempt that go-containerregistry
		// makes after it would otherwise read as the reason.
		return "", fmt.Errorf("resolving %s: registry %s refused the connection (is it running, on that port?): %w", ref, r.Context().RegistryStr(), headErr)
	}
	if ctx.Err() != nil || errors.Is(headErr, ErrPlainHTTPNotAllowed) {
		return "", fmt.Errorf("resolving %s: %w", ref, headErr)
	}
	// HEAD responses carry no error body and some registries answer HEAD
	// wrongly; a GET either works or says why not.
	u.log.V(1).Info("manifest HEAD failed, retrying with GET", "ref", ref, "error", headErr.Error())
	got, err := remote.Get(r, opts...)
	if err != nil {
		return "", fmt.Errorf("resolving %s: %w", ref, err)
	}
	digestRef := r.Context().Name() + "@" + got.Digest.String()
	u.log.V(1).Info("resolved image reference", "ref", ref, "digestRef", digestRef)
	return digestRef, nil
}

// Unpack extracts the configs directory of the image at digestRef into dst,
// so that dst's contents are that directory's contents; or, when
// digestRef names an OCI artifact, all its layers (see the package doc).
// Result.Form says which it was.
//
// dst must not exist; its parent is created if needed. Unpack creates dst and
// removes it again on any failure, so a caller sees either a complete tree or
// nothing. Callers that replace a live catalog should unpack to a new path and
// rename it into place. Ownership, timestamps and special permission bits are
// not preserved: files are 0644 (0755 when executable in the image) and
// directories 0755.
//
// Only plain files, directories and links that resolve inside dst are
// written, never through a link, at most 64 directories deep; anything else
// in the configs directory fails the unpack with an UnsafeEntryError. The
// manifest's declared sizes are checked against the limits in Options before
// any blob is requested, and registry I/O is bounded by its timeouts.
//
// digestRef must carry a digest (see Resolve). If it names an index, the
// manifest for the running binary's platform is used, then linux with the
// binary's architecture, then linux/amd64; catalog content does not depend on
// the platform, so any of them will do, and indexes without one of those fail
// with ErrNoMatchingPlatform.
func (u *Unpacker) Unpack(ctx context.Context, digestRef string, dst string) (res Result, err error) {
	ctx, done := u.withPullTimeout(ctx, "pulling "+digestRef)
	defer func() { err = done(err) }()
	r, err := u.parseReference(digestRef)
	if err != nil {
		return Result{}, err
	}
	d, ok := r.(name.Digest)
	if !ok {
		return Result{}, fmt.Errorf("unpacking %s: %w: a digest is required", digestRef, ErrInvalidReference)
	}
	res = Result{Ref: d.Context().Name() + "@" + d.DigestStr(), Digest: d.DigestStr()}

	img, imageDigest, err := u.image(ctx, d)
	if err != nil {
		return Result{}, fmt.Errorf("unpacking %s: %w", res.Ref, err)
	}
	res.ImageDigest = imageDigest
	return u.extract(ctx, res, remoteImage{img}, dst)
}

// manifestBlobs is one image or artifact manifest and its blobs, as
// extract reads them: from a registry (remoteImage) or from an OCI layout
// on disk (layoutImage).
type manifestBlobs interface {
	Manifest() (*v1.Manifest, error)
	ConfigFile() (*v1.ConfigFile, error)
	// compressedLayers are the manifest's layers, in its order.
	compressedLayers() ([]compressedLayer, error)
}

// remoteImage is an image from a registry: go-containerregistry checks
// each blob against its digest and size as it is read.
type remoteImage struct{ v1.Image }

func (r remoteImage) compressedLayers() ([]compressedLayer, error) {
	layers, err := r.Layers()
	if err != nil {
		return nil, err
	}
	out := make([]compressedLayer, len(layers))
	for i, l := range layers {
		out[i] = l
	}
	return out, nil
}

// extract writes the catalog that img holds into dst: the configs
// directory of a catalog image, or every layer of an OCI artifact (see
// isArtifact). res names what is unpacked, for messages.
func (u *Unpacker) extract(ctx context.Context, res Result, img manifestBlobs, dst string) (_ Result, err error) {
	log := u.log.WithValues("ref", res.Ref)
	m, err := u.checkManifest(img)
	if err != nil {
		return Result{}, fmt.Errorf("unpacking %s: %w", res.Ref, err)
	}
	layers, err := img.compressedLayers()
	if err != nil {
		return Result{}, fmt.Errorf("unpacking %s: listing layers: %w", res.Ref, err)
	}
	configsDir := "."
	if isArtifact(m) {
		// Its layers are the catalog: there is no config to read.
		res.Form = source.FormArtifact
		if layers, err = artifactLayers(m, layers); err != nil {
			return Result{}, fmt.Errorf("unpacking %s: %w", res.Ref, err)
		}
	} else {
		res.Form = source.FormImage
		cfg, err := img.ConfigFile()
		if err != nil {
			return Result{}, fmt.Errorf("unpacking %s: fetching image config: %w", res.Ref, err)
		}
		label, ok := cfg.Config.Labels[ConfigsDirLabel]
		if !ok {
			return Result{}, fmt.Errorf("unpacking %s: %w", res.Ref, ErrMissingConfigsLabel)
		}
		res.ConfigsDir = label
		if configsDir, err = cleanConfigsLabel(label); err != nil {
			return Result{}, fmt.Errorf("unpacking %s: %w", res.Ref, err)
		}
	}

	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return Result{}, fmt.Errorf("unpacking %s: creating parent of destination: %w", res.Ref, withoutPath(err))
	}
	if err := os.Mkdir(dst, 0o755); err != nil {
		return Result{}, fmt.Errorf("unpacking %s: creating destination: %w", res.Ref, withoutPath(err))
	}
	defer func() {
		if err != nil {
			if rmErr := os.RemoveAll(dst); rmErr != nil {
				log.Error(rmErr, "removing partially unpacked destination", "dst", dst)
			}
		}
	}()
	root, err := os.OpenRoot(dst)
	if err != nil {
		return Result{}, fmt.Errorf("unpacking %s: opening destination: %w", res.Ref, withoutPath(err))
	}
	defer root.Close()

	log.V(1).Info("unpacking catalog", "form", res.Form, "imageDigest", res.ImageDigest, "configsDir", res.ConfigsDir, "layers", len(layers), "dst", dst)
	x := newExtractor(root, configsDir, u.maxBytes, u.maxFiles)
	defer x.closeParent()
	budget := &readBudget{left: u.maxUncompressed, max: u.maxUncompressed}
	for i, layer := range layers {
		if err := applyLayer(ctx, x, i, layer, budget); err != nil {
			return Result{}, fmt.Errorf("unpacking %s: %w", res.Ref, err)
		}
	}
	switch {
	case !x.seen && res.Form == source.FormArtifact:
		return Result{}, fmt.Errorf("unpacking %s: %w", res.Ref, ErrEmptyArtifact)
	case !x.seen:
		return Result{}, fmt.Errorf("unpacking %s: %w: %s", res.Ref, ErrConfigsDirNotFound, res.ConfigsDir)
	}
	files, size, hashes, err := x.finish()
	if err != nil {
		return Result{}, fmt.Errorf("unpacking %s: %w", res.Ref, err)
	}
	res.Files, res.Bytes, res.hashes = files, size, hashes
	log.V(1).Info("unpacked catalog", "files", files, "bytes", size, "dst", dst)
	return res, nil
}

// checkManifest refuses an image whose manifest declares more than the
// limits allow, before any blob is requested, and one with foreign layers.
func (u *Unpacker) checkManifest(img manifestBlobs) (*v1.Manifest, error) {
	m, err := img.Manifest()
	if err != nil {
		return nil, fmt.Errorf("reading image manifest: %w", err)
	}
	if m.Config.Size < 0 || m.Config.Size > u.maxConfig {
		return nil, &LimitError{Limit: "MaxConfigBytes", Max: u.maxConfig, Entry: fmt.Sprintf("the image config (declared as %d bytes)", m.Config.Size)}
	}
	left := u.maxDownload - m.Config.Size
	for i, l := range m.Layers {
		if len(l.URLs) > 0 {
			return nil, fmt.Errorf("%w: layer %d", ErrForeignLayer, i)
		}
		if l.Size < 0 || l.Size > left {
			return nil, &LimitError{Limit: "MaxDownloadBytes", Max: u.maxDownload, Entry: fmt.Sprintf("the config and layers 0 to %d (layer %d declared as %d bytes)", i, i, l.Size)}
		}
		left -= l.Size
	}
	return m, nil
}

// image fetches the image manifest at d, choosing a platform when d names an
// index, and returns the image with the digest of its manifest.
func (u *Unpacker) image(ctx context.Context, d name.Digest) (v1.Image, string, error) {
	opts := u.remoteOptions(ctx)
	desc, err := remote.Get(d, opts...)
	if err != nil {
		return nil, "", fmt.Errorf("fetching manifest: %w", err)
	}
	switch {
	case desc.MediaType.IsIndex():
		idx, err := v1.ParseIndexManifest(bytes.NewReader(desc.Manifest))
		if err != nil {
			return nil, "", fmt.Errorf("parsing image index: %w", err)
		}
		child, err := pickPlatform(idx, wantedPlatforms())
		if err != nil {
			return nil, "", err
		}
		u.log.V(1).Info("picked platform from image index", "ref", d.String(), "platform", child.Platform.String(), "imageDigest", child.Digest.String())
		img, err := remote.Image(d.Context().Digest(child.Digest.String()), opts...)
		if err != nil {
			return nil, "", fmt.Errorf("fetching manifest for %s: %w", child.Platform.String(), err)
		}
		return img, child.Digest.String(), nil
	case desc.MediaType.IsImage():
		img, err := desc.Image()
		if err != nil {
			return nil, "", fmt.Errorf("reading image manifest: %w", err)
		}
		return img, desc.Digest.String(), nil
	default:
		return nil, "", fmt.Errorf("%w %q: want an image or an index", ErrUnsupportedMediaType, desc.MediaType)
	}
}

// wantedPlatforms lists the platforms Unpack accepts from an index, best first.
func wantedPlatforms() []v1.Platform {
	want := []v1.Platform{
		{OS: runtime.GOOS, Architecture: runtime.GOARCH},
		{OS: "linux", Architecture: runtime.GOARCH},
		{OS: "linux", Architecture: "amd64"},
	}
	out := want[:0]
	seen := map[string]bool{}
	for _, p := range want {
		if !seen[p.String()] {
			seen[p.String()] = true
			out = append(out, p)
		}
	}
	return out
}

// pickPlatform returns the index entry for the first platform in want that
// has an image manifest. Variants are ignored: FBC content is plain files.
func pickPlatform(idx *v1.IndexManifest, want []v1.Platform) (v1.Descriptor, error) {
	for _, w := range want {
		for _, m := range idx.Manifests {
			if m.Platform == nil || !m.MediaType.IsImage() {
				continue
			}
			if m.Platform.OS == w.OS && m.Platform.Architecture == w.Architecture {
				return m, nil
			}
		}
	}
	names := make([]string, 0, len(want))
	for _, w := range want {
		names = append(names, w.String())
	}
	return v1.Descriptor{}, fmt.Errorf("%w: want one of %s", ErrNoMatchingPlatform, strings.Join(names, ", "))
}

// parseReference parses ref, marking its registry insecure only when it is
// listed in Options.InsecureRegistries.
func (u *Unpacker) parseReference(ref string) (name.Reference, error) {
	r, err := name.ParseReference(ref)
	if err != nil {
		return nil, fmt.Errorf("%w %q: %w", ErrInvalidReference, ref, err)
	}
	if !u.insecure[strings.ToLower(r.Context().RegistryStr())] {
		return r, nil
	}
	r, err = name.ParseReference(ref, name.Insecure)
	if err != nil {
		return nil, fmt.Errorf("%w %q: %w", ErrInvalidReference, ref, err)
	}
	return r, nil
}

func (u *Unpacker) remoteOptions(ctx context.Context) []remote.Option {
	opts := []remote.Option{
		remote.WithContext(ctx),
		remote.WithAuthFromKeychain(u.keychain),
		remote.WithTransport(u.transport),
	}
	if u.userAgent != "" {
		opts = append(opts, remote.WithUserAgent(u.userAgent))
	}
	return opts
}
