package gitsource

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/catalogd/catalogd/internal/source"
)

// refList is what a repository says it holds: the refs a remote advertises
// (ls-remote), or a local repository's.
type refList struct {
	// head is the commit HEAD points at; zero when the repository has none.
	head plumbing.Hash
	// refs maps each full ref name to the object it names (for an
	// annotated tag, the tag object).
	refs map[string]plumbing.Hash
	// peeled maps an annotated tag's name to the commit it tags.
	peeled map[string]plumbing.Hash
}

// target is what a Fetch fetches: commit, asked for as want (the object a
// ref names: the tag object of an annotated tag); want is zero when no
// advertised ref was seen to name the commit, and the commit is asked for
// by id.
type target struct {
	commit string
	want   plumbing.Hash
}

// commitOf is the commit a ref names, its tag peeled.
func (l *refList) commitOf(name string) (plumbing.Hash, bool) {
	if h, ok := l.peeled[name]; ok {
		return h, true
	}
	h, ok := l.refs[name]
	return h, ok
}

// resolve turns a ref as a person wrote it into the commit it names now:
// "refs/heads/X", "refs/tags/X", a short name that is exactly one of the
// two, or empty for HEAD. Errors are for a person to act on: an unknown
// ref lists some of the refs there are.
func (l *refList) resolve(ref string) (target, error) {
	if ref == "" {
		if l.head.IsZero() {
			return target{}, fmt.Errorf("the repository has no default branch (HEAD): name a branch, tag or commit with ref")
		}
		return target{commit: l.head.String(), want: l.head}, nil
	}
	name := ref
	if !strings.HasPrefix(ref, "refs/") {
		branch, tag := "refs/heads/"+ref, "refs/tags/"+ref
		_, isBranch := l.refs[branch]
		_, isTag := l.refs[tag]
		switch {
		case isBranch && isTag:
			return target{}, fmt.Errorf("ref %q is both a branch and a tag: write %q or %q", ref, branch, tag)
		case isBranch:
			name = branch
		case isTag:
			name = tag
		}
	}
	commit, ok := l.commitOf(name)
	if !ok {
		return target{}, fmt.Errorf("the repository has no ref %q (it has %s)", ref, l.some(5))
	}
	return target{commit: commit.String(), want: l.refs[name]}, nil
}

// some lists up to n of the branches and tags, sorted, for a message.
func (l *refList) some(n int) string {
	var names []string
	for name := range l.refs {
		if strings.HasPrefix(name, "refs/heads/") || strings.HasPrefix(name, "refs/tags/") {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return "no branch or tag"
	}
	slices.Sort(names)
	more := ""
	if len(names) > n {
		more = fmt.Sprintf(" and %d more", len(names)-n)
		names = names[:n]
	}
	return strings.Join(names, ", ") + more
}

// isObjectID reports whether s is a full object id (40 lower-case hex
// digits), as a pinned ref's commit is.
func isObjectID(s string) bool {
	if len(s) != 40 {
		return false
	}
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// target decides what to fetch. A source pinned to a commit (the spec's
// Commit, or a ref that is a commit id) is fetched as exactly that commit,
// without asking the remote until its tree is needed; another lists the
// remote's refs (one request) to resolve its ref.
func (f *fetcher) target(ctx context.Context, repo repository) (target, error) {
	if commit := f.pinnedCommit(); commit != "" {
		return target{commit: commit}, nil
	}
	refs, err := repo.refs(ctx)
	if err != nil {
		return target{}, err
	}
	return refs.resolve(f.spec.Ref)
}

// pinnedCommit is the commit the source is pinned to, if it is.
func (f *fetcher) pinnedCommit() string {
	if f.spec.Commit != "" {
		return strings.ToLower(f.spec.Commit)
	}
	if isObjectID(strings.ToLower(f.spec.Ref)) {
		return strings.ToLower(f.spec.Ref)
	}
	return ""
}

// wantFor decides how to ask for a pinned commit: as the object its ref
// names when that ref still names it (every server sends that), else by
// its id (a server may refuse an id no ref advertises).
func wantFor(refs *refList, spec source.Git, t target) target {
	if !t.want.IsZero() {
		return t
	}
	if spec.Ref != "" && !isObjectID(strings.ToLower(spec.Ref)) {
		if now, err := refs.resolve(spec.Ref); err == nil && now.commit == t.commit {
			return now
		}
	}
	for name, h := range refs.refs {
		if c, _ := refs.commitOf(name); c.String() == t.commit {
			return target{commit: t.commit, want: h}
		}
	}
	return t
}
