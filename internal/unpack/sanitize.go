package unpack

import (
	"archive/tar"
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"strings"
)

const (
	whiteoutPrefix = ".wh."
	// whiteoutMeta prefixes names reserved for whiteout metadata (aufs hard
	// link directories and the like); only the opaque marker means anything
	// to an OCI extractor.
	whiteoutMeta = whiteoutPrefix + whiteoutPrefix
	opaqueMarker = whiteoutMeta + ".opq"
)

// action is what an entry asks the extractor to do.
type action int

const (
	// actSkip: the entry is outside the configs directory, or is tar metadata.
	actSkip action = iota
	// actRoot: the entry is the configs directory itself.
	actRoot
	actDir
	actFile
	actSymlink
	actHardlink
	// actWhiteout deletes rel as it exists in lower layers. rel "." means the
	// whole configs directory (or an ancestor of it) was deleted.
	actWhiteout
	// actOpaque deletes the lower-layer children of directory rel.
	actOpaque
)

// plan is the sanitised meaning of one tar entry relative to the configs
// directory. Paths are slash-separated, cleaned and local (filepath.IsLocal),
// or "." for the configs directory itself.
type plan struct {
	act action
	rel string
	// link is, for actSymlink, the target to write, relative to the link's
	// directory and resolving lexically inside the configs directory; for
	// actHardlink, the existing file's path relative to the configs directory.
	link string
}

// cleanConfigsLabel turns the configs label into a clean path relative to the
// image root. The label is an absolute path in the image, but it is read
// relative to the root whatever its form, so ".." cannot climb out of it.
func cleanConfigsLabel(label string) (string, error) {
	if strings.ContainsRune(label, 0) {
		return "", fmt.Errorf("%w: %q contains a NUL byte", ErrInvalidConfigsLabel, label)
	}
	p := path.Clean("/" + strings.TrimSpace(label))
	if p == "/" {
		return "", fmt.Errorf("%w: %q names the image root", ErrInvalidConfigsLabel, label)
	}
	return p[1:], nil
}

// maxDepth bounds how many directories deep, below the configs directory,
// an entry or a link target may be. Catalogs are two or three deep; the
// bound keeps every path lookup during extraction short.
const maxDepth = 64

// tooDeep reports whether rel, relative to the configs directory, is more
// than maxDepth components deep.
func tooDeep(rel string) bool {
	return strings.Count(rel, "/") >= maxDepth
}

// maxNameLen is Linux's PATH_MAX. No image built the usual way has longer
// names, and refusing them bounds how deep one entry can nest.
const maxNameLen = 4096

// cleanEntryName validates a tar entry name and returns it cleaned and
// relative to the image root ("." for the root itself). Names that are empty,
// absolute, too long, contain NUL or have a ".." component are refused: their meaning
// differs between extractors, so no reading of them is safe.
func cleanEntryName(name string) (string, error) {
	switch {
	case name == "":
		return "", errors.New("empty name")
	case strings.ContainsRune(name, 0):
		return "", errors.New("name contains a NUL byte")
	case strings.HasPrefix(name, "/"):
		return "", errors.New("absolute path")
	case len(name) > maxNameLen:
		return "", fmt.Errorf("name longer than %d bytes", maxNameLen)
	}
	for _, c := range strings.Split(name, "/") {
		if c == ".." {
			return "", errors.New(`path has a ".." component`)
		}
	}
	return path.Clean(name), nil
}

// within reports whether p is base or below it, and p relative to base.
// A base of "." is the root of an archive extracted whole (ExtractArchive):
// everything is within it.
func within(p, base string) (string, bool) {
	if p == base {
		return ".", true
	}
	if base == "." {
		return p, true
	}
	if rest, ok := strings.CutPrefix(p, base+"/"); ok {
		return rest, true
	}
	return "", false
}

// isAncestor reports whether p is a proper ancestor of base; "." is the
// ancestor of everything.
func isAncestor(p, base string) bool {
	return p == "." || strings.HasPrefix(base, p+"/")
}

// planEntry decides what a tar entry means for extracting configsDir (as
// returned by cleanConfigsLabel). A non-nil error is the reason the entry is
// unsafe. Name checks apply to every entry, because a bad name cannot be
// placed inside or outside the configs directory with certainty; type and
// link checks apply only to entries that would be extracted.
func planEntry(hdr *tar.Header, configsDir string) (plan, error) {
	if hdr.Typeflag == tar.TypeXGlobalHeader {
		return plan{act: actSkip}, nil
	}
	clean, err := cleanEntryName(hdr.Name)
	if err != nil {
		return plan{}, err
	}

	base := path.Base(clean)
	if strings.HasPrefix(base, whiteoutPrefix) {
		return planWhiteout(clean, base, configsDir)
	}

	rel, inside := within(clean, configsDir)
	if !inside {
		if isAncestor(clean, configsDir) && clean != "." && hdr.Typeflag != tar.TypeDir {
			return plan{}, fmt.Errorf("%q, an ancestor of the configs directory, is not a directory", clean)
		}
		return plan{act: actSkip}, nil
	}
	if rel == "." {
		if hdr.Typeflag != tar.TypeDir {
			return plan{}, errors.New("the configs directory itself is not a directory")
		}
		return plan{act: actRoot, rel: "."}, nil
	}
	if tooDeep(rel) {
		return plan{}, fmt.Errorf("more than %d directories deep in the configs directory", maxDepth)
	}

	switch hdr.Typeflag {
	case tar.TypeDir:
		return plan{act: actDir, rel: rel}, nil
	case tar.TypeReg, '\x00':
		return plan{act: actFile, rel: rel}, nil
	case tar.TypeSymlink:
		target, err := symlinkTarget(clean, hdr.Linkname, configsDir)
		if err != nil {
			return plan{}, err
		}
		return plan{act: actSymlink, rel: rel, link: target}, nil
	case tar.TypeLink:
		target, err := hardlinkTarget(hdr.Linkname, configsDir)
		if err != nil {
			return plan{}, err
		}
		if target == rel {
			return plan{}, errors.New("hard link to itself")
		}
		return plan{act: actHardlink, rel: rel, link: target}, nil
	case tar.TypeChar:
		return plan{}, errors.New("character device")
	case tar.TypeBlock:
		return plan{}, errors.New("block device")
	case tar.TypeFifo:
		return plan{}, errors.New("named pipe (fifo)")
	default:
		return plan{}, fmt.Errorf("unsupported entry type %q", hdr.Typeflag)
	}
}

// planWhiteout handles ".wh.*" names. A whiteout of the configs directory or
// of one of its ancestors, and an opaque marker in either, empty the configs
// directory of lower-layer content.
func planWhiteout(clean, base, configsDir string) (plan, error) {
	dir := path.Dir(clean)
	if base == opaqueMarker {
		if rel, inside := within(dir, configsDir); inside {
			if tooDeep(rel) {
				return plan{}, fmt.Errorf("more than %d directories deep in the configs directory", maxDepth)
			}
			return plan{act: actOpaque, rel: rel}, nil
		}
		if isAncestor(dir, configsDir) {
			return plan{act: actOpaque, rel: "."}, nil
		}
		return plan{act: actSkip}, nil
	}
	if strings.HasPrefix(base, whiteoutMeta) {
		return plan{act: actSkip}, nil
	}
	victim := strings.TrimPrefix(base, whiteoutPrefix)
	if victim == "" || victim == "." || victim == ".." {
		return plan{}, fmt.Errorf("whiteout names no valid file (%q)", victim)
	}
	target := path.Join(dir, victim)
	if rel, inside := within(target, configsDir); inside {
		if tooDeep(rel) {
			return plan{}, fmt.Errorf("more than %d directories deep in the configs directory", maxDepth)
		}
		return plan{act: actWhiteout, rel: rel}, nil
	}
	if isAncestor(target, configsDir) {
		return plan{act: actWhiteout, rel: "."}, nil
	}
	return plan{act: actSkip}, nil
}

// symlinkTarget checks a symbolic link's target and rewrites it relative to
// the link's own directory. Absolute targets are read relative to the image
// root, as a container would see them, and rewritten so that they keep
// pointing inside the destination rather than at the host's root. The target
// is cleaned lexically, as written, and refused if the result lies outside
// the configs directory; what the cleaned target resolves to on disk, through
// other links, is checked once all layers are applied (extractor.finish).
func symlinkTarget(linkPath, target, configsDir string) (string, error) {
	if target == "" {
		return "", errors.New("symbolic link with an empty target")
	}
	if strings.ContainsRune(target, 0) {
		return "", errors.New("symbolic link target contains a NUL byte")
	}
	var resolved string
	if strings.HasPrefix(target, "/") {
		resolved = path.Clean(target)[1:]
		if resolved == "" {
			resolved = "."
		}
	} else {
		resolved = path.Join(path.Dir(linkPath), target)
	}
	if resolved == ".." || strings.HasPrefix(resolved, "../") {
		return "", fmt.Errorf("symbolic link target %q leaves the root of the image or archive", target)
	}
	targetRel, inside := within(resolved, configsDir)
	if !inside {
		return "", fmt.Errorf("symbolic link target %q leaves the configs directory", target)
	}
	if tooDeep(targetRel) {
		return "", fmt.Errorf("symbolic link target %q is more than %d directories deep in the configs directory", target, maxDepth)
	}
	linkRel, _ := within(linkPath, configsDir)
	out, err := filepath.Rel(path.Dir(linkRel), targetRel)
	if err != nil {
		return "", fmt.Errorf("symbolic link target %q: %w", target, err)
	}
	return filepath.ToSlash(out), nil
}

// hardlinkTarget checks a hard link's target, which tar records as a path
// from the image root, and returns it relative to the configs directory.
func hardlinkTarget(target, configsDir string) (string, error) {
	if target == "" {
		return "", errors.New("hard link with an empty target")
	}
	clean, err := cleanEntryName(strings.TrimLeft(target, "/"))
	if err != nil {
		return "", fmt.Errorf("hard link target %q: %w", target, err)
	}
	rel, inside := within(clean, configsDir)
	if !inside {
		return "", fmt.Errorf("hard link target %q leaves the configs directory", target)
	}
	if rel == "." {
		return "", fmt.Errorf("hard link target %q is the configs directory", target)
	}
	return rel, nil
}
