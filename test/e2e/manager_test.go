package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	catalogdv1 "github.com/catalogd/catalogd/api/v1"
	catalogdclient "github.com/catalogd/catalogd/client"
	"github.com/catalogd/catalogd/test/await"
	"github.com/catalogd/catalogd/test/fbcfacts"
	"github.com/catalogd/catalogd/test/kubetest"
	"github.com/catalogd/catalogd/test/registrytest"
	"github.com/catalogd/catalogd/test/syncbuf"
)

// managerProc is a running `catalogd manager` process.
type managerProc struct {
	api, probe, metrics string // base URLs
	args                []string
	cmd                 *exec.Cmd
	stderr              *syncbuf.Buffer
	exited              chan struct{}
}

// startManager runs `catalogd-manager manager` with its own ports on loopback.
func startManager(t testing.TB, args ...string) *managerProc {
	t.Helper()
	m := &managerProc{
		api: "http://" + freeAddr(t), probe: "http://" + freeAddr(t), metrics: "http://" + freeAddr(t),
		args: args,
	}
	m.start(t)
	return m
}

func (m *managerProc) start(t testing.TB) {
	t.Helper()
	args := append([]string{"manager",
		"--listen", strings.TrimPrefix(m.api, "http://"),
		"--health-probe-bind-address", strings.TrimPrefix(m.probe, "http://"),
		"--metrics-bind-address", strings.TrimPrefix(m.metrics, "http://"),
	}, m.args...)
	m.cmd = exec.Command(managerBinary, args...)
	m.stderr = &syncbuf.Buffer{}
	m.cmd.Stderr = m.stderr
	m.exited = make(chan struct{})
	if err := m.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	cmd, exited, stderr := m.cmd, m.exited, m.stderr
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		select {
		case <-exited:
		default:
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("catalogd manager %v stderr:\n%s", args, stderr)
		}
	})
}

// stop sends SIGTERM and waits for the process to exit.
func (m *managerProc) stop(t testing.TB) {
	t.Helper()
	if err := m.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-m.exited:
		if code := m.cmd.ProcessState.ExitCode(); code != 0 {
			t.Errorf("catalogd manager exited with code %d after SIGTERM", code)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("catalogd manager did not exit after SIGTERM")
	}
}

func freeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// hangingRegistry accepts connections and never answers, as a registry
// behind a broken load balancer does. It returns its host:port.
func hangingRegistry(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c) // held open, never written to
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		for _, c := range conns {
			c.Close()
		}
	})
	return ln.Addr().String()
}

// get answers status, ETag and body of one GET.
func get(url string) (int, string, []byte, error) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, "", nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("ETag"), body, err
}

// polled is what a poll loop saw.
type polled struct {
	answered, failed int
	first            time.Time // of the first answer
	firstFailure     string
}

// poll GETs url in a loop, as a client behind a Service would, until the
// returned stop is called; connections refused (nothing listening yet) are
// not answers. The loop is bounded by the test's own deadlines.
func poll(url string) (stop func() polled) {
	var mu sync.Mutex
	var p polled
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		for {
			select {
			case <-done:
				return
			case <-time.After(5 * time.Millisecond):
			}
			code, _, body, err := get(url)
			if err != nil {
				continue
			}
			mu.Lock()
			if p.answered == 0 {
				p.first = time.Now()
			}
			p.answered++
			if code != http.StatusOK {
				p.failed++
				if p.firstFailure == "" {
					p.firstFailure = fmt.Sprintf("%d %s", code, body)
				}
			}
			mu.Unlock()
		}
	}()
	return func() polled {
		close(done)
		<-finished
		mu.Lock()
		defer mu.Unlock()
		return p
	}
}

// startAPIServer runs envtest for the test and returns a client of it
// that knows ClusterCatalogs, and a kubeconfig file for the managers.
func startAPIServer(t testing.TB) (client.Client, string) {
	t.Helper()
	restCfg := kubetest.Start(t)
	kubeconfig := kubetest.WriteKubeconfig(t, restCfg)
	scheme := runtime.NewScheme()
	if err := catalogdv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(restCfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c, kubeconfig
}

// TestTwoManagers runs two `catalogd manager` processes against one API
// server, one loopback registry and one registry that never answers, as
// two replicas behind one Service: both answer every query with the same
// bytes, whichever holds the lease; the catalog on the hanging registry
// delays no other; and a replica restarted on its data directory answers
// from its first request, without pulling anything and without a 404.
func TestTwoManagers(t *testing.T) {
	c, kubeconfig := startAPIServer(t)
	ctx := context.Background()
	reg := registrytest.New(t)
	hung := hangingRegistry(t)
	demoRef := reg.PushCatalog(t, "catalogs/demo:v1", demoDir, registrytest.PushOptions{})
	facts := fbcfacts.Load(t, demoDir)

	// The catalog on the hanging registry comes first: were catalogs
	// reconciled one at a time, it would hold up the other.
	for _, cat := range []struct{ name, ref string }{{"stuck", hung + "/catalogs/stuck:v1"}, {"demo", reg.Host + "/catalogs/demo:v1"}} {
		obj := &catalogdv1.ClusterCatalog{
			ObjectMeta: metav1.ObjectMeta{Name: cat.name},
			Spec: catalogdv1.ClusterCatalogSpec{Source: catalogdv1.CatalogSource{
				Type: catalogdv1.SourceTypeImage, Image: &catalogdv1.ImageSource{Ref: cat.ref},
			}},
		}
		if err := c.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}

	common := []string{"--kubeconfig", kubeconfig, "--leader-elect", "--leader-election-namespace", "default",
		"--insecure-registry", reg.Host, "--insecure-registry", hung, "--sync-timeout", "3s"}
	dataA, dataB := t.TempDir(), t.TempDir()
	a := startManager(t, append([]string{"--data-dir", dataA}, common...)...)
	b := startManager(t, append([]string{"--data-dir", dataB}, common...)...)
	replicas := []*managerProc{a, b}

	await.Until(t, "demo to be served at its digest", 60*time.Second, func() error {
		var cat catalogdv1.ClusterCatalog
		if err := c.Get(ctx, types.NamespacedName{Name: "demo"}, &cat); err != nil {
			return err
		}
		if rs := cat.Status.ResolvedSource; rs == nil || rs.Image.Ref != demoRef || !meta.IsStatusConditionTrue(cat.Status.Conditions, catalogdv1.TypeServing) {
			return fmt.Errorf("status %+v", cat.Status)
		}
		return nil
	})
	// Each replica learns the published digest from its own watch, so it
	// serves it a moment after the leader does; ready then means indexed.
	for _, m := range replicas {
		await.Until(t, "every replica to serve demo and be ready", 60*time.Second, func() error {
			for _, url := range []string{m.api + "/catalogs/demo/packages", m.probe + "/readyz"} {
				if code, _, body, err := get(url); err != nil || code != http.StatusOK {
					return fmt.Errorf("GET %s: %d %s %v", url, code, body, err)
				}
			}
			return nil
		})
	}

	// Every replica answers every query about the content with the same
	// bytes. (A catalog's summary differs in one field, indexedAt: when
	// this replica built its index.)
	paths := []string{"/catalogs/demo/api/v1/all", "/catalogs/demo/packages", "/catalogs/demo/providers?group=observability.example.com&version=v1&kind=ServiceProbe"}
	for p := range facts.Packages {
		paths = append(paths, "/catalogs/demo/packages/"+p+"/channels", "/catalogs/demo/packages/"+p+"/bundles")
	}
	for _, p := range paths {
		codeA, etagA, bodyA, errA := get(a.api + p)
		codeB, etagB, bodyB, errB := get(b.api + p)
		if errA != nil || errB != nil {
			t.Fatalf("GET %s: %v / %v", p, errA, errB)
		}
		if codeA != http.StatusOK || codeB != http.StatusOK || etagA != etagB || !bytes.Equal(bodyA, bodyB) {
			t.Errorf("GET %s differs between replicas: %d %s (%d bytes) / %d %s (%d bytes)", p, codeA, etagA, len(bodyA), codeB, etagB, len(bodyB))
		}
	}

	var details []catalogdclient.CatalogDetail
	for _, m := range replicas {
		_, _, body, err := get(m.api + "/catalogs/demo")
		var d catalogdclient.CatalogDetail
		if err == nil {
			err = json.Unmarshal(body, &d)
		}
		if err != nil {
			t.Fatalf("GET /catalogs/demo: %v", err)
		}
		d.IndexedAt = nil
		details = append(details, d)
	}
	if !reflect.DeepEqual(details[0], details[1]) {
		t.Errorf("the replicas describe demo differently:\n%+v\n%+v", details[0], details[1])
	}

	// The catalog on the hanging registry: known, not indexed, with the
	// timeout in its last error once a sync gave up.
	for _, m := range replicas {
		await.Until(t, "stuck to report its timeout", 30*time.Second, func() error {
			code, _, body, err := get(m.api + "/catalogs/stuck/packages")
			if err != nil {
				return err
			}
			if code != http.StatusServiceUnavailable {
				return fmt.Errorf("GET /catalogs/stuck/packages: %d, want 503", code)
			}
			_, _, detail, err := get(m.api + "/catalogs/stuck")
			if err == nil && !bytes.Contains(detail, []byte("timed out")) {
				err = fmt.Errorf("GET /catalogs/stuck: %s; want a last error saying it timed out (%s)", detail, body)
			}
			return err
		})
	}

	// Restart replica b on its data directory while a client polls it:
	// every answer is the demo's package list; none is 404 or 503, and no
	// blob is pulled again.
	reg.Reset()
	b.stop(t)
	stopPolling := poll(b.api + "/catalogs/demo/packages")
	restarted := time.Now()
	b.start(t)
	await.Until(t, "the restarted replica to be ready", 60*time.Second, func() error {
		code, _, body, err := get(b.probe + "/readyz")
		if err == nil && code != http.StatusOK {
			err = fmt.Errorf("/readyz: %d %s", code, body)
		}
		return err
	})
	time.Sleep(200 * time.Millisecond)
	restart := stopPolling()
	if restart.answered == 0 {
		t.Fatal("the restarted replica answered nothing")
	}
	t.Logf("restart: first answer %s after exec, %d answers, %d not 200",
		restart.first.Sub(restarted).Round(time.Millisecond), restart.answered, restart.failed)
	if restart.failed > 0 {
		t.Errorf("%d of %d answers of the restarted replica were not 200; the first: %s", restart.failed, restart.answered, restart.firstFailure)
	}
	if n := reg.Counts().BlobGets; n != 0 {
		t.Errorf("the restart pulled %d blobs; the index on disk should have served", n)
	}

	// Fail over: stop a (the leader since b released the lease on its
	// restart, or not: either way b must write status now), and point demo
	// at new content. b publishes and serves it, and a client polling b all
	// along sees no failure.
	smaller := t.TempDir()
	if err := os.CopyFS(smaller, os.DirFS(demoDir)); err != nil {
		t.Fatal(err)
	}
	var dropped string
	for p := range facts.Packages {
		dropped = p
		break
	}
	if err := os.RemoveAll(filepath.Join(smaller, dropped)); err != nil {
		t.Fatal(err)
	}
	v2 := reg.PushCatalog(t, "catalogs/demo:v2", smaller, registrytest.PushOptions{})
	stopPolling = poll(b.api + "/catalogs/demo/packages")
	a.stop(t)
	stopped := time.Now()
	var cat catalogdv1.ClusterCatalog
	if err := c.Get(ctx, types.NamespacedName{Name: "demo"}, &cat); err != nil {
		t.Fatal(err)
	}
	cat.Spec.Source.Image.Ref = reg.Host + "/catalogs/demo:v2"
	if err := c.Update(ctx, &cat); err != nil {
		t.Fatal(err)
	}
	await.Until(t, "b to publish and serve v2", 60*time.Second, func() error {
		if err := c.Get(ctx, types.NamespacedName{Name: "demo"}, &cat); err != nil {
			return err
		}
		if rs := cat.Status.ResolvedSource; rs == nil || rs.Image.Ref != v2 {
			return fmt.Errorf("resolvedSource %+v, want %s", cat.Status.ResolvedSource, v2)
		}
		_, _, body, err := get(b.api + "/catalogs/demo/packages/" + dropped)
		if err == nil && !bytes.Contains(body, []byte("not-found")) {
			err = fmt.Errorf("b still serves %s: %s", dropped, body)
		}
		return err
	})
	gap := time.Since(stopped)
	failover := stopPolling()
	t.Logf("failover: status updated and served by the other replica %s after the leader stopped; %d answers, %d not 200",
		gap.Round(time.Millisecond), failover.answered, failover.failed)
	if failover.failed > 0 || failover.answered == 0 {
		t.Errorf("%d of %d queries failed during the failover; the first: %s", failover.failed, failover.answered, failover.firstFailure)
	}

	// What a metrics scrape shows: catalogd's own series are there.
	code, _, body, err := get(b.metrics + "/metrics")
	if err != nil || code != http.StatusOK {
		t.Fatalf("GET /metrics: %d %v", code, err)
	}
	for _, want := range []string{"catalogd_catalogs{state=\"Serving\"}", "catalogd_index_age_seconds{catalog=\"demo\"}",
		"catalogd_index_build_duration_seconds_count", "catalogd_pull_bytes_total"} {
		if !bytes.Contains(body, []byte(want)) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if os.Getenv("CATALOGD_E2E_METRICS") != "" {
		t.Logf("metrics of replica b:\n%s", body)
	}
}
