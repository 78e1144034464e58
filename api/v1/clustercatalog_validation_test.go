package v1_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	catalogdv1 "github.com/catalogd/catalogd/api/v1"
)

// These tests install the generated CRD (config/crd/bases) into a real
// kube-apiserver and etcd started by envtest, so they check the schema, the
// defaults and the CEL rules exactly as a cluster applies them.

const (
	tagRef    = "quay.io/operatorhubio/catalog:latest"
	digestRef = "quay.io/operatorhubio/catalog@sha256:200d4ddb2a73594b91358fe6397424e975205bfbe44614f5846033cad64b3f05"
)

var apiserver struct {
	once sync.Once
	env  *envtest.Environment
	c    client.Client
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if apiserver.env != nil {
		if err := apiserver.env.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "stopping envtest: %v\n", err)
			if code == 0 {
				code = 1
			}
		}
	}
	os.Exit(code)
}

// apiClient returns a client of the shared test apiserver, starting it on
// first use. Tests skip when KUBEBUILDER_ASSETS is unset.
func apiClient(t *testing.T) client.Client {
	t.Helper()
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		t.Skip("KUBEBUILDER_ASSETS is unset, so there is no kube-apiserver/etcd to test the CRD against: " +
			"run `make unit`, or `make envtest-bins` and then `KUBEBUILDER_ASSETS=$PWD/bin/k8s go test ./api/...`")
	}
	apiserver.once.Do(func() {
		useExisting := false
		env := &envtest.Environment{
			BinaryAssetsDirectory: assets,
			CRDDirectoryPaths:     []string{filepath.Join("..", "..", "config", "crd", "bases")},
			ErrorIfCRDPathMissing: true,
			UseExistingCluster:    &useExisting,
		}
		cfg, err := env.Start()
		if err != nil {
			apiserver.err = fmt.Errorf("starting envtest with binaries from %s: %w", assets, err)
			_ = env.Stop()
			return
		}
		apiserver.env = env
		scheme := runtime.NewScheme()
		if err := catalogdv1.AddToScheme(scheme); err != nil {
			apiserver.err = err
			return
		}
		apiserver.c, apiserver.err = client.New(cfg, client.Options{Scheme: scheme})
	})
	if apiserver.err != nil {
		t.Fatal(apiserver.err)
	}
	return apiserver.c
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// objectName turns a subtest name into a valid, unique object name.
func objectName(t *testing.T) string {
	name := strings.ToLower(t.Name())
	name = strings.Map(func(r rune) rune {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			return r
		}
		return '-'
	}, name)
	if len(name) > 63 {
		name = name[len(name)-63:]
	}
	return strings.Trim(name, "-")
}

func imageCatalog(name, ref string, pollMinutes *int) *catalogdv1.ClusterCatalog {
	return &catalogdv1.ClusterCatalog{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: catalogdv1.ClusterCatalogSpec{
			Source: catalogdv1.CatalogSource{
				Type:  catalogdv1.SourceTypeImage,
				Image: &catalogdv1.ImageSource{Ref: ref, PollIntervalMinutes: pollMinutes},
			},
		},
	}
}

func ptr[T any](v T) *T { return &v }

// wantInvalid fails unless err is the apiserver's Invalid error and its
// message holds every one of wants.
func wantInvalid(t *testing.T, err error, wants ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("create succeeded, want an Invalid error containing %q", wants)
	}
	t.Logf("apiserver: %v", err)
	if !apierrors.IsInvalid(err) {
		t.Fatalf("got error %v (reason %q), want reason Invalid", err, apierrors.ReasonForError(err))
	}
	for _, want := range wants {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q\ndoes not contain %q", err.Error(), want)
		}
	}
}

func TestClusterCatalogValidation(t *testing.T) {
	c := apiClient(t)

	for _, tc := range []struct {
		name   string
		mutate func(*catalogdv1.ClusterCatalog)
		// wantErr are substrings of the apiserver's error; none means the
		// object must be accepted.
		wantErr []string
	}{
		{name: "tag ref accepted"},
		{
			name:   "digest ref accepted",
			mutate: func(cc *catalogdv1.ClusterCatalog) { cc.Spec.Source.Image.Ref = digestRef },
		},
		{
			name: "tag ref on a registry with a port accepted",
			mutate: func(cc *catalogdv1.ClusterCatalog) {
				cc.Spec.Source.Image.Ref = "registry.example.com:5000/team/catalog:v1.2.3"
			},
		},
		{
			name:   "tag ref with poll interval accepted",
			mutate: func(cc *catalogdv1.ClusterCatalog) { cc.Spec.Source.Image.PollIntervalMinutes = ptr(10) },
		},
		{
			name:    "ref without tag or digest rejected",
			mutate:  func(cc *catalogdv1.ClusterCatalog) { cc.Spec.Source.Image.Ref = "quay.io/operatorhubio/catalog" },
			wantErr: []string{"spec.source.image.ref", "must end with a digest or a tag"},
		},
		{
			name:    "registry port is not a tag",
			mutate:  func(cc *catalogdv1.ClusterCatalog) { cc.Spec.Source.Image.Ref = "registry.example.com:5000/catalog" },
			wantErr: []string{"spec.source.image.ref", "must end with a digest or a tag"},
		},
		{
			name:    "ref without registry rejected",
			mutate:  func(cc *catalogdv1.ClusterCatalog) { cc.Spec.Source.Image.Ref = "catalog:latest" },
			wantErr: []string{"spec.source.image.ref", "must start with a valid registry domain"},
		},
		{
			name:    "uppercase repository rejected",
			mutate:  func(cc *catalogdv1.ClusterCatalog) { cc.Spec.Source.Image.Ref = "quay.io/OperatorHub/catalog:latest" },
			wantErr: []string{"spec.source.image.ref", "a valid repository name is required"},
		},
		{
			name: "tag longer than 127 characters rejected",
			mutate: func(cc *catalogdv1.ClusterCatalog) {
				cc.Spec.Source.Image.Ref = "quay.io/catalog:" + strings.Repeat("a", 128)
			},
			wantErr: []string{"spec.source.image.ref", "tag is invalid"},
		},
		{
			name:    "digest with a short hash rejected",
			mutate:  func(cc *catalogdv1.ClusterCatalog) { cc.Spec.Source.Image.Ref = "quay.io/catalog@sha256:abc123" },
			wantErr: []string{"spec.source.image.ref", "digest is invalid"},
		},
		{
			name: "pollIntervalMinutes with digest rejected",
			mutate: func(cc *catalogdv1.ClusterCatalog) {
				cc.Spec.Source.Image.Ref = digestRef
				cc.Spec.Source.Image.PollIntervalMinutes = ptr(5)
			},
			wantErr: []string{"spec.source.image", "cannot specify pollIntervalMinutes while using digest-based image"},
		},
		{
			name:    "pollIntervalMinutes 0 rejected",
			mutate:  func(cc *catalogdv1.ClusterCatalog) { cc.Spec.Source.Image.PollIntervalMinutes = ptr(0) },
			wantErr: []string{"spec.source.image.pollIntervalMinutes", "should be greater than or equal to 1"},
		},
		{
			name:    "image missing for type Image rejected",
			mutate:  func(cc *catalogdv1.ClusterCatalog) { cc.Spec.Source.Image = nil },
			wantErr: []string{"spec.source", "image is required when type is Image"},
		},
		{
			name:    "unknown source type rejected",
			mutate:  func(cc *catalogdv1.ClusterCatalog) { cc.Spec.Source.Type = "Helm" },
			wantErr: []string{"spec.source.type", `Unsupported value: "Helm"`, `"Image"`, `"Git"`, `"HTTP"`},
		},
		{
			name:    "bad availabilityMode rejected",
			mutate:  func(cc *catalogdv1.ClusterCatalog) { cc.Spec.AvailabilityMode = "Sometimes" },
			wantErr: []string{"spec.availabilityMode", `Unsupported value: "Sometimes"`, `"Unavailable"`, `"Available"`},
		},
		{
			name: "Unavailable availabilityMode and negative priority accepted",
			mutate: func(cc *catalogdv1.ClusterCatalog) {
				cc.Spec.AvailabilityMode = catalogdv1.AvailabilityModeUnavailable
				cc.Spec.Priority = -100
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testContext(t)
			cc := imageCatalog(objectName(t), tagRef, nil)
			if tc.mutate != nil {
				tc.mutate(cc)
			}
			err := c.Create(ctx, cc)
			if len(tc.wantErr) == 0 {
				if err != nil {
					t.Fatalf("create: %v", err)
				}
				return
			}
			wantInvalid(t, err, tc.wantErr...)
		})
	}
}

// TestClusterCatalogPriorityBounds sends priorities outside int32, which the
// typed client cannot express.
func TestClusterCatalogPriorityBounds(t *testing.T) {
	c := apiClient(t)
	for _, tc := range []struct {
		priority int64
		want     string
	}{
		{priority: 2147483648, want: "should be less than or equal to 2147483647"},
		{priority: -2147483649, want: "should be greater than or equal to -2147483648"},
	} {
		t.Run(fmt.Sprint(tc.priority), func(t *testing.T) {
			u := unstructuredCatalog(objectName(t))
			if err := unstructured.SetNestedField(u.Object, tc.priority, "spec", "priority"); err != nil {
				t.Fatal(err)
			}
			wantInvalid(t, c.Create(testContext(t), u), "spec.priority", tc.want)
		})
	}
}

func unstructuredCatalog(name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": catalogdv1.GroupVersion.String(),
		"kind":       "ClusterCatalog",
		"metadata":   map[string]any{"name": name},
		"spec": map[string]any{
			"source": map[string]any{
				"type":  "Image",
				"image": map[string]any{"ref": tagRef},
			},
		},
	}}
	return u
}

// TestClusterCatalogDefaults creates a catalog whose spec omits priority and
// availabilityMode altogether (the typed client always sends priority) and
// checks the apiserver fills in the defaults.
func TestClusterCatalogDefaults(t *testing.T) {
	c := apiClient(t)
	ctx := testContext(t)
	u := unstructuredCatalog("defaults")
	if err := c.Create(ctx, u); err != nil {
		t.Fatalf("create: %v", err)
	}

	var got catalogdv1.ClusterCatalog
	if err := c.Get(ctx, client.ObjectKey{Name: "defaults"}, &got); err != nil {
		t.Fatal(err)
	}
	if got.Spec.Priority != 0 {
		t.Errorf("priority = %d, want default 0", got.Spec.Priority)
	}
	if got.Spec.AvailabilityMode != catalogdv1.AvailabilityModeAvailable {
		t.Errorf("availabilityMode = %q, want default %q", got.Spec.AvailabilityMode, catalogdv1.AvailabilityModeAvailable)
	}
	if got.Spec.Source.Image.PollIntervalMinutes != nil {
		t.Errorf("pollIntervalMinutes = %d, want unset (no polling)", *got.Spec.Source.Image.PollIntervalMinutes)
	}
	// The raw object must hold the defaults too, not only the Go zero values.
	prio, found, err := unstructured.NestedInt64(u.Object, "spec", "priority")
	if err != nil || !found || prio != 0 {
		t.Errorf("created object's spec.priority = %d (found %v, err %v), want 0", prio, found, err)
	}
	mode, found, err := unstructured.NestedString(u.Object, "spec", "availabilityMode")
	if err != nil || !found || mode != "Available" {
		t.Errorf("created object's spec.availabilityMode = %q (found %v, err %v), want Available", mode, found, err)
	}
}

func TestClusterCatalogStatusSubresource(t *testing.T) {
	c := apiClient(t)
	ctx := testContext(t)
	cc := imageCatalog("status", tagRef, nil)
	if err := c.Create(ctx, cc); err != nil {
		t.Fatalf("create: %v", err)
	}

	now := metav1.NewTime(time.Now().Truncate(time.Second))
	cc.Status = catalogdv1.ClusterCatalogStatus{
		Conditions: []metav1.Condition{
			{Type: catalogdv1.TypeServing, Status: metav1.ConditionTrue, Reason: catalogdv1.ReasonAvailable, Message: "serving", LastTransitionTime: now},
			{Type: catalogdv1.TypeProgressing, Status: metav1.ConditionTrue, Reason: catalogdv1.ReasonSucceeded, Message: "unpacked", LastTransitionTime: now},
		},
		ResolvedSource: &catalogdv1.ResolvedCatalogSource{
			Type:  catalogdv1.SourceTypeImage,
			Image: &catalogdv1.ResolvedImageSource{Ref: digestRef},
		},
		URLs:         &catalogdv1.ClusterCatalogURLs{Base: "https://catalogd.catalogd-system.svc/catalogs/status"},
		LastUnpacked: &now,
	}
	// A change to spec sent through the status subresource must be ignored.
	cc.Spec.Priority = 42
	if err := c.Status().Update(ctx, cc); err != nil {
		t.Fatalf("status update: %v", err)
	}

	var got catalogdv1.ClusterCatalog
	if err := c.Get(ctx, client.ObjectKey{Name: "status"}, &got); err != nil {
		t.Fatal(err)
	}
	if got.Spec.Priority != 0 {
		t.Errorf("status update changed spec.priority to %d", got.Spec.Priority)
	}
	if got.Status.ResolvedSource == nil || got.Status.ResolvedSource.Image == nil || got.Status.ResolvedSource.Image.Ref != digestRef {
		t.Errorf("status.resolvedSource = %+v, want image ref %s", got.Status.ResolvedSource, digestRef)
	}
	if got.Status.URLs == nil || got.Status.URLs.Base != cc.Status.URLs.Base {
		t.Errorf("status.urls = %+v, want base %s", got.Status.URLs, cc.Status.URLs.Base)
	}
	if got.Status.LastUnpacked == nil || !got.Status.LastUnpacked.Equal(&now) {
		t.Errorf("status.lastUnpacked = %v, want %v", got.Status.LastUnpacked, now)
	}
	if len(got.Status.Conditions) != 2 {
		t.Errorf("status.conditions = %+v, want Serving and Progressing", got.Status.Conditions)
	}

	// And status sent through the main resource must be ignored.
	got.Status.URLs.Base = "https://elsewhere.example.com/"
	if err := c.Update(ctx, &got); err != nil {
		t.Fatalf("update: %v", err)
	}
	var again catalogdv1.ClusterCatalog
	if err := c.Get(ctx, client.ObjectKey{Name: "status"}, &again); err != nil {
		t.Fatal(err)
	}
	if again.Status.URLs.Base != cc.Status.URLs.Base {
		t.Errorf("update of the main resource changed status.urls.base to %s", again.Status.URLs.Base)
	}

	// The status schema is validated too: the resolved ref must be a digest
	// and the base URL http(s).
	bad := again.DeepCopy()
	bad.Status.ResolvedSource.Image.Ref = tagRef
	bad.Status.URLs.Base = "ftp://catalogd.example.com/"
	wantInvalid(t, c.Status().Update(ctx, bad),
		"status.resolvedSource.image.ref", "must end with a valid digest",
		"status.urls.base", "scheme must be http or https")

	// Duplicate condition types violate the list map.
	dup := again.DeepCopy()
	dup.Status.Conditions = append(dup.Status.Conditions, dup.Status.Conditions[0])
	wantInvalid(t, c.Status().Update(ctx, dup), "status.conditions", "Duplicate value")
}

const (
	gitURL    = "https://github.com/org/catalogs.git"
	commitSHA = "0123456789abcdef0123456789abcdef01234567"
	sha256Hex = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
	httpURL   = "https://example.com/catalogs/operators.tar.gz"
)

func gitCatalog(name string) *catalogdv1.ClusterCatalog {
	return &catalogdv1.ClusterCatalog{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: catalogdv1.ClusterCatalogSpec{Source: catalogdv1.CatalogSource{
			Type: catalogdv1.SourceTypeGit,
			Git:  &catalogdv1.GitSource{URL: gitURL, Ref: catalogdv1.GitRef{Branch: "main"}},
		}},
	}
}

func httpCatalog(name string) *catalogdv1.ClusterCatalog {
	return &catalogdv1.ClusterCatalog{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: catalogdv1.ClusterCatalogSpec{Source: catalogdv1.CatalogSource{
			Type: catalogdv1.SourceTypeHTTP,
			HTTP: &catalogdv1.HTTPSource{URL: httpURL},
		}},
	}
}

// TestClusterCatalogGitAndHTTPValidation checks every rule of the Git and
// HTTP sources, and the union rules that tie each member to its type.
func TestClusterCatalogGitAndHTTPValidation(t *testing.T) {
	c := apiClient(t)
	gitTests := []struct {
		name    string
		mutate  func(*catalogdv1.GitSource)
		wantErr []string
	}{
		{name: "branch accepted"},
		{name: "branch with slash and poll accepted", mutate: func(g *catalogdv1.GitSource) {
			g.Ref.Branch, g.PollIntervalMinutes = "release/v1.2", ptr(5)
		}},
		{name: "tag accepted", mutate: func(g *catalogdv1.GitSource) { g.Ref = catalogdv1.GitRef{Tag: "v1.2.0"} }},
		{name: "commit accepted", mutate: func(g *catalogdv1.GitSource) { g.Ref = catalogdv1.GitRef{Commit: commitSHA} }},
		{name: "ssh url, directory and secret accepted", mutate: func(g *catalogdv1.GitSource) {
			g.URL, g.Directory, g.SecretRef = "ssh://git@github.com:22/org/catalogs.git", "catalogs/prod", &catalogdv1.SecretReference{Name: "git-creds"}
		}},
		{name: "scp-like url accepted", mutate: func(g *catalogdv1.GitSource) { g.URL = "git@github.com:org/catalogs.git" }},
		{name: "no ref rejected", mutate: func(g *catalogdv1.GitSource) { g.Ref = catalogdv1.GitRef{} },
			wantErr: []string{"spec.source.git.ref", "exactly one of branch, tag or commit is required"}},
		{name: "two refs rejected", mutate: func(g *catalogdv1.GitSource) { g.Ref.Tag = "v1" },
			wantErr: []string{"spec.source.git.ref", "exactly one of branch, tag or commit is required"}},
		{name: "short commit rejected", mutate: func(g *catalogdv1.GitSource) { g.Ref = catalogdv1.GitRef{Commit: "0123abc"} },
			wantErr: []string{"spec.source.git.ref.commit", "40 lower-case hex digits"}},
		{name: "poll with commit rejected", mutate: func(g *catalogdv1.GitSource) {
			g.Ref, g.PollIntervalMinutes = catalogdv1.GitRef{Commit: commitSHA}, ptr(5)
		}, wantErr: []string{"spec.source.git", "cannot specify pollIntervalMinutes with ref.commit"}},
		{name: "poll 0 rejected", mutate: func(g *catalogdv1.GitSource) { g.PollIntervalMinutes = ptr(0) },
			wantErr: []string{"spec.source.git.pollIntervalMinutes", "greater than or equal to 1"}},
		{name: "branch option rejected", mutate: func(g *catalogdv1.GitSource) { g.Ref.Branch = "--upload-pack=x" },
			wantErr: []string{"spec.source.git.ref.branch", "must be a branch name"}},
		{name: "tag with dots rejected", mutate: func(g *catalogdv1.GitSource) { g.Ref = catalogdv1.GitRef{Tag: "v1..2"} },
			wantErr: []string{"spec.source.git.ref.tag", "must be a tag name"}},
		{name: "http url rejected", mutate: func(g *catalogdv1.GitSource) { g.URL = "http://github.com/org/catalogs.git" },
			wantErr: []string{"spec.source.git.url", "must be an https:// or ssh:// URL"}},
		{name: "file url rejected", mutate: func(g *catalogdv1.GitSource) { g.URL = "file:///srv/repo" },
			wantErr: []string{"spec.source.git.url", "must be an https:// or ssh:// URL"}},
		{name: "credentials in url rejected", mutate: func(g *catalogdv1.GitSource) { g.URL = "https://token@github.com/org/catalogs.git" },
			wantErr: []string{"spec.source.git.url", "must not hold credentials"}},
		{name: "ssh password rejected", mutate: func(g *catalogdv1.GitSource) { g.URL = "ssh://git:pw@github.com/org/catalogs.git" },
			wantErr: []string{"spec.source.git.url", "must not hold credentials"}},
		{name: "directory in url rejected", mutate: func(g *catalogdv1.GitSource) { g.URL = gitURL + "//catalogs" },
			wantErr: []string{"spec.source.git.url", "goes in directory"}},
		{name: "query in url rejected", mutate: func(g *catalogdv1.GitSource) { g.URL = gitURL + "?ref=main" },
			wantErr: []string{"spec.source.git.url", "without a query"}},
		{name: "absolute directory rejected", mutate: func(g *catalogdv1.GitSource) { g.Directory = "/etc" },
			wantErr: []string{"spec.source.git.directory", "relative to the repository's root"}},
		{name: "directory leaving the repository rejected", mutate: func(g *catalogdv1.GitSource) { g.Directory = "a/../../etc" },
			wantErr: []string{"spec.source.git.directory", "without '..'"}},
		{name: "bad secret name rejected", mutate: func(g *catalogdv1.GitSource) { g.SecretRef = &catalogdv1.SecretReference{Name: "Git_Creds"} },
			wantErr: []string{"spec.source.git.secretRef.name", "must be a Secret name"}},
	}
	for _, tc := range gitTests {
		t.Run("git/"+tc.name, func(t *testing.T) {
			cc := gitCatalog(objectName(t))
			if tc.mutate != nil {
				tc.mutate(cc.Spec.Source.Git)
			}
			createOrWant(t, c, cc, tc.wantErr)
		})
	}

	httpTests := []struct {
		name    string
		mutate  func(*catalogdv1.HTTPSource)
		wantErr []string
	}{
		{name: "url accepted"},
		{name: "plain http, poll and secrets accepted", mutate: func(h *catalogdv1.HTTPSource) {
			h.URL, h.PollIntervalMinutes = "http://mirror.internal:8080/c.json?v=1", ptr(10)
			h.SecretRef, h.CASecretRef = &catalogdv1.SecretReference{Name: "creds"}, &catalogdv1.SecretReference{Name: "ca"}
		}},
		{name: "sha256 accepted", mutate: func(h *catalogdv1.HTTPSource) { h.SHA256 = sha256Hex }},
		{name: "poll with sha256 rejected", mutate: func(h *catalogdv1.HTTPSource) { h.SHA256, h.PollIntervalMinutes = sha256Hex, ptr(1) },
			wantErr: []string{"spec.source.http", "cannot specify pollIntervalMinutes with sha256"}},
		{name: "short sha256 rejected", mutate: func(h *catalogdv1.HTTPSource) { h.SHA256 = "abc" },
			wantErr: []string{"spec.source.http.sha256", "64 lower-case hex digits"}},
		{name: "ftp rejected", mutate: func(h *catalogdv1.HTTPSource) { h.URL = "ftp://example.com/c.tar" },
			wantErr: []string{"spec.source.http.url", "must be an https:// or http:// URL"}},
		{name: "credentials rejected", mutate: func(h *catalogdv1.HTTPSource) { h.URL = "https://u:p@example.com/c.tar" },
			wantErr: []string{"spec.source.http.url", "must not hold credentials"}},
		{name: "fragment rejected", mutate: func(h *catalogdv1.HTTPSource) { h.URL = httpURL + "#sha256=" + sha256Hex },
			wantErr: []string{"spec.source.http.url", "must not have a fragment"}},
		{name: "git repository rejected", mutate: func(h *catalogdv1.HTTPSource) { h.URL = gitURL },
			wantErr: []string{"spec.source.http.url", "use type Git"}},
		{name: "go-getter directory rejected", mutate: func(h *catalogdv1.HTTPSource) { h.URL = "https://host/org/repo//catalogs" },
			wantErr: []string{"spec.source.http.url", "use type Git"}},
	}
	for _, tc := range httpTests {
		t.Run("http/"+tc.name, func(t *testing.T) {
			cc := httpCatalog(objectName(t))
			if tc.mutate != nil {
				tc.mutate(cc.Spec.Source.HTTP)
			}
			createOrWant(t, c, cc, tc.wantErr)
		})
	}

	unionTests := []struct {
		name    string
		cc      func(name string) *catalogdv1.ClusterCatalog
		wantErr []string
	}{
		{name: "git without git rejected", cc: func(n string) *catalogdv1.ClusterCatalog {
			cc := gitCatalog(n)
			cc.Spec.Source.Git = nil
			return cc
		}, wantErr: []string{"spec.source", "git is required when type is Git"}},
		{name: "http without http rejected", cc: func(n string) *catalogdv1.ClusterCatalog {
			cc := httpCatalog(n)
			cc.Spec.Source.HTTP = nil
			return cc
		}, wantErr: []string{"spec.source", "http is required when type is HTTP"}},
		{name: "image with git rejected", cc: func(n string) *catalogdv1.ClusterCatalog {
			cc := imageCatalog(n, tagRef, nil)
			cc.Spec.Source.Git = gitCatalog(n).Spec.Source.Git
			return cc
		}, wantErr: []string{"spec.source", "git is required when type is Git, and forbidden otherwise"}},
		{name: "git with http rejected", cc: func(n string) *catalogdv1.ClusterCatalog {
			cc := gitCatalog(n)
			cc.Spec.Source.HTTP = httpCatalog(n).Spec.Source.HTTP
			return cc
		}, wantErr: []string{"spec.source", "http is required when type is HTTP, and forbidden otherwise"}},
		{name: "http with image rejected", cc: func(n string) *catalogdv1.ClusterCatalog {
			cc := httpCatalog(n)
			cc.Spec.Source.Image = &catalogdv1.ImageSource{Ref: tagRef}
			return cc
		}, wantErr: []string{"spec.source", "image is required when type is Image, and forbidden otherwise"}},
	}
	for _, tc := range unionTests {
		t.Run("union/"+tc.name, func(t *testing.T) {
			createOrWant(t, c, tc.cc(objectName(t)), tc.wantErr)
		})
	}
}

func createOrWant(t *testing.T, c client.Client, cc *catalogdv1.ClusterCatalog, wantErr []string) {
	t.Helper()
	err := c.Create(testContext(t), cc)
	if len(wantErr) == 0 {
		if err != nil {
			t.Fatalf("create: %v", err)
		}
		return
	}
	wantInvalid(t, err, wantErr...)
}

// TestClusterCatalogResolvedSourceValidation writes each kind of resolved
// source through the status subresource: the pinned commit, sha256 and
// artifact form are accepted, and malformed pins refused.
func TestClusterCatalogResolvedSourceValidation(t *testing.T) {
	c := apiClient(t)
	for _, tc := range []struct {
		name     string
		cc       func(string) *catalogdv1.ClusterCatalog
		resolved catalogdv1.ResolvedCatalogSource
		wantErr  []string
	}{
		{name: "git", cc: gitCatalog, resolved: catalogdv1.ResolvedCatalogSource{Type: catalogdv1.SourceTypeGit,
			Git: &catalogdv1.ResolvedGitSource{URL: gitURL, Commit: commitSHA, Directory: "catalogs", TreeDigest: "git-tree:" + commitSHA}}},
		{name: "http", cc: httpCatalog, resolved: catalogdv1.ResolvedCatalogSource{Type: catalogdv1.SourceTypeHTTP,
			HTTP: &catalogdv1.ResolvedHTTPSource{URL: httpURL, SHA256: sha256Hex}}},
		{name: "artifact", cc: func(n string) *catalogdv1.ClusterCatalog { return imageCatalog(n, tagRef, nil) },
			resolved: catalogdv1.ResolvedCatalogSource{Type: catalogdv1.SourceTypeImage,
				Image: &catalogdv1.ResolvedImageSource{Ref: digestRef, Form: catalogdv1.ImageFormArtifact}}},
		{name: "git short commit", cc: gitCatalog, resolved: catalogdv1.ResolvedCatalogSource{Type: catalogdv1.SourceTypeGit,
			Git: &catalogdv1.ResolvedGitSource{URL: gitURL, Commit: "abc", TreeDigest: "sha256:" + sha256Hex}},
			wantErr: []string{"status.resolvedSource.git.commit", "40 lower-case hex digits", "status.resolvedSource.git.treeDigest", "git-tree:"}},
		{name: "http short sha256", cc: httpCatalog, resolved: catalogdv1.ResolvedCatalogSource{Type: catalogdv1.SourceTypeHTTP,
			HTTP: &catalogdv1.ResolvedHTTPSource{URL: httpURL, SHA256: "abc"}},
			wantErr: []string{"status.resolvedSource.http.sha256", "64 lower-case hex digits"}},
		{name: "git type with http member", cc: gitCatalog, resolved: catalogdv1.ResolvedCatalogSource{Type: catalogdv1.SourceTypeGit,
			HTTP: &catalogdv1.ResolvedHTTPSource{URL: httpURL, SHA256: sha256Hex}},
			wantErr: []string{"status.resolvedSource", "git is required when type is Git", "http is required when type is HTTP"}},
		{name: "unknown form", cc: func(n string) *catalogdv1.ClusterCatalog { return imageCatalog(n, tagRef, nil) },
			resolved: catalogdv1.ResolvedCatalogSource{Type: catalogdv1.SourceTypeImage,
				Image: &catalogdv1.ResolvedImageSource{Ref: digestRef, Form: "Helm"}},
			wantErr: []string{"status.resolvedSource.image.form", `Unsupported value: "Helm"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testContext(t)
			cc := tc.cc(objectName(t))
			if err := c.Create(ctx, cc); err != nil {
				t.Fatalf("create: %v", err)
			}
			cc.Status.ResolvedSource = &tc.resolved
			err := c.Status().Update(ctx, cc)
			if len(tc.wantErr) > 0 {
				wantInvalid(t, err, tc.wantErr...)
				return
			}
			if err != nil {
				t.Fatalf("status update: %v", err)
			}
			var got catalogdv1.ClusterCatalog
			if err := c.Get(ctx, client.ObjectKeyFromObject(cc), &got); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got.Status.ResolvedSource, &tc.resolved) {
				t.Errorf("status.resolvedSource = %+v, want %+v", got.Status.ResolvedSource, tc.resolved)
			}
		})
	}
}
