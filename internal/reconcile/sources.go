package reconcile

import (
	"context"
	"fmt"
	"path"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	catalogdv1 "github.com/catalogd/catalogd/api/v1"
	"github.com/catalogd/catalogd/internal/catalogsync"
	"github.com/catalogd/catalogd/internal/index"
	"github.com/catalogd/catalogd/internal/source"
)

// FetcherFunc makes the fetcher of a source, with the credentials its
// ClusterCatalog names: the composition root's one place where a kind of
// source is chosen. An error is a source this binary cannot fetch, or
// credentials it cannot use.
type FetcherFunc func(spec source.Spec, creds source.Credentials) (catalogsync.Fetcher, error)

// Sources makes the fetchers of ClusterCatalogs, on the leader and on every
// replica alike.
type Sources struct {
	Fetcher FetcherFunc
	// Secrets reads, by name, the Secrets ClusterCatalogs name (secretRef,
	// caSecretRef): an uncached reader, so that catalogd neither watches nor
	// caches Secrets, and reads them only in Namespace.
	Secrets client.Reader
	// Namespace is catalogd's own, the only one a ClusterCatalog's Secrets
	// are read from.
	Namespace string
}

// Reading a ClusterCatalog's Secrets: only get, only in catalogd's own
// namespace (kustomize's namespace overrides olmv1-system).
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get,namespace=olmv1-system

// fetcher is the fetcher of spec with the Secrets of refs.
func (s Sources) fetcher(spec source.Spec, refs secretRefs) catalogsync.Fetcher {
	return sourceFetcher{spec: spec, refs: refs, sources: s}
}

// secretRefs are the Secrets a source names, with the field naming each and
// the keys it should hold, for messages.
type secretRefs struct {
	secret, ca  *catalogdv1.SecretReference
	secretField string
	secretKeys  string
	caField     string
}

// sourceFetcher reads its catalog's Secrets at each Fetch, through the
// uncached reader: rotated credentials take effect on the next fetch, and
// no Secret stays in memory between fetches.
type sourceFetcher struct {
	spec    source.Spec
	refs    secretRefs
	sources Sources
}

func (f sourceFetcher) Fetch(ctx context.Context, skip func(string) bool) (catalogsync.Fetched, error) {
	creds, err := f.sources.credentials(ctx, f.refs)
	if err != nil {
		return catalogsync.Fetched{}, err
	}
	inner, err := f.sources.Fetcher(f.spec, creds)
	if err != nil {
		return catalogsync.Fetched{}, err
	}
	return inner.Fetch(ctx, skip)
}

// PrebuiltIndex is the kind of source's own, with the catalog's
// credentials, where it has one (catalogsync.PrebuiltSource: an image);
// none otherwise. Credentials that cannot be read leave it to Fetch to
// fail on them.
func (f sourceFetcher) PrebuiltIndex(ctx context.Context) (string, func(context.Context, string) (index.ContentSums, error), error) {
	creds, err := f.sources.credentials(ctx, f.refs)
	if err != nil {
		return "", nil, nil
	}
	inner, err := f.sources.Fetcher(f.spec, creds)
	if err != nil {
		return "", nil, nil
	}
	ps, ok := inner.(catalogsync.PrebuiltSource)
	if !ok {
		return "", nil, nil
	}
	return ps.PrebuiltIndex(ctx)
}

// Describe is the source in the form a person writes it.
func (f sourceFetcher) Describe() string { return f.spec.String() }

// Built asks the kind of source, which needs no credentials to tell.
func (f sourceFetcher) Built(ref string) bool {
	inner, err := f.sources.Fetcher(f.spec, source.Credentials{})
	return err == nil && inner.Built(ref)
}

func (s Sources) credentials(ctx context.Context, refs secretRefs) (source.Credentials, error) {
	var creds source.Credentials
	var err error
	if refs.secret != nil {
		if creds.Secret, err = s.secret(ctx, refs.secret.Name, refs.secretField, refs.secretKeys); err != nil {
			return source.Credentials{}, err
		}
	}
	if refs.ca != nil {
		if creds.CA, err = s.secret(ctx, refs.ca.Name, refs.caField, "ca.crt (PEM certificates)"); err != nil {
			return source.Credentials{}, err
		}
	}
	return creds, nil
}

// secret reads one Secret; an error names it, the field that named it and
// the keys it should hold, never what it holds.
func (s Sources) secret(ctx context.Context, secretName, field, keys string) (*source.Secret, error) {
	key := types.NamespacedName{Namespace: s.Namespace, Name: secretName}
	if s.Secrets == nil || s.Namespace == "" {
		return nil, fmt.Errorf("cannot read Secret %s named by %s: this catalogd reads no Secrets (run catalogd manager with --secret-namespace)", secretName, field)
	}
	secret := &corev1.Secret{}
	if err := s.Secrets.Get(ctx, key, secret); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("no Secret %s (named by %s): create it in catalogd's namespace with %s", key, field, keys)
		}
		return nil, fmt.Errorf("read Secret %s (named by %s): %w", key, field, err)
	}
	return &source.Secret{Name: key.String(), Data: secret.Data}, nil
}

// wanted is what the leader fetches for the catalog's spec, whether it is
// pinned (a digest, a commit, a sha256: bad content there is Blocked, since
// no retry changes it) and the Secrets it names. An error is a spec the
// API's rules should have refused, which no retry fixes.
func wanted(cat *catalogdv1.ClusterCatalog) (spec source.Spec, pinned bool, err error) {
	src := cat.Spec.Source
	switch {
	case src.Type == catalogdv1.SourceTypeImage && src.Image != nil:
		ref, err := name.ParseReference(src.Image.Ref)
		if err != nil {
			return source.Spec{}, false, fmt.Errorf("spec.source.image.ref %q: %w", src.Image.Ref, err)
		}
		_, atDigest := ref.(name.Digest)
		return source.Spec{Image: src.Image.Ref}, atDigest, nil
	case src.Type == catalogdv1.SourceTypeGit && src.Git != nil:
		g := gitSpec(src.Git)
		return source.Spec{Git: &g}, g.Commit != "", nil
	case src.Type == catalogdv1.SourceTypeHTTP && src.HTTP != nil:
		return source.Spec{HTTP: &source.HTTP{URL: src.HTTP.URL, SHA256: src.HTTP.SHA256}}, src.HTTP.SHA256 != "", nil
	}
	return source.Spec{}, false, fmt.Errorf("source type %q without its member: set spec.source.%s", src.Type, member(src.Type))
}

func member(t catalogdv1.SourceType) string {
	switch t {
	case catalogdv1.SourceTypeGit:
		return "git"
	case catalogdv1.SourceTypeHTTP:
		return "http"
	}
	return "image"
}

// gitSpec is the git source of g: a branch or a tag is followed by its full
// ref name, so that a branch and a tag of the same name are never
// confused; a commit is the pin itself.
func gitSpec(g *catalogdv1.GitSource) source.Git {
	s := source.Git{URL: g.URL, Directory: cleanDirectory(g.Directory)}
	switch {
	case g.Ref.Branch != "":
		s.Ref = "refs/heads/" + g.Ref.Branch
	case g.Ref.Tag != "":
		s.Ref = "refs/tags/" + g.Ref.Tag
	default:
		s.Ref, s.Commit = g.Ref.Commit, g.Ref.Commit
	}
	return s
}

// cleanDirectory writes a directory as source.Git keeps it: without "./",
// doubled or trailing slashes; the root is "".
func cleanDirectory(dir string) string {
	if dir == "" {
		return ""
	}
	if c := path.Clean(dir); c != "." {
		return c
	}
	return ""
}

// published is what every replica fetches: exactly what the leader
// published in status.resolvedSource (an image's digest, a git commit, an
// archive's sha256); false when there is nothing published to serve.
func published(cat *catalogdv1.ClusterCatalog) (source.Spec, bool) {
	rs := cat.Status.ResolvedSource
	switch {
	case rs == nil:
		return source.Spec{}, false
	case rs.Image != nil:
		if _, err := name.NewDigest(rs.Image.Ref); err != nil {
			return source.Spec{}, false
		}
		return source.Spec{Image: rs.Image.Ref}, true
	case rs.Git != nil:
		g := source.Git{URL: rs.Git.URL, Commit: rs.Git.Commit, Directory: rs.Git.Directory}
		// The ref the commit came from lets a server that sends only
		// advertised commits be asked for it by name.
		if sg := cat.Spec.Source.Git; sg != nil && sg.URL == rs.Git.URL {
			g.Ref = gitSpec(sg).Ref
		}
		return source.Spec{Git: &g}, true
	case rs.HTTP != nil:
		return source.Spec{HTTP: &source.HTTP{URL: rs.HTTP.URL, SHA256: rs.HTTP.SHA256}}, true
	}
	return source.Spec{}, false
}

// secretsOf are the Secrets the catalog's source names.
func secretsOf(cat *catalogdv1.ClusterCatalog) secretRefs {
	src := cat.Spec.Source
	switch {
	case src.Git != nil:
		return secretRefs{secret: src.Git.SecretRef, secretField: "spec.source.git.secretRef",
			secretKeys: "username and password, or bearerToken (https), or identity and known_hosts (ssh)"}
	case src.HTTP != nil:
		return secretRefs{secret: src.HTTP.SecretRef, secretField: "spec.source.http.secretRef",
			secretKeys: "username and password, or bearerToken", ca: src.HTTP.CASecretRef, caField: "spec.source.http.caSecretRef"}
	}
	return secretRefs{}
}

// display is how /catalogs shows the catalog's source: as its spec names
// it (a tag, a branch), while the fetcher fetches what status pins.
func display(cat *catalogdv1.ClusterCatalog) string {
	if spec, _, err := wanted(cat); err == nil {
		return spec.String()
	}
	return ""
}

// pollMinutes is the spec's poll interval in minutes; 0 when it does not
// poll.
func pollMinutes(cat *catalogdv1.ClusterCatalog) int {
	var p *int
	switch src := cat.Spec.Source; {
	case src.Image != nil:
		p = src.Image.PollIntervalMinutes
	case src.Git != nil:
		p = src.Git.PollIntervalMinutes
	case src.HTTP != nil:
		p = src.HTTP.PollIntervalMinutes
	}
	if p == nil || *p <= 0 {
		return 0
	}
	return *p
}

// resolved is the status.resolvedSource of what a sync made live, read
// back from the fetcher's Ref (the source pinned to what it served). prev
// is the status before, whose image form stands when this sync did not
// fetch the content again.
func resolved(typ catalogdv1.SourceType, res catalogsync.Result, prev *catalogdv1.ResolvedCatalogSource) (*catalogdv1.ResolvedCatalogSource, error) {
	switch typ {
	case catalogdv1.SourceTypeImage:
		if _, err := name.NewDigest(res.Ref); err != nil {
			return nil, fmt.Errorf("the image fetcher served %q, not a digest reference: %w", res.Ref, err)
		}
		form := catalogdv1.ImageForm(res.Form)
		if form == "" && prev != nil && prev.Image != nil && prev.Image.Ref == res.Ref {
			form = prev.Image.Form
		}
		return &catalogdv1.ResolvedCatalogSource{Type: typ, Image: &catalogdv1.ResolvedImageSource{Ref: res.Ref, Form: form}}, nil
	case catalogdv1.SourceTypeGit:
		spec, err := source.Parse(res.Ref)
		if err != nil || spec.Git == nil || spec.Git.Commit == "" {
			return nil, fmt.Errorf("the git fetcher served %q, not a git source pinned to a commit", res.Ref)
		}
		return &catalogdv1.ResolvedCatalogSource{Type: typ, Git: &catalogdv1.ResolvedGitSource{
			URL: spec.Git.URL, Commit: spec.Git.Commit, Directory: spec.Git.Directory, TreeDigest: res.Digest}}, nil
	case catalogdv1.SourceTypeHTTP:
		spec, err := source.Parse(res.Ref)
		if err != nil || spec.HTTP == nil || spec.HTTP.SHA256 == "" {
			return nil, fmt.Errorf("the HTTP fetcher served %q, not a URL pinned to a sha256", res.Ref)
		}
		return &catalogdv1.ResolvedCatalogSource{Type: typ, HTTP: &catalogdv1.ResolvedHTTPSource{URL: spec.HTTP.URL, SHA256: spec.HTTP.SHA256}}, nil
	}
	return nil, fmt.Errorf("source type %q is not known", typ)
}

// resolvedRef names what status says is served, for messages.
func resolvedRef(rs *catalogdv1.ResolvedCatalogSource) string {
	switch {
	case rs == nil:
		return ""
	case rs.Image != nil:
		return rs.Image.Ref
	case rs.Git != nil:
		return source.Git{URL: rs.Git.URL, Commit: rs.Git.Commit, Directory: rs.Git.Directory}.String()
	case rs.HTTP != nil:
		return source.HTTP{URL: rs.HTTP.URL, SHA256: rs.HTTP.SHA256}.String()
	}
	return ""
}

// pollInterval turns minutes into a duration, as scale says (nil:
// minutes; tests shorten it).
func pollInterval(minutes int, scale func(int) time.Duration) time.Duration {
	if minutes <= 0 {
		return 0
	}
	if scale != nil {
		return max(scale(minutes), 0)
	}
	return time.Duration(minutes) * time.Minute
}
