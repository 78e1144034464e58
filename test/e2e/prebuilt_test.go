package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	catalogdv1 "github.com/catalogd/catalogd/api/v1"
	catalogdclient "github.com/catalogd/catalogd/client"
	"github.com/catalogd/catalogd/test/await"
	"github.com/catalogd/catalogd/test/registrytest"
)

// TestTwoManagersTakePrebuiltIndex: with the catalog's index published
// beside its image (catalogd index publish), both replicas of the manager
// serve it prebuilt, without downloading the image's blobs, and answer
// alike.
func TestTwoManagersTakePrebuiltIndex(t *testing.T) {
	c, kubeconfig := startAPIServer(t)
	reg := registrytest.New(t, registrytest.WithReferrers())
	reg.PushCatalog(t, "catalogs/demo:v1", demoDir, registrytest.PushOptions{})
	image := reg.Host + "/catalogs/demo:v1"
	if out, err := exec.Command(binary, "index", "publish", image, "--insecure-registry", reg.Host).CombinedOutput(); err != nil {
		t.Fatalf("catalogd index publish: %v\n%s", err, out)
	}
	imageBlobs := registrytest.Blobs(t, image)
	reg.Reset()

	obj := &catalogdv1.ClusterCatalog{
		ObjectMeta: metav1.ObjectMeta{Name: "demo"},
		Spec: catalogdv1.ClusterCatalogSpec{Source: catalogdv1.CatalogSource{
			Type: catalogdv1.SourceTypeImage, Image: &catalogdv1.ImageSource{Ref: image},
		}},
	}
	if err := c.Create(context.Background(), obj); err != nil {
		t.Fatal(err)
	}
	common := []string{"--kubeconfig", kubeconfig, "--leader-elect", "--leader-election-namespace", "default", "--insecure-registry", reg.Host}
	replicas := []*managerProc{
		startManager(t, append([]string{"--data-dir", t.TempDir()}, common...)...),
		startManager(t, append([]string{"--data-dir", t.TempDir()}, common...)...),
	}
	var details []catalogdclient.CatalogDetail
	for _, m := range replicas {
		var d catalogdclient.CatalogDetail
		await.Until(t, "every replica to serve demo", 60*time.Second, func() error {
			code, _, body, err := get(m.api + "/catalogs/demo")
			if err != nil || code != http.StatusOK {
				return fmt.Errorf("GET /catalogs/demo: %d %s %v", code, body, err)
			}
			if err := json.Unmarshal(body, &d); err != nil {
				return err
			}
			if d.State != "Serving" {
				return fmt.Errorf("demo is %s", d.State)
			}
			return nil
		})
		if d.Build.Mode != "prebuilt" || d.Build.NotPrebuilt != "" {
			t.Errorf("replica %s: build %+v; want prebuilt", m.api, d.Build)
		}
		d.IndexedAt = nil
		details = append(details, d)
	}
	if fmt.Sprint(details[0]) != fmt.Sprint(details[1]) {
		t.Errorf("the replicas describe demo differently:\n%+v\n%+v", details[0], details[1])
	}
	for _, p := range []string{"/catalogs/demo/api/v1/all", "/catalogs/demo/packages"} {
		codeA, etagA, bodyA, errA := get(replicas[0].api + p)
		codeB, etagB, bodyB, errB := get(replicas[1].api + p)
		if errA != nil || errB != nil || codeA != http.StatusOK || codeB != http.StatusOK || etagA != etagB || !bytes.Equal(bodyA, bodyB) {
			t.Errorf("GET %s differs between replicas: %d %s %v / %d %s %v", p, codeA, etagA, errA, codeB, etagB, errB)
		}
	}
	// No replica pulled the image's config or layers.
	for _, r := range reg.Requests() {
		if _, ok := imageBlobs[registrytest.BlobDigest(r.Path)]; ok && r.Method == http.MethodGet {
			t.Errorf("a replica downloaded the image's blob %s", r.Path)
		}
	}
}
