package source_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/catalogd/catalogd/internal/source"
)

const (
	commit = "0123456789abcdef0123456789abcdef01234567"
	sum    = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
)

func TestParse(t *testing.T) {
	wd := t.TempDir()
	t.Chdir(wd)
	if err := os.MkdirAll(filepath.Join(wd, "catalog"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(wd, "catalog.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		in   string
		want source.Spec
		// err, when set, is a part of the refusal that shows the right form.
		err string
	}{
		// Directories, as serve always took them: relative made absolute.
		{in: "catalog", want: source.Spec{Dir: filepath.Join(wd, "catalog")}},
		{in: "./catalog/", want: source.Spec{Dir: filepath.Join(wd, "catalog")}},
		{in: wd, want: source.Spec{Dir: wd}},
		{in: "catalog.json", err: "is a file; want the catalog's directory"},
		{in: "catalgo", err: "no directory catalgo (an image reference needs a registry host"},
		{in: "test/testdata/dmeo", err: "no directory test/testdata/dmeo"},

		// Images, kept as written.
		{in: "quay.io/org/catalog:latest", want: source.Spec{Image: "quay.io/org/catalog:latest"}},
		{in: "localhost:5000/catalog@sha256:" + sum, want: source.Spec{Image: "localhost:5000/catalog@sha256:" + sum}},
		{in: "localhost/catalog", want: source.Spec{Image: "localhost/catalog"}},
		{in: "quay.io/Org/catalog:latest", err: "not an image reference"},
		{in: "docker://quay.io/org/catalog:v1", err: "write an image without docker://"},

		// OCI layouts, skopeo's form: the first colon ends the directory.
		{in: "oci:layout", want: source.Spec{Layout: &source.Layout{Dir: filepath.Join(wd, "layout")}}},
		{in: "oci:/srv/layout:v1.2", want: source.Spec{Layout: &source.Layout{Dir: "/srv/layout", Ref: "v1.2"}}},
		{in: "oci:/srv/layout:sha256:" + sum, want: source.Spec{Layout: &source.Layout{Dir: "/srv/layout", Ref: "sha256:" + sum}}},
		{in: "oci:", err: "no directory: write oci:DIR"},
		{in: "oci::v1", err: "no directory: write oci:DIR"},
		{in: "oci:/srv/layout:", err: "empty tag"},
		{in: "oci:/srv/layout:sha256:abc", err: "64 lower-case hex digits"},
		{in: "oci:/srv/layout:-v1", err: "tag \"-v1\""},
		{in: "oci://srv/layout", err: "write an image without oci://"},

		// HTTP archives and files, optionally pinned.
		{in: "https://example.com/catalog.tar.gz", want: source.Spec{HTTP: &source.HTTP{URL: "https://example.com/catalog.tar.gz"}}},
		{in: "http://127.0.0.1:8000/catalog.tgz?v=2#sha256=" + strings.ToUpper(sum),
			want: source.Spec{HTTP: &source.HTTP{URL: "http://127.0.0.1:8000/catalog.tgz?v=2", SHA256: sum}}},
		{in: "https://example.com/c.tar#sha256=abc", err: "#sha256= wants 64 hex digits"},
		{in: "https://example.com/c.tar#md5=abc", err: "the only one taken is #sha256=HEX"},
		{in: "https://user:secret@example.com/c.tar", err: "credentials in the URL"},
		{in: "https://host/org/repo.git", err: "for a git repository write git::https://host/org/repo.git"},
		{in: "https://host/org/repo.git//catalog", err: "for a git repository write git::"},
		{in: "https://host/org/repo?ref=main", err: "for a git repository write git::"},
		{in: "https:///c.tar", err: "no host"},
		{in: "ftp://example.com/c.tar", err: "unknown scheme \"ftp\""},

		// Git: go-getter's form.
		{in: "git::https://host/org/repo.git", want: source.Spec{Git: &source.Git{URL: "https://host/org/repo.git"}}},
		{in: "git::https://host/org/repo.git//catalogs/prod/?ref=main",
			want: source.Spec{Git: &source.Git{URL: "https://host/org/repo.git", Directory: "catalogs/prod", Ref: "main"}}},
		{in: "git::https://host/org/repo.git//.", want: source.Spec{Git: &source.Git{URL: "https://host/org/repo.git"}}},
		{in: "git::ssh://git@host:2222/org/repo.git?ref=refs/tags/v1",
			want: source.Spec{Git: &source.Git{URL: "ssh://git@host:2222/org/repo.git", Ref: "refs/tags/v1"}}},
		{in: "git::git@github.com:org/repo.git//fbc?ref=" + commit,
			want: source.Spec{Git: &source.Git{URL: "git@github.com:org/repo.git", Directory: "fbc", Ref: commit}}},
		{in: "git::file:///srv/repo//catalog?commit=" + strings.ToUpper(commit) + "&ref=main",
			want: source.Spec{Git: &source.Git{URL: "file:///srv/repo", Directory: "catalog", Ref: "main", Commit: commit}}},
		{in: "git::", err: "no repository URL after git::"},
		{in: "git::?ref=main", err: "want https://, ssh://, file:// or user@host:path"},
		{in: "git::https://host/org/repo.git?ref=main&ref=dev", err: "ref given 2 times"},
		{in: "git::https://host/org/repo.git?depth=1", err: "unknown query key \"depth\""},
		{in: "git::https://host/org/repo.git?sshkey=abc", err: "unknown query key \"sshkey\""},
		{in: "git::https://host/org/repo.git?ref=", err: "empty ref"},
		{in: "git::https://host/org/repo.git?ref=--upload-pack=x", err: "not a git ref name"},
		{in: "git::https://host/org/repo.git?ref=a..b", err: "not a git ref name"},
		{in: "git::https://host/org/repo.git?commit=abc", err: "want 40 hex digits"},
		{in: "git::https://host/org/repo.git?ref=" + strings.Repeat("a", 40) + "&commit=" + commit, err: "two different commits"},
		{in: "git::https://host/org/repo.git//../etc", err: "would leave the repository"},
		{in: "git::https://host/org/repo.git//a/../../etc", err: "would leave the repository"},
		{in: "git::https://host/org/repo.git///etc", err: "relative to the repository's root"},
		{in: "git::https://host/org/repo.git#main", err: "with ?ref=REF"},
		{in: "git::https://token@host/org/repo.git", err: "credentials in the repository URL"},
		{in: "git::ssh://git:pw@host/org/repo.git", err: "a password in the repository URL"},
		{in: "git::ftp://host/org/repo.git", err: "scheme \"ftp\""},
		{in: "git::https://host", err: "no repository path"},
		{in: "git::repo.git", err: "want https://, ssh://, file:// or user@host:path"},
		{in: "git::file://server/srv/repo", err: "file:///path"},
		{in: "ssh://git@host/org/repo.git", err: "for a git repository write git::ssh://git@host/org/repo.git"},
		{in: "git@github.com:org/repo.git", err: "for a git repository write git::git@github.com:org/repo.git"},
		{in: "file:///srv/repo", err: "for a git repository write git::file:///srv/repo"},

		{in: "", err: "no source given"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := source.Parse(tt.in)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("Parse(%q) = %+v, %v; want an error containing %q", tt.in, got, err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse(%q): %v", tt.in, err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("Parse(%q) = %s; want %s", tt.in, describe(got), describe(tt.want))
			}
			assertRoundTrip(t, got)
		})
	}
}

// TestParseNeverRepeatsCredentials: a token typed into a URL must not reach
// a log through the error that refuses it.
func TestParseNeverRepeatsCredentials(t *testing.T) {
	for _, in := range []string{
		"https://user:s3cret@example.com/c.tar",
		"https://s3cret@example.com/c.tar",
		"git::https://s3cret@host/org/repo.git",
		"git::https://user:s3cret@host/org/repo.git",
		"git::ssh://git:s3cret@host/org/repo.git",
		"ssh://git:s3cret@host/org/repo.git",
	} {
		_, err := source.Parse(in)
		if err == nil || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("Parse(%q) error = %v; want a refusal without the secret", in, err)
		}
	}
}

// assertRoundTrip checks what String promises: Parse reads it back to the
// same Spec.
func assertRoundTrip(t *testing.T, spec source.Spec) {
	t.Helper()
	again, err := source.Parse(spec.String())
	if err != nil {
		t.Fatalf("Parse(%q), of Parse's own result: %v", spec.String(), err)
	}
	if !reflect.DeepEqual(again, spec) {
		t.Fatalf("Parse(%q) = %s; want %s", spec.String(), describe(again), describe(spec))
	}
}

func describe(s source.Spec) string {
	switch {
	case s.Git != nil:
		return "git " + strings.Join([]string{s.Git.URL, s.Git.Directory, s.Git.Ref, s.Git.Commit}, " | ")
	case s.HTTP != nil:
		return "http " + s.HTTP.URL + " | " + s.HTTP.SHA256
	case s.Layout != nil:
		return "layout " + s.Layout.Dir + " | " + s.Layout.Ref
	case s.Image != "":
		return "image " + s.Image
	}
	return "dir " + s.Dir
}

// FuzzParse: every source Parse accepts names one kind, and reads back
// from its String to the same Spec.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"git::https://host/org/repo.git//catalogs/prod?ref=main",
		"git::git@github.com:org/repo.git//fbc?commit=" + commit + "&ref=v1",
		"git::file:///srv/repo",
		"https://example.com/catalog.tar.gz#sha256=" + sum,
		"http://127.0.0.1:8000/c.tgz?x=%20y",
		"oci:/srv/layout:v1",
		"oci:layout:sha256:" + sum,
		"quay.io/org/catalog:latest",
		"localhost:5000/c@sha256:" + sum,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		spec, err := source.Parse(in)
		if err != nil {
			return
		}
		kinds := 0
		for _, set := range []bool{spec.Dir != "", spec.Image != "", spec.Layout != nil, spec.Git != nil, spec.HTTP != nil} {
			if set {
				kinds++
			}
		}
		if kinds != 1 {
			t.Fatalf("Parse(%q) = %s: %d kinds set, want 1", in, describe(spec), kinds)
		}
		if spec.Git != nil {
			for _, elem := range strings.Split(spec.Git.Directory, "/") {
				if elem == ".." || strings.HasPrefix(spec.Git.Directory, "/") {
					t.Fatalf("Parse(%q): directory %q leaves the repository", in, spec.Git.Directory)
				}
			}
		}
		assertRoundTrip(t, spec)
	})
}
