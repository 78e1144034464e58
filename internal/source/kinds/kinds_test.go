package kinds_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/catalogd/catalogd/internal/source"
	"github.com/catalogd/catalogd/internal/source/gitsource"
	"github.com/catalogd/catalogd/internal/source/httpsource"
	"github.com/catalogd/catalogd/internal/source/kinds"
	"github.com/catalogd/catalogd/internal/unpack"
	"github.com/catalogd/catalogd/test/gittest"
)

const demoDir = "../../../test/testdata/demo"

// TestFetcher: each kind of Spec is fetched by its own kind of source, a
// kind without its client is refused by name, and a git Secret the git
// source cannot use is refused naming it and the keys it wants.
func TestFetcher(t *testing.T) {
	unpacker, err := unpack.New(unpack.Options{})
	if err != nil {
		t.Fatal(err)
	}
	repo := gittest.NewRepo(t, t.TempDir(), "catalogs")
	repo.CopyDir("demo", demoDir)
	commit := repo.Commit(nil)
	repo.Push("main")
	web, err := httpsource.New(httpsource.Options{Extractor: unpacker})
	if err != nil {
		t.Fatal(err)
	}
	files := httptest.NewServer(http.FileServer(http.Dir(demoDir)))
	t.Cleanup(files.Close)
	all := kinds.Kinds{Images: unpacker, TempDir: t.TempDir(), HTTP: web,
		Git: gitsource.New(gitsource.Options{Extractor: unpacker, AllowLocal: true})}
	httpSpec := source.Spec{HTTP: &source.HTTP{URL: files.URL + "/quarry-db/package.yaml"}}
	caSecret := func(data map[string][]byte) source.Credentials {
		return source.Credentials{CA: &source.Secret{Name: "olmv1-system/ca", Data: data}}
	}
	gitSpec := source.Spec{Git: &source.Git{URL: "file://" + repo.Bare, Ref: "main", Directory: "demo"}}

	for _, tc := range []struct {
		name  string
		kinds kinds.Kinds
		spec  source.Spec
		creds source.Credentials
		// wantDigest is the digest a fetch finds; wantErr, when set, is
		// part of the refusal to make a fetcher.
		wantDigest, wantErr string
		// wantFetchErr is part of the error of a fetcher that is made but
		// fails to fetch.
		wantFetchErr string
	}{
		{name: "directory", kinds: all, spec: source.Spec{Dir: demoDir}, wantDigest: "sha256:"},
		{name: "git", kinds: all, spec: gitSpec, wantDigest: "git-tree:" + repo.Tree(commit, "demo")},
		{name: "git with a Secret it cannot use", kinds: all, spec: gitSpec,
			creds:   source.Credentials{Secret: &source.Secret{Name: "olmv1-system/creds", Data: map[string][]byte{"token": []byte("s3cret")}}},
			wantErr: "olmv1-system/creds"},
		{name: "one file over HTTP", kinds: all, spec: httpSpec, wantDigest: "sha256:"},
		{name: "HTTP with a CA Secret without ca.crt", kinds: all, spec: httpSpec, creds: caSecret(map[string][]byte{"tls.crt": []byte("s3cret")}),
			wantErr: "CA Secret olmv1-system/ca has no ca.crt"},
		{name: "HTTP with a Secret it cannot use", kinds: all, spec: httpSpec,
			creds:   source.Credentials{Secret: &source.Secret{Name: "olmv1-system/creds", Data: map[string][]byte{"token": []byte("s3cret")}}},
			wantErr: "olmv1-system/creds"},
		{name: "OCI layout that is not one", kinds: all, spec: source.Spec{Layout: &source.Layout{Dir: demoDir}}, wantFetchErr: "is not an OCI image layout"},
		{name: "image that is no reference", kinds: all, spec: source.Spec{Image: "quay.io/UPPER/x:1"}, wantErr: "image quay.io/UPPER/x:1"},
		{name: "no source", kinds: all, wantErr: "no source given"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := tc.kinds.Fetcher(tc.spec, tc.creds)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || strings.Contains(err.Error(), "s3cret") {
					t.Fatalf("Fetcher(%s) error %v; want one saying %q, without a secret", tc.spec, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			fetched, err := f.Fetch(context.Background(), func(string) bool { return false })
			defer fetched.Release()
			if tc.wantFetchErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantFetchErr) {
					t.Fatalf("fetch of %s: error %v; want one saying %q", tc.spec, err, tc.wantFetchErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(fetched.Digest, tc.wantDigest) || fetched.FS == nil {
				t.Errorf("fetched %s at %q (content %v), want the content at %s…", tc.spec, fetched.Digest, fetched.FS != nil, tc.wantDigest)
			}
		})
	}
}
