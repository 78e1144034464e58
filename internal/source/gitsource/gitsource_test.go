package gitsource_test

import (
	"context"
	"encoding/pem"
	"errors"
	"github.com/catalogd/catalogd/test/gittest"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/go-logr/logr/testr"

	"github.com/catalogd/catalogd/internal/source"
	"github.com/catalogd/catalogd/internal/source/gitsource"
	"github.com/catalogd/catalogd/internal/unpack"
	"github.com/catalogd/catalogd/test/loopdial"
)

// catalogFiles is a small catalog in "catalog/" and something else beside
// it.
var catalogFiles = map[string]string{
	"catalog/foo/catalog.json": `{"schema":"olm.package","name":"foo"}`,
	"catalog/bar/catalog.yaml": "schema: olm.package\nname: bar\n",
	"README.md":                "not the catalog\n",
}

// newClient returns a Client whose extractor is a real unpacker with
// uopts' limits.
func newClient(t testing.TB, opts gitsource.Options, uopts unpack.Options) *gitsource.Client {
	t.Helper()
	u, err := unpack.New(uopts)
	if err != nil {
		t.Fatal(err)
	}
	opts.Extractor = u
	opts.Log = testr.NewWithOptions(t.(*testing.T), testr.Options{Verbosity: 1})
	return gitsource.New(opts)
}

// never is a skip that wants every content.
func never(string) bool { return false }

// wantContent checks that fetched holds exactly the regular files git
// lists in commit:dir, byte for byte.
func wantContent(t *testing.T, r *gittest.Repo, fetched source.Fetched, commit, dir string) {
	t.Helper()
	treeish := commit + ":" + dir
	want := map[string]string{}
	for _, line := range strings.Split(gittest.Git(t, r.Work, "ls-tree", "-r", treeish), "\n") {
		meta, name, _ := strings.Cut(line, "\t")
		if !strings.HasPrefix(meta, "100") {
			continue
		}
		want[name] = gittest.Git(t, r.Work, "cat-file", "blob", commit+":"+path.Join(dir, name))
	}
	got := map[string]string{}
	err := fs.WalkDir(fetched.FS, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		b, err := fs.ReadFile(fetched.FS, p)
		got[p] = strings.TrimSpace(string(b))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Errorf("fetched files %v, git lists %v", keys(got), keys(want))
	}
	for name, content := range want {
		if got[name] != content {
			t.Errorf("%s: fetched %q, git has %q", name, got[name], content)
		}
	}
}

// wantOutcome checks a fetch's outcome: the content of commit:dir when
// wantErr is empty, else an error saying wantErr.
func wantOutcome(t *testing.T, r *gittest.Repo, got source.Fetched, err error, commit, dir, wantErr string) {
	t.Helper()
	if wantErr == "" {
		if err != nil {
			t.Fatal(err)
		}
		wantContent(t, r, got, commit, dir)
		return
	}
	t.Logf("error: %v", err)
	if err == nil || !strings.Contains(err.Error(), wantErr) {
		t.Fatalf("error %v, want one saying %q", err, wantErr)
	}
}

func keys(m map[string]string) []string {
	var k []string
	for n := range m {
		k = append(k, n)
	}
	slices.Sort(k)
	return k
}

func TestFetchResolvesRefs(t *testing.T) {
	srv := newGitServer(t, false)
	r := gittest.NewRepo(t, srv.root, "cat")
	first := r.Commit(catalogFiles)
	gittest.Git(t, r.Work, "tag", "light")
	gittest.Git(t, r.Work, "tag", "-a", "-m", "annotated", "annotated")
	second := r.Commit(map[string]string{"catalog/baz/catalog.json": `{"schema":"olm.package","name":"baz"}`})
	gittest.Git(t, r.Work, "branch", "side", first)
	r.Push("main", "side", "light", "annotated")
	url := srv.URL + "/cat.git"

	for _, tc := range []struct {
		name, ref, commit string
	}{
		{"default branch", "", second},
		{"short branch", "main", second},
		{"full branch", "refs/heads/side", first},
		{"lightweight tag", "light", first},
		{"annotated tag, peeled", "annotated", first},
		{"full annotated tag", "refs/tags/annotated", first},
		{"commit", first, first},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newClient(t, gitsource.Options{}, unpack.Options{})
			spec := source.Git{URL: url, Ref: tc.ref, Directory: "catalog"}
			f := c.Fetcher(spec, gitsource.Auth{}, t.TempDir())
			got, err := f.Fetch(context.Background(), never)
			if err != nil {
				t.Fatal(err)
			}
			defer got.Release()
			pinned := spec
			pinned.Commit = tc.commit
			if got.Ref != pinned.String() {
				t.Errorf("Ref = %q, want %q", got.Ref, pinned.String())
			}
			if want := "git-tree:" + r.Tree(tc.commit, "catalog"); got.Digest != want {
				t.Errorf("Digest = %q, want %q", got.Digest, want)
			}
			if !got.Pulled || got.Bytes == 0 || got.FileHash == nil {
				t.Errorf("Pulled %v, Bytes %d, FileHash set %v: want a pull", got.Pulled, got.Bytes, got.FileHash != nil)
			}
			wantContent(t, r, got, tc.commit, "catalog")
			if !f.Built(got.Ref) {
				t.Errorf("Built(%q) = false for its own Ref", got.Ref)
			}
		})
	}
}

func TestFetchRefusesRefs(t *testing.T) {
	srv := newGitServer(t, false)
	r := gittest.NewRepo(t, srv.root, "cat")
	r.Commit(catalogFiles)
	gittest.Git(t, r.Work, "tag", "both")
	gittest.Git(t, r.Work, "branch", "both")
	r.Push("main", "refs/heads/both", "refs/tags/both")
	for _, tc := range []struct {
		name, ref string
		want      []string
	}{
		{"branch and tag", "both", []string{`"refs/heads/both"`, `"refs/tags/both"`, "both a branch and a tag"}},
		{"unknown", "nope", []string{`no ref "nope"`, "refs/heads/main", "refs/tags/both"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newClient(t, gitsource.Options{}, unpack.Options{})
			_, err := c.Fetcher(source.Git{URL: srv.URL + "/cat.git", Ref: tc.ref}, gitsource.Auth{}, t.TempDir()).Fetch(context.Background(), never)
			if err == nil {
				t.Fatal("fetch succeeded")
			}
			t.Logf("error: %v", err)
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %s", err, w)
				}
			}
			if source.IsTerminal(err) {
				t.Errorf("error %q is terminal: a ref may appear or change", err)
			}
		})
	}
}

// TestFetchFollowsBranch: a force-push is followed; a commit that changes
// only another directory keeps the digest, and skip stops it before
// extraction; an unchanged poll is one request and no pack.
func TestFetchFollowsBranch(t *testing.T) {
	srv := newGitServer(t, false)
	r := gittest.NewRepo(t, srv.root, "cat")
	first := r.Commit(catalogFiles)
	r.Push("main")
	tmp := t.TempDir()
	c := newClient(t, gitsource.Options{}, unpack.Options{})
	f := c.Fetcher(source.Git{URL: srv.URL + "/cat.git", Ref: "main", Directory: "catalog"}, gitsource.Auth{}, tmp)

	live, err := f.Fetch(context.Background(), never)
	if err != nil {
		t.Fatal(err)
	}
	live.Release()

	// Unchanged: the listing of refs, nothing else.
	srv.reset()
	var asked []string
	skipLive := func(d string) bool { asked = append(asked, d); return d == live.Digest }
	got, err := f.Fetch(context.Background(), skipLive)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"GET /cat.git/info/refs?service=git-upload-pack"}; !slices.Equal(srv.seen(), want) {
		t.Errorf("an unchanged poll sent %q, want %q", srv.seen(), want)
	}
	if got.Digest != live.Digest || got.FS != nil || got.Pulled || !slices.Equal(asked, []string{live.Digest}) {
		t.Errorf("unchanged poll: digest %q (live %q), FS %v, Pulled %v, skip asked %q", got.Digest, live.Digest, got.FS, got.Pulled, asked)
	}
	adv := srv.sent.Load()
	t.Logf("unchanged poll: %d request, %d bytes received (the ref advertisement)", len(srv.seen()), adv)

	// Another directory changes: a pack is fetched to learn the tree, the
	// digest stays, nothing is extracted.
	other := r.Commit(map[string]string{"README.md": "changed\n"})
	r.Push("main")
	srv.reset()
	asked = nil
	got, err = f.Fetch(context.Background(), skipLive)
	if err != nil {
		t.Fatal(err)
	}
	if got.Digest != live.Digest || got.FS != nil || got.Pulled || !slices.Equal(asked, []string{live.Digest}) {
		t.Errorf("commit outside the directory: digest %q (live %q), FS %v, Pulled %v, skip asked %q", got.Digest, live.Digest, got.FS, got.Pulled, asked)
	}
	if !strings.Contains(got.Ref, "commit="+other) {
		t.Errorf("Ref %q does not pin %s", got.Ref, other)
	}
	if n := len(srv.seen()); n != 2 || srv.sent.Load() <= adv {
		t.Errorf("commit outside the directory: %d requests, %d bytes: want the listing and one pack", n, srv.sent.Load())
	}
	t.Logf("commit outside the directory: %d requests, %d bytes received", len(srv.seen()), srv.sent.Load())
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("fetches left %d entries in the temp dir", len(left))
	}

	// A force-push to an unrelated history is followed.
	gittest.Git(t, r.Work, "checkout", "-q", "--orphan", "rewritten")
	forced := r.Commit(map[string]string{"catalog/new/catalog.json": `{"schema":"olm.package","name":"new"}`})
	r.Push("rewritten:main")
	got, err = f.Fetch(context.Background(), never)
	if err != nil {
		t.Fatal(err)
	}
	defer got.Release()
	if got.Digest != "git-tree:"+r.Tree(forced, "catalog") || !strings.Contains(got.Ref, "commit="+forced) {
		t.Errorf("after a force-push: Ref %q, Digest %q; want commit %s", got.Ref, got.Digest, forced)
	}
	wantContent(t, r, got, forced, "catalog")
	_ = first
}

// TestFetchPinned: a replica fetches the commit the leader published, by
// id, after its branch moved on. Over smart HTTP, git's upload-pack sends
// any commit a ref reaches (it cannot know what it advertised to a
// stateless client), so uploadpack.allowReachableSHA1InWant changes
// nothing there; allowAnySHA1InWant decides whether a commit no ref
// reaches any more (a force-push) is sent. When it is not, the error says
// the ref no longer names it, and is retried.
func TestFetchPinned(t *testing.T) {
	for _, tc := range []struct {
		name      string
		forcePush bool
		anyInWant string
		wantErr   string
	}{
		{"branch moved on", false, "false", ""},
		{"branch force-pushed, server sends any commit", true, "true", ""},
		{"branch force-pushed, server sends reachable commits only", true, "false", "which ref \"main\" no longer names"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newGitServer(t, false)
			r := gittest.NewRepo(t, srv.root, "cat")
			published := r.Commit(catalogFiles)
			r.Push("main")
			if tc.forcePush {
				gittest.Git(t, r.Work, "checkout", "-q", "--orphan", "rewritten")
			}
			r.Commit(map[string]string{"catalog/foo/catalog.json": `{"schema":"olm.package","name":"moved"}`})
			r.Push("HEAD:main")
			gittest.Git(t, r.Bare, "config", "uploadpack.allowAnySHA1InWant", tc.anyInWant)

			c := newClient(t, gitsource.Options{}, unpack.Options{})
			spec := source.Git{URL: srv.URL + "/cat.git", Ref: "main", Commit: published, Directory: "catalog"}
			got, err := c.Fetcher(spec, gitsource.Auth{}, t.TempDir()).Fetch(context.Background(), never)
			defer got.Release()
			if tc.wantErr != "" {
				t.Logf("error: %v", err)
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || source.IsTerminal(err) {
					t.Fatalf("error %v: want a retryable one saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Ref != spec.String() || got.Digest != "git-tree:"+r.Tree(published, "catalog") {
				t.Errorf("Ref %q, Digest %q: want the published commit %s", got.Ref, got.Digest, published)
			}
			wantContent(t, r, got, published, "catalog")

			// A replica's next poll of the same commit asks nothing.
			srv.reset()
			again, err := c.Fetcher(spec, gitsource.Auth{}, t.TempDir()).Fetch(context.Background(), func(d string) bool { return d == got.Digest })
			if err != nil || again.Digest != got.Digest || again.FS != nil {
				t.Errorf("polling the pinned commit again: digest %q, FS %v, error %v", again.Digest, again.FS, err)
			}
			if n := len(srv.seen()); n != 0 {
				t.Errorf("polling the pinned commit again sent %q", srv.seen())
			}
		})
	}
}

// TestFetchPinnedStillAdvertised: a pinned commit its ref still names is
// fetched from a server that sends advertised commits only.
func TestFetchPinnedStillAdvertised(t *testing.T) {
	srv := newGitServer(t, false)
	r := gittest.NewRepo(t, srv.root, "cat")
	commit := r.Commit(catalogFiles)
	gittest.Git(t, r.Work, "tag", "-a", "-m", "annotated", "v1")
	r.Push("main", "v1")
	gittest.Git(t, r.Bare, "config", "uploadpack.allowReachableSHA1InWant", "false")
	c := newClient(t, gitsource.Options{}, unpack.Options{})
	for _, ref := range []string{"main", "v1"} {
		got, err := c.Fetcher(source.Git{URL: srv.URL + "/cat.git", Ref: ref, Commit: commit}, gitsource.Auth{}, t.TempDir()).Fetch(context.Background(), never)
		if err != nil {
			t.Fatalf("ref %s: %v", ref, err)
		}
		wantContent(t, r, got, commit, "")
		got.Release()
	}
}

func TestFetchAuth(t *testing.T) {
	const password, token = "pa55-w0rd", "t0ken-value"
	for _, tc := range []struct {
		name    string
		server  func(*gitServer)
		auth    gitsource.Auth
		wantErr string
	}{
		{"basic accepted", func(s *gitServer) { s.auth = basicAuth("me", password) }, gitsource.Auth{SecretName: "creds", Username: "me", Password: password}, ""},
		{"basic refused", func(s *gitServer) { s.auth = basicAuth("me", password) }, gitsource.Auth{SecretName: "creds", Username: "me", Password: "wrong-" + password}, "authentication refused with Secret creds"},
		{"bearer accepted", func(s *gitServer) { s.auth = bearerAuth(token) }, gitsource.Auth{SecretName: "tok", BearerToken: token}, ""},
		{"bearer refused", func(s *gitServer) { s.auth = bearerAuth(token) }, gitsource.Auth{SecretName: "tok", BearerToken: "wrong-" + token}, "authentication refused with Secret tok"},
		{"none given", func(s *gitServer) { s.auth = bearerAuth(token) }, gitsource.Auth{}, "needs credentials"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newGitServer(t, true)
			tc.server(srv)
			r := gittest.NewRepo(t, srv.root, "cat")
			commit := r.Commit(catalogFiles)
			r.Push("main")
			c := newClient(t, gitsource.Options{CABundle: srv.caPEM()}, unpack.Options{})
			got, err := c.Fetcher(source.Git{URL: srv.URL + "/cat.git", Directory: "catalog"}, tc.auth, t.TempDir()).Fetch(context.Background(), never)
			defer got.Release()
			if wantOutcome(t, r, got, err, commit, "catalog", tc.wantErr); err == nil {
				return
			}
			for _, secret := range []string{password, token, "secret body text"} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("error %q shows %q", err, secret)
				}
			}
			if source.IsTerminal(err) {
				t.Errorf("error %q is terminal: credentials may be fixed", err)
			}
		})
	}
}

// TestFetchRefusesBeforeAsking: what can be refused from the URL and the
// Secret alone is refused without a request.
func TestFetchRefusesBeforeAsking(t *testing.T) {
	srv := newGitServer(t, false)
	r := gittest.NewRepo(t, srv.root, "cat")
	r.Commit(catalogFiles)
	r.Push("main")
	withUser := strings.Replace(srv.URL, "http://", "http://me:pw@", 1)
	for _, tc := range []struct {
		name, url string
		auth      gitsource.Auth
		want      string
	}{
		{"credentials over plain http", srv.URL + "/cat.git", gitsource.Auth{SecretName: "creds", Username: "me", Password: "pw"}, "over plain http"},
		{"credentials in the URL", withUser + "/cat.git", gitsource.Auth{}, "URL holds credentials"},
		{"local without AllowLocal", "file://" + r.Bare, gitsource.Auth{}, "file:// repository is read only by"},
		{"unknown scheme", "ftp://" + srv.Listener.Addr().String() + "/cat.git", gitsource.Auth{}, "neither https://"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv.reset()
			c := newClient(t, gitsource.Options{}, unpack.Options{})
			_, err := c.Fetcher(source.Git{URL: tc.url}, tc.auth, t.TempDir()).Fetch(context.Background(), never)
			t.Logf("error: %v", err)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one saying %q", err, tc.want)
			}
			if strings.Contains(err.Error(), ":pw") {
				t.Errorf("error %q shows the password", err)
			}
			if n := len(srv.seen()); n != 0 {
				t.Errorf("%d requests sent", n)
			}
		})
	}
}

// TestFetchContentErrors: what the commit holds decides these, so they are
// terminal, and they name what to fix.
func TestFetchContentErrors(t *testing.T) {
	srv := newGitServer(t, false)
	r := gittest.NewRepo(t, srv.root, "cat")
	commit := r.Commit(catalogFiles)
	if err := os.Symlink("../../README.md", filepath.Join(r.Work, "catalog", "foo", "leaves")); err != nil {
		t.Fatal(err)
	}
	gittest.Git(t, r.Work, "add", "-A")
	gittest.Git(t, r.Work, "commit", "-q", "-m", "link")
	withLink := gittest.Git(t, r.Work, "rev-parse", "HEAD")
	gittest.Git(t, r.Work, "branch", "with-link")
	gittest.Git(t, r.Work, "reset", "-q", "--hard", commit)
	r.Push("main", "with-link")
	for _, tc := range []struct {
		name, ref, dir string
		uopts          unpack.Options
		want           []string
		wantAs         any
	}{
		{"missing directory", "main", "nope/deeper", unpack.Options{}, []string{`directory "nope" does not exist`, commit}, nil},
		{"a file, not a directory", "main", "README.md", unpack.Options{}, []string{`"README.md" is not a directory`, commit}, nil},
		{"link leaving the directory", "with-link", "catalog", unpack.Options{}, []string{"leaves"}, new(*unpack.UnsafeEntryError)},
		{"too many files", "main", "", unpack.Options{MaxFiles: 2}, []string{"MaxFiles"}, new(*unpack.LimitError)},
		{"too large", "main", "", unpack.Options{MaxTotalBytes: 10}, []string{"MaxTotalBytes"}, new(*unpack.LimitError)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newClient(t, gitsource.Options{}, tc.uopts)
			tmp := t.TempDir()
			got, err := c.Fetcher(source.Git{URL: srv.URL + "/cat.git", Ref: tc.ref, Directory: tc.dir}, gitsource.Auth{}, tmp).Fetch(context.Background(), never)
			if err == nil {
				got.Release()
				t.Fatal("fetch succeeded")
			}
			t.Logf("error: %v", err)
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if tc.wantAs != nil && !errors.As(err, tc.wantAs) {
				t.Errorf("error %q is not a %T", err, tc.wantAs)
			}
			if !source.IsTerminal(err) && !unpack.IsTerminal(err) {
				t.Errorf("error %q is not terminal", err)
			}
			if got.Ref == "" || (tc.wantAs != nil && got.Digest == "") {
				t.Errorf("error returned Ref %q, Digest %q: want what was learnt", got.Ref, got.Digest)
			}
			if left, _ := os.ReadDir(tmp); len(left) != 0 {
				t.Errorf("a failed fetch left %d entries in the temp dir", len(left))
			}
			if tc.wantAs != nil {
				return
			}
			// A commit without the directory is remembered: the next
			// poll of the same commit lists the refs and downloads nothing.
			srv.reset()
			_, again := c.Fetcher(source.Git{URL: srv.URL + "/cat.git", Ref: tc.ref, Directory: tc.dir}, gitsource.Auth{}, tmp).Fetch(context.Background(), never)
			if again == nil || again.Error() != err.Error() || !source.IsTerminal(again) {
				t.Errorf("the same commit again: error %v, want %v", again, err)
			}
			if want := []string{"GET /cat.git/info/refs?service=git-upload-pack"}; !slices.Equal(srv.seen(), want) {
				t.Errorf("the same commit again sent %q, want %q", srv.seen(), want)
			}
		})
	}
	_ = withLink
}

// TestFetchTreeEntries: a gitlink (submodule) is left out, an executable
// file keeps its bit, a link inside the directory stays a link.
func TestFetchTreeEntries(t *testing.T) {
	srv := newGitServer(t, false)
	r := gittest.NewRepo(t, srv.root, "cat")
	base := r.Commit(catalogFiles)
	gittest.Git(t, r.Work, "update-index", "--add", "--cacheinfo", "160000,"+base+",catalog/sub")
	gittest.Git(t, r.Work, "update-index", "--chmod=+x", "catalog/foo/catalog.json")
	if err := os.Symlink("foo/catalog.json", filepath.Join(r.Work, "catalog", "link.json")); err != nil {
		t.Fatal(err)
	}
	gittest.Git(t, r.Work, "add", "catalog/link.json")
	gittest.Git(t, r.Work, "commit", "-q", "-m", "entries")
	commit := gittest.Git(t, r.Work, "rev-parse", "HEAD")
	r.Push("main")
	c := newClient(t, gitsource.Options{}, unpack.Options{})
	got, err := c.Fetcher(source.Git{URL: srv.URL + "/cat.git", Directory: "catalog"}, gitsource.Auth{}, t.TempDir()).Fetch(context.Background(), never)
	if err != nil {
		t.Fatal(err)
	}
	defer got.Release()
	if _, err := fs.Stat(got.FS, "sub"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the submodule is in the content: %v", err)
	}
	if fi, err := fs.Stat(got.FS, "foo/catalog.json"); err != nil {
		t.Error(err)
	} else if fi.Mode()&0o111 == 0 {
		t.Errorf("the executable file has mode %v", fi.Mode())
	}
	link, err := fs.ReadFile(got.FS, "link.json")
	if want := gittest.Git(t, r.Work, "cat-file", "blob", commit+":catalog/foo/catalog.json"); err != nil || string(link) != want {
		t.Errorf("the link reads %q, %v; want %q", link, err, want)
	}
	wantContent(t, r, got, commit, "catalog")
}

// TestFetchBounds: the download bound and the pull deadline stop a fetch,
// and say which.
func TestFetchBounds(t *testing.T) {
	for _, tc := range []struct {
		name  string
		opts  gitsource.Options
		stall bool
		want  string
	}{
		{"download bound", gitsource.Options{MaxDownloadBytes: 1024}, false, "MaxDownloadBytes (1024)"},
		{"pull deadline", gitsource.Options{PullTimeout: 300 * 1e6}, true, "PullTimeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newGitServer(t, false)
			r := gittest.NewRepo(t, srv.root, "cat")
			files := map[string]string{}
			for k, v := range catalogFiles {
				files[k] = v
			}
			files["catalog/big.json"] = strings.Repeat(`{"schema":"olm.package","name":"x"}`+"\n", 2000)
			r.Commit(files)
			r.Push("main")
			if tc.stall {
				srv.stall = func(r *http.Request) bool { return r.Method == http.MethodPost }
			}
			c := newClient(t, tc.opts, unpack.Options{})
			_, err := c.Fetcher(source.Git{URL: srv.URL + "/cat.git"}, gitsource.Auth{}, t.TempDir()).Fetch(context.Background(), never)
			t.Logf("error: %v", err)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one saying %q", err, tc.want)
			}
		})
	}
}

// TestFetchRedirects: a redirect from the repository's host to another
// host name is refused when that name's address, as dialled, is this
// machine, with nothing sent to it (a name resolving to a public address
// when checked and to 127.0.0.1 when dialled cannot slip past); the
// repository's own host name, on any port, is followed; a loop is cut, and
// https never leads to http.
func TestFetchRedirects(t *testing.T) {
	target := newGitServer(t, false)
	r := gittest.NewRepo(t, target.root, "cat")
	commit := r.Commit(catalogFiles)
	r.Push("main")
	targetPort := portOf(t, target.URL)
	for _, tc := range []struct {
		name string
		tls  bool
		// to is where the repository's host redirects, self its own URL.
		to func(self string) string
		// want is what the error says; "" for a followed redirect.
		want []string
	}{
		{"same host name, another port", false, func(string) string { return "http://git.example:" + targetPort }, nil},
		{"another name, resolving to loopback", false, func(string) string { return "http://mirror.example:" + targetPort },
			[]string{"redirected to mirror.example:" + targetPort, "127.0.0.1 is loopback", "may not reach a loopback, link-local or cloud-metadata address"}},
		{"another host, a loopback address", false, func(string) string { return target.URL },
			[]string{"redirected to 127.0.0.1:" + targetPort, "127.0.0.1 is loopback"}},
		{"localhost", false, func(string) string { return "http://localhost:" + targetPort }, []string{"redirected to localhost:" + targetPort, "is loopback"}},
		{"loop", false, func(self string) string { return self }, []string{"more than 10 times"}},
		{"https to http", true, func(string) string { return "http://git.example:" + targetPort }, []string{"from https to http: refused"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var self string
			h := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
				http.Redirect(w, req, tc.to(self)+req.URL.RequestURI(), http.StatusFound)
			})
			redirector := httptest.NewUnstartedServer(h)
			opts := gitsource.Options{DialContext: loopdial.Dial}
			if tc.tls {
				redirector.StartTLS()
				opts.CABundle = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: redirector.Certificate().Raw})
			} else {
				redirector.Start()
			}
			defer redirector.Close()
			self = loopdial.URL(redirector.URL, "git.example")
			if tc.tls {
				// httptest's certificate names 127.0.0.1, not git.example.
				self = redirector.URL
			}
			target.reset()
			received := target.received.Load()
			c := newClient(t, opts, unpack.Options{})
			got, err := c.Fetcher(source.Git{URL: self + "/cat.git", Directory: "catalog"}, gitsource.Auth{}, t.TempDir()).Fetch(context.Background(), never)
			defer got.Release()
			t.Logf("error: %v", err)
			if tc.want == nil {
				wantContent(t, r, got, commit, "catalog")
				if err != nil || len(target.seen()) == 0 {
					t.Fatalf("error %v, %d requests reached the target", err, len(target.seen()))
				}
				return
			}
			if err == nil || strings.Contains(err.Error(), "\n") {
				t.Fatalf("error %v, want one line saying %q", err, tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %v, want one saying %q", err, w)
				}
			}
			if n := target.received.Load() - received; n != 0 {
				t.Errorf("the redirect's target received %d bytes", n)
			}
		})
	}
}

func portOf(t *testing.T, rawURL string) string {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	return u.Port()
}

// TestFetchLocal: a person's own checkout, read in place.
func TestFetchLocal(t *testing.T) {
	gittest.Need(t)
	r := gittest.NewRepo(t, t.TempDir(), "cat")
	commit := r.Commit(catalogFiles)
	gittest.Git(t, r.Work, "tag", "-a", "-m", "annotated", "v1")
	c := newClient(t, gitsource.Options{AllowLocal: true}, unpack.Options{})
	for _, ref := range []string{"", "main", "v1", commit} {
		spec := source.Git{URL: "file://" + r.Work, Ref: ref, Directory: "catalog"}
		got, err := c.Fetcher(spec, gitsource.Auth{}, t.TempDir()).Fetch(context.Background(), never)
		if err != nil {
			t.Fatalf("ref %q: %v", ref, err)
		}
		if got.Digest != "git-tree:"+r.Tree(commit, "catalog") {
			t.Errorf("ref %q: Digest %q", ref, got.Digest)
		}
		wantContent(t, r, got, commit, "catalog")
		got.Release()
	}
}

func TestDescribeAndBuilt(t *testing.T) {
	c := gitsource.New(gitsource.Options{})
	spec := source.Git{URL: "https://example.com/org/repo.git", Ref: "main", Commit: strings.Repeat("a", 40), Directory: "configs"}
	f := c.Fetcher(spec, gitsource.Auth{}, t.TempDir())
	if got, want := f.Describe(), "git::https://example.com/org/repo.git//configs?ref=main"; got != want {
		t.Errorf("Describe() = %q, want %q", got, want)
	}
	for _, tc := range []struct {
		ref  string
		want bool
	}{
		{source.Git{URL: spec.URL, Ref: "other", Commit: strings.Repeat("b", 40), Directory: "configs"}.String(), true},
		{source.Git{URL: spec.URL, Directory: "configs"}.String(), true},
		{source.Git{URL: spec.URL, Directory: "other"}.String(), false},
		{source.Git{URL: spec.URL}.String(), false},
		{source.Git{URL: "https://example.com/org/other.git", Directory: "configs"}.String(), false},
		{"quay.io/org/catalog@sha256:" + strings.Repeat("c", 64), false},
	} {
		if got := f.Built(tc.ref); got != tc.want {
			t.Errorf("Built(%q) = %v, want %v", tc.ref, got, tc.want)
		}
	}
	scp := c.Fetcher(source.Git{URL: "git@example.com:org/repo.git", Directory: "configs"}, gitsource.Auth{}, t.TempDir())
	if !scp.Built(source.Git{URL: "git@example.com:org/repo.git", Ref: "main", Directory: "configs"}.String()) {
		t.Error("an scp-like URL's Built refuses its own ref")
	}
}
