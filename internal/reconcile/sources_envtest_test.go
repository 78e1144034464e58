package reconcile_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"oras.land/oras-go/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	catalogdv1 "github.com/catalogd/catalogd/api/v1"
	"github.com/catalogd/catalogd/internal/catalogs"
	"github.com/catalogd/catalogd/internal/catalogsync"
	"github.com/catalogd/catalogd/internal/reconcile"
	"github.com/catalogd/catalogd/internal/source/gitsource"
	"github.com/catalogd/catalogd/internal/source/httpsource"
	"github.com/catalogd/catalogd/internal/source/kinds"
	"github.com/catalogd/catalogd/internal/store"
	"github.com/catalogd/catalogd/internal/unpack"
	"github.com/catalogd/catalogd/test/await"
	"github.com/catalogd/catalogd/test/dirtree"
	"github.com/catalogd/catalogd/test/fbcfacts"
	"github.com/catalogd/catalogd/test/gittest"
	"github.com/catalogd/catalogd/test/kubetest"
	"github.com/catalogd/catalogd/test/registrytest"
)

// secretNamespace is catalogd's own namespace in these tests.
const secretNamespace = "catalogd-system"

// replica is one catalogd manager: its own data directory, store, table
// and sync service, with the leader's Reconciler or only the LocalSyncer.
type replica struct {
	store *store.Store
	cats  *catalogs.Table
	svc   *catalogsync.Service
}

// replicaOptions say how a replica reaches the test's servers, and whether
// it is the leader.
type replicaOptions struct {
	// gitCA is trusted for https git remotes.
	gitCA []byte
	// insecureRegistries are spoken to over plain HTTP.
	insecureRegistries []string
	leader             bool
}

// startReplica runs a manager against cfg until the test ends, fetching
// every kind of source the composition root does.
func startReplica(t *testing.T, cfg *rest.Config, scheme *runtime.Scheme, opts replicaOptions) *replica {
	t.Helper()
	log := testr.NewWithOptions(t, testr.Options{Verbosity: 0})
	dataDir := t.TempDir()
	indexes, err := store.New(filepath.Join(dataDir, "index"), log.WithName("index"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = indexes.Close() })
	unpacker, err := unpack.New(unpack.Options{Logger: log.WithName("unpack"), InsecureRegistries: opts.insecureRegistries})
	if err != nil {
		t.Fatal(err)
	}
	r := &replica{store: indexes, cats: catalogs.NewTable()}
	r.svc = catalogsync.New(catalogsync.Options{Store: indexes, Table: r.cats, Log: log.WithName("sync"),
		MinBackoff: 100 * time.Millisecond, MaxBackoff: time.Second})
	web, err := httpsource.New(httpsource.Options{Extractor: unpacker, Log: log.WithName("http")})
	if err != nil {
		t.Fatal(err)
	}
	chooser := kinds.Kinds{Images: unpacker, TempDir: filepath.Join(dataDir, "unpack"), HTTP: web,
		Git: gitsource.New(gitsource.Options{Extractor: unpacker, CABundle: opts.gitCA, Log: log.WithName("git")})}

	skip := true
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Logger:                 log.WithName("manager"),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: &skip},
	})
	if err != nil {
		t.Fatal(err)
	}
	sources := reconcile.Sources{Fetcher: chooser.Fetcher, Secrets: mgr.GetAPIReader(), Namespace: secretNamespace}
	if opts.leader {
		if err := (&reconcile.Reconciler{Client: mgr.GetClient(), Sync: r.svc, Catalogs: r.cats, Sources: sources, BaseURL: baseURL,
			// pollIntervalMinutes: 1 means one second here.
			PollInterval: func(minutes int) time.Duration { return time.Duration(minutes) * time.Second },
			Recorder:     mgr.GetEventRecorder("catalogd"),
		}).SetupWithManager(mgr); err != nil {
			t.Fatal(err)
		}
	}
	if err := (&reconcile.LocalSyncer{Client: mgr.GetClient(), Sync: r.svc, Sources: sources}).SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	if err := mgr.Add(r.svc); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
	return r
}

// resolvedGit is the catalog's published commit and tree digest once it
// serves them with Progressing Succeeded for its current generation.
func resolvedGit(ctx context.Context, c client.Client, name string) (commit, tree string, cat *catalogdv1.ClusterCatalog, err error) {
	cat = &catalogdv1.ClusterCatalog{}
	if err := c.Get(ctx, client.ObjectKey{Name: name}, cat); err != nil {
		return "", "", nil, err
	}
	if err := condition(cat, catalogdv1.TypeProgressing, metav1.ConditionTrue, catalogdv1.ReasonSucceeded); err != nil {
		return "", "", nil, err
	}
	rs := cat.Status.ResolvedSource
	if rs == nil || rs.Type != catalogdv1.SourceTypeGit || rs.Git == nil {
		return "", "", nil, fmt.Errorf("resolvedSource %+v, want a git commit", rs)
	}
	return rs.Git.Commit, rs.Git.TreeDigest, cat, nil
}

// TestReconcilerGit: a ClusterCatalog of type Git against a real git server
// on loopback (git http-backend over TLS) serves the commit its branch
// points at, follows the branch, keeps its index when a commit touches only
// another directory, and a second replica serves exactly the published
// commit after the branch moved on. Credentials come from a Secret in
// catalogd's namespace; a wrong one is retried, naming the Secret.
func TestReconcilerGit(t *testing.T) {
	server := gittest.NewServer(t, true)
	server.RequireBasicAuth("private", "reader", "letmein")
	repo := gittest.NewRepo(t, server.Root, "catalogs")
	// As GitHub and GitLab do: a replica may ask for the published commit
	// after its branch moved on.
	gittest.Git(t, repo.Bare, "config", "uploadpack.allowReachableSHA1InWant", "true")
	repo.CopyDir("catalogs/demo", demoDir)
	c1 := repo.Commit(map[string]string{"README.md": "catalogs\n"})
	repo.Push("main")

	cfg, scheme, c := startAPIServer(t)
	ctx := context.Background()
	leader := startReplica(t, cfg, scheme, replicaOptions{gitCA: server.CAPEM(), leader: true})
	demo := fbcfacts.Load(t, demoDir)

	one := 1
	gitCatalog := func(name, repoName string, mutate func(*catalogdv1.GitSource)) {
		t.Helper()
		g := &catalogdv1.GitSource{URL: server.RepoURL(repoName), Ref: catalogdv1.GitRef{Branch: "main"}, Directory: "catalogs/demo"}
		if mutate != nil {
			mutate(g)
		}
		cat := &catalogdv1.ClusterCatalog{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: catalogdv1.ClusterCatalogSpec{Source: catalogdv1.CatalogSource{Type: catalogdv1.SourceTypeGit, Git: g}}}
		if err := c.Create(ctx, cat); err != nil {
			t.Fatal(err)
		}
	}
	gitCatalog("branch", "catalogs", func(g *catalogdv1.GitSource) { g.PollIntervalMinutes = &one })

	tree1 := "git-tree:" + repo.Tree(c1, "catalogs/demo")
	var first *catalogdv1.ClusterCatalog
	await.Until(t, "the branch's commit published", waitTimeout, func() error {
		commit, tree, cat, err := resolvedGit(ctx, c, "branch")
		if err == nil && (commit != c1 || tree != tree1) {
			err = fmt.Errorf("published %s at %s, want %s at %s", tree, commit, tree1, c1)
		}
		first = cat
		return err
	})
	if got := first.Status.ResolvedSource.Git; got.URL != server.RepoURL("catalogs") || got.Directory != "catalogs/demo" {
		t.Errorf("resolvedSource.git = %+v", got)
	}
	if info, ok := leader.store.Info("branch"); !ok || info.Digest != tree1 {
		t.Fatalf("leader's live index %+v, want %s", info, tree1)
	}
	built, _ := leader.store.Info("branch")

	// A commit that touches only another directory: a new commit in
	// status, the same tree, no new index.
	c2 := repo.Commit(map[string]string{"other/notes.md": "not the catalog\n"})
	repo.Push("main")
	await.Until(t, "the new commit published", waitTimeout, func() error {
		commit, tree, _, err := resolvedGit(ctx, c, "branch")
		if err == nil && (commit != c2 || tree != tree1) {
			err = fmt.Errorf("published %s at %s, want %s at %s", tree, commit, tree1, c2)
		}
		return err
	})
	if now, _ := leader.store.Info("branch"); now.Path != built.Path {
		t.Errorf("a commit outside the catalog's directory rebuilt the index: %s, was %s", now.Path, built.Path)
	}
	if cat := getCatalog(t, c, "branch"); !cat.Status.LastUnpacked.Equal(first.Status.LastUnpacked) {
		t.Errorf("lastUnpacked moved from %v to %v without a rebuild", first.Status.LastUnpacked, cat.Status.LastUnpacked)
	}

	// The branch moves to other content: followed.
	c3 := repo.Commit(map[string]string{"catalogs/demo/paper-lantern": ""})
	repo.Push("main")
	tree3 := "git-tree:" + repo.Tree(c3, "catalogs/demo")
	await.Until(t, "the moved branch followed", waitTimeout, func() error {
		commit, tree, _, err := resolvedGit(ctx, c, "branch")
		if err == nil && (commit != c3 || tree != tree3) {
			err = fmt.Errorf("published %s at %s, want %s at %s", tree, commit, tree3, c3)
		}
		return err
	})

	// Stop polling, then move the branch again: status keeps c3, and a
	// replica started now serves c3, not what the branch holds.
	changeCatalog(t, c, "branch", func(cat *catalogdv1.ClusterCatalog) { cat.Spec.Source.Git.PollIntervalMinutes = nil })
	await.Until(t, "the spec without polling reconciled", waitTimeout, func() error {
		_, _, _, err := resolvedGit(ctx, c, "branch")
		return err
	})
	c4 := repo.Commit(map[string]string{"catalogs/demo/aurora-cache": ""})
	repo.Push("main")
	second := startReplica(t, cfg, scheme, replicaOptions{gitCA: server.CAPEM()})
	await.Until(t, "the second replica serves the published commit", waitTimeout, func() error {
		info, ok := second.store.Info("branch")
		if !ok || info.Digest != tree3 || !strings.Contains(info.SourceRef, "commit="+c3) {
			return fmt.Errorf("second replica serves %+v, want %s at %s (the branch is at %s)", info, tree3, c3, c4)
		}
		return nil
	})
	if commit, _, _, err := resolvedGit(ctx, c, "branch"); err != nil || commit != c3 {
		t.Errorf("status moved to %s (%v) without a poll; want %s", commit, err, c3)
	}
	if got, want := countPackages(t, second.store, "branch"), len(demo.Packages)-1; got != want {
		t.Errorf("second replica serves %d packages, want %d (c3 removed one)", got, want)
	}

	// Credentials from a Secret in catalogd's namespace.
	private := gittest.NewRepo(t, server.Root, "private")
	private.CopyDir("catalogs/demo", demoDir)
	private.Commit(nil)
	private.Push("main")
	for _, s := range []struct{ name, password string }{{"git-reader", "letmein"}, {"git-wrong", "guess"}} {
		if err := c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: secretNamespace, Name: s.name},
			Data: map[string][]byte{"username": []byte("reader"), "password": []byte(s.password)}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		catalog, secret string
		// wantRetrying are parts of the Retrying message; none means
		// Serving.
		wantRetrying []string
	}{
		{catalog: "with-secret", secret: "git-reader"},
		{catalog: "wrong-secret", secret: "git-wrong", wantRetrying: []string{secretNamespace + "/git-wrong"}},
		{catalog: "missing-secret", secret: "git-missing", wantRetrying: []string{"no Secret " + secretNamespace + "/git-missing", "spec.source.git.secretRef"}},
	} {
		gitCatalog(tc.catalog, "private", func(g *catalogdv1.GitSource) { g.SecretRef = &catalogdv1.SecretReference{Name: tc.secret} })
		await.Until(t, tc.catalog+" reconciled", waitTimeout, func() error {
			cat := getCatalog(t, c, tc.catalog)
			if len(tc.wantRetrying) == 0 {
				_, _, _, err := resolvedGit(ctx, c, tc.catalog)
				return err
			}
			if err := condition(cat, catalogdv1.TypeProgressing, metav1.ConditionTrue, catalogdv1.ReasonRetrying); err != nil {
				return err
			}
			msg := meta.FindStatusCondition(cat.Status.Conditions, catalogdv1.TypeProgressing).Message
			for _, want := range tc.wantRetrying {
				if !strings.Contains(msg, want) {
					return fmt.Errorf("conditions %q do not say %q", msg, want)
				}
			}
			if strings.Contains(msg, "guess") {
				return fmt.Errorf("conditions %q repeat the Secret's password", msg)
			}
			return nil
		})
	}
}

// startAPIServer starts a kube-apiserver with the CRD and catalogd's
// namespace, and returns its config, the scheme and a client.
func startAPIServer(t *testing.T) (*rest.Config, *runtime.Scheme, client.Client) {
	t.Helper()
	cfg := kubetest.Start(t)
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, catalogdv1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: secretNamespace}}); err != nil {
		t.Fatal(err)
	}
	return cfg, scheme, c
}

// TestReconcilerHTTPAndArtifact: a ClusterCatalog of type HTTP against a
// real server on loopback serves the archive and pins the sha256 of its
// bytes, which every replica then fetches; an Image pointing at an OCI
// artifact pushed with oras-go serves it and says Artifact.
func TestReconcilerHTTPAndArtifact(t *testing.T) {
	archive := filepath.Join(t.TempDir(), "demo.tar.gz")
	dirtree.TarGz(t, archive, demoDir)
	data, err := os.ReadFile(archive)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	wantSHA := hex.EncodeToString(sum[:])
	files := httptest.NewServer(http.FileServer(http.Dir(filepath.Dir(archive))))
	t.Cleanup(files.Close)

	demo, err := filepath.Abs(demoDir)
	if err != nil {
		t.Fatal(err)
	}
	reg := registrytest.New(t)
	registrytest.PackArtifact(t, reg.OrasRepository(t, "catalogs/art"), "v1", oras.PackManifestVersion1_1, "application/vnd.catalogd.fbc.v1",
		[]registrytest.ArtifactLayer{{Name: "demo", Path: demo}})

	cfg, scheme, c := startAPIServer(t)
	ctx := context.Background()
	leader := startReplica(t, cfg, scheme, replicaOptions{insecureRegistries: []string{reg.Host}, leader: true})
	for _, cat := range []*catalogdv1.ClusterCatalog{
		{ObjectMeta: metav1.ObjectMeta{Name: "archive"}, Spec: catalogdv1.ClusterCatalogSpec{Source: catalogdv1.CatalogSource{
			Type: catalogdv1.SourceTypeHTTP, HTTP: &catalogdv1.HTTPSource{URL: files.URL + "/demo.tar.gz"}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "artifact"}, Spec: catalogdv1.ClusterCatalogSpec{Source: catalogdv1.CatalogSource{
			Type: catalogdv1.SourceTypeImage, Image: &catalogdv1.ImageSource{Ref: reg.Host + "/catalogs/art:v1"}}}},
	} {
		if err := c.Create(ctx, cat); err != nil {
			t.Fatal(err)
		}
	}
	wantPackages := len(fbcfacts.Load(t, demoDir).Packages)
	for _, tc := range []struct {
		name string
		// resolved checks status.resolvedSource.
		resolved func(*catalogdv1.ResolvedCatalogSource) error
	}{
		{name: "archive", resolved: func(rs *catalogdv1.ResolvedCatalogSource) error {
			if rs.HTTP == nil || rs.HTTP.URL != files.URL+"/demo.tar.gz" || rs.HTTP.SHA256 != wantSHA {
				return fmt.Errorf("resolvedSource %+v, want the URL pinned to sha256 %s", rs, wantSHA)
			}
			return nil
		}},
		{name: "artifact", resolved: func(rs *catalogdv1.ResolvedCatalogSource) error {
			if rs.Image == nil || rs.Image.Form != catalogdv1.ImageFormArtifact || !strings.Contains(rs.Image.Ref, "@sha256:") {
				return fmt.Errorf("resolvedSource %+v, want a digest and form Artifact", rs)
			}
			return nil
		}},
	} {
		await.Until(t, tc.name+" serving", waitTimeout, func() error {
			cat := getCatalog(t, c, tc.name)
			if err := condition(cat, catalogdv1.TypeProgressing, metav1.ConditionTrue, catalogdv1.ReasonSucceeded); err != nil {
				return err
			}
			if cat.Status.ResolvedSource == nil {
				return errors.New("no resolvedSource")
			}
			return tc.resolved(cat.Status.ResolvedSource)
		})
		if got := countPackages(t, leader.store, tc.name); got != wantPackages {
			t.Errorf("%s serves %d packages, want %d", tc.name, got, wantPackages)
		}
	}
	if info, _ := leader.store.Info("archive"); info.Digest != "sha256:"+wantSHA {
		t.Errorf("archive's index digest %s, want the bytes' sha256:%s", info.Digest, wantSHA)
	}
}

func getCatalog(t *testing.T, c client.Client, name string) *catalogdv1.ClusterCatalog {
	t.Helper()
	cat := &catalogdv1.ClusterCatalog{}
	if err := c.Get(context.Background(), client.ObjectKey{Name: name}, cat); err != nil {
		t.Fatalf("getting ClusterCatalog %s: %v", name, err)
	}
	return cat
}

// changeCatalog applies f to the catalog and updates it, retrying on
// conflicts.
func changeCatalog(t *testing.T, c client.Client, name string, f func(*catalogdv1.ClusterCatalog)) {
	t.Helper()
	await.Until(t, "updating "+name, waitTimeout, func() error {
		cat := &catalogdv1.ClusterCatalog{}
		if err := c.Get(context.Background(), client.ObjectKey{Name: name}, cat); err != nil {
			return err
		}
		f(cat)
		return c.Update(context.Background(), cat)
	})
}

// countPackages counts the packages in the live index of name in s.
func countPackages(t *testing.T, s *store.Store, name string) int {
	t.Helper()
	snap, err := s.Acquire(name)
	if err != nil {
		t.Fatalf("acquiring index of %s: %v", name, err)
	}
	defer snap.Release()
	counts, err := snap.Catalog.Counts(context.Background())
	if err != nil {
		t.Fatalf("counting packages of %s: %v", name, err)
	}
	return counts.Packages
}
