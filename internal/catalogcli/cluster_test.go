package catalogcli_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	catalogdv1 "github.com/catalogd/catalogd/api/v1"
	"github.com/catalogd/catalogd/test/await"
	"github.com/catalogd/catalogd/test/catalogdproc"
	"github.com/catalogd/catalogd/test/kubetest"
	"github.com/catalogd/catalogd/test/registrytest"
	"github.com/catalogd/catalogd/test/tlstest"
)

// TestCluster runs `catalogd manager` against a real API server (envtest)
// serving a ClusterCatalog, puts the catalogd Service in front of it as
// config/manager does, and asks through the kubeconfig: the API server's
// service proxy must give the answers the manager gives directly, and a
// user holding only config/viewer's ClusterRole must be let through while
// one without it is told what is missing.
//
// envtest runs no kubelet and no endpoints controller, so the Service has
// no selector and the test writes its pod and Endpoints itself. The API server does
// not proxy to loopback, so the manager listens on a non-loopback address
// of this machine; the test skips when there is none.
func TestCluster(t *testing.T) {
	cfg := kubetest.Start(t)
	ip := hostIP(t)
	kubeconfig := kubetest.WriteKubeconfig(t, cfg)
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{catalogdv1.AddToScheme, corev1.AddToScheme, rbacv1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	kube, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}

	reg := registrytest.New(t)
	reg.PushCatalog(t, "catalogs/demo:v1", demoDir, registrytest.PushOptions{})
	create(t, kube, &catalogdv1.ClusterCatalog{
		ObjectMeta: metav1.ObjectMeta{Name: "demo"},
		Spec: catalogdv1.ClusterCatalogSpec{Source: catalogdv1.CatalogSource{
			Type: catalogdv1.SourceTypeImage, Image: &catalogdv1.ImageSource{Ref: reg.Host + "/catalogs/demo:v1"},
		}},
	})

	certFile, keyFile := selfSignedCert(t, ip)
	port := freePort(t, ip)
	api := net.JoinHostPort(ip, strconv.Itoa(port))
	catalogdproc.Start(t, catalogdManager, "manager", "--kubeconfig", kubeconfig, "--data-dir", t.TempDir(),
		"--listen", api, "--tls-cert", certFile, "--tls-key", keyFile,
		"--health-probe-bind-address", "0", "--metrics-bind-address", "0", "--insecure-registry", reg.Host)

	// The Service and namespace as config/manager installs them.
	create(t, kube, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "olmv1-system"}})
	create(t, kube, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "catalogd-service", Namespace: "olmv1-system"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{
			Name: "https", Port: 443, TargetPort: intstr.FromInt32(int32(port)), Protocol: corev1.ProtocolTCP,
		}}},
	})
	// The proxy only goes to an endpoint that is a pod's IP, so a pod
	// stands for the manager, with the manager's address as its IP.
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "catalogd", Namespace: "olmv1-system"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "manager", Image: "catalogd"}}},
	}
	create(t, kube, pod)
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}}}
	if err := kube.Status().Update(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	//lint:ignore SA1019 the service proxy reads Endpoints, not EndpointSlices
	create(t, kube, &corev1.Endpoints{
		ObjectMeta: metav1.ObjectMeta{Name: "catalogd-service", Namespace: "olmv1-system"},
		//lint:ignore SA1019 as above
		Subsets: []corev1.EndpointSubset{{
			Addresses: []corev1.EndpointAddress{{IP: ip, TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name}}},
			Ports:     []corev1.EndpointPort{{Name: "https", Port: int32(port), Protocol: corev1.ProtocolTCP}},
		}},
	})
	cluster := newCLI(t, "--kubeconfig", kubeconfig)
	direct := newCLI(t, "--server", "https://"+api, "--certificate-authority", certFile)
	await.Until(t, "demo to answer through the service proxy", 60*time.Second, func() error {
		out, errOut, ok := cluster.run(t, "packages", "-c", "demo", "-o", "name")
		if !ok || out == "" {
			return fmt.Errorf("%s%s", out, errOut)
		}
		return nil
	})
	for _, args := range commands {
		want := direct.ok(t, append(args, "-o", "json")...)
		if got := cluster.ok(t, append(args, "-o", "json")...); got != want {
			t.Errorf("%v through the cluster:\n%s\nwant, as the manager answers directly:\n%s", args, got, want)
		}
	}
	if out := newCLI(t, "--server", "https://"+api, "--insecure-skip-tls-verify").ok(t, "catalogs", "-o", "name"); strings.TrimSpace(out) != "demo" {
		t.Errorf("--insecure-skip-tls-verify: catalogs %q", out)
	}
	if _, errOut, ok := newCLI(t, "--server", "https://"+api).run(t, "catalogs"); ok || !strings.Contains(errOut, "certificate") {
		t.Errorf("an untrusted certificate: %q, want an error about the certificate", errOut)
	}

	// A reader who is not bound to the viewer role is refused, and told
	// which role to ask for; bound in olmv1-system, they read.
	viewer := newCLI(t, "--kubeconfig", impersonating(t, kubeconfig, "alice"))
	if _, errOut, ok := viewer.run(t, "packages"); ok || !strings.Contains(errOut, "services/proxy") || !strings.Contains(errOut, "config/viewer") {
		t.Errorf("alice without the viewer role: %q", errOut)
	}
	role := &rbacv1.ClusterRole{}
	data, err := os.ReadFile(filepath.Join("..", "..", "config", "viewer", "cluster_role.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(data, role); err != nil {
		t.Fatal(err)
	}
	create(t, kube, role)
	create(t, kube, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "alice-catalog-viewer", Namespace: "olmv1-system"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: "alice"}},
	})
	await.Until(t, "alice to read through the viewer role", 30*time.Second, func() error {
		out, errOut, ok := viewer.run(t, "packages", "-o", "name")
		if !ok || out == "" {
			return fmt.Errorf("%s%s", out, errOut)
		}
		return nil
	})
}

func create(t *testing.T, kube client.Client, obj client.Object) {
	t.Helper()
	if err := kube.Create(context.Background(), obj); err != nil {
		t.Fatalf("create %T %s: %v", obj, obj.GetName(), err)
	}
}

// hostIP is a non-loopback IPv4 address of this machine.
func hostIP(t *testing.T) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() {
			return n.IP.String()
		}
	}
	t.Skip("no non-loopback IPv4 address: the API server's service proxy does not proxy to loopback")
	return ""
}

func freePort(t *testing.T, ip string) int {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// selfSignedCert writes a certificate for ip, its own CA, and its key,
// and returns their paths.
func selfSignedCert(t *testing.T, ip string) (string, string) {
	t.Helper()
	certPEM, keyPEM := tlstest.SelfSigned(t, "catalogd-service.olmv1-system.svc", ip)
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	for path, data := range map[string][]byte{certFile: certPEM, keyFile: keyPEM} {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return certFile, keyFile
}

// impersonating writes a copy of kubeconfig that acts as user, as
// `kubectl --as` does, so the API server's RBAC decides for that user.
func impersonating(t *testing.T, kubeconfig, user string) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, auth := range cfg.AuthInfos {
		auth.Impersonate = user
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}
