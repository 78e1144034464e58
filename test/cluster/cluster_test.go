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
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
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

// deploy applies config/default through an overlay that runs two replicas
// of the image under test (never pulled: it was imported into containerd)
// and trusts the relayed registry over plain HTTP, then waits for the rollout.
func (e *env) deploy(t *testing.T, registry string) {
	t.Helper()
	overlay := t.TempDir()
	base, err := filepath.Abs("../../config/default")
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
	e.kc(t, nil, "-n", namespace, "rollout", "status", "deployment/"+deployment, "--timeout=5m")
}

// serviceName is the name the serving certificate is for, and the one
// operator-controller uses for catalogd.
const serviceName = service + "." + namespace + ".svc"

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
}
