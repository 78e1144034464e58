package unpack

import (
	"errors"
	"fmt"
	"time"
)

// ErrInvalidReference is returned for a reference that cannot be parsed, or
// for a reference without a digest passed to Unpack. It is terminal.
var ErrInvalidReference = errors.New("invalid image reference")

// ErrMissingConfigsLabel is returned when the config of an image (not an
// artifact) has no operators.operatorframework.io.index.configs.v1 label.
// It is terminal.
var ErrMissingConfigsLabel = errors.New("image config has no " + ConfigsDirLabel + " label")

// ErrInvalidConfigsLabel is returned when the configs label names the image
// root, which would extract the whole filesystem. It is terminal.
var ErrInvalidConfigsLabel = errors.New("invalid " + ConfigsDirLabel + " label")

// ErrConfigsDirNotFound is returned when no layer of the image has anything at
// or below the directory the configs label names. It is terminal.
var ErrConfigsDirNotFound = errors.New("configs directory not found in image")

// ErrNoMatchingPlatform is returned when a digest names an image index that
// has no manifest for the platforms Unpack accepts. It is terminal.
var ErrNoMatchingPlatform = errors.New("image index has no manifest for a supported platform")

// ErrUnsupportedMediaType is returned when a digest names something that is
// neither an image (or artifact) manifest nor an index (a Docker schema 1
// manifest, say).
// It is terminal.
var ErrUnsupportedMediaType = errors.New("unsupported manifest media type")

// ErrForeignLayer is returned when the image manifest lists download URLs for
// a layer ("foreign" or non-distributable layers). Following them would let
// an image make the puller fetch from any address it names; catalog images
// never need them. It is terminal.
var ErrForeignLayer = errors.New("image has a layer with foreign download URLs")

// ErrPlainHTTPNotAllowed is returned by the transport when a request would go
// over plain HTTP to a registry that is not in Options.InsecureRegistries.
// go-containerregistry falls back to HTTP by itself for loopback, private and
// .local hosts; this keeps that fallback to the registries an operator listed.
// It is retryable: it depends on configuration, not on image content.
var ErrPlainHTTPNotAllowed = errors.New("plain HTTP is not allowed for this registry")

// UnsafeEntryError reports a tar entry that Unpack refused to extract because
// writing it could escape the destination or create something other than
// plain files, directories and links. It is terminal.
type UnsafeEntryError struct {
	// Layer is the zero-based index of the layer holding the entry, or -1 when
	// the problem was found after all layers were applied (a symbolic link
	// whose resolution on disk leaves the configs directory).
	Layer int
	// Entry is the entry's name as written in the tar header, or the path
	// relative to the configs directory when Layer is -1.
	Entry string
	// Reason says what is wrong with it.
	Reason string
	// Archive says the entry is in an archive (ExtractArchive: a download,
	// a git tree) rather than in an image's layer Layer.
	Archive bool
}

func (e *UnsafeEntryError) Error() string {
	if e.Archive {
		return fmt.Sprintf("unsafe entry %q in the archive: %s", e.Entry, e.Reason)
	}
	if e.Layer < 0 {
		return fmt.Sprintf("unsafe entry %q: %s", e.Entry, e.Reason)
	}
	return fmt.Sprintf("unsafe entry %q in layer %d: %s", e.Entry, e.Layer, e.Reason)
}

// LimitError reports that a pull stopped because it would exceed one of the
// size limits of Options. It is terminal: the same digest always has the
// same content, so only a higher limit or a smaller image helps.
type LimitError struct {
	// Limit names the option that was exceeded: "MaxTotalBytes", "MaxFiles",
	// "MaxManifestBytes", "MaxConfigBytes", "MaxDownloadBytes" or
	// "MaxUncompressedBytes".
	Limit string
	// Max is the configured value of that option.
	Max int64
	// Entry is the tar entry whose extraction would have crossed the limit
	// (MaxTotalBytes, MaxFiles), or what was too big ("manifest", "layer 2").
	Entry string
}

func (e *LimitError) Error() string {
	switch e.Limit {
	case "MaxTotalBytes", "MaxFiles":
		return fmt.Sprintf("extracting %q would exceed %s (%d)", e.Entry, e.Limit, e.Max)
	}
	return fmt.Sprintf("%s exceeds %s (%d)", e.Entry, e.Limit, e.Max)
}

// CorruptLayerError reports a layer whose download matched its digest but
// whose content is not a readable (gzip- or zstd-compressed, or plain) tar
// stream. The digest vouches that every download of it is the same, so it is
// terminal.
type CorruptLayerError struct {
	// Layer is the zero-based index of the layer.
	Layer int
	// Err is what the decompressor or the tar reader said.
	Err error
	// Archive says the bytes are an archive's (ExtractArchive) rather than
	// an image's layer Layer.
	Archive bool
}

func (e *CorruptLayerError) Error() string {
	if e.Archive {
		return fmt.Sprintf("the archive is not a readable tar stream (plain, gzip or zstd): %v", e.Err)
	}
	return fmt.Sprintf("layer %d is corrupt in the image (its digest matches, so downloading again cannot help): %v", e.Layer, e.Err)
}

func (e *CorruptLayerError) Unwrap() error { return e.Err }

// RedirectError reports a request that a registry (or a server it
// redirected to) kept redirecting: a redirect loop, most likely. It is
// retryable, as other misbehaviour of a registry is: it may be fixed.
type RedirectError struct {
	// Host is the registry's host[:port] and Path the path of the request
	// as first sent; the query is left out, as it may hold a signed token.
	Host, Path string
	// Max is how many redirects are followed.
	Max int
}

func (e *RedirectError) Error() string {
	return fmt.Sprintf("registry %s redirected the request for %s more than %d times (a redirect loop?)", e.Host, e.Path, e.Max)
}

// TimeoutError reports that registry I/O took longer than the unpacker
// allows: Options.RequestTimeout for a response to start, IdleTimeout for
// a body to make progress, or PullTimeout for the whole pull. It is
// retryable.
type TimeoutError struct {
	// Op says what was being done.
	Op string
	// After is the configured timeout that expired.
	After time.Duration
	// Idle is true when the registry stopped sending in the middle of a
	// response, as opposed to the whole operation taking too long.
	Idle bool
	// Err is the underlying error, if any.
	Err error
}

func (e *TimeoutError) Error() string {
	msg := fmt.Sprintf("%s timed out after %s", e.Op, e.After)
	if e.Idle {
		msg = fmt.Sprintf("%s timed out: the registry sent nothing for %s", e.Op, e.After)
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *TimeoutError) Unwrap() error { return e.Err }

// Timeout reports true, as net.Error does for timeouts.
func (e *TimeoutError) Timeout() bool { return true }

// IsTerminal reports whether err, or an error it wraps, is one that retrying
// the same call cannot fix, so a controller can report Blocked instead of
// Retrying.
//
// An error is terminal when calling again with the same arguments cannot
// succeed. That holds for a malformed reference, and for anything decided by
// the content of an image at a digest, because content addressed by digest
// never changes: a missing or unusable configs label, no manifest for a
// supported platform, a manifest that is not an image, an unsafe tar entry,
// content over the configured limits, a layer that is corrupt although its
// digest matches, a layer with foreign URLs.
// Only a new digest (a new push, or a spec change) can clear such an error.
//
// Everything else is retryable: network and TLS failures, authentication and
// authorization failures (a pull secret may be fixed or rotated), registry
// errors including "manifest unknown" and "blob unknown" (a digest may be
// pushed later), downloads that are truncated or do not match their digest
// (the next download may be fine), timeouts, a cancelled context and local
// filesystem errors. IsTerminal reports false for those and for any
// error it does not recognise, so that a new kind of failure is retried rather
// than wedged.
func IsTerminal(err error) bool {
	if err == nil {
		return false
	}
	for _, sentinel := range []error{
		ErrInvalidReference,
		ErrMissingConfigsLabel,
		ErrInvalidConfigsLabel,
		ErrConfigsDirNotFound,
		ErrNoMatchingPlatform,
		ErrUnsupportedMediaType,
		ErrForeignLayer,
		ErrEmptyArchive,
		ErrEmptyArtifact,
	} {
		if errors.Is(err, sentinel) {
			return true
		}
	}
	var unsafe *UnsafeEntryError
	if errors.As(err, &unsafe) {
		return true
	}
	var limit *LimitError
	if errors.As(err, &limit) {
		return true
	}
	var corrupt *CorruptLayerError
	return errors.As(err, &corrupt)
}
