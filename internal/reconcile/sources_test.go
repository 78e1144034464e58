package reconcile_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	catalogdv1 "github.com/catalogd/catalogd/api/v1"
	"github.com/catalogd/catalogd/internal/catalogsync"
	"github.com/catalogd/catalogd/internal/index"
	"github.com/catalogd/catalogd/internal/reconcile"
	"github.com/catalogd/catalogd/internal/source"
)

// servedFetcher serves fixed content, so that a fetch through Sources
// reaches the chooser's fetcher.
type servedFetcher struct{ ref string }

func (f servedFetcher) Fetch(context.Context, func(string) bool) (catalogsync.Fetched, error) {
	return catalogsync.Fetched{Content: index.Content{Ref: f.ref, Digest: "sha256:" + archiveID}}, nil
}
func (f servedFetcher) Describe() string  { return f.ref }
func (f servedFetcher) Built(string) bool { return true }

// TestSourcesReadSecrets: the Secrets a ClusterCatalog names are read at
// fetch time from catalogd's own namespace only, handed to the chooser with
// their names, and a missing one fails the fetch with a message that names
// it, the field and the keys it should hold, and nothing it holds.
func TestSourcesReadSecrets(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	secret := func(ns, name string, data map[string][]byte) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: data}
	}
	basic := map[string][]byte{"username": []byte("u"), "password": []byte("s3cret")}
	ca := map[string][]byte{"ca.crt": []byte("PEM")}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(
		secret("olmv1-system", "git-creds", basic),
		secret("olmv1-system", "http-ca", ca),
		// The same name elsewhere is never read.
		secret("default", "elsewhere", basic),
	).Build()

	published := func(cat *catalogdv1.ClusterCatalog) *catalogdv1.ClusterCatalog {
		cat.Status.ResolvedSource = &catalogdv1.ResolvedCatalogSource{Type: cat.Spec.Source.Type}
		switch {
		case cat.Spec.Source.Git != nil:
			cat.Status.ResolvedSource.Git = &catalogdv1.ResolvedGitSource{URL: gitRepo, Commit: commit1, Directory: "catalogs/prod", TreeDigest: treeHash}
		case cat.Spec.Source.HTTP != nil:
			cat.Status.ResolvedSource.HTTP = &catalogdv1.ResolvedHTTPSource{URL: archive, SHA256: archiveID}
		}
		return cat
	}
	for _, tc := range []struct {
		name      string
		cat       *catalogdv1.ClusterCatalog
		wantCreds source.Credentials
		// wantErr are parts of the error, in any order.
		wantErr []string
	}{
		{
			name: "git secret read and handed over by name",
			cat: published(gitCatalog(catalogdv1.GitRef{Branch: "main"}, func(c *catalogdv1.ClusterCatalog) {
				c.Spec.Source.Git.SecretRef = &catalogdv1.SecretReference{Name: "git-creds"}
			})),
			wantCreds: source.Credentials{Secret: &source.Secret{Name: "olmv1-system/git-creds", Data: basic}},
		},
		{
			name: "http CA secret read",
			cat: published(httpCatalog("", func(c *catalogdv1.ClusterCatalog) {
				c.Spec.Source.HTTP.CASecretRef = &catalogdv1.SecretReference{Name: "http-ca"}
			})),
			wantCreds: source.Credentials{CA: &source.Secret{Name: "olmv1-system/http-ca", Data: ca}},
		},
		{
			name:      "no secret named, none read",
			cat:       published(httpCatalog("")),
			wantCreds: source.Credentials{},
		},
		{
			name: "a secret in another namespace is not found",
			cat: published(gitCatalog(catalogdv1.GitRef{Branch: "main"}, func(c *catalogdv1.ClusterCatalog) {
				c.Spec.Source.Git.SecretRef = &catalogdv1.SecretReference{Name: "elsewhere"}
			})),
			wantErr: []string{"no Secret olmv1-system/elsewhere", "spec.source.git.secretRef", "username and password", "identity and known_hosts"},
		},
		{
			name: "a missing CA secret names its key",
			cat: published(httpCatalog("", func(c *catalogdv1.ClusterCatalog) {
				c.Spec.Source.HTTP.CASecretRef = &catalogdv1.SecretReference{Name: "nope"}
			})),
			wantErr: []string{"no Secret olmv1-system/nope", "spec.source.http.caSecretRef", "ca.crt"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got *source.Credentials
			sources := reconcile.Sources{Secrets: c, Namespace: "olmv1-system",
				Fetcher: func(spec source.Spec, creds source.Credentials) (catalogsync.Fetcher, error) {
					got = &creds
					return servedFetcher{spec.String()}, nil
				}}
			spec := reconcile.SpecFor(tc.cat, sources)
			if spec.Fetcher == nil {
				t.Fatal("no fetcher for a published source")
			}
			fetched, err := spec.Fetcher.Fetch(context.Background(), func(string) bool { return false })
			if len(tc.wantErr) > 0 {
				if err == nil {
					t.Fatalf("fetch succeeded with %+v, want an error", got)
				}
				for _, want := range tc.wantErr {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q does not say %q", err, want)
					}
				}
				if strings.Contains(err.Error(), "s3cret") || catalogsync.IsContentError(err) {
					t.Errorf("error %q: repeats the Secret's content, or is taken for bad content", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got == nil || !reflect.DeepEqual(*got, tc.wantCreds) {
				t.Errorf("chooser got credentials %+v, want %+v", got, tc.wantCreds)
			}
			if fetched.Ref != spec.Fetcher.Describe() {
				t.Errorf("fetched %q through a fetcher describing itself as %q", fetched.Ref, spec.Fetcher.Describe())
			}
		})
	}

	// A chooser that refuses (credentials it cannot use, a kind not built
	// in) fails the fetch with its own error.
	refused := errors.New("git sources are not built into this catalogd")
	spec := reconcile.SpecFor(published(gitCatalog(catalogdv1.GitRef{Branch: "main"})), reconcile.Sources{
		Fetcher: func(source.Spec, source.Credentials) (catalogsync.Fetcher, error) { return nil, refused },
	})
	if _, err := spec.Fetcher.Fetch(context.Background(), func(string) bool { return false }); !errors.Is(err, refused) {
		t.Errorf("fetch error %v, want the chooser's %v", err, refused)
	}
	if spec.Fetcher.Built("anything") {
		t.Error("Built true for a source the chooser refuses")
	}
}
