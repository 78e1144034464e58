package source

import (
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
)

// Forms is what Parse accepts, for the messages that refuse something.
const Forms = "a directory, an image (quay.io/org/catalog:tag), oci:DIR[:TAG], " +
	"git::https://host/org/repo.git[//DIR][?ref=REF], or an http(s):// URL of a .tar, .tar.gz, .json or .yaml"

var (
	hex40     = regexp.MustCompile(`^[0-9a-f]{40}$`)
	hex64     = regexp.MustCompile(`^[0-9a-f]{64}$`)
	layoutTag = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)
	// scpLike is git's user@host:path, which has no scheme.
	scpLike = regexp.MustCompile(`^[A-Za-z0-9._-]+@[A-Za-z0-9.-]+:[^/]`)
)

// Parse reads a source as a person names one on a command line: the form
// String writes. Which kind it is follows from its prefix (git::, oci:,
// http:// or https://); anything else is a directory when one exists there,
// and an image reference when it starts with a registry host, so that a
// mistyped directory is not taken for an image on Docker Hub. Anything that
// could be meant two ways, or that puts credentials in the name, is refused
// with a message that shows the form to write.
func Parse(s string) (Spec, error) {
	switch {
	case s == "":
		return Spec{}, fmt.Errorf("no source given: want %s", Forms)
	case strings.HasPrefix(s, "git::"):
		g, err := parseGit(strings.TrimPrefix(s, "git::"))
		if err != nil {
			return Spec{}, fmt.Errorf("git source %s: %w", "git::"+redactURL(strings.TrimPrefix(s, "git::")), err)
		}
		return Spec{Git: &g}, nil
	case strings.HasPrefix(s, "oci:") && !strings.HasPrefix(s, "oci://"):
		l, err := parseLayout(strings.TrimPrefix(s, "oci:"))
		if err != nil {
			return Spec{}, fmt.Errorf("OCI layout %s: %w", s, err)
		}
		return Spec{Layout: &l}, nil
	}
	if scheme, _, ok := strings.Cut(s, "://"); ok {
		switch strings.ToLower(scheme) {
		case "http", "https":
			h, err := parseHTTP(s)
			if err != nil {
				return Spec{}, fmt.Errorf("HTTP source %s: %w", redactURL(s), err)
			}
			return Spec{HTTP: &h}, nil
		case "ssh", "file", "git":
			return Spec{}, fmt.Errorf("%s: for a git repository write git::%s", redactURL(s), redactURL(s))
		case "docker", "oci":
			return Spec{}, fmt.Errorf("%s: write an image without %s:// (quay.io/org/catalog:tag), or an OCI layout as oci:DIR[:TAG]", s, scheme)
		}
		return Spec{}, fmt.Errorf("%s: unknown scheme %q; want %s", redactURL(s), scheme, Forms)
	}
	if scpLike.MatchString(s) {
		return Spec{}, fmt.Errorf("%s: for a git repository write git::%s", s, s)
	}
	return parseLocal(s)
}

// ErrNoDirectory is a source that reads as a path naming no directory on
// this machine: the catalog cannot be read, which the commands tell from
// a mistake in the form of what was typed.
var ErrNoDirectory = errors.New("no directory")

// parseLocal tells a directory from an image reference, as `catalogd
// serve` always has: a value naming an existing directory is one; anything
// else must look like an image reference with a registry host.
func parseLocal(s string) (Spec, error) {
	fi, err := os.Stat(s)
	switch {
	case err == nil && fi.IsDir():
		abs, err := filepath.Abs(s)
		if err != nil {
			return Spec{}, fmt.Errorf("directory %s: %w", s, err)
		}
		return Spec{Dir: abs}, nil
	case err == nil:
		return Spec{}, fmt.Errorf("%s is a file; want the catalog's directory, or %s", s, Forms)
	case !errors.Is(err, fs.ErrNotExist):
		return Spec{}, err
	}
	if !looksLikeImage(s) {
		return Spec{}, fmt.Errorf("%w %s (an image reference needs a registry host, as in quay.io/org/catalog:tag)", ErrNoDirectory, s)
	}
	if _, err := name.ParseReference(s); err != nil {
		return Spec{}, fmt.Errorf("%w %s, and not an image reference: %w", ErrNoDirectory, s, err)
	}
	return Spec{Image: s}, nil
}

// looksLikeImage reports whether v starts with a registry host, the way
// container tools tell a registry from a Docker Hub namespace.
func looksLikeImage(v string) bool {
	if strings.HasPrefix(v, ".") || strings.HasPrefix(v, "/") || strings.HasPrefix(v, "~") {
		return false
	}
	host, _, ok := strings.Cut(v, "/")
	return ok && (strings.ContainsAny(host, ".:") || host == "localhost")
}

// parseLayout reads skopeo's DIR[:REF]: the first colon ends the
// directory, as skopeo reads it, so a digest may follow it whole.
func parseLayout(s string) (Layout, error) {
	dir, ref, hasRef := strings.Cut(s, ":")
	if dir == "" {
		return Layout{}, errors.New("no directory: write oci:DIR or oci:DIR:TAG")
	}
	if hasRef {
		switch {
		case ref == "":
			return Layout{}, errors.New("empty tag after the directory: write oci:DIR (the layout's only image) or oci:DIR:TAG")
		case strings.HasPrefix(ref, "sha256:"):
			if !hex64.MatchString(strings.TrimPrefix(ref, "sha256:")) {
				return Layout{}, fmt.Errorf("digest %q: want sha256: and 64 lower-case hex digits", ref)
			}
		case !layoutTag.MatchString(ref):
			return Layout{}, fmt.Errorf("tag %q: want letters, digits, '_', '.' or '-', at most 128, not starting with '.' or '-'", ref)
		}
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return Layout{}, err
	}
	return Layout{Dir: abs, Ref: ref}, nil
}

// parseHTTP reads URL[#sha256=HEX].
func parseHTTP(s string) (HTTP, error) {
	raw, frag, hasFrag := strings.Cut(s, "#")
	u, err := url.Parse(raw)
	if err != nil {
		return HTTP{}, errors.New("not a URL")
	}
	if u.User != nil {
		return HTTP{}, errors.New("credentials in the URL: give them in a Secret (ClusterCatalog http.secretRef), never in the source")
	}
	if u.Host == "" {
		return HTTP{}, errors.New("no host in the URL")
	}
	if p := u.Path; strings.HasSuffix(p, ".git") || strings.Contains(p, ".git/") || strings.Contains(p, "//") || u.Query().Has("ref") {
		return HTTP{}, fmt.Errorf("for a git repository write git::%s", raw)
	}
	h := HTTP{URL: raw}
	if hasFrag {
		sum, ok := strings.CutPrefix(frag, "sha256=")
		if !ok {
			return HTTP{}, fmt.Errorf("fragment #%s: the only one taken is #sha256=HEX, the SHA-256 of the bytes at the URL", frag)
		}
		sum = strings.ToLower(sum)
		if !hex64.MatchString(sum) {
			return HTTP{}, errors.New("#sha256= wants 64 hex digits")
		}
		h.SHA256 = sum
	}
	return h, nil
}

// parseGit reads go-getter's URL[//DIR][?ref=REF], with catalogd's
// &commit=SHA (see Git.String).
func parseGit(s string) (Git, error) {
	const form = "write git::https://host/org/repo.git[//DIR][?ref=REF]"
	if s == "" {
		return Git{}, errors.New("no repository URL after git::: " + form)
	}
	if strings.Contains(s, "#") {
		return Git{}, errors.New("'#' in a git source: name a branch, tag or commit with ?ref=REF")
	}
	repo, rawQuery, _ := strings.Cut(s, "?")
	// The catalog's directory follows the first "//" after the scheme's.
	start := 0
	if i := strings.Index(repo, "://"); i >= 0 {
		start = i + len("://")
	}
	var g Git
	if i := strings.Index(repo[start:], "//"); i >= 0 {
		dir, err := cleanDirectory(repo[start+i+2:])
		if err != nil {
			return Git{}, err
		}
		repo, g.Directory = repo[:start+i], dir
	}
	u, err := checkGitURL(repo)
	if err != nil {
		return Git{}, err
	}
	g.URL = u
	q, err := url.ParseQuery(rawQuery)
	if err != nil {
		return Git{}, fmt.Errorf("query %q: %w", rawQuery, err)
	}
	for k, vs := range q {
		if k != "ref" && k != "commit" {
			return Git{}, fmt.Errorf("unknown query key %q: the only ones taken are ref (a branch, tag or commit) and commit", k)
		}
		if len(vs) > 1 {
			return Git{}, fmt.Errorf("%s given %d times: give it once", k, len(vs))
		}
	}
	if q.Has("ref") {
		if g.Ref, err = checkRef(q.Get("ref")); err != nil {
			return Git{}, err
		}
	}
	if q.Has("commit") {
		g.Commit = strings.ToLower(q.Get("commit"))
		if !hex40.MatchString(g.Commit) {
			return Git{}, fmt.Errorf("commit %q: want 40 hex digits", q.Get("commit"))
		}
		if hex40.MatchString(strings.ToLower(g.Ref)) && strings.ToLower(g.Ref) != g.Commit {
			return Git{}, fmt.Errorf("ref %s and commit %s are two different commits: give one", g.Ref, g.Commit)
		}
	}
	return g, nil
}

// checkGitURL accepts https://, http://, ssh://, file:// and scp-like
// user@host:path repositories without credentials; whether a local one is
// allowed is the fetcher's business.
func checkGitURL(repo string) (string, error) {
	if !strings.Contains(repo, "://") {
		if !scpLike.MatchString(repo) {
			return "", fmt.Errorf("repository %q: want https://, ssh://, file:// or user@host:path", repo)
		}
		if strings.Contains(repo[:strings.Index(repo, "@")], ":") {
			return "", errors.New("a password in the repository URL: give credentials in a Secret, never in the source")
		}
		return repo, nil
	}
	u, err := url.Parse(repo)
	if err != nil {
		return "", fmt.Errorf("repository %q is not a URL", redactURL(repo))
	}
	switch u.Scheme {
	case "https", "http":
		if u.User != nil {
			return "", errors.New("credentials in the repository URL: give them in a Secret (ClusterCatalog git.secretRef), never in the source")
		}
	case "ssh":
		if hasPassword(u) {
			return "", errors.New("a password in the repository URL: give credentials in a Secret (ClusterCatalog git.secretRef), never in the source")
		}
	case "file":
		if u.Host != "" && u.Host != "localhost" {
			return "", fmt.Errorf("repository %q: a file:// URL names a local path, file:///path", repo)
		}
	default:
		return "", fmt.Errorf("repository %q: scheme %q; want https, ssh or file", redactURL(repo), u.Scheme)
	}
	if u.Scheme != "file" && u.Host == "" {
		return "", fmt.Errorf("repository %q: no host", repo)
	}
	if strings.Trim(u.Path, "/") == "" {
		return "", fmt.Errorf("repository %q: no repository path", repo)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("repository %q: unexpected query or fragment", repo)
	}
	return repo, nil
}

// cleanDirectory makes the catalog's directory inside a repository
// slash-separated, relative and without "..", so that it cannot name
// anything outside the repository.
func cleanDirectory(dir string) (string, error) {
	if strings.HasPrefix(dir, "/") {
		return "", fmt.Errorf("directory %q: want a path relative to the repository's root", dir)
	}
	for _, elem := range strings.Split(dir, "/") {
		if elem == ".." {
			return "", fmt.Errorf("directory %q: \"..\" would leave the repository", dir)
		}
	}
	if strings.ContainsFunc(dir, func(r rune) bool { return r < 0x20 || r == 0x7f || r == '\\' }) {
		return "", fmt.Errorf("directory %q: control characters and backslashes are not taken", dir)
	}
	clean := path.Clean(dir)
	if clean == "." {
		return "", nil
	}
	return clean, nil
}

// checkRef refuses what git would refuse as a ref name, or take for an
// option.
func checkRef(ref string) (string, error) {
	switch {
	case ref == "":
		return "", errors.New("empty ref: name a branch, tag or commit, or leave ref out for the default branch")
	case strings.HasPrefix(ref, "-"), strings.Contains(ref, ".."), strings.HasSuffix(ref, "/"), strings.HasSuffix(ref, ".lock"),
		strings.ContainsFunc(ref, func(r rune) bool { return r <= ' ' || r == 0x7f || strings.ContainsRune(`~^:?*[\`, r) }):
		return "", fmt.Errorf("ref %q is not a git ref name", ref)
	}
	return ref, nil
}

// redactURL hides the user information of a URL that has one (a token is
// often given as the user name), so that an error never repeats it.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.User == nil || u.Scheme == "ssh" && !hasPassword(u) {
		return s
	}
	u.User = url.User("REDACTED")
	return u.String()
}

func hasPassword(u *url.URL) bool {
	_, ok := u.User.Password()
	return ok
}
