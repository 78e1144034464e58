package stress

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	catalogdv1 "github.com/catalogd/catalogd/api/v1"
	"github.com/catalogd/catalogd/test/await"
	"github.com/catalogd/catalogd/test/benchenv"
	"github.com/catalogd/catalogd/test/catalogdproc"
	"github.com/catalogd/catalogd/test/kubetest"
	"github.com/catalogd/catalogd/test/registrytest"
)

// BenchmarkManagerMemory runs `catalogd manager` against envtest with one
// ClusterCatalog, the bench catalog pushed to a registry on loopback, and
// reports what a deployment pays for the package API: the resident set of
// catalogd-manager (the image's /catalogd), of catalogd-package-api without --package-api and of
// catalogd-package-api with it, each idle after the first build
// (idle-*), after a list of the catalog's packages through the query API
// and, with the package API, a list of every PackageManifest through it
// (after-list-*), and the build's peak (VmHWM); each with its start-up
// pages given back (--page-out-startup, the default) and kept. Each run
// is a new process with an empty data directory. Run with -benchtime 1x
// -count 3 (make bench-memory).
func BenchmarkManagerMemory(b *testing.B) {
	catalog := benchenv.Catalog(b)
	kube := kubetest.Start(b)
	kubeconfig := kubetest.WriteKubeconfig(b, kube)
	reg := registrytest.New(b)
	ref := reg.PushCatalog(b, "catalogs/bench:v1", catalog, registrytest.PushOptions{})
	scheme := runtime.NewScheme()
	if err := catalogdv1.AddToScheme(scheme); err != nil {
		b.Fatal(err)
	}
	c, err := client.New(kube, client.Options{Scheme: scheme})
	if err != nil {
		b.Fatal(err)
	}
	obj := &catalogdv1.ClusterCatalog{
		ObjectMeta: metav1.ObjectMeta{Name: "bench"},
		Spec: catalogdv1.ClusterCatalogSpec{Source: catalogdv1.CatalogSource{
			Type: catalogdv1.SourceTypeImage, Image: &catalogdv1.ImageSource{Ref: ref},
		}},
	}
	if err := c.Create(context.Background(), obj); err != nil {
		b.Fatal(err)
	}
	managerBinary := catalogdproc.Build(b, "catalogd-manager")
	tagged := catalogdproc.Build(b, "catalogd-package-api")
	args := []string{"manager", "--kubeconfig", kubeconfig, "--insecure-registry", reg.Host,
		"--metrics-bind-address", "0", "--health-probe-bind-address", "0"}
	for _, pages := range []struct {
		name string
		on   bool
	}{{"page-out", true}, {"keep-pages", false}} {
		run := append(append([]string{}, args...), fmt.Sprintf("--page-out-startup=%v", pages.on))
		b.Run("catalogd-manager/"+pages.name, func(b *testing.B) {
			managerMemory(b, installBinary(b, managerBinary), run, nil, pages.on)
		})
		b.Run("catalogd-package-api/api-off/"+pages.name, func(b *testing.B) {
			managerMemory(b, installBinary(b, tagged), run, nil, pages.on)
		})
		b.Run("catalogd-package-api/api-on/"+pages.name, func(b *testing.B) {
			managerMemory(b, installBinary(b, tagged), run, kube, pages.on)
		})
	}
}

// managerMemory is BenchmarkManagerMemory for one binary; kube, when set,
// turns the package API on and is the identity that lists through it;
// pageOut says the manager gives back its start-up pages, which the idle
// figures are read after.
func managerMemory(b *testing.B, installed string, args []string, kube *rest.Config, pageOut bool) {
	var idle, idleFile, idleAnon, after, afterFile, afterAnon, peak, firstList, firstManifests, firstManifest float64
	for range b.N {
		listen := loopbackAddr(b)
		run := append(append([]string{}, args...), "--data-dir", filepath.Join(b.TempDir(), "data"), "--listen", listen)
		var pkgAddr string
		if kube != nil {
			pkgAddr = loopbackAddr(b)
			run = append(run, "--package-api", "--package-api-bind-address", pkgAddr)
		}
		p := catalogdproc.Start(b, installed, run...)
		base := "http://" + listen
		waitServing(b, p, base, "bench")
		if pageOut {
			await.True(b, "the manager gave back its start-up pages", time.Minute, func() bool {
				return strings.Contains(p.Stderr.String(), "gave back the executable's start-up pages")
			})
		}
		time.Sleep(idleAfterBuild)
		pid := p.Cmd.Process.Pid
		idle += benchenv.ProcessMemoryMiB(pid, "VmRSS")
		idleFile += benchenv.ProcessMemoryMiB(pid, "RssFile")
		idleAnon += benchenv.ProcessMemoryMiB(pid, "RssAnon")
		// The first requests after start-up, which read back the pages
		// they need when start-up's were given back.
		began := time.Now()
		readAll(b, base+"/catalogs/bench/packages")
		firstList += time.Since(began).Seconds() * 1000
		if kube != nil {
			began = time.Now()
			names := listManifests(b, kube, pkgAddr, "")
			firstManifests += time.Since(began).Seconds() * 1000
			if len(names) == 0 {
				b.Fatal("the package API lists no PackageManifest")
			}
			began = time.Now()
			listManifests(b, kube, pkgAddr, names[len(names)/2])
			firstManifest += time.Since(began).Seconds() * 1000
		}
		time.Sleep(time.Second)
		after += benchenv.ProcessMemoryMiB(pid, "VmRSS")
		afterFile += benchenv.ProcessMemoryMiB(pid, "RssFile")
		afterAnon += benchenv.ProcessMemoryMiB(pid, "RssAnon")
		peak += benchenv.ProcessMemoryMiB(pid, "VmHWM")
		p.Kill(b)
	}
	n := float64(b.N)
	b.ReportMetric(idle/n, "idle-VmRSS-MiB")
	b.ReportMetric(idleFile/n, "idle-RssFile-MiB")
	b.ReportMetric(idleAnon/n, "idle-RssAnon-MiB")
	b.ReportMetric(after/n, "after-list-VmRSS-MiB")
	b.ReportMetric(afterFile/n, "after-list-RssFile-MiB")
	b.ReportMetric(afterAnon/n, "after-list-RssAnon-MiB")
	b.ReportMetric(peak/n, "VmHWM-MiB")
	b.ReportMetric(firstList/n, "first-packages-ms")
	if kube != nil {
		b.ReportMetric(firstManifests/n, "first-manifest-list-ms")
		b.ReportMetric(firstManifest/n, "first-manifest-get-ms")
	}
}

// waitServing waits until the manager serves the catalog's bundles through
// its query API, and the package API (when on) is ready.
func waitServing(b *testing.B, p *catalogdproc.Process, base, catalog string) {
	b.Helper()
	deadline := time.Now().Add(5 * time.Minute)
	for {
		select {
		case <-p.Exited:
			b.Fatalf("catalogd manager exited (%v):\n%s", p.ExitErr, tail(p.Stderr.String(), 4096))
		default:
		}
		if resp, err := http.Get(base + "/catalogs/" + catalog); err == nil {
			var d detail
			ok := resp.StatusCode == http.StatusOK && json.NewDecoder(resp.Body).Decode(&d) == nil && d.Counts.Bundles > 0
			resp.Body.Close()
			if ok {
				return
			}
		}
		if time.Now().After(deadline) {
			b.Fatalf("catalogd manager did not serve catalog %s:\n%s", catalog, tail(p.Stderr.String(), 4096))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// listManifests lists every PackageManifest through the package API at
// addr, or gets the one named, with kube's client certificate, which the
// API's delegated authentication accepts (the kube-apiserver's client CA
// signed it), once the API is ready, and returns the names it answered.
func listManifests(b *testing.B, kube *rest.Config, addr, name string) []string {
	b.Helper()
	cert, err := tls.X509KeyPair(kube.CertData, kube.KeyData)
	if err != nil {
		b.Fatal(err)
	}
	hc := &http.Client{Timeout: time.Minute, Transport: &http.Transport{TLSClientConfig: &tls.Config{
		Certificates: []tls.Certificate{cert}, InsecureSkipVerify: true, // the API's certificate is self-signed
	}}}
	url := "https://" + addr + "/apis/packages.operators.coreos.com/v1/namespaces/default/packagemanifests"
	if name != "" {
		url += "/" + name
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		resp, err := hc.Get(url)
		if err == nil {
			body, rerr := io.ReadAll(resp.Body)
			resp.Body.Close()
			if rerr == nil && resp.StatusCode == http.StatusOK {
				type meta struct{ Metadata struct{ Name string } }
				var l struct {
					meta
					Items []meta
				}
				if err := json.Unmarshal(body, &l); err != nil {
					b.Fatal(err)
				}
				if name != "" {
					return []string{l.Metadata.Name}
				}
				var names []string
				for _, it := range l.Items {
					names = append(names, it.Metadata.Name)
				}
				return names
			}
			err = fmt.Errorf("%s: %s", resp.Status, tail(string(body), 512))
		}
		if time.Now().After(deadline) {
			b.Fatalf("list packagemanifests: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// readAll reads url to its end and fails unless it answers 200.
func readAll(b *testing.B, url string) {
	b.Helper()
	resp, err := http.Get(url)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		b.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		b.Fatalf("GET %s: %s", url, resp.Status)
	}
}

// loopbackAddr is a loopback address with a port free a moment ago.
func loopbackAddr(b *testing.B) string {
	b.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}
