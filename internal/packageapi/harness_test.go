package packageapi

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	pkgv1 "github.com/catalogd/catalogd/api/packages/v1"
	"github.com/catalogd/catalogd/internal/catalogdir"
	"github.com/catalogd/catalogd/internal/catalogs"
	"github.com/catalogd/catalogd/internal/store"
	"github.com/catalogd/catalogd/test/kubetest"
)

// testNamespace is where the test's users read packages.
const testNamespace = "team"

// env is a package API server on loopback, delegating to envtest's real
// kube-apiserver, over a real store.
type env struct {
	kube    *rest.Config
	store   *store.Store
	table   *catalogs.Table
	srv     *Server
	url     string
	reader  string // token of a user whose RBAC allows reading packagemanifests
	outsder string // token of a user whose RBAC allows nothing
}

// testCatalog is a catalog to serve: its directory and what the table
// knows of it.
type testCatalog struct {
	dir      string
	priority int32
	labels   map[string]string
}

// startEnv starts envtest, indexes the catalogs into a store and serves
// the package API over them until the test ends.
func startEnv(t testing.TB, cats map[string]testCatalog) *env {
	t.Helper()
	e := startEnvNoServer(t, cats)
	e.startServer(t)
	return e
}

// startEnvNoServer is startEnv without the package API: envtest, its users
// and the indexed catalogs.
func startEnvNoServer(t testing.TB, cats map[string]testCatalog) *env {
	t.Helper()
	kube := kubetest.Start(t)
	st, err := store.New(t.TempDir(), testr.NewWithInterface(t, testr.Options{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	table := catalogs.NewTable()
	e := &env{kube: kube, store: st, table: table}
	for name, c := range cats {
		e.index(t, name, c)
	}
	table.MarkLoaded()
	e.reader, e.outsder = makeUsers(t, kube)
	return e
}

// startServer serves the package API over e's store until the test ends.
func (e *env) startServer(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := New(Config{BindAddress: "127.0.0.1:0", Kube: e.kube, HomeNamespace: "catalogd-system", Log: testr.NewWithInterface(t, testr.Options{})}, e.store, e.table)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	e.srv = srv
	e.url = "https://" + srv.Addr().String()
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("package API server: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Errorf("package API server did not stop")
		}
	})
	e.waitReady(t)
}

// index makes c the live index of catalog name (a swap when it has one).
func (e *env) index(t testing.TB, name string, c testCatalog) {
	t.Helper()
	content, err := catalogdir.Read(context.Background(), c.dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	e.table.Put(catalogs.Catalog{Name: name, Source: c.dir, Priority: c.priority, Labels: c.labels})
	if _, _, _, err := e.store.Update(context.Background(), name, content); err != nil {
		t.Fatal(err)
	}
}

// waitReady waits until the server answers /readyz: its manifests are
// loaded and its authentication configuration read from the cluster.
func (e *env) waitReady(t testing.TB) {
	t.Helper()
	hc := insecureClient()
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := hc.Get(e.url + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
			err = fmt.Errorf("status %d", resp.StatusCode)
		}
		if time.Now().After(deadline) {
			t.Fatalf("package API not ready: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// makeUsers creates two service accounts in testNamespace and returns a
// token of each: reader, bound to a ClusterRole that reads
// packagemanifests (with the icon), and outsider, bound to nothing.
func makeUsers(t testing.TB, kube *rest.Config) (reader, outsider string) {
	t.Helper()
	ctx := context.Background()
	cs, err := kubernetes.NewForConfig(kube)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testNamespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "packagemanifest-reader"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{pkgv1.SchemeGroupVersion.Group},
			Resources: []string{"packagemanifests", "packagemanifests/icon"}, Verbs: []string{"get", "list", "watch"}}},
	}
	if _, err := cs.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var tokens []string
	for _, name := range []string{"reader", "outsider"} {
		if _, err := cs.CoreV1().ServiceAccounts(testNamespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		tr, err := cs.CoreV1().ServiceAccounts(testNamespace).CreateToken(ctx, name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		tokens = append(tokens, tr.Status.Token)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "packagemanifest-reader"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "reader", Namespace: testNamespace}},
	}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return tokens[0], tokens[1]
}

// client is a REST client of the package API with token's identity.
func (e *env) client(t testing.TB, token string) *rest.RESTClient {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := pkgv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	metav1.AddToGroupVersion(scheme, metav1.SchemeGroupVersion)
	cfg := &rest.Config{
		Host:            e.url,
		APIPath:         "/apis",
		BearerToken:     token,
		TLSClientConfig: rest.TLSClientConfig{Insecure: true},
		// No client-side rate limit (client-go's default is 5 requests a
		// second): the benchmarks measure the server.
		QPS: -1,
		ContentConfig: rest.ContentConfig{
			GroupVersion:         &pkgv1.SchemeGroupVersion,
			NegotiatedSerializer: serializer.NewCodecFactory(scheme).WithoutConversion(),
		},
	}
	rc, err := rest.RESTClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return rc
}

// list lists packagemanifests in namespace ("" for all) with the given
// query parameters (labelSelector, fieldSelector).
func (e *env) list(t testing.TB, token, namespace string, params map[string]string) *pkgv1.PackageManifestList {
	t.Helper()
	req := e.client(t, token).Get().Namespace(namespace).Resource("packagemanifests")
	for k, v := range params {
		req = req.Param(k, v)
	}
	var out pkgv1.PackageManifestList
	if err := req.Do(context.Background()).Into(&out); err != nil {
		t.Fatalf("list packagemanifests %v: %v", params, err)
	}
	return &out
}

// sharedCatalog returns the published catalog, or skips a test of the published catalog where it is
// absent (it lives beside the repository, not in it).
func sharedCatalog(t testing.TB) string {
	t.Helper()
	dir := "../../../shared/catalogs/community-v4.20"
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		t.Skipf("%s is absent: the published catalog lives beside the repository (../shared), not in it", dir)
	}
	return dir
}

// insecureClient trusts any certificate: the server's is self-signed.
func insecureClient() *http.Client {
	return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, Timeout: 10 * time.Second}
}
