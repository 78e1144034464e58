package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	apitypes "k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/yaml"

	"github.com/catalogd/catalogd/test/await"
	"github.com/catalogd/catalogd/test/kubetest"
	"github.com/catalogd/catalogd/test/syncbuf"
)

const (
	defaultDir    = "../../config/default"
	packageAPIDir = "../../config/overlays/package-api"
)

func TestImageOverride(t *testing.T) {
	tests := []struct {
		image    string
		want     types.Image
		rendered string
	}{
		{"registry.example/olm/catalogd:v1.2.3", types.Image{Name: "catalogd", NewName: "registry.example/olm/catalogd", NewTag: "v1.2.3"}, ""},
		{"localhost:5000/catalogd:dev", types.Image{Name: "catalogd", NewName: "localhost:5000/catalogd", NewTag: "dev"}, ""},
		{"localhost:5000/catalogd", types.Image{Name: "catalogd", NewName: "localhost:5000/catalogd", NewTag: "latest"}, "localhost:5000/catalogd:latest"},
		{
			"localhost:5000/catalogd@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
			types.Image{Name: "catalogd", NewName: "localhost:5000/catalogd", Digest: "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}, "",
		},
	}
	for _, tt := range tests {
		t.Run(tt.image, func(t *testing.T) {
			got, err := imageOverride(tt.image)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("imageOverride(%q) = %+v, want %+v", tt.image, got, tt.want)
			}
			objs, err := Render(defaultDir, tt.image)
			if err != nil {
				t.Fatal(err)
			}
			want := tt.rendered
			if want == "" {
				want = tt.image
			}
			if images := containerImages(t, objs); len(images) != 1 || images[0] != want {
				t.Errorf("rendered container images %q, want just %q", images, want)
			}
		})
	}
	if _, err := imageOverride("Not A Reference"); err == nil {
		t.Error("imageOverride accepted an invalid reference")
	}
}

func containerImages(t *testing.T, objs []*unstructured.Unstructured) []string {
	t.Helper()
	var images []string
	for _, o := range objs {
		containers, _, err := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
		if err != nil {
			t.Fatalf("%s: %v", describe(o), err)
		}
		for _, c := range containers {
			images = append(images, c.(map[string]any)["image"].(string))
		}
	}
	return images
}

// TestDeployUndeploy runs `deploy` and `deploy -delete` as make does, with a
// kubeconfig file, against a real API server: apply twice (the second must
// be a no-op success), check every object exists and is owned by this
// tool's field manager, then delete twice and check everything but the
// shared namespace is gone.
// The package API overlay adds cluster-scoped objects (an APIService,
// cluster roles) and one in kube-system, each of which must be applied,
// owned and deleted the same way.
func TestDeployUndeploy(t *testing.T) {
	for _, dir := range []string{defaultDir, packageAPIDir} {
		t.Run(filepath.Base(dir), func(t *testing.T) { testDeployUndeploy(t, dir) })
	}
}

func testDeployUndeploy(t *testing.T, dir string) {
	c, kubeconfig := startAPIServer(t)
	ctx := context.Background()
	const image = "registry.example/olm/catalogd:v9"
	objs, err := Render(dir, image)
	if err != nil {
		t.Fatal(err)
	}

	for i := range 2 {
		var out bytes.Buffer
		if err := run(ctx, []string{"-kubeconfig", kubeconfig, "-image", image, dir}, &out); err != nil {
			t.Fatalf("deploy run %d: %v\n%s", i+1, err, out.String())
		}
	}
	for _, want := range objs {
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(want.GroupVersionKind())
		if err := c.Get(ctx, client.ObjectKeyFromObject(want), got); err != nil {
			t.Errorf("after deploy, %s: %v", describe(want), err)
			continue
		}
		managers := map[string]bool{}
		for _, mf := range got.GetManagedFields() {
			managers[mf.Manager] = true
		}
		if !managers[fieldManager] {
			t.Errorf("%s has field managers %v, want %s among them", describe(want), managers, fieldManager)
		}
	}
	dep := &unstructured.Unstructured{}
	dep.SetAPIVersion("apps/v1")
	dep.SetKind("Deployment")
	if err := c.Get(ctx, client.ObjectKey{Namespace: "olmv1-system", Name: "catalogd-controller-manager"}, dep); err != nil {
		t.Fatal(err)
	}
	if images := containerImages(t, []*unstructured.Unstructured{dep}); len(images) != 1 || images[0] != image {
		t.Errorf("deployed images %q, want %q", images, image)
	}

	for i := range 2 {
		var out bytes.Buffer
		if err := run(ctx, []string{"-kubeconfig", kubeconfig, "-delete", dir}, &out); err != nil {
			t.Fatalf("undeploy run %d: %v\n%s", i+1, err, out.String())
		}
	}
	for _, want := range objs {
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(want.GroupVersionKind())
		err := c.Get(ctx, client.ObjectKeyFromObject(want), got)
		switch {
		case want.GetKind() == "Namespace":
			if err != nil {
				t.Errorf("undeploy removed the shared namespace %s: %v", want.GetName(), err)
			}
		case apierrors.IsNotFound(err):
		case err != nil:
			t.Errorf("after undeploy, %s: %v", describe(want), err)
		case got.GetDeletionTimestamp() == nil:
			// envtest runs no garbage collector or namespace controller,
			// but a CRD's own finalizer runs in the API server, so only
			// "being deleted" or "gone" are acceptable.
			t.Errorf("after undeploy, %s still exists and is not being deleted", describe(want))
		}
	}
}

// TestDeployRefusesAnotherOwner checks that a Service someone else
// applied (as OLM v1's catalogd does) stops make deploy and make undeploy
// with a message that says what to do, and that -adopt takes it over.
func TestDeployRefusesAnotherOwner(t *testing.T) {
	c, kubeconfig := startAPIServer(t)
	ctx := context.Background()
	objs, err := Render(defaultDir, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, obj := range objs {
		if obj.GetKind() == "Namespace" || obj.GetKind() == "Service" {
			if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj.DeepCopy()), client.FieldOwner("olm-operator"), client.ForceOwnership); err != nil {
				t.Fatal(err)
			}
		}
	}
	var out bytes.Buffer
	err = run(ctx, []string{"-kubeconfig", kubeconfig, defaultDir}, &out)
	if err == nil || !strings.Contains(err.Error(), "service/catalogd-service") || !strings.Contains(err.Error(), "olm-operator") || !strings.Contains(err.Error(), "ADOPT=1") {
		t.Fatalf("deploy over another owner's Service: %v, want a refusal naming the Service, its manager and ADOPT=1", err)
	}
	if strings.Contains(out.String(), "applied") {
		t.Errorf("deploy applied objects before refusing:\n%s", out.String())
	}
	if err := run(ctx, []string{"-kubeconfig", kubeconfig, "-delete", defaultDir}, &out); err == nil || !strings.Contains(err.Error(), "olm-operator") {
		t.Errorf("undeploy of another owner's Service: %v, want a refusal", err)
	}
	if err := run(ctx, []string{"-kubeconfig", kubeconfig, "-adopt", defaultDir}, &out); err != nil {
		t.Fatalf("deploy -adopt: %v\n%s", err, out.String())
	}
}

// TestDeployRefusesForeignAPIService registers packages.operators.coreos.com/v1
// for another Service, as OLM v0 does for its packageserver, and checks that
// deploying the package API overlay stops before applying anything, with or
// without ADOPT, saying who serves the group; that undeploy leaves that
// APIService alone; and that an APIService already pointing at catalogd's
// Service (a second make deploy) is not refused.
func TestDeployRefusesForeignAPIService(t *testing.T) {
	c, kubeconfig := startAPIServer(t)
	ctx := context.Background()
	objs, err := Render(packageAPIDir, "")
	if err != nil {
		t.Fatal(err)
	}
	var ours *unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == "APIService" {
			ours = o
		}
	}
	if ours == nil {
		t.Fatalf("%s renders no APIService", packageAPIDir)
	}
	foreign := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1",
		"kind":       "APIService",
		"metadata":   map[string]any{"name": ours.GetName()},
		"spec": map[string]any{
			"group": "packages.operators.coreos.com", "version": "v1",
			"groupPriorityMinimum": int64(2000), "versionPriority": int64(15),
			"service": map[string]any{"namespace": "olm", "name": "packageserver-service", "port": int64(5443)},
		},
	}}
	if err := c.Create(ctx, foreign); err != nil {
		t.Fatal(err)
	}
	before := foreign.DeepCopy()

	for _, args := range [][]string{{packageAPIDir}, {"-adopt", packageAPIDir}} {
		var out bytes.Buffer
		err := run(ctx, append([]string{"-kubeconfig", kubeconfig}, args...), &out)
		if err == nil || !strings.Contains(err.Error(), "apiservice/v1.packages.operators.coreos.com") ||
			!strings.Contains(err.Error(), "olm/packageserver-service") || strings.Contains(err.Error(), "\n") {
			t.Fatalf("deploy %q over OLM v0's APIService: %v, want a one-line refusal naming the APIService and its Service", args, err)
		}
		if out.Len() != 0 {
			t.Errorf("deploy %q printed before refusing:\n%s", args, out.String())
		}
	}
	// Nothing was applied: not even the namespace, which comes first.
	for _, o := range objs {
		if o.GetKind() == "APIService" {
			continue
		}
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(o.GroupVersionKind())
		if err := c.Get(ctx, client.ObjectKeyFromObject(o), got); !apierrors.IsNotFound(err) && !strings.Contains(o.GetName(), "clustercatalogs") {
			t.Errorf("after the refusal, %s: %v, want not found", describe(o), err)
		}
	}

	var out bytes.Buffer
	if err := run(ctx, []string{"-kubeconfig", kubeconfig, "-delete", packageAPIDir}, &out); err != nil {
		t.Fatalf("undeploy: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "apiservice/v1.packages.operators.coreos.com kept (served by service olm/packageserver-service") {
		t.Errorf("undeploy did not say it kept the foreign APIService:\n%s", out.String())
	}
	got := &unstructured.Unstructured{}
	got.SetGroupVersionKind(foreign.GroupVersionKind())
	if err := c.Get(ctx, client.ObjectKeyFromObject(foreign), got); err != nil {
		t.Fatalf("after undeploy, OLM v0's APIService: %v", err)
	}
	// Its status changes (the API server finds the Service missing), its
	// spec and labels must not.
	if !equality.Semantic.DeepEqual(got.Object["spec"], before.Object["spec"]) || len(got.GetLabels()) != 0 || got.GetDeletionTimestamp() != nil {
		t.Errorf("deploy or undeploy changed OLM v0's APIService: spec %v (was %v), labels %v, deletion %v",
			got.Object["spec"], before.Object["spec"], got.GetLabels(), got.GetDeletionTimestamp())
	}

	// Once OLM v0 is gone and catalogd's own APIService is there, deploying
	// again goes ahead.
	if err := c.Delete(ctx, got); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		out.Reset()
		if err := run(ctx, []string{"-kubeconfig", kubeconfig, packageAPIDir}, &out); err != nil {
			t.Fatalf("deploy run %d without OLM v0: %v\n%s", i+1, err, out.String())
		}
	}
}

// TestRenderMissing checks that a bad directory is reported with its name.
func TestRenderMissing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "nope")
	_, err := Render(dir, "")
	if err == nil || !strings.Contains(err.Error(), dir) {
		t.Errorf("Render(%s) error %v, want one naming the directory", dir, err)
	}
}

// TestSamplesAreValid has the API server validate every sample against the
// CRD, so that the README's first step does not fail.
func TestSamplesAreValid(t *testing.T) {
	c, _ := startAPIServer(t)
	files, err := filepath.Glob(filepath.Join("..", "..", "config", "samples", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no samples in config/samples: %v", err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		obj := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(data, &obj.Object); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if err := c.Create(context.Background(), obj, client.DryRunAll); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// startAPIServer runs envtest for the test and returns a client of it and
// a kubeconfig file for run.
func startAPIServer(t *testing.T) (client.Client, string) {
	t.Helper()
	cfg := kubetest.Start(t)
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return c, kubetest.WriteKubeconfig(t, cfg)
}

// TestDeployWaitsForDeletedCRD: deploying while the CRD of an undeploy is
// still being deleted (a ClusterCatalog's finalizer holds it) waits until
// it is gone, says so, and leaves a live, established CRD; applied into the
// dying object, the CRD would vanish after deploy reported success.
func TestDeployWaitsForDeletedCRD(t *testing.T) {
	c, kubeconfig := startAPIServer(t)
	ctx := t.Context()
	var out bytes.Buffer
	if err := run(ctx, []string{"-kubeconfig", kubeconfig, defaultDir}, &out); err != nil {
		t.Fatalf("deploy: %v\n%s", err, out.String())
	}
	const crdName = "clustercatalogs.olm.operatorframework.io"
	held := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "olm.operatorframework.io/v1",
		"kind":       "ClusterCatalog",
		"metadata":   map[string]any{"name": "held", "finalizers": []any{"test.catalogd.io/hold"}},
		"spec":       map[string]any{"source": map[string]any{"type": "Image", "image": map[string]any{"ref": "quay.io/org/catalog:tag"}}},
	}}
	if err := c.Create(ctx, held); err != nil {
		t.Fatal(err)
	}
	crd := &unstructured.Unstructured{}
	crd.SetAPIVersion("apiextensions.k8s.io/v1")
	crd.SetKind("CustomResourceDefinition")
	crd.SetName(crdName)
	if err := c.Delete(ctx, crd); err != nil {
		t.Fatal(err)
	}

	var deployOut syncbuf.Buffer
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"-kubeconfig", kubeconfig, defaultDir}, &deployOut) }()
	await.True(t, "deploy to say it waits for the deleted CRD", 30*time.Second, func() bool {
		return strings.Contains(deployOut.String(), "customresourcedefinition/"+crdName+" is being deleted; waiting until it is gone")
	})
	// Let the deletion finish: the CRD goes once its last resource does.
	patch := []byte(`{"metadata":{"finalizers":null}}`)
	if err := c.Patch(ctx, held, client.RawPatch(apitypes.MergePatchType, patch)); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("deploy: %v\n%s", err, deployOut.String())
	}
	got := &unstructured.Unstructured{}
	got.SetAPIVersion("apiextensions.k8s.io/v1")
	got.SetKind("CustomResourceDefinition")
	if err := c.Get(ctx, client.ObjectKey{Name: crdName}, got); err != nil {
		t.Fatalf("after deploy, the CRD: %v\n%s", err, deployOut.String())
	}
	if got.GetDeletionTimestamp() != nil {
		t.Fatalf("after deploy, the CRD is still being deleted\n%s", deployOut.String())
	}
}
