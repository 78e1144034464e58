package reconcile_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	catalogdv1 "github.com/catalogd/catalogd/api/v1"
	"github.com/catalogd/catalogd/internal/catalogs"
	"github.com/catalogd/catalogd/internal/store"
	"github.com/catalogd/catalogd/internal/unpack"
	"github.com/catalogd/catalogd/test/await"
	"github.com/catalogd/catalogd/test/fbcfacts"
	"github.com/catalogd/catalogd/test/registrytest"
)

const (
	demoDir     = "../../test/testdata/demo"
	baseURL     = "https://catalogd.example.test"
	waitTimeout = 60 * time.Second
)

// badPush is an image whose content a sync refuses, and what the refusal
// says.
type badPush struct {
	name    string
	push    registrytest.PushOptions
	wantMsg string
}

// env is one apiserver, registry and running controller shared by the
// subtests of a test; each subtest uses its own catalog names.
type env struct {
	c     client.Client
	reg   *registrytest.Registry
	store *store.Store
	cats  *catalogs.Table
}

// state is the catalog's state as the API shows it: from the table and
// whether the store has a live index.
func (e *env) state(name string) catalogs.State {
	c, _ := e.cats.Get(name)
	_, indexed := e.store.Info(name)
	return c.State(indexed)
}

func start(t *testing.T) *env {
	t.Helper()
	ctrllog.SetLogger(logr.Discard())
	reg := registrytest.New(t)
	cfg, scheme, c := startAPIServer(t)
	r := startReplica(t, cfg, scheme, replicaOptions{insecureRegistries: []string{reg.Host}, leader: true})
	return &env{c: c, reg: reg, store: r.store, cats: r.cats}
}

func (e *env) create(t *testing.T, name, ref string, mutate func(*catalogdv1.ClusterCatalog)) {
	t.Helper()
	cat := &catalogdv1.ClusterCatalog{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: catalogdv1.ClusterCatalogSpec{
			Source: catalogdv1.CatalogSource{Type: catalogdv1.SourceTypeImage, Image: &catalogdv1.ImageSource{Ref: ref}},
		},
	}
	if mutate != nil {
		mutate(cat)
	}
	if err := e.c.Create(context.Background(), cat); err != nil {
		t.Fatalf("creating ClusterCatalog %s: %v", name, err)
	}
}

func (e *env) get(t *testing.T, name string) *catalogdv1.ClusterCatalog {
	t.Helper()
	return getCatalog(t, e.c, name)
}

// change applies f to the catalog and updates it, retrying on conflicts.
func (e *env) change(t *testing.T, name string, f func(*catalogdv1.ClusterCatalog)) {
	t.Helper()
	changeCatalog(t, e.c, name, f)
}

// touch changes an annotation so the controller reconciles again.
func (e *env) touch(t *testing.T, name string) {
	t.Helper()
	e.change(t, name, func(cat *catalogdv1.ClusterCatalog) {
		if cat.Annotations == nil {
			cat.Annotations = map[string]string{}
		}
		cat.Annotations["test.catalogd.io/touched"] = time.Now().Format(time.RFC3339Nano)
	})
}

// condition checks one condition of the catalog, with its observedGeneration.
func condition(cat *catalogdv1.ClusterCatalog, typ string, status metav1.ConditionStatus, reason string) error {
	c := meta.FindStatusCondition(cat.Status.Conditions, typ)
	if c == nil {
		return fmt.Errorf("no %s condition in %+v", typ, cat.Status.Conditions)
	}
	if c.Status != status || c.Reason != reason {
		return fmt.Errorf("%s is %s/%s (%q), want %s/%s", typ, c.Status, c.Reason, c.Message, status, reason)
	}
	if c.ObservedGeneration != cat.Generation {
		return fmt.Errorf("%s has observedGeneration %d, want %d", typ, c.ObservedGeneration, cat.Generation)
	}
	return nil
}

// servingDigest checks that the catalog is Serving/Succeeded at digestRef
// with the status, store and registry agreeing.
func (e *env) servingDigest(t *testing.T, name, digestRef string) error {
	t.Helper()
	cat := e.get(t, name)
	if err := condition(cat, catalogdv1.TypeServing, metav1.ConditionTrue, catalogdv1.ReasonAvailable); err != nil {
		return err
	}
	if err := condition(cat, catalogdv1.TypeProgressing, metav1.ConditionTrue, catalogdv1.ReasonSucceeded); err != nil {
		return err
	}
	if rs := cat.Status.ResolvedSource; rs == nil || rs.Image == nil || rs.Image.Ref != digestRef {
		return fmt.Errorf("resolvedSource is %+v, want %s", rs, digestRef)
	}
	if u := cat.Status.URLs; u == nil || u.Base != baseURL+"/catalogs/"+name {
		return fmt.Errorf("urls is %+v, want base %s/catalogs/%s", u, baseURL, name)
	}
	if cat.Status.LastUnpacked == nil {
		return errors.New("lastUnpacked is not set")
	}
	info, ok := e.store.Info(name)
	if !ok || info.SourceRef != digestRef {
		return fmt.Errorf("store has %+v (live %t), want %s", info, ok, digestRef)
	}
	c, ok := e.cats.Get(name)
	if !ok || e.state(name) != catalogs.Serving || c.LastError != "" {
		return fmt.Errorf("registry has %+v (known %t), want Serving without error", c, ok)
	}
	return nil
}

// requests counts the registry requests for repository catalogs/<repo> with
// the given method (any when empty) whose path contains part. Other subtests'
// catalogs keep polling, so the registry's global counts are not usable.
func (e *env) requests(repo, method, part string) int {
	n := 0
	for _, r := range e.reg.Requests() {
		if strings.HasPrefix(r.Path, "/v2/catalogs/"+repo+"/") &&
			(method == "" || r.Method == method) && strings.Contains(r.Path, part) {
			n++
		}
	}
	return n
}

// packages counts the packages in the live index of name.
func (e *env) packages(t *testing.T, name string) int {
	t.Helper()
	return countPackages(t, e.store, name)
}

// brokenCatalog writes a catalog directory whose only file is not valid JSON.
func brokenCatalog(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "catalog.json"), []byte(`{"schema": "olm.package", "name": `), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestReconciler(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	demo := fbcfacts.Load(t, demoDir)
	wantPackages := len(demo.Packages)

	t.Run("create serves the digest and the index answers", func(t *testing.T) {
		ref := e.reg.PushCatalog(t, "catalogs/create:v1", demoDir, registrytest.PushOptions{})
		e.create(t, "create", e.reg.Host+"/catalogs/create:v1", nil)
		await.Until(t, "create to serve", waitTimeout, func() error { return e.servingDigest(t, "create", ref) })
		if got := e.packages(t, "create"); got != wantPackages {
			t.Errorf("index has %d packages, want %d", got, wantPackages)
		}
		cat := e.get(t, "create")
		if got := cat.Labels[catalogdv1.MetadataNameLabel]; got != "create" {
			t.Errorf("label %s = %q, want create", catalogdv1.MetadataNameLabel, got)
		}
		if !slices.Contains(cat.Finalizers, catalogdv1.DeleteServerCacheFinalizer) {
			t.Errorf("finalizers %v lack %s", cat.Finalizers, catalogdv1.DeleteServerCacheFinalizer)
		}
	})

	t.Run("same digest on re-reconcile does not re-index or pull", func(t *testing.T) {
		ref := e.reg.PushCatalog(t, "catalogs/same:v1", demoDir, registrytest.PushOptions{})
		e.create(t, "same", e.reg.Host+"/catalogs/same:v1", nil)
		await.Until(t, "same to serve", waitTimeout, func() error { return e.servingDigest(t, "same", ref) })
		before, _ := e.store.Info("same")
		lastUnpacked := e.get(t, "same").Status.LastUnpacked
		blobGets := e.requests("same", http.MethodGet, "/blobs/")
		heads := e.requests("same", http.MethodHead, "/manifests/")

		// A priority change must only update the registry.
		e.change(t, "same", func(cat *catalogdv1.ClusterCatalog) {
			cat.Spec.Priority = 7
			cat.Labels = map[string]string{"tier": "prod"}
		})
		await.Until(t, "priority and labels in the registry", waitTimeout, func() error {
			c, _ := e.cats.Get("same")
			if c.Priority != 7 || c.Labels["tier"] != "prod" {
				return fmt.Errorf("registry priority is %d and labels %v, want 7 and tier=prod", c.Priority, c.Labels)
			}
			return nil
		})
		e.touch(t, "same")
		// The touch is seen once the tag has been resolved again.
		await.Until(t, "a re-resolution of the tag", waitTimeout, func() error {
			if n := e.requests("same", http.MethodHead, "/manifests/"); n < heads+2 {
				return fmt.Errorf("%d manifest HEADs since serving, want at least 2", n-heads)
			}
			return e.servingDigest(t, "same", ref)
		})
		after, _ := e.store.Info("same")
		if !after.BuiltAt.Equal(before.BuiltAt) {
			t.Errorf("index rebuilt at %v (was %v) for an unchanged digest", after.BuiltAt, before.BuiltAt)
		}
		if n := e.requests("same", http.MethodGet, "/blobs/"); n != blobGets {
			t.Errorf("%d blob GETs for an unchanged digest", n-blobGets)
		}
		if got := e.get(t, "same").Status.LastUnpacked; !got.Equal(lastUnpacked) {
			t.Errorf("lastUnpacked changed from %v to %v without a pull", lastUnpacked, got)
		}
	})

	t.Run("a content change is an Event naming the packages", func(t *testing.T) { testContentChangedEvent(t, e, demo) })

	t.Run("polling picks up a new digest, broken content keeps the old one", func(t *testing.T) {
		tag := "catalogs/poll:latest"
		v1 := e.reg.PushCatalog(t, tag, demoDir, registrytest.PushOptions{})
		one := 1
		e.create(t, "poll", e.reg.Host+"/"+tag, func(cat *catalogdv1.ClusterCatalog) {
			cat.Spec.Source.Image.PollIntervalMinutes = &one
		})
		await.Until(t, "poll to serve v1", waitTimeout, func() error { return e.servingDigest(t, "poll", v1) })

		// New content under the same tag: one package fewer.
		smaller := t.TempDir()
		if err := os.CopyFS(smaller, os.DirFS(demoDir)); err != nil {
			t.Fatal(err)
		}
		var dropped string
		for p := range demo.Packages {
			dropped = p
			break
		}
		if err := os.RemoveAll(filepath.Join(smaller, dropped)); err != nil {
			t.Fatal(err)
		}
		v2 := e.reg.PushCatalog(t, tag, smaller, registrytest.PushOptions{})
		if v2 == v1 {
			t.Fatal("the new content has the old digest")
		}
		await.Until(t, "poll to serve v2", waitTimeout, func() error { return e.servingDigest(t, "poll", v2) })
		if got := e.packages(t, "poll"); got != wantPackages-1 {
			t.Errorf("index has %d packages after the update, want %d", got, wantPackages-1)
		}

		// Broken content: v2 keeps serving while the controller retries.
		e.reg.PushCatalog(t, tag, brokenCatalog(t), registrytest.PushOptions{})
		await.Until(t, "poll to retry the broken push", waitTimeout, func() error {
			cat := e.get(t, "poll")
			if err := condition(cat, catalogdv1.TypeProgressing, metav1.ConditionTrue, catalogdv1.ReasonRetrying); err != nil {
				return err
			}
			if err := condition(cat, catalogdv1.TypeServing, metav1.ConditionTrue, catalogdv1.ReasonAvailable); err != nil {
				return err
			}
			msg := meta.FindStatusCondition(cat.Status.Conditions, catalogdv1.TypeProgressing).Message
			if !strings.Contains(msg, "indexing") {
				return fmt.Errorf("Progressing message %q does not say indexing failed", msg)
			}
			if rs := cat.Status.ResolvedSource; rs == nil || rs.Image.Ref != v2 {
				return fmt.Errorf("resolvedSource is %+v, want still %s", rs, v2)
			}
			c, _ := e.cats.Get("poll")
			if e.state("poll") != catalogs.Serving || c.LastError == "" {
				return fmt.Errorf("registry has %+v, want Serving with a last error", c)
			}
			return nil
		})
		if info, _ := e.store.Info("poll"); info.SourceRef != v2 {
			t.Errorf("store serves %s, want %s", info.SourceRef, v2)
		}
		if got := e.packages(t, "poll"); got != wantPackages-1 {
			t.Errorf("index has %d packages while the broken push is retried, want %d", got, wantPackages-1)
		}
	})

	// Content at a digest never changes, so a content error there needs the
	// user: the catalog is Blocked, not retried.
	for _, tc := range []badPush{
		{name: "nolabel", push: registrytest.PushOptions{NoLabel: true}, wantMsg: unpack.ConfigsDirLabel},
		{name: "unsafe", push: registrytest.PushOptions{Extra: []registrytest.Entry{
			registrytest.Symlink("configs/escape", "../../etc/passwd"),
		}}, wantMsg: "unsafe entry"},
		{name: "badjson", push: registrytest.PushOptions{Extra: []registrytest.Entry{
			registrytest.File("configs/zz-broken.json", `{"schema":"olm.bundle","name":`),
		}}, wantMsg: "zz-broken.json"},
	} {
		t.Run(tc.name+" at a digest is blocked", func(t *testing.T) {
			ref := e.reg.PushCatalog(t, "catalogs/"+tc.name+":v1", demoDir, tc.push)
			e.create(t, tc.name, ref, nil)
			await.Until(t, tc.name+" to be blocked", waitTimeout, func() error {
				cat := e.get(t, tc.name)
				if err := condition(cat, catalogdv1.TypeProgressing, metav1.ConditionFalse, catalogdv1.ReasonBlocked); err != nil {
					return err
				}
				if err := condition(cat, catalogdv1.TypeServing, metav1.ConditionFalse, catalogdv1.ReasonUnavailable); err != nil {
					return err
				}
				msg := meta.FindStatusCondition(cat.Status.Conditions, catalogdv1.TypeProgressing).Message
				if !strings.Contains(msg, tc.wantMsg) {
					return fmt.Errorf("Progressing message %q does not contain %q", msg, tc.wantMsg)
				}
				return nil
			})
			if _, ok := e.store.Info(tc.name); ok {
				t.Error("a blocked catalog has an index")
			}
			if c, _ := e.cats.Get(tc.name); e.state(tc.name) != catalogs.Failed || c.LastError == "" {
				t.Errorf("registry has %+v, want Failed with a last error", c)
			}
		})
	}

	// A refusal for what a digest holds is remembered for that digest,
	// whatever refused it: under a tag, every retry resolves the tag again
	// (one manifest request) and pulls nothing while it names the same
	// digest.
	for _, tc := range []badPush{
		{name: "unsafetag", push: registrytest.PushOptions{Extra: []registrytest.Entry{
			registrytest.File("configs/../../escape.json", "{}"),
		}}, wantMsg: "unsafe entry"},
		{name: "badjsontag", push: registrytest.PushOptions{Extra: []registrytest.Entry{
			registrytest.File("configs/zz-broken.json", `{"schema":"olm.bundle","name":`),
		}}, wantMsg: "zz-broken.json"},
	} {
		t.Run(tc.name+" under a tag is pulled once across retries", func(t *testing.T) {
			e.reg.PushCatalog(t, "catalogs/"+tc.name+":v1", demoDir, tc.push)
			e.create(t, tc.name, e.reg.Host+"/catalogs/"+tc.name+":v1", nil)
			var pulled int
			await.Until(t, tc.name+" to be retried", waitTimeout, func() error {
				cat := e.get(t, tc.name)
				if err := condition(cat, catalogdv1.TypeProgressing, metav1.ConditionTrue, catalogdv1.ReasonRetrying); err != nil {
					return err
				}
				if msg := meta.FindStatusCondition(cat.Status.Conditions, catalogdv1.TypeProgressing).Message; !strings.Contains(msg, tc.wantMsg) {
					return fmt.Errorf("Progressing message %q does not contain %q", msg, tc.wantMsg)
				}
				pulled = e.requests(tc.name, http.MethodGet, "/blobs/")
				return nil
			})
			resolved := e.requests(tc.name, "", "/manifests/v1")
			await.Until(t, tc.name+" to be retried three times", waitTimeout, func() error {
				if n := e.requests(tc.name, "", "/manifests/v1") - resolved; n < 3 {
					return fmt.Errorf("the tag was resolved %d times since the first failure", n)
				}
				return nil
			})
			if pulled == 0 {
				t.Fatal("no blob was fetched for the first failure")
			}
			if n := e.requests(tc.name, http.MethodGet, "/blobs/"); n != pulled {
				t.Errorf("%d blob downloads after the retries, %d after the first failure; want the digest pulled once", n, pulled)
			}
			if c, _ := e.cats.Get(tc.name); !strings.Contains(c.LastError, tc.wantMsg) {
				t.Errorf("lastError %q; want the remembered reason, %q", c.LastError, tc.wantMsg)
			}
		})
	}

	// Under a tag the same content error is retried: a new push can fix it.
	t.Run("nolabel under a tag is retried", func(t *testing.T) {
		e.reg.PushCatalog(t, "catalogs/nolabeltag:v1", demoDir, registrytest.PushOptions{NoLabel: true})
		e.create(t, "nolabeltag", e.reg.Host+"/catalogs/nolabeltag:v1", nil)
		await.Until(t, "nolabeltag to be retried", waitTimeout, func() error {
			cat := e.get(t, "nolabeltag")
			if err := condition(cat, catalogdv1.TypeProgressing, metav1.ConditionTrue, catalogdv1.ReasonRetrying); err != nil {
				return err
			}
			msg := meta.FindStatusCondition(cat.Status.Conditions, catalogdv1.TypeProgressing).Message
			if !strings.Contains(msg, unpack.ConfigsDirLabel) {
				return fmt.Errorf("Progressing message %q does not name the missing label", msg)
			}
			return nil
		})
	})

	t.Run("unavailable and back", func(t *testing.T) {
		ref := e.reg.PushCatalog(t, "catalogs/toggle:v1", demoDir, registrytest.PushOptions{})
		e.create(t, "toggle", ref, nil)
		await.Until(t, "toggle to serve", waitTimeout, func() error { return e.servingDigest(t, "toggle", ref) })

		before := e.requests("toggle", "", "")
		e.change(t, "toggle", func(cat *catalogdv1.ClusterCatalog) {
			cat.Spec.AvailabilityMode = catalogdv1.AvailabilityModeUnavailable
		})
		await.Until(t, "toggle to be unavailable", waitTimeout, func() error {
			cat := e.get(t, "toggle")
			if err := condition(cat, catalogdv1.TypeServing, metav1.ConditionFalse, catalogdv1.ReasonUserSpecifiedUnavailable); err != nil {
				return err
			}
			if _, ok := e.store.Info("toggle"); ok {
				return errors.New("the index is still live")
			}
			if state := e.state("toggle"); state != catalogs.Unavailable {
				return fmt.Errorf("registry state is %s, want Unavailable", state)
			}
			return nil
		})
		if n := e.requests("toggle", "", ""); n != before {
			t.Errorf("an unavailable catalog made %d registry requests", n-before)
		}

		e.change(t, "toggle", func(cat *catalogdv1.ClusterCatalog) {
			cat.Spec.AvailabilityMode = catalogdv1.AvailabilityModeAvailable
		})
		await.Until(t, "toggle to serve again", waitTimeout, func() error { return e.servingDigest(t, "toggle", ref) })
		if got := e.packages(t, "toggle"); got != wantPackages {
			t.Errorf("index has %d packages, want %d", got, wantPackages)
		}
	})

	t.Run("delete removes the index and the finalizer", func(t *testing.T) {
		ref := e.reg.PushCatalog(t, "catalogs/gone:v1", demoDir, registrytest.PushOptions{})
		e.create(t, "gone", ref, nil)
		await.Until(t, "gone to serve", waitTimeout, func() error { return e.servingDigest(t, "gone", ref) })
		if err := e.c.Delete(ctx, e.get(t, "gone")); err != nil {
			t.Fatalf("deleting: %v", err)
		}
		await.Until(t, "gone to be deleted", waitTimeout, func() error {
			err := e.c.Get(ctx, types.NamespacedName{Name: "gone"}, &catalogdv1.ClusterCatalog{})
			if !apierrors.IsNotFound(err) {
				return fmt.Errorf("get returned %v, want not found (finalizer not removed?)", err)
			}
			return nil
		})
		if _, ok := e.store.Info("gone"); ok {
			t.Error("the index of a deleted catalog is live")
		}
		if _, ok := e.cats.Get("gone"); ok {
			t.Error("the registry still knows a deleted catalog")
		}
	})

	t.Run("a broken catalog does not affect another", func(t *testing.T) {
		good := e.reg.PushCatalog(t, "catalogs/good:v1", demoDir, registrytest.PushOptions{})
		bad := e.reg.PushCatalog(t, "catalogs/bad:v1", brokenCatalog(t), registrytest.PushOptions{})
		e.create(t, "bad", bad, nil)
		e.create(t, "good", good, nil)
		await.Until(t, "good to serve", waitTimeout, func() error { return e.servingDigest(t, "good", good) })
		// Broken content at a digest cannot fix itself: Blocked.
		await.Until(t, "bad to be blocked", waitTimeout, func() error {
			cat := e.get(t, "bad")
			if err := condition(cat, catalogdv1.TypeProgressing, metav1.ConditionFalse, catalogdv1.ReasonBlocked); err != nil {
				return err
			}
			return condition(cat, catalogdv1.TypeServing, metav1.ConditionFalse, catalogdv1.ReasonUnavailable)
		})
		if got := e.packages(t, "good"); got != wantPackages {
			t.Errorf("good index has %d packages, want %d", got, wantPackages)
		}
	})
}
