package unpack

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"unicode"
	"unicode/utf8"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// ErrEmptyArtifact is returned for an OCI artifact with no layer. It is
// terminal.
var ErrEmptyArtifact = errors.New("the artifact holds no file")

// Annotations of artifact layers, as `oras push` writes them.
const (
	// TitleAnnotation names the file (or directory) a layer holds.
	TitleAnnotation = "org.opencontainers.image.title"
	// orasUnpackAnnotation marks a tar+gzip layer that oras made of a
	// directory, to be unpacked rather than stored as a file.
	orasUnpackAnnotation = "io.deis.oras.content.unpack"
)

// isArtifact reports whether m is an OCI artifact, whose layers are the
// catalog, rather than a container image, whose config says where the
// catalog is: it declares an artifactType, or its config is not an image
// config (the OCI empty config, or any other).
func isArtifact(m *v1.Manifest) bool {
	if m.ArtifactType != "" {
		return true
	}
	switch m.Config.MediaType {
	case types.OCIConfigJSON, types.DockerConfigJSON:
		return false
	}
	return true
}

// tarLayer reports whether a layer of mediaType is a tar stream (plain,
// gzip or zstd), to be extracted as a directory.
func tarLayer(mediaType types.MediaType) bool {
	switch mediaType {
	case types.OCIUncompressedLayer, types.OCILayer, types.OCILayerZStd, types.DockerLayer, types.DockerUncompressedLayer:
		return true
	}
	return false
}

// artifactLayers turns an artifact's layers into tar streams for the
// extractor, reading them as `oras pull` does, so that what `oras push`
// wrote unpacks to what was pushed:
//   - a layer with the oras unpack annotation is a directory: a tar
//     stream, extracted as it is (any other media type is an error);
//   - a layer with a title is one file of that name, made a one-entry tar
//     (FileArchive), whatever its media type: oras gives a file pushed
//     without one the media type of an uncompressed tar layer. A tar
//     layer whose title ends in .tar, .tar.gz, .tgz or .tar.zst is taken
//     for what it says, an archive of the catalog;
//   - an untitled tar layer is a directory, as an image layer is;
//   - anything else cannot be placed, and is an error, but for the empty
//     descriptor that stands in for no layer at all.
//
// Every layer so goes through the same extractor and limits.
func artifactLayers(m *v1.Manifest, layers []compressedLayer) ([]compressedLayer, error) {
	if len(layers) != len(m.Layers) {
		return nil, fmt.Errorf("the manifest lists %d layers, the image %d", len(m.Layers), len(layers))
	}
	out := make([]compressedLayer, len(layers))
	for i, desc := range m.Layers {
		title, titled := desc.Annotations[TitleAnnotation]
		switch {
		case desc.MediaType == types.OCIEmptyJSON && !titled:
			// The placeholder that a manifest without layers carries
			// (image-spec 1.1): nothing to place, nothing to read.
			out[i] = emptyLayer{}
			continue
		case desc.Annotations[orasUnpackAnnotation] == "true" && !tarLayer(desc.MediaType):
			return nil, &UnsafeEntryError{Layer: i, Entry: title, Reason: fmt.Sprintf("a directory, but the layer's media type %q is not a tar archive", desc.MediaType)}
		case desc.Annotations[orasUnpackAnnotation] == "true", tarLayer(desc.MediaType) && (!titled || archiveName(title)):
			out[i] = layers[i]
			continue
		case !titled:
			return nil, &UnsafeEntryError{Layer: i, Entry: string(desc.MediaType), Reason: "a layer that is not a tar archive needs an " + TitleAnnotation + " annotation to name its file"}
		case strings.HasSuffix(title, "/"):
			return nil, &UnsafeEntryError{Layer: i, Entry: title, Reason: fmt.Sprintf("a directory, but the layer's media type %q is not a tar archive", desc.MediaType)}
		}
		if reason := checkTitle(title); reason != "" {
			return nil, &UnsafeEntryError{Layer: i, Entry: title, Reason: reason}
		}
		out[i] = fileLayer{name: title, size: desc.Size, blob: layers[i]}
	}
	return out, nil
}

// archiveName reports whether a file name says it is a tar archive.
func archiveName(name string) bool {
	lower := strings.ToLower(name)
	for _, suffix := range []string{".tar", ".tar.gz", ".tgz", ".tar.zst"} {
		if strings.HasSuffix(lower, suffix) {
			return true
		}
	}
	return false
}

// checkTitle says why title cannot name a file of the catalog, or "".
func checkTitle(title string) string {
	switch {
	case title == "":
		return "the title is empty"
	case !utf8.ValidString(title) || strings.ContainsFunc(title, unicode.IsControl) || strings.Contains(title, "\\"):
		return "the title is not a plain file name"
	case path.IsAbs(title):
		return "the title is an absolute path"
	case path.Clean(title) != title || title == "." || title == ".." || strings.HasPrefix(title, "../"):
		return "the title is not a clean path inside the catalog"
	case strings.HasPrefix(path.Base(title), ".wh."):
		return "the title names a whiteout"
	}
	return ""
}

// fileLayer is a layer holding one file, read as a one-entry tar stream.
type fileLayer struct {
	name string
	size int64
	blob compressedLayer
}

func (f fileLayer) Compressed() (io.ReadCloser, error) {
	rc, err := f.blob.Compressed()
	if err != nil {
		return nil, err
	}
	r, err := FileArchive(f.name, f.size, rc)
	if err != nil {
		rc.Close()
		return nil, err
	}
	return struct {
		io.Reader
		io.Closer
	}{r, rc}, nil
}

// emptyLayer is a tar stream without entries.
type emptyLayer struct{}

func (emptyLayer) Compressed() (io.ReadCloser, error) {
	return io.NopCloser(bytes.NewReader(make([]byte, 2*tarBlock))), nil
}
