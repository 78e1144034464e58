package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/kustomize/api/types"

	"github.com/catalogd/catalogd/test/kubetest"
)

const defaultDir = "../../config/default"

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
func TestDeployUndeploy(t *testing.T) {
	cfg := kubetest.Start(t)
	kubeconfig := kubetest.WriteKubeconfig(t, cfg)
	ctx := context.Background()
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	const image = "registry.example/olm/catalogd:v9"
	objs, err := Render(defaultDir, image)
	if err != nil {
		t.Fatal(err)
	}

	for i := range 2 {
		var out bytes.Buffer
		if err := run(ctx, []string{"-kubeconfig", kubeconfig, "-image", image, defaultDir}, &out); err != nil {
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
		if err := run(ctx, []string{"-kubeconfig", kubeconfig, "-delete", defaultDir}, &out); err != nil {
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

// TestRenderMissing checks that a bad directory is reported with its name.
func TestRenderMissing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "nope")
	_, err := Render(dir, "")
	if err == nil || !strings.Contains(err.Error(), dir) {
		t.Errorf("Render(%s) error %v, want one naming the directory", dir, err)
	}
}
