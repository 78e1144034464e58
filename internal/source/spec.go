package source

import (
	"net/url"
	"strings"
)

// Spec names one catalog source: exactly one member is set. Its string form
// (String, and Parse, which reads it back) is the one a person types
// wherever a catalog is named (`catalogd serve --catalog NAME=SOURCE`,
// `catalogd validate SOURCE`, `kubectl catalog --source SOURCE`), in forms
// other tools' users know already, and it is also how a fetched revision is
// recorded (Fetched.Ref): a git source pinned to its commit, an HTTP source
// to its SHA-256.
//
// Credentials are never part of a Spec: they come from a Secret or the
// command line, beside it, so that a Spec can be logged and shown.
type Spec struct {
	// Dir is a catalog directory on local disk, as an absolute path.
	Dir string
	// Image is an image reference (a tag or a digest), of a catalog image
	// or of an OCI artifact holding a catalog.
	Image string
	// Layout is an OCI image layout directory on local disk.
	Layout *Layout
	// Git is a directory of a git repository at a ref.
	Git *Git
	// HTTP is an archive or a single FBC file at a URL.
	HTTP *HTTP
}

// Layout is an image (or artifact) in an OCI image layout directory:
// skopeo's "oci:DIR[:TAG]".
type Layout struct {
	// Dir is the layout's directory, absolute.
	Dir string
	// Ref picks the manifest: a tag (the org.opencontainers.image.ref.name
	// annotation of an index entry) or a digest ("sha256:..."); empty takes
	// the index's only manifest.
	Ref string
}

// Git is a directory of a git repository at a branch, a tag or a commit:
// go-getter's "git::URL//DIR?ref=REF".
type Git struct {
	// URL is the repository: https://, or ssh:// (or scp-like
	// user@host:path), without credentials.
	URL string
	// Ref is what to follow, as a person wrote it: "refs/heads/NAME" (a
	// branch), "refs/tags/NAME" (a tag), a short name that is one or the
	// other on the remote (both is ambiguous and refused), a commit (40 hex
	// digits), or empty for the remote's default branch (HEAD).
	Ref string
	// Commit, 40 hex digits, pins the source to what it served: the commit
	// Ref resolved to. A fetch of a pinned source fetches exactly it.
	Commit string
	// Directory is the catalog's path inside the repository, slash
	// separated, without leading or trailing slash; empty is the root.
	Directory string
}

// HTTP is a catalog at an http(s) URL: a .tar, .tar.gz or .tgz archive of a
// catalog directory, or one .json, .yaml or .yml FBC file.
type HTTP struct {
	// URL is where to get it, without credentials.
	URL string
	// SHA256, 64 lower-case hex digits, pins the bytes at URL: a download
	// of other bytes fails. A source pinned to what it served has it set.
	SHA256 string
}

// String is the source in the form Parse reads.
func (s Spec) String() string {
	switch {
	case s.Dir != "":
		return s.Dir
	case s.Image != "":
		return s.Image
	case s.Layout != nil:
		return s.Layout.String()
	case s.Git != nil:
		return s.Git.String()
	case s.HTTP != nil:
		return s.HTTP.String()
	}
	return ""
}

// String is "oci:DIR" or "oci:DIR:REF".
func (l Layout) String() string {
	if l.Ref == "" {
		return "oci:" + l.Dir
	}
	return "oci:" + l.Dir + ":" + l.Ref
}

// String is go-getter's form, "git::URL[//DIR][?ref=REF]", with
// "&commit=SHA" added when pinned (go-getter's ref takes a commit too, but
// the ref it was resolved from lets a server that refuses to send an
// unadvertised commit still be asked for it by name).
func (g Git) String() string {
	var b strings.Builder
	b.WriteString("git::")
	b.WriteString(g.URL)
	if g.Directory != "" {
		b.WriteString("//")
		b.WriteString(g.Directory)
	}
	q := url.Values{}
	if g.Ref != "" {
		q.Set("ref", g.Ref)
	}
	if g.Commit != "" {
		q.Set("commit", g.Commit)
	}
	if len(q) > 0 {
		b.WriteString("?")
		b.WriteString(q.Encode())
	}
	return b.String()
}

// String is the URL, with "#sha256=HEX" when pinned.
func (h HTTP) String() string {
	if h.SHA256 == "" {
		return h.URL
	}
	return h.URL + "#sha256=" + h.SHA256
}
