//go:build cluster

// Package cluster tests catalogd deployed from config/ on a real one-node
// Kubernetes cluster (hack/cluster/up.sh): two replicas behind the Service,
// the leader pod deleted under load, and a rolling restart under load. It is
// built only with -tags cluster, and `make test-cluster` runs it; it skips
// unless CATALOGD_CLUSTER_STATE names a running cluster's state directory.
//
// The catalog image is pushed to an in-process registry on loopback; the pods
// reach it through a TCP relay on the node's address, because test/registrytest
// listens on 127.0.0.1 only.
package cluster

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/catalogd/catalogd/test/fbcfacts"
	"github.com/catalogd/catalogd/test/registrytest"
	"github.com/catalogd/catalogd/test/tlstest"
)

const (
	namespace  = "olmv1-system"
	deployment = "catalogd-controller-manager"
	service    = "catalogd-service"
	leaseName  = "catalogd-manager.olm.operatorframework.io"
	demoDir    = "../testdata/demo"
)

// env is the running cluster the test talks to.
type env struct {
	state, kubectl, image, nodeIP string
	// certPEM and keyPEM are the serving certificate of the Service.
	certPEM, keyPEM []byte
	// pkgCertPEM and pkgKeyPEM are the package API's serving certificate,
	// its own CA, which the APIService's caBundle names.
	pkgCertPEM, pkgKeyPEM []byte
	// artifacts, when set, is a directory where the package API's answers
	// are saved for a human to read.
	artifacts string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{
		state:   os.Getenv("CATALOGD_CLUSTER_STATE"),
		kubectl: os.Getenv("CATALOGD_CLUSTER_KUBECTL"),
		image:   os.Getenv("CATALOGD_CLUSTER_IMAGE"),
		nodeIP:  os.Getenv("CATALOGD_CLUSTER_NODE_IP"),
	}
	if e.state == "" || e.kubectl == "" || e.image == "" || e.nodeIP == "" {
		t.Skip("CATALOGD_CLUSTER_STATE, _KUBECTL, _IMAGE and _NODE_IP are unset: run `make test-cluster`")
	}
	e.certPEM, e.keyPEM = newServingCert(t)
	e.pkgCertPEM, e.pkgKeyPEM = tlstest.SelfSigned(t, packageAPIName)
	e.artifacts = os.Getenv("CATALOGD_CLUSTER_ARTIFACTS")
	return e
}

// kc runs kubectl as the cluster admin and returns its standard output.
func (e *env) kc(t *testing.T, stdin []byte, args ...string) string {
	t.Helper()
	out, err := e.kcErr(stdin, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func (e *env) kcErr(stdin []byte, args ...string) (string, error) {
	cmd := exec.Command(e.kubectl, append([]string{"--kubeconfig", filepath.Join(e.state, "admin.kubeconfig")}, args...)...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), nil
}

// relay accepts connections on addr and copies each to and from target, so
// that pods can reach a registry that listens on loopback.
func relay(t *testing.T, addr, target string) string {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listen for the registry relay: %v", err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			in, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer in.Close()
				out, err := net.Dial("tcp", target)
				if err != nil {
					return
				}
				defer out.Close()
				go func() { _, _ = io.Copy(out, in) }()
				_, _ = io.Copy(in, out)
			}()
		}
	}()
	return l.Addr().String()
}

// eventually retries f every second until it returns nil or timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still failing after %s: %v", what, timeout, err)
		}
		time.Sleep(time.Second)
	}
}

// deploy applies config/overlays/package-api (config/default plus the
// package API) through an overlay that runs two replicas of the image under
// test (never pulled: it was imported into containerd) and trusts the
// relayed registry over plain HTTP, creates both serving certificates and
// sets the APIService's caBundle as config/README.md says, then waits for
// the rollout.
func (e *env) deploy(t *testing.T, registry string) {
	t.Helper()
	overlay := t.TempDir()
	base, err := filepath.Abs("../../config/overlays/package-api")
	if err != nil {
		t.Fatal(err)
	}
	// kustomize takes bases by relative path only.
	rel, err := filepath.Rel(overlay, base)
	if err != nil {
		t.Fatal(err)
	}
	kustomization := fmt.Sprintf(`apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- %s
patches:
- target: {kind: Deployment, name: %s}
  patch: |-
    - {op: replace, path: /spec/replicas, value: 2}
    - {op: replace, path: /spec/template/spec/containers/0/image, value: %q}
    - {op: add, path: /spec/template/spec/containers/0/imagePullPolicy, value: Never}
    - {op: add, path: /spec/template/spec/containers/0/args/-, value: "--insecure-registry=%s"}
`, rel, deployment, e.image, registry)
	if err := os.WriteFile(filepath.Join(overlay, "kustomization.yaml"), []byte(kustomization), 0o644); err != nil {
		t.Fatal(err)
	}
	manifests := e.kc(t, nil, "kustomize", overlay)
	t.Cleanup(func() {
		_, _ = e.kcErr([]byte(manifests), "delete", "--ignore-not-found", "--wait=false", "-f", "-")
	})
	e.kc(t, []byte(manifests), "apply", "--server-side", "-f", "-")
	// The serving certificate the pods mount, as `kubectl create secret
	// tls` makes it (config/README.md); the pods start once it exists.
	dir := t.TempDir()
	for name, data := range map[string][]byte{"tls.crt": e.certPEM, "tls.key": e.keyPEM} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	e.kc(t, nil, "-n", namespace, "create", "secret", "tls", "catalogd-service-cert",
		"--cert", filepath.Join(dir, "tls.crt"), "--key", filepath.Join(dir, "tls.key"))
	for name, data := range map[string][]byte{"pkg.crt": e.pkgCertPEM, "pkg.key": e.pkgKeyPEM} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	e.kc(t, nil, "-n", namespace, "create", "secret", "tls", "catalogd-package-api-cert",
		"--cert", filepath.Join(dir, "pkg.crt"), "--key", filepath.Join(dir, "pkg.key"))
	e.kc(t, nil, "patch", "apiservice", apiServiceName, "--type=merge",
		"-p", fmt.Sprintf(`{"spec":{"caBundle":%q}}`, base64.StdEncoding.EncodeToString(e.pkgCertPEM)))
	e.kc(t, nil, "-n", namespace, "rollout", "status", "deployment/"+deployment, "--timeout=5m")
}

// serviceName is the name the serving certificate is for, and the one
// operator-controller uses for catalogd.
const serviceName = service + "." + namespace + ".svc"

const (
	apiServiceName = "v1.packages.operators.coreos.com"
	// packageAPIName is the name the aggregator checks the package API's
	// certificate against: its Service's.
	packageAPIName = "catalogd-package-api." + namespace + ".svc"
	packageAPIPort = "7443"
)

// newServingCert makes a self-signed serving certificate for serviceName.
func newServingCert(t *testing.T) (certPEM, keyPEM []byte) {
	return tlstest.SelfSigned(t, serviceName)
}

// client trusts the serving certificate and checks it names the Service,
// whatever IP (the Service's or a pod's) it connects to.
func (e *env) client() *http.Client {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(e.certPEM)
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: serviceName, MinVersion: tls.VersionTLS12},
	}}
}

// podIPs returns the IPs of the Ready catalogd pods that are not being
// deleted, by pod name.
func (e *env) podIPs(t *testing.T) map[string]string {
	t.Helper()
	out := e.kc(t, nil, "-n", namespace, "get", "pods", "-l", "app.kubernetes.io/name=catalogd", "-o", "json")
	var list struct {
		Items []struct {
			Metadata struct {
				Name              string  `json:"name"`
				DeletionTimestamp *string `json:"deletionTimestamp"`
			} `json:"metadata"`
			Status struct {
				PodIP      string `json:"podIP"`
				Conditions []struct{ Type, Status string }
			} `json:"status"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("decode pods: %v", err)
	}
	ips := map[string]string{}
	for _, p := range list.Items {
		for _, c := range p.Status.Conditions {
			if c.Type == "Ready" && c.Status == "True" && p.Metadata.DeletionTimestamp == nil {
				ips[p.Metadata.Name] = p.Status.PodIP
			}
		}
	}
	return ips
}

// serviceURL is the query API through the Service's ClusterIP, which the
// host reaches through kube-proxy's rules.
func (e *env) serviceURL(t *testing.T) string {
	t.Helper()
	ip := strings.TrimSpace(e.kc(t, nil, "-n", namespace, "get", "service", service, "-o", "jsonpath={.spec.clusterIP}"))
	return "https://" + ip + ":443"
}

// digest returns the sha256:... part of a digest reference.
func digest(ref string) string {
	_, d, _ := strings.Cut(ref, "@")
	return d
}

func get(client *http.Client, url string) ([]byte, error) {
	resp, err := client.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s: %s", url, resp.Status, body)
	}
	return body, nil
}

// applyCatalog creates or updates the demo ClusterCatalog to pull ref.
func (e *env) applyCatalog(t *testing.T, ref string) {
	t.Helper()
	cc := fmt.Sprintf(`{"apiVersion": "olm.operatorframework.io/v1", "kind": "ClusterCatalog",
		"metadata": {"name": "demo"},
		"spec": {"source": {"type": "Image", "image": {"ref": %q}}}}`, ref)
	e.kc(t, []byte(cc), "apply", "-f", "-")
}

// servedRef returns status.resolvedSource.image.ref of the demo catalog
// once its Serving condition is True, or an error saying why not yet.
func (e *env) servedRef() (string, error) {
	out, err := e.kcErr(nil, "get", "clustercatalog", "demo", "-o",
		`jsonpath={.status.conditions[?(@.type=="Serving")].status} {.status.resolvedSource.image.ref}`)
	if err != nil {
		return "", err
	}
	status, ref, _ := strings.Cut(strings.TrimSpace(out), " ")
	if status != "True" {
		return "", fmt.Errorf("demo catalog is not serving yet: %q", out)
	}
	return ref, nil
}

// leader returns the holder of the leader election lease.
func (e *env) leader(t *testing.T) string {
	t.Helper()
	out := e.kc(t, nil, "-n", namespace, "get", "lease", leaseName, "-o", "jsonpath={.spec.holderIdentity}")
	// controller-runtime's identity is <hostname>_<uuid>; the hostname is
	// the pod name.
	name, _, _ := strings.Cut(strings.TrimSpace(out), "_")
	return name
}

// queries are the paths every replica must answer identically, with an
// answer the demo catalog's files determine.
var queries = []string{
	"/catalogs/demo/packages",
	"/catalogs/demo/packages/aurora-cache/channels",
	"/catalogs/demo/packages/aurora-cache/upgrades?from=1.1.1",
	"/catalogs/demo/providers?group=observability.example.com&version=v1&kind=ServiceProbe",
	"/catalogs/demo/packages/aurora-cache/bundles?version=%3E%3D1.2.0",
	"/catalogs/demo/api/v1/all",
	"/catalogs/demo/api/v1/metas?schema=olm.package",
}

// load is a client loop through the Service, bounded by a stop channel,
// counting answered and failed queries and keeping the first errors.
type load struct {
	ok, failed atomic.Int64
	mu         sync.Mutex
	errs       []string
	done       chan struct{}
}

func startLoad(client *http.Client, base string, want map[string][]byte, stop <-chan struct{}) *load {
	l := &load{done: make(chan struct{})}
	go func() {
		defer close(l.done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			q := queries[i%len(queries)]
			body, err := get(client, base+q)
			if err == nil && !bytes.Equal(body, want[q]) {
				err = fmt.Errorf("GET %s: answer differs from the replicas' answer before the disruption", q)
			}
			if err != nil {
				l.failed.Add(1)
				l.mu.Lock()
				if len(l.errs) < 5 {
					l.errs = append(l.errs, err.Error())
				}
				l.mu.Unlock()
			} else {
				l.ok.Add(1)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	return l
}

func (l *load) check(t *testing.T, what string) {
	t.Helper()
	<-l.done
	t.Logf("%s: %d queries answered, %d failed", what, l.ok.Load(), l.failed.Load())
	if l.failed.Load() != 0 {
		t.Errorf("%s: %d of %d queries failed; first errors: %s", what, l.failed.Load(), l.ok.Load()+l.failed.Load(), strings.Join(l.errs, "; "))
	}
	if l.ok.Load() == 0 {
		t.Errorf("%s: no query was answered", what)
	}
}

func TestCluster(t *testing.T) {
	e := newEnv(t)

	reg := registrytest.New(t)
	registry := relay(t, net.JoinHostPort(e.nodeIP, "0"), reg.Host)
	digestV1 := digest(registrytest.PushCatalog(t, reg.Host, "demo:v1", demoDir, registrytest.PushOptions{}))

	e.deploy(t, registry)
	e.applyCatalog(t, registry+"/demo:v1")
	t.Cleanup(func() { _, _ = e.kcErr(nil, "delete", "clustercatalog", "demo", "--ignore-not-found") })
	eventually(t, 3*time.Minute, "demo catalog serving v1", func() error {
		ref, err := e.servedRef()
		if err == nil && !strings.HasSuffix(ref, digestV1) {
			err = fmt.Errorf("resolved %s, want digest %s", ref, digestV1)
		}
		return err
	})

	// Both replicas answer every query, and identically; what they answer
	// agrees with the catalog's files.
	client := e.client()
	var pods map[string]string
	eventually(t, 2*time.Minute, "two ready replicas", func() error {
		if pods = e.podIPs(t); len(pods) != 2 {
			return fmt.Errorf("ready pods: %v", pods)
		}
		return nil
	})
	want := map[string][]byte{}
	for _, q := range queries {
		eventually(t, 2*time.Minute, "every replica serving "+q, func() error {
			var first []byte
			names := make([]string, 0, len(pods))
			for name := range pods {
				names = append(names, name)
			}
			sort.Strings(names)
			for _, name := range names {
				body, err := get(client, "https://"+net.JoinHostPort(pods[name], "8443")+q)
				if err != nil {
					return fmt.Errorf("pod %s: %w", name, err)
				}
				if first != nil && !bytes.Equal(first, body) {
					return fmt.Errorf("pods %s disagree on %s:\n%s\n%s", names, q, first, body)
				}
				first = body
			}
			want[q] = first
			return nil
		})
	}
	facts := fbcfacts.Load(t, demoDir)
	var pkgs struct {
		Items []struct{ Name string } `json:"items"`
	}
	if err := json.Unmarshal(want["/catalogs/demo/packages"], &pkgs); err != nil {
		t.Fatalf("decode packages: %v", err)
	}
	if len(pkgs.Items) != len(facts.Packages) {
		t.Errorf("replicas list %d packages, the catalog has %d", len(pkgs.Items), len(facts.Packages))
	}
	for _, p := range pkgs.Items {
		if _, ok := facts.Packages[p.Name]; !ok {
			t.Errorf("replicas list package %q, which the catalog lacks", p.Name)
		}
	}
	if !bytes.Equal(want["/catalogs/demo/api/v1/all"], facts.JSONLines()) {
		t.Errorf("/api/v1/all differs from the catalog's files")
	}
	svc := e.serviceURL(t)
	for _, q := range queries {
		for i := 0; i < 10; i++ {
			body, err := get(client, svc+q)
			if err != nil {
				t.Fatalf("through the Service: %v", err)
			}
			if !bytes.Equal(body, want[q]) {
				t.Fatalf("through the Service, %s differs from the replicas' answer", q)
			}
		}
	}

	t.Run("leader pod deleted", func(t *testing.T) {
		old := e.leader(t)
		if _, ok := pods[old]; !ok {
			t.Fatalf("lease holder %q is not one of the pods %v", old, pods)
		}
		stop := make(chan struct{})
		l := startLoad(e.client(), svc, want, stop)
		e.kc(t, nil, "-n", namespace, "delete", "pod", old, "--wait=false")
		// Another replica takes the lease. The deleted pod keeps running
		// through its preStop pause, so the catalog changes only once the
		// lease has moved: the status that follows is the new leader's.
		var leader string
		eventually(t, 3*time.Minute, "the lease to move", func() error {
			if leader = e.leader(t); leader == old || leader == "" {
				return fmt.Errorf("lease still held by %q", leader)
			}
			return nil
		})
		digestV2 := digest(registrytest.PushCatalog(t, reg.Host, "demo:v2", demoDir,
			registrytest.PushOptions{Extra: []registrytest.Entry{registrytest.File("marker", "v2")}}))
		e.applyCatalog(t, registry+"/demo@"+digestV2)
		eventually(t, 3*time.Minute, "status updated by the new leader", func() error {
			ref, err := e.servedRef()
			if err == nil && !strings.HasSuffix(ref, digestV2) {
				err = fmt.Errorf("resolved %s, want digest %s", ref, digestV2)
			}
			return err
		})
		if now := e.leader(t); now == old {
			t.Fatalf("the lease went back to the deleted pod %s", old)
		}
		// The load goes on until the deleted pod is gone and its replacement
		// is ready, so it spans the whole termination.
		eventually(t, 3*time.Minute, "the deleted pod gone and two replicas ready", func() error {
			if out, err := e.kcErr(nil, "-n", namespace, "get", "pod", old, "--ignore-not-found", "-o", "name"); err != nil || out != "" {
				return fmt.Errorf("pod %s still there (%v)", old, err)
			}
			if now := e.podIPs(t); len(now) != 2 {
				return fmt.Errorf("ready pods: %v", now)
			}
			return nil
		})
		close(stop)
		l.check(t, "leader deletion")
		t.Logf("lease moved from %s to %s", old, leader)
	})

	t.Run("rolling restart", func(t *testing.T) {
		stop := make(chan struct{})
		l := startLoad(e.client(), svc, want, stop)
		before := e.podIPs(t)
		e.kc(t, nil, "-n", namespace, "rollout", "restart", "deployment/"+deployment)
		e.kc(t, nil, "-n", namespace, "rollout", "status", "deployment/"+deployment, "--timeout=5m")
		// rollout status returns once the new pods are available; the old
		// ones may still be terminating, so the load goes on until they are
		// gone.
		eventually(t, 3*time.Minute, "the old pods gone", func() error {
			for name := range before {
				if out, err := e.kcErr(nil, "-n", namespace, "get", "pod", name, "--ignore-not-found", "-o", "name"); err != nil || out != "" {
					return fmt.Errorf("pod %s still there (%v)", name, err)
				}
			}
			return nil
		})
		close(stop)
		l.check(t, "rolling restart")
	})

	t.Run("package API", func(t *testing.T) { e.testPackageAPI(t, reg, registry, facts) })
}

// packageManifest is what the test reads of a PackageManifest.
type packageManifest struct {
	Metadata struct {
		Name      string            `json:"name"`
		Namespace string            `json:"namespace"`
		Labels    map[string]string `json:"labels"`
	} `json:"metadata"`
	Status struct {
		CatalogSource  string `json:"catalogSource"`
		PackageName    string `json:"packageName"`
		DefaultChannel string `json:"defaultChannel"`
		Channels       []struct {
			Name       string `json:"name"`
			CurrentCSV string `json:"currentCSV"`
		} `json:"channels"`
	} `json:"status"`
}

// packageManifests runs kubectl get packagemanifests with args and returns
// the items.
func (e *env) packageManifests(t *testing.T, args ...string) []packageManifest {
	t.Helper()
	out := e.kc(t, nil, append([]string{"get", "packagemanifests", "-o", "json"}, args...)...)
	var list struct {
		Items []packageManifest `json:"items"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("decode kubectl get packagemanifests %q: %v", args, err)
	}
	return list.Items
}

// names returns the sorted distinct package names of items.
func names(items []packageManifest) []string {
	var out []string
	for _, pm := range items {
		if !slices.Contains(out, pm.Metadata.Name) {
			out = append(out, pm.Metadata.Name)
		}
	}
	sort.Strings(out)
	return out
}

// packageNames returns the sorted names of the packages of a catalog that
// packageserver shows: those with a channel whose head describes its
// ClusterServiceVersion (an olm.bundle.object or olm.csv.metadata property).
func packageNames(c *fbcfacts.Catalog) []string {
	var out []string
	for name := range c.Packages {
		for ch := range c.Channels[name] {
			head := c.Bundles[name][c.Head(name, ch)]
			if slices.ContainsFunc(head.Properties, func(p fbcfacts.Property) bool {
				return p.Type == "olm.bundle.object" || p.Type == "olm.csv.metadata"
			}) {
				out = append(out, name)
				break
			}
		}
	}
	sort.Strings(out)
	return out
}

// save writes an answer of the package API under $CATALOGD_CLUSTER_ARTIFACTS
// (when set) for a human to read.
func (e *env) save(t *testing.T, name, content string) {
	t.Helper()
	if e.artifacts == "" {
		return
	}
	if err := os.MkdirAll(e.artifacts, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.artifacts, name), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// olmClient runs bin/olm-packagemanifests, OLM v0's generated
// PackageManifest clientset built from the module proxy (hack/olmclient),
// against server with token in namespace ns, decodes what it printed into
// out and returns it.
func (e *env) olmClient(t *testing.T, out any, server, token, ns string, args ...string) string {
	t.Helper()
	path, err := filepath.Abs(filepath.Join("..", "..", "bin", "olm-packagemanifests"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(path, append([]string{"--server", server, "--token", token, "--namespace", ns}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("olm-packagemanifests %v (make test-cluster builds it): %v: %s", args, err, stderr.String())
	}
	if err := json.Unmarshal(stdout.Bytes(), out); err != nil {
		t.Fatalf("olm-packagemanifests %v printed %s: %v", args, stdout.String(), err)
	}
	return stdout.String()
}

// watchEvent is one line of kubectl get --watch --output-watch-events -o json.
type watchEvent struct {
	Type   string          `json:"type"`
	Object packageManifest `json:"object"`
	at     time.Time
}

// watchPackages runs kubectl's watch on packagemanifests in ns as a client
// would, and returns its events once the watch request is open (kubectl
// logs it at -v=6).
func (e *env) watchPackages(t *testing.T, ns string) <-chan watchEvent {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, e.kubectl, "--kubeconfig", filepath.Join(e.state, "admin.kubeconfig"), "-v=6",
		"-n", ns, "get", "packagemanifests", "--watch-only", "--output-watch-events", "-o", "json")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
	})
	open := make(chan struct{})
	go func() {
		s := bufio.NewScanner(stderr)
		s.Buffer(make([]byte, 1<<20), 1<<20)
		once := false
		for s.Scan() {
			if !once && strings.Contains(s.Text(), "watch=true") && strings.Contains(s.Text(), "200 OK") {
				once = true
				close(open)
			}
		}
	}()
	events := make(chan watchEvent, 100)
	go func() {
		defer close(events)
		dec := json.NewDecoder(stdout)
		for {
			var ev watchEvent
			if err := dec.Decode(&ev); err != nil {
				return
			}
			ev.at = time.Now()
			events <- ev
		}
	}()
	select {
	case <-open:
	case <-time.After(time.Minute):
		t.Fatal("kubectl's watch of packagemanifests did not open within a minute")
	}
	return events
}

// watchProbe is a package of its own, added to the demo catalog to see the
// watch report it.
const watchProbe = `---
schema: olm.package
name: watch-probe
defaultChannel: stable
---
schema: olm.channel
name: stable
package: watch-probe
entries:
- name: watch-probe.v0.1.0
---
schema: olm.bundle
name: watch-probe.v0.1.0
package: watch-probe
image: registry.example.com/watch-probe/bundle:v0.1.0
properties:
- type: olm.package
  value:
    packageName: watch-probe
    version: 0.1.0
- type: olm.csv.metadata
  value:
    displayName: Watch Probe
    provider:
      name: catalogd tests
`

// testPackageAPI checks the package API through the kube-apiserver's
// aggregator, as OLM v0's clients use it, and on each replica: the
// APIService becomes Available; kubectl lists, selects by catalog label,
// prints and gets every package of the catalog as the catalog's files say;
// the icon subresource serves the package's icon; namespace viewers may
// read packages and others may not; a watch sees exactly the package a new
// catalog image adds, then removes.
func (e *env) testPackageAPI(t *testing.T, reg *registrytest.Registry, registry string, facts *fbcfacts.Catalog) {
	if _, err := e.kcErr(nil, "wait", "apiservice/"+apiServiceName, "--for=condition=Available", "--timeout=3m"); err != nil {
		// What the aggregator says, and what the replicas logged, is all
		// there is to go on once the cluster is down.
		status, _ := e.kcErr(nil, "get", "apiservice/"+apiServiceName, "-o", "yaml")
		pods, _ := e.kcErr(nil, "-n", namespace, "get", "pods,endpoints,services", "-o", "wide")
		logs, logErr := e.kcErr(nil, "-n", namespace, "logs", "deployment/catalogd-controller-manager", "--all-containers", "--tail=60")
		t.Fatalf("%v\nthe APIService:\n%s\npods, endpoints and services:\n%s\nthe replicas' last log lines (%v):\n%s", err, status, pods, logErr, logs)
	}
	want := packageNames(facts)

	table := e.kc(t, nil, "get", "packagemanifests", "-A")
	e.save(t, "get-packagemanifests-A.txt", table)
	t.Logf("kubectl get packagemanifests -A:\n%s", table)
	// packageserver's columns.
	if header, _, _ := strings.Cut(table, "\n"); !slices.Equal(strings.Fields(header), []string{"NAMESPACE", "NAME", "CATALOG", "AGE"}) {
		t.Errorf("kubectl get packagemanifests -A prints the columns %q, packageserver's are NAMESPACE NAME CATALOG AGE", header)
	}
	if got := names(e.packageManifests(t, "-A")); !slices.Equal(got, want) {
		t.Errorf("kubectl get packagemanifests -A lists %q, the catalog has %q", got, want)
	}
	selected := e.packageManifests(t, "-n", "default", "-l", "catalog=demo")
	if got := names(selected); !slices.Equal(got, want) {
		t.Errorf("-n default -l catalog=demo lists %q, the catalog has %q", got, want)
	}
	for _, pm := range selected {
		if pm.Metadata.Namespace != "default" || pm.Metadata.Labels["catalog"] != "demo" || pm.Status.CatalogSource != "demo" {
			t.Errorf("package %s: namespace %q, label catalog %q, catalogSource %q; want default, demo, demo",
				pm.Metadata.Name, pm.Metadata.Namespace, pm.Metadata.Labels["catalog"], pm.Status.CatalogSource)
		}
	}
	e.save(t, "get-packagemanifests-l-catalog.txt", e.kc(t, nil, "-n", "default", "get", "packagemanifests", "-l", "catalog=demo"))
	if got := e.packageManifests(t, "-n", "default", "-l", "catalog=no-such-catalog"); len(got) != 0 {
		t.Errorf("-l catalog=no-such-catalog lists %q", names(got))
	}

	// One package in full, against the catalog's files.
	const pkg = "aurora-cache"
	e.save(t, "get-packagemanifest-o-yaml.yaml", e.kc(t, nil, "-n", "default", "get", "packagemanifest", pkg, "-o", "yaml"))
	var pm packageManifest
	if err := json.Unmarshal([]byte(e.kc(t, nil, "-n", "default", "get", "packagemanifest", pkg, "-o", "json")), &pm); err != nil {
		t.Fatal(err)
	}
	if pm.Status.PackageName != pkg || pm.Status.DefaultChannel != facts.Packages[pkg].DefaultChannel {
		t.Errorf("%s: packageName %q, defaultChannel %q; the catalog says %s, %s",
			pkg, pm.Status.PackageName, pm.Status.DefaultChannel, pkg, facts.Packages[pkg].DefaultChannel)
	}
	var channels []string
	for _, ch := range pm.Status.Channels {
		channels = append(channels, ch.Name)
		if head := facts.Head(pkg, ch.Name); head != "" && ch.CurrentCSV != head {
			t.Errorf("%s channel %s: currentCSV %q, the catalog's head is %s", pkg, ch.Name, ch.CurrentCSV, head)
		}
	}
	sort.Strings(channels)
	var wantChannels []string
	for name := range facts.Channels[pkg] {
		wantChannels = append(wantChannels, name)
	}
	sort.Strings(wantChannels)
	if !slices.Equal(channels, wantChannels) {
		t.Errorf("%s channels %q, the catalog has %q", pkg, channels, wantChannels)
	}

	// The icon subresource: the package's icon, byte for byte.
	icons := 0
	for name, p := range facts.Packages {
		if p.Icon == nil {
			continue
		}
		icons++
		got := e.kc(t, nil, "get", "--raw", "/apis/packages.operators.coreos.com/v1/namespaces/default/packagemanifests/"+name+"/icon")
		e.save(t, "icon-"+name+"."+strings.TrimPrefix(strings.TrimSuffix(p.Icon.MediaType, "+xml"), "image/"), got)
		if !bytes.Equal([]byte(got), p.Icon.Data) {
			t.Errorf("icon of %s: %d bytes that differ from the catalog's %d-byte %s icon", name, len(got), len(p.Icon.Data), p.Icon.MediaType)
		}
	}
	if icons == 0 {
		t.Error("the demo catalog has no icon to check")
	}

	// Namespace viewers read packages there through the view role the
	// overlay's ClusterRole is aggregated into; nowhere else.
	e.kc(t, nil, "create", "namespace", "team-a")
	t.Cleanup(func() { _, _ = e.kcErr(nil, "delete", "namespace", "team-a", "--wait=false") })
	e.kc(t, nil, "-n", "team-a", "create", "serviceaccount", "pkg-reader")
	e.kc(t, nil, "-n", "team-a", "create", "rolebinding", "pkg-reader-view", "--clusterrole=view", "--serviceaccount=team-a:pkg-reader")
	const reader = "system:serviceaccount:team-a:pkg-reader"
	eventually(t, time.Minute, "a team-a viewer listing packagemanifests", func() error {
		out, err := e.kcErr(nil, "--as", reader, "-n", "team-a", "get", "packagemanifests", "-o", "name")
		if err == nil && strings.Count(out, "\n") != len(want) {
			err = fmt.Errorf("listed %q, want %d packages", out, len(want))
		}
		return err
	})
	if _, err := e.kcErr(nil, "--as", reader, "-n", "team-a", "get", "--raw",
		"/apis/packages.operators.coreos.com/v1/namespaces/team-a/packagemanifests/"+pkg+"/icon"); err != nil {
		t.Errorf("a team-a viewer getting an icon: %v", err)
	}
	if out, err := e.kcErr(nil, "--as", reader, "-n", "kube-public", "get", "packagemanifests"); err == nil || !strings.Contains(err.Error(), "Forbidden") {
		t.Errorf("a team-a viewer listing packagemanifests in kube-public: %v (%s), want Forbidden", err, out)
	}

	// Every replica serves the API itself, with the viewer's token checked
	// by the replica (TokenReview, SubjectAccessReview).
	token := strings.TrimSpace(e.kc(t, nil, "-n", "team-a", "create", "token", "pkg-reader"))
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(e.pkgCertPEM)
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: packageAPIName, MinVersion: tls.VersionTLS12},
	}}
	askPod := func(ip, ns string) (int, []byte, error) {
		req, err := http.NewRequest(http.MethodGet, "https://"+net.JoinHostPort(ip, packageAPIPort)+
			"/apis/packages.operators.coreos.com/v1/namespaces/"+ns+"/packagemanifests", nil)
		if err != nil {
			return 0, nil, err
		}
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := client.Do(req)
		if err != nil {
			return 0, nil, err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		return resp.StatusCode, body, err
	}
	pods := e.podIPs(t)
	if len(pods) != 2 {
		t.Fatalf("ready pods %v, want 2", pods)
	}
	var answers []string
	for name, ip := range pods {
		code, body, err := askPod(ip, "team-a")
		if err != nil || code != http.StatusOK {
			t.Errorf("pod %s: %d %v: %s", name, code, err, body)
			continue
		}
		var list struct {
			Items []packageManifest `json:"items"`
		}
		if err := json.Unmarshal(body, &list); err != nil {
			t.Fatalf("pod %s: %v", name, err)
		}
		if got := names(list.Items); !slices.Equal(got, want) {
			t.Errorf("pod %s lists %q, the catalog has %q", name, got, want)
		}
		answers = append(answers, fmt.Sprintf("pod %s (%s): %d packages: %s", name, ip, len(list.Items), strings.Join(names(list.Items), " ")))
		if code, body, err := askPod(ip, "kube-public"); err != nil || code != http.StatusForbidden {
			t.Errorf("pod %s, the viewer in kube-public: %d %v: %s, want 403", name, code, err, body)
		}
	}
	e.save(t, "replicas.txt", strings.Join(answers, "\n")+"\n")

	// OLM v0's own clientset, unchanged, through the aggregator with the
	// viewer's token: a list, a list by catalog label, and a get.
	server := strings.TrimSpace(e.kc(t, nil, "config", "view", "--minify", "-o", "jsonpath={.clusters[0].cluster.server}"))
	var olmList struct {
		Items []packageManifest `json:"items"`
	}
	out := e.olmClient(t, &olmList, server, token, "team-a", "list")
	e.save(t, "olm-client-list.json", out)
	if got := names(olmList.Items); !slices.Equal(got, want) {
		t.Errorf("OLM v0's client lists %q, the catalog has %q", got, want)
	}
	e.olmClient(t, &olmList, server, token, "team-a", "list", "catalog=demo")
	if got := names(olmList.Items); !slices.Equal(got, want) {
		t.Errorf("OLM v0's client, -l catalog=demo, lists %q, the catalog has %q", got, want)
	}
	var olmOne packageManifest
	e.save(t, "olm-client-get.json", e.olmClient(t, &olmOne, server, token, "team-a", "get", pkg))
	if olmOne.Metadata.Name != pkg || olmOne.Status.DefaultChannel != facts.Packages[pkg].DefaultChannel {
		t.Errorf("OLM v0's client gets %s with default channel %q; the catalog says %s, %s",
			olmOne.Metadata.Name, olmOne.Status.DefaultChannel, pkg, facts.Packages[pkg].DefaultChannel)
	}

	// A watch sees the package a new image adds, and only it; then its
	// removal when the catalog goes back to the image without it.
	events := e.watchPackages(t, "default")
	var log []string
	record := func(ev watchEvent, since time.Time) {
		log = append(log, fmt.Sprintf("%s %s (%.1fs after the ClusterCatalog changed)", ev.Type, ev.Object.Metadata.Name, ev.at.Sub(since).Seconds()))
	}
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(demoDir)); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "watch-probe"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "watch-probe", "catalog.yaml"), []byte(watchProbe), 0o644); err != nil {
		t.Fatal(err)
	}
	oldRef, err := e.servedRef()
	if err != nil {
		t.Fatal(err)
	}
	for _, step := range []struct {
		ref, event string
	}{
		{registry + "/demo@" + digest(registrytest.PushCatalog(t, reg.Host, "demo:v3", dir, registrytest.PushOptions{})), "ADDED"},
		{oldRef, "DELETED"},
	} {
		since := time.Now()
		e.applyCatalog(t, step.ref)
		deadline := time.After(3 * time.Minute)
	wait:
		for {
			select {
			case ev, ok := <-events:
				if !ok {
					t.Fatal("kubectl's watch ended")
				}
				record(ev, since)
				if ev.Type != step.event || ev.Object.Metadata.Name != "watch-probe" {
					t.Errorf("watch event %s %s, want only %s watch-probe", ev.Type, ev.Object.Metadata.Name, step.event)
					continue
				}
				break wait
			case <-deadline:
				ref, err := e.servedRef()
				t.Fatalf("no %s event for watch-probe within 3 minutes; events: %q; the catalog serves %s (%v) and lists %q",
					step.event, log, ref, err, names(e.packageManifests(t, "-n", "default")))
			}
		}
		eventually(t, 3*time.Minute, "the catalog serving "+step.ref, func() error {
			ref, err := e.servedRef()
			if err == nil && !strings.HasSuffix(ref, digest(step.ref)) {
				err = fmt.Errorf("resolved %s, want %s", ref, step.ref)
			}
			return err
		})
	}
	// Nothing else arrives: no other package changed.
	quiet := time.After(10 * time.Second)
	for done := false; !done; {
		select {
		case ev, ok := <-events:
			if !ok {
				done = true
				break
			}
			record(ev, time.Now())
			t.Errorf("unexpected watch event %s %s", ev.Type, ev.Object.Metadata.Name)
		case <-quiet:
			done = true
		}
	}
	e.save(t, "watch-events.txt", strings.Join(log, "\n")+"\n")
	t.Logf("watch events:\n%s", strings.Join(log, "\n"))
}
