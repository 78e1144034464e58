// Package deploy checks the manifests in config/ as a cluster would see
// them: rendered by kustomize's Go API, then checked statically for what an
// operator relies on and offered to a real API server (envtest), which
// validates each object against its schema and admission (including the
// restricted pod security profile) and answers RBAC questions.
package deploy

import (
	"bytes"
	"context"
	"debug/buildinfo"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/catalogd/catalogd/test/kubetest"
	"github.com/catalogd/catalogd/test/tlstest"
)

func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// render builds a kustomization under config/ the way `kustomize build` does.
func render(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	resMap, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).
		Run(filesys.MakeFsOnDisk(), filepath.Join(repoRoot(), "config", dir))
	if err != nil {
		t.Fatalf("kustomize build config/%s: %v", dir, err)
	}
	var objs []*unstructured.Unstructured
	for _, r := range resMap.Resources() {
		b, err := r.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(b); err != nil {
			t.Fatal(err)
		}
		objs = append(objs, u)
	}
	return objs
}

// only returns the single rendered object of kind, converted to T.
func only[T any](t *testing.T, objs []*unstructured.Unstructured, kind string) *T {
	t.Helper()
	var found []*T
	for _, o := range objs {
		if o.GetKind() != kind {
			continue
		}
		v := new(T)
		if err := kruntime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(o.Object, v, true); err != nil {
			t.Fatalf("%s %s: %v", kind, o.GetName(), err)
		}
		found = append(found, v)
	}
	if len(found) != 1 {
		t.Fatalf("config/default has %d objects of kind %s, want 1", len(found), kind)
	}
	return found[0]
}

// flagValue returns the value of --name=value in args.
func flagValue(t *testing.T, args []string, name string) string {
	t.Helper()
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v
		}
	}
	t.Fatalf("args %q have no --%s", args, name)
	return ""
}

// portOf returns the port number of a ":port" or "host:port" flag value.
func portOf(t *testing.T, addr string) int32 {
	t.Helper()
	i := strings.LastIndex(addr, ":")
	var p int32
	if _, err := fmt.Sscanf(addr[i+1:], "%d", &p); i < 0 || err != nil {
		t.Fatalf("address %q has no port", addr)
	}
	return p
}

func containerPort(t *testing.T, c corev1.Container, name string) int32 {
	t.Helper()
	for _, p := range c.Ports {
		if p.Name == name {
			return p.ContainerPort
		}
	}
	t.Fatalf("container %s has no port named %q", c.Name, name)
	return 0
}

// TestDefaultStatic checks, without a cluster, what config/default promises
// an operator: two replicas that a PDB, the Service and the NetworkPolicy all
// select; ports that match the flags the manager listens on; probes on the
// health port; the restricted security context and resource requests on
// every container; the serving certificate mounted where --tls-cert points.
func TestDefaultStatic(t *testing.T) {
	objs := render(t, "default")
	dep := only[appsv1.Deployment](t, objs, "Deployment")
	pdb := only[policyv1.PodDisruptionBudget](t, objs, "PodDisruptionBudget")
	svc := only[corev1.Service](t, objs, "Service")
	np := only[networkingv1.NetworkPolicy](t, objs, "NetworkPolicy")
	sa := only[corev1.ServiceAccount](t, objs, "ServiceAccount")

	if dep.Name != "catalogd-controller-manager" || dep.Namespace != "olmv1-system" {
		t.Errorf("deployment %s/%s, want olmv1-system/catalogd-controller-manager", dep.Namespace, dep.Name)
	}
	if dep.Spec.Replicas == nil || *dep.Spec.Replicas != 2 {
		t.Errorf("replicas %v, want 2", dep.Spec.Replicas)
	}
	podLabels := labels.Set(dep.Spec.Template.Labels)
	selects := func(what string, sel *metav1.LabelSelector) {
		t.Helper()
		s, err := metav1.LabelSelectorAsSelector(sel)
		if err != nil {
			t.Fatalf("%s selector: %v", what, err)
		}
		if s.Empty() || !s.Matches(podLabels) {
			t.Errorf("%s selector %q does not select the pods (labels %v)", what, s, podLabels)
		}
	}
	selects("deployment", dep.Spec.Selector)
	selects("pod disruption budget", pdb.Spec.Selector)
	selects("service", &metav1.LabelSelector{MatchLabels: svc.Spec.Selector})
	selects("network policy", &np.Spec.PodSelector)
	for _, obj := range []metav1.Object{pdb, svc, np, sa} {
		if obj.GetNamespace() != dep.Namespace {
			t.Errorf("%s is in namespace %q, the deployment in %q", obj.GetName(), obj.GetNamespace(), dep.Namespace)
		}
	}
	if pdb.Spec.MinAvailable == nil || pdb.Spec.MinAvailable.IntValue() < 1 || pdb.Spec.MinAvailable.IntValue() >= int(*dep.Spec.Replicas) {
		t.Errorf("PDB minAvailable %v: want at least 1 and fewer than the %d replicas, so drains can proceed", pdb.Spec.MinAvailable, *dep.Spec.Replicas)
	}

	pod := dep.Spec.Template.Spec
	if pod.ServiceAccountName != sa.Name {
		t.Errorf("pods run as service account %q, config has %q", pod.ServiceAccountName, sa.Name)
	}
	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(pod.Containers))
	}
	mgr := pod.Containers[0]
	if mgr.Args[0] != "manager" {
		t.Errorf("args %q do not run `catalogd manager`", mgr.Args)
	}

	// Ports: named ports match what the manager is told to listen on.
	for flagName, port := range map[string]string{"listen": "https", "metrics-bind-address": "metrics", "health-probe-bind-address": "health"} {
		if got, want := containerPort(t, mgr, port), portOf(t, flagValue(t, mgr.Args, flagName)); got != want {
			t.Errorf("port %s is %d, but --%s listens on %d", port, got, flagName, want)
		}
	}
	svcPorts := map[int32]intstr.IntOrString{}
	for _, p := range svc.Spec.Ports {
		svcPorts[p.Port] = p.TargetPort
	}
	if tp, ok := svcPorts[443]; !ok || tp != intstr.FromString("https") {
		t.Errorf("service port 443 targets %v, want the named port https", svcPorts[443])
	}
	if tp, ok := svcPorts[9090]; !ok || tp != intstr.FromString("metrics") {
		t.Errorf("service port 9090 targets %v, want the named port metrics", svcPorts[9090])
	}
	base := flagValue(t, mgr.Args, "external-base-url")
	if want := "https://" + svc.Name + "." + svc.Namespace + ".svc"; base != want {
		t.Errorf("--external-base-url %s, want %s (the service on 443)", base, want)
	}
	// The network policy lets every container port in.
	allowed := map[int32]bool{}
	for _, rule := range np.Spec.Ingress {
		if len(rule.From) != 0 {
			continue
		}
		for _, p := range rule.Ports {
			allowed[int32(p.Port.IntValue())] = true
		}
	}
	for _, p := range mgr.Ports {
		if !allowed[p.ContainerPort] {
			t.Errorf("network policy does not admit port %s (%d)", p.Name, p.ContainerPort)
		}
	}

	// Probes on the health port, readiness distinct from liveness.
	health := containerPort(t, mgr, "health")
	for name, probe := range map[string]*corev1.Probe{"startup": mgr.StartupProbe, "liveness": mgr.LivenessProbe, "readiness": mgr.ReadinessProbe} {
		if probe == nil || probe.HTTPGet == nil {
			t.Errorf("no HTTP %s probe", name)
			continue
		}
		if probe.HTTPGet.Port != intstr.FromString("health") && probe.HTTPGet.Port != intstr.FromInt32(health) {
			t.Errorf("%s probe on port %v, want health (%d)", name, probe.HTTPGet.Port, health)
		}
	}
	if mgr.ReadinessProbe != nil && mgr.ReadinessProbe.HTTPGet != nil && mgr.ReadinessProbe.HTTPGet.Path != "/readyz" {
		t.Errorf("readiness probe path %s, want /readyz", mgr.ReadinessProbe.HTTPGet.Path)
	}
	if mgr.LivenessProbe != nil && mgr.LivenessProbe.HTTPGet != nil && mgr.LivenessProbe.HTTPGet.Path != "/healthz" {
		t.Errorf("liveness probe path %s, want /healthz", mgr.LivenessProbe.HTTPGet.Path)
	}

	// Security and resources for every container.
	psc := pod.SecurityContext
	for _, c := range slices.Concat(pod.InitContainers, pod.Containers) {
		sc := c.SecurityContext
		if sc == nil {
			t.Errorf("container %s has no securityContext", c.Name)
			continue
		}
		nonRoot := sc.RunAsNonRoot != nil && *sc.RunAsNonRoot || sc.RunAsNonRoot == nil && psc != nil && psc.RunAsNonRoot != nil && *psc.RunAsNonRoot
		uid := sc.RunAsUser
		if uid == nil && psc != nil {
			uid = psc.RunAsUser
		}
		if !nonRoot || uid == nil || *uid == 0 {
			t.Errorf("container %s: runAsNonRoot %v, runAsUser %v: want non-root with a numeric uid", c.Name, nonRoot, uid)
		}
		if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
			t.Errorf("container %s: root filesystem is writable", c.Name)
		}
		if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
			t.Errorf("container %s: privilege escalation allowed", c.Name)
		}
		if sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) != 0 {
			t.Errorf("container %s: capabilities %+v, want drop ALL and add none", c.Name, sc.Capabilities)
		}
		seccomp := sc.SeccompProfile
		if seccomp == nil && psc != nil {
			seccomp = psc.SeccompProfile
		}
		if seccomp == nil || seccomp.Type != corev1.SeccompProfileTypeRuntimeDefault {
			t.Errorf("container %s: seccomp profile %v, want RuntimeDefault", c.Name, seccomp)
		}
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if q, ok := c.Resources.Requests[r]; !ok || q.IsZero() {
				t.Errorf("container %s requests no %s", c.Name, r)
			}
		}
		// The process shares this one between the Go runtime and SQLite
		// (internal/memlimit), so it must be there.
		if lim, ok := c.Resources.Limits[corev1.ResourceMemory]; !ok || lim.IsZero() {
			t.Errorf("container %s sets no memory limit", c.Name)
		} else if lim.Cmp(c.Resources.Requests[corev1.ResourceMemory]) < 0 {
			t.Errorf("container %s: memory limit %s below its request", c.Name, lim.String())
		}
	}

	// Volumes: the data dir and the certificate are mounted where the flags
	// point, the certificate from catalogd-service-cert.
	mounts := map[string]corev1.VolumeMount{}
	for _, m := range mgr.VolumeMounts {
		mounts[m.MountPath] = m
	}
	volumes := map[string]corev1.Volume{}
	for _, v := range pod.Volumes {
		volumes[v.Name] = v
	}
	if m, ok := mounts[flagValue(t, mgr.Args, "data-dir")]; !ok || volumes[m.Name].EmptyDir == nil {
		t.Errorf("--data-dir is not an emptyDir mount (mounts %v)", mounts)
	}
	for _, f := range []string{"tls-cert", "tls-key"} {
		path := flagValue(t, mgr.Args, f)
		m, ok := mounts[filepath.Dir(path)]
		if !ok {
			t.Errorf("--%s=%s is not under a mount", f, path)
			continue
		}
		s := volumes[m.Name].Secret
		if s == nil || s.SecretName != "catalogd-service-cert" || !m.ReadOnly {
			t.Errorf("--%s=%s: mount %s is not the read-only secret catalogd-service-cert", f, path, m.Name)
			continue
		}
		if !slices.ContainsFunc(s.Items, func(k corev1.KeyToPath) bool { return k.Path == filepath.Base(path) }) {
			t.Errorf("--%s=%s: secret volume has no item with path %s", f, path, filepath.Base(path))
		}
	}
}

// TestCertManagerOverlay checks that the optional overlay issues the very
// secret the Deployment mounts, for the Service's DNS name.
func TestCertManagerOverlay(t *testing.T) {
	objs := render(t, "overlays/cert-manager")
	svc := only[corev1.Service](t, objs, "Service")
	dep := only[appsv1.Deployment](t, objs, "Deployment")
	var mounted string
	for _, v := range dep.Spec.Template.Spec.Volumes {
		if v.Secret != nil {
			mounted = v.Secret.SecretName
		}
	}
	dnsName := svc.Name + "." + svc.Namespace + ".svc"
	found := false
	for _, o := range objs {
		if o.GetKind() != "Certificate" {
			continue
		}
		secret, _, _ := unstructured.NestedString(o.Object, "spec", "secretName")
		names, _, _ := unstructured.NestedStringSlice(o.Object, "spec", "dnsNames")
		if secret == mounted && o.GetNamespace() == dep.Namespace {
			found = true
			if !slices.Contains(names, dnsName) {
				t.Errorf("certificate %s has DNS names %q, want %s among them", o.GetName(), names, dnsName)
			}
		}
	}
	if !found {
		t.Errorf("no Certificate in %s issues the mounted secret %q", dep.Namespace, mounted)
	}
}

// named returns the rendered object of kind and name, converted to T.
func named[T any](t *testing.T, objs []*unstructured.Unstructured, kind, name string) *T {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() != kind || o.GetName() != name {
			continue
		}
		v := new(T)
		if err := kruntime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(o.Object, v, true); err != nil {
			t.Fatalf("%s %s: %v", kind, name, err)
		}
		return v
	}
	t.Fatalf("no %s %s rendered", kind, name)
	return nil
}

// apiService is the part of an APIService (k8s.io/kube-aggregator, not a
// dependency of this module) that the overlay sets.
type apiService struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		Group                 string `json:"group"`
		Version               string `json:"version"`
		GroupPriorityMinimum  int32  `json:"groupPriorityMinimum"`
		VersionPriority       int32  `json:"versionPriority"`
		InsecureSkipTLSVerify bool   `json:"insecureSkipTLSVerify"`
		CABundle              []byte `json:"caBundle"`
		Service               *struct {
			Namespace string `json:"namespace"`
			Name      string `json:"name"`
			Port      *int32 `json:"port"`
		} `json:"service"`
	} `json:"spec"`
}

// TestPackageAPIOverlay checks, without a cluster, that the package API
// overlay wires the aggregator to the manager: the APIService names the
// group and version it is called after and points at a Service and port
// that reach, through a named target port, the port --package-api-bind-address
// listens on, on the manager's pods, admitted by the NetworkPolicy; the
// certificate directory is the mounted secret; the manager's service
// account is bound to what delegated authentication and authorization
// need; and a ClusterRole aggregated to view, edit and admin grants
// reading packagemanifests and their icons. Both overlays (certificate
// by hand or by cert-manager) must agree on all of it.
func TestPackageAPIOverlay(t *testing.T) {
	for _, dir := range []string{"overlays/package-api", "overlays/package-api-cert-manager"} {
		t.Run(dir, func(t *testing.T) { testPackageAPIOverlay(t, dir) })
	}
}

func testPackageAPIOverlay(t *testing.T, dir string) {
	objs := render(t, dir)
	dep := only[appsv1.Deployment](t, objs, "Deployment")
	np := only[networkingv1.NetworkPolicy](t, objs, "NetworkPolicy")
	as := only[apiService](t, objs, "APIService")
	mgr := dep.Spec.Template.Spec.Containers[0]
	if !slices.Contains(mgr.Args, "--package-api") {
		t.Errorf("manager args %q lack --package-api", mgr.Args)
	}

	if as.Name != as.Spec.Version+"."+as.Spec.Group || as.Name != "v1.packages.operators.coreos.com" {
		t.Errorf("APIService %s serves %s/%s, want v1.packages.operators.coreos.com", as.Name, as.Spec.Group, as.Spec.Version)
	}
	if as.Spec.GroupPriorityMinimum != 2000 || as.Spec.VersionPriority != 15 {
		t.Errorf("APIService priorities %d/%d, want OLM v0's 2000/15", as.Spec.GroupPriorityMinimum, as.Spec.VersionPriority)
	}
	if as.Spec.InsecureSkipTLSVerify {
		t.Error("APIService skips TLS verification")
	}
	if as.Spec.Service == nil {
		t.Fatal("APIService has no service: it would be served by the kube-apiserver itself")
	}
	svc := named[corev1.Service](t, objs, "Service", as.Spec.Service.Name)
	if svc.Namespace != as.Spec.Service.Namespace {
		t.Errorf("APIService points at %s/%s, the Service is in %s", as.Spec.Service.Namespace, as.Spec.Service.Name, svc.Namespace)
	}
	if svc.Namespace != dep.Namespace {
		t.Errorf("Service %s is in %s, the manager in %s", svc.Name, svc.Namespace, dep.Namespace)
	}
	s, err := metav1.LabelSelectorAsSelector(&metav1.LabelSelector{MatchLabels: svc.Spec.Selector})
	if err != nil || s.Empty() || !s.Matches(labels.Set(dep.Spec.Template.Labels)) {
		t.Errorf("Service %s selector %v does not select the manager's pods (%v)", svc.Name, svc.Spec.Selector, dep.Spec.Template.Labels)
	}
	port := int32(443) // the APIService's default
	if as.Spec.Service.Port != nil {
		port = *as.Spec.Service.Port
	}
	var target *intstr.IntOrString
	for _, p := range svc.Spec.Ports {
		if p.Port == port {
			target = &p.TargetPort
		}
	}
	if target == nil {
		t.Fatalf("APIService sends to port %d, Service %s has none", port, svc.Name)
	}
	if target.Type != intstr.String {
		t.Fatalf("Service %s port %d targets %v, want a named container port", svc.Name, port, target)
	}
	listen := portOf(t, flagValue(t, mgr.Args, "package-api-bind-address"))
	if got := containerPort(t, mgr, target.StrVal); got != listen {
		t.Errorf("Service %s port %d reaches container port %s (%d), --package-api-bind-address listens on %d", svc.Name, port, target.StrVal, got, listen)
	}
	admitted := false
	for _, rule := range np.Spec.Ingress {
		for _, p := range rule.Ports {
			admitted = admitted || len(rule.From) == 0 && p.Port != nil && int32(p.Port.IntValue()) == listen
		}
	}
	if !admitted {
		t.Errorf("NetworkPolicy does not admit the package API's port %d", listen)
	}

	// The certificate directory is the secret, with both files.
	certDir := flagValue(t, mgr.Args, "package-api-cert-dir")
	var secret *corev1.SecretVolumeSource
	for _, m := range mgr.VolumeMounts {
		if m.MountPath != certDir {
			continue
		}
		if !m.ReadOnly {
			t.Errorf("--package-api-cert-dir=%s is mounted writable", certDir)
		}
		for _, v := range dep.Spec.Template.Spec.Volumes {
			if v.Name == m.Name {
				secret = v.Secret
			}
		}
	}
	if secret == nil || secret.SecretName != "catalogd-package-api-cert" {
		t.Fatalf("--package-api-cert-dir=%s is not a mount of the secret catalogd-package-api-cert", certDir)
	}
	for _, f := range []string{"tls.crt", "tls.key"} {
		if !slices.ContainsFunc(secret.Items, func(k corev1.KeyToPath) bool { return k.Path == f && k.Key == f }) {
			t.Errorf("the package API's secret volume has no %s", f)
		}
	}
	// With cert-manager, a Certificate issues that secret for the name the
	// aggregator checks, and its CA is injected into the APIService.
	if strings.Contains(dir, "cert-manager") {
		dnsName := svc.Name + "." + svc.Namespace + ".svc"
		var issued string
		for _, o := range objs {
			secretName, _, _ := unstructured.NestedString(o.Object, "spec", "secretName")
			names, _, _ := unstructured.NestedStringSlice(o.Object, "spec", "dnsNames")
			if o.GetKind() == "Certificate" && secretName == secret.SecretName && o.GetNamespace() == dep.Namespace && slices.Contains(names, dnsName) {
				issued = o.GetNamespace() + "/" + o.GetName()
			}
		}
		if issued == "" {
			t.Errorf("no Certificate issues %s for %s", secret.SecretName, dnsName)
		}
		if got := as.Annotations["cert-manager.io/inject-ca-from"]; issued == "" || got != issued {
			t.Errorf("APIService inject-ca-from %q, want the Certificate %s", got, issued)
		}
	}

	// RBAC: the manager's service account, wherever it is bound.
	sa := dep.Spec.Template.Spec.ServiceAccountName
	boundToSA := func(subjects []rbacv1.Subject) bool {
		return slices.ContainsFunc(subjects, func(s rbacv1.Subject) bool {
			return s.Kind == "ServiceAccount" && s.Name == sa && s.Namespace == dep.Namespace
		})
	}
	var delegator, authReader bool
	for _, o := range objs {
		switch o.GetKind() {
		case "ClusterRoleBinding":
			b := named[rbacv1.ClusterRoleBinding](t, objs, "ClusterRoleBinding", o.GetName())
			delegator = delegator || b.RoleRef.Kind == "ClusterRole" && b.RoleRef.Name == "system:auth-delegator" && boundToSA(b.Subjects)
		case "RoleBinding":
			b := named[rbacv1.RoleBinding](t, objs, "RoleBinding", o.GetName())
			authReader = authReader || b.Namespace == "kube-system" && b.RoleRef.Kind == "Role" &&
				b.RoleRef.Name == "extension-apiserver-authentication-reader" && boundToSA(b.Subjects)
		}
	}
	if !delegator {
		t.Errorf("no ClusterRoleBinding of system:auth-delegator to %s/%s", dep.Namespace, sa)
	}
	if !authReader {
		t.Errorf("no RoleBinding in kube-system of extension-apiserver-authentication-reader to %s/%s", dep.Namespace, sa)
	}
	var viewers []string
	for _, o := range objs {
		if o.GetKind() != "ClusterRole" {
			continue
		}
		role := named[rbacv1.ClusterRole](t, objs, "ClusterRole", o.GetName())
		if role.Labels["rbac.authorization.k8s.io/aggregate-to-view"] != "true" {
			continue
		}
		viewers = append(viewers, role.Name)
		for _, res := range []string{"packagemanifests", "packagemanifests/icon"} {
			for _, verb := range []string{"get", "list", "watch"} {
				if !grants(map[string][]rbacv1.PolicyRule{"ClusterRole/" + role.Name: role.Rules}, "", as.Spec.Group, res, verb) {
					t.Errorf("ClusterRole %s does not grant %s on %s", role.Name, verb, res)
				}
			}
		}
		for _, verb := range []string{"create", "update", "patch", "delete"} {
			if grants(map[string][]rbacv1.PolicyRule{"ClusterRole/" + role.Name: role.Rules}, "", as.Spec.Group, "packagemanifests", verb) {
				t.Errorf("ClusterRole %s, aggregated to view, grants %s", role.Name, verb)
			}
		}
		for _, to := range []string{"edit", "admin"} {
			if role.Labels["rbac.authorization.k8s.io/aggregate-to-"+to] != "true" {
				t.Errorf("ClusterRole %s is not aggregated to %s, as OLM v0's view role is", role.Name, to)
			}
		}
	}
	if len(viewers) != 1 {
		t.Errorf("ClusterRoles aggregated to view: %q, want one", viewers)
	}
}

// warnings collects the API server's warning headers.
type warnings struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warnings) HandleWarningHeader(_ int, _ string, msg string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, msg)
}

func (w *warnings) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	m := w.msgs
	w.msgs = nil
	return m
}

// TestGRPCOverlay: config/overlays/grpc serves OLM v0's registry API on
// every replica: --grpc-listen's port is the container port the Service
// catalogd-grpc targets by name, on the manager's pods, admitted by the
// NetworkPolicy from anywhere; and the sample CatalogSource dials, through
// an ExternalName Service named after its catalog, that Service's port.
func TestGRPCOverlay(t *testing.T) {
	objs := render(t, "overlays/grpc")
	dep := only[appsv1.Deployment](t, objs, "Deployment")
	np := only[networkingv1.NetworkPolicy](t, objs, "NetworkPolicy")
	mgr := dep.Spec.Template.Spec.Containers[0]
	listen := portOf(t, flagValue(t, mgr.Args, "grpc-listen"))
	svc := named[corev1.Service](t, objs, "Service", "catalogd-grpc")
	s, err := metav1.LabelSelectorAsSelector(&metav1.LabelSelector{MatchLabels: svc.Spec.Selector})
	if err != nil || s.Empty() || !s.Matches(labels.Set(dep.Spec.Template.Labels)) {
		t.Errorf("Service %s selector %v does not select the manager's pods (%v)", svc.Name, svc.Spec.Selector, dep.Spec.Template.Labels)
	}
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].TargetPort.Type != intstr.String {
		t.Fatalf("Service %s ports %v: want one, targeting a named container port", svc.Name, svc.Spec.Ports)
	}
	if got := containerPort(t, mgr, svc.Spec.Ports[0].TargetPort.StrVal); got != listen {
		t.Errorf("Service %s reaches container port %d, --grpc-listen listens on %d", svc.Name, got, listen)
	}
	admitted := false
	for _, rule := range np.Spec.Ingress {
		for _, p := range rule.Ports {
			admitted = admitted || len(rule.From) == 0 && p.Port != nil && int32(p.Port.IntValue()) == listen
		}
	}
	if !admitted {
		t.Errorf("NetworkPolicy does not admit the registry API's port %d", listen)
	}

	sample, err := os.ReadFile(filepath.Join(repoRoot(), "config", "samples", "catalogsource-catalogd.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var alias corev1.Service
	var address string
	for _, doc := range strings.Split(string(sample), "\n---\n") {
		var obj struct {
			Kind string `json:"kind"`
			Spec struct {
				Address string `json:"address"`
			} `json:"spec"`
		}
		if err := utilyaml.Unmarshal([]byte(doc), &obj); err != nil {
			t.Fatal(err)
		}
		switch obj.Kind {
		case "Service":
			if err := utilyaml.Unmarshal([]byte(doc), &alias); err != nil {
				t.Fatal(err)
			}
		case "CatalogSource":
			address = obj.Spec.Address
		}
	}
	want := fmt.Sprintf("%s.%s.svc:%d", alias.Name, alias.Namespace, svc.Spec.Ports[0].Port)
	if address != want {
		t.Errorf("the sample CatalogSource dials %q, want its ExternalName Service's name and catalogd-grpc's port: %q", address, want)
	}
	if wantTarget := svc.Name + "." + svc.Namespace + ".svc.cluster.local"; alias.Spec.Type != corev1.ServiceTypeExternalName || alias.Spec.ExternalName != wantTarget {
		t.Errorf("the sample's Service %s is %s to %q, want ExternalName to %q", alias.Name, alias.Spec.Type, alias.Spec.ExternalName, wantTarget)
	}
}

// TestDefaultDryRun offers every object of config/default, and of the
// package API overlay, to a real API server with server-side apply in
// dry-run mode (only the Namespace is created for real, since namespaced
// objects need it; envtest installs the CRD). Each must be accepted without
// warnings. It then creates the service account and dry-runs a Pod from the
// Deployment's template, which the restricted pod security profile enforced
// on the namespace must admit.
func TestDefaultDryRun(t *testing.T) {
	for _, dir := range []string{"default", "overlays/package-api"} {
		t.Run(dir, func(t *testing.T) { testDryRun(t, dir) })
	}
}

func testDryRun(t *testing.T, dir string) {
	cfg := kubetest.Start(t)
	w := &warnings{}
	cfg = rest.CopyConfig(cfg)
	cfg.WarningHandler = w
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	objs := render(t, dir)
	apply := func(o *unstructured.Unstructured, dryRun bool) error {
		opts := []client.ApplyOption{client.FieldOwner("deploy-test"), client.ForceOwnership}
		if dryRun {
			opts = append(opts, client.DryRunAll)
		}
		return c.Apply(ctx, client.ApplyConfigurationFromUnstructured(o.DeepCopy()), opts...)
	}
	for _, o := range objs {
		if o.GetKind() == "Namespace" {
			if err := apply(o, false); err != nil {
				t.Fatalf("creating namespace %s: %v", o.GetName(), err)
			}
		}
	}
	for _, o := range objs {
		name := o.GetKind() + " " + o.GetNamespace() + "/" + o.GetName()
		t.Run(name, func(t *testing.T) {
			if err := apply(o, true); err != nil {
				t.Errorf("dry-run apply: %v", err)
			}
			if w := w.take(); len(w) > 0 {
				t.Errorf("API server warnings: %q", w)
			}
		})
	}

	dep := only[appsv1.Deployment](t, objs, "Deployment")
	sa := only[corev1.ServiceAccount](t, objs, "ServiceAccount")
	if err := c.Create(ctx, sa.DeepCopy()); err != nil {
		t.Fatalf("creating the service account: %v", err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "template", Namespace: dep.Namespace, Labels: dep.Spec.Template.Labels},
		Spec:       dep.Spec.Template.Spec,
	}
	if err := c.Create(ctx, pod, client.DryRunAll); err != nil {
		t.Errorf("dry-run pod from the deployment's template in %s (pod security enforced): %v", dep.Namespace, err)
	}
	if w := w.take(); len(w) > 0 {
		t.Errorf("API server warnings for the pod: %q", w)
	}
}

// TestRBAC applies config/rbac for real and asks the API server's RBAC
// authorizer, as the manager's service account, about every permission in
// controller-gen's output (config/rbac/role.yaml, generated from the
// +kubebuilder:rbac markers): each granted verb must be allowed, in the
// install namespace for the Role and cluster-wide for the ClusterRole, and
// every other common verb on the same resources, and the Role's
// permissions in another namespace, must be denied. So the deployed RBAC
// grants exactly what the markers say.
func TestRBAC(t *testing.T) {
	generated := readRoles(t, filepath.Join(repoRoot(), "config", "rbac", "role.yaml"))
	cfg := kubetest.Start(t)
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	objs := render(t, "default")
	dep := only[appsv1.Deployment](t, objs, "Deployment")
	ns := dep.Namespace
	user := "system:serviceaccount:" + ns + ":" + dep.Spec.Template.Spec.ServiceAccountName
	// The namespace first, then what lives in it.
	for _, kinds := range [][]string{{"Namespace"}, {"ServiceAccount", "ClusterRole", "Role", "ClusterRoleBinding", "RoleBinding"}} {
		for _, o := range objs {
			if !slices.Contains(kinds, o.GetKind()) {
				continue
			}
			if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(o.DeepCopy()), client.FieldOwner("deploy-test")); err != nil {
				t.Fatalf("applying %s %s: %v", o.GetKind(), o.GetName(), err)
			}
		}
	}

	// Every rendered role must be the generated one (same rules), so that
	// nothing between controller-gen and the cluster widened it.
	for _, o := range objs {
		if o.GetKind() != "ClusterRole" && o.GetKind() != "Role" {
			continue
		}
		role := &rbacv1.ClusterRole{}
		if err := kruntime.DefaultUnstructuredConverter.FromUnstructured(o.Object, role); err != nil {
			t.Fatal(err)
		}
		want, ok := generated[o.GetKind()+"/"+o.GetName()]
		if !ok {
			t.Errorf("rendered %s %s is not in config/rbac/role.yaml", o.GetKind(), o.GetName())
			continue
		}
		if !equalRules(role.Rules, want) {
			t.Errorf("rendered %s %s rules differ from config/rbac/role.yaml:\n got %+v\nwant %+v", o.GetKind(), o.GetName(), role.Rules, want)
		}
	}

	allowed := func(attr authzv1.ResourceAttributes) bool {
		t.Helper()
		sar := &authzv1.SubjectAccessReview{Spec: authzv1.SubjectAccessReviewSpec{
			User:               user,
			Groups:             []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
			ResourceAttributes: &attr,
		}}
		if err := c.Create(ctx, sar); err != nil {
			t.Fatalf("subject access review %+v: %v", attr, err)
		}
		return sar.Status.Allowed
	}
	commonVerbs := []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}
	checked := 0
	for key, rules := range generated {
		clusterWide := strings.HasPrefix(key, "ClusterRole/")
		for _, rule := range rules {
			for _, group := range rule.APIGroups {
				for _, res := range rule.Resources {
					resource, sub, _ := strings.Cut(res, "/")
					for _, verb := range commonVerbs {
						attr := authzv1.ResourceAttributes{Group: group, Resource: resource, Subresource: sub, Verb: verb}
						if !clusterWide {
							attr.Namespace = ns
						}
						want := grants(generated, key, group, res, verb)
						if got := allowed(attr); got != want {
							t.Errorf("%s may %s %s/%s in %q: %v, role.yaml says %v", user, verb, group, res, attr.Namespace, got, want)
						}
						checked++
						if !clusterWide {
							// Elsewhere only the cluster roles apply.
							attr.Namespace = "kube-system"
							if got, want := allowed(attr), grants(generated, "", group, res, verb); got != want {
								t.Errorf("%s may %s %s/%s in kube-system: %v, want %v (the Role must not reach beyond %s)", user, verb, group, res, got, want, ns)
							}
						}
					}
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("config/rbac/role.yaml grants nothing to check")
	}
}

// TestPackageAPIRBAC applies the package API overlay's RBAC for real and
// asks the API server's RBAC authorizer, whose bootstrap roles
// system:auth-delegator and extension-apiserver-authentication-reader the
// overlay binds to, what the manager's service account may do: review
// tokens and access, and read the one ConfigMap in kube-system that holds
// the front-proxy CA, nothing more there. The view ClusterRole, bound in one
// namespace, lets a user read packagemanifests and icons there and nowhere
// else. (Aggregation into the built-in view role needs the controller
// manager, which envtest lacks: test/cluster checks it.)
func TestPackageAPIRBAC(t *testing.T) {
	cfg := kubetest.Start(t)
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	objs := render(t, "overlays/package-api")
	dep := only[appsv1.Deployment](t, objs, "Deployment")
	sa := "system:serviceaccount:" + dep.Namespace + ":" + dep.Spec.Template.Spec.ServiceAccountName
	var viewRole string
	for _, kinds := range [][]string{{"Namespace"}, {"ServiceAccount", "ClusterRole", "Role", "ClusterRoleBinding", "RoleBinding"}} {
		for _, o := range objs {
			if !slices.Contains(kinds, o.GetKind()) {
				continue
			}
			if o.GetKind() == "ClusterRole" && o.GetLabels()["rbac.authorization.k8s.io/aggregate-to-view"] == "true" {
				viewRole = o.GetName()
			}
			if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(o.DeepCopy()), client.FieldOwner("deploy-test")); err != nil {
				t.Fatalf("applying %s %s: %v", o.GetKind(), o.GetName(), err)
			}
		}
	}
	if viewRole == "" {
		t.Fatal("the overlay has no ClusterRole aggregated to view")
	}
	if err := c.Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "pkg-viewer", Namespace: "default"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: viewRole},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "pkg-viewer"}},
	}); err != nil {
		t.Fatal(err)
	}
	allowed := func(user string, groups []string, attr authzv1.ResourceAttributes) bool {
		t.Helper()
		sar := &authzv1.SubjectAccessReview{Spec: authzv1.SubjectAccessReviewSpec{User: user, Groups: groups, ResourceAttributes: &attr}}
		if err := c.Create(ctx, sar); err != nil {
			t.Fatalf("subject access review %+v: %v", attr, err)
		}
		return sar.Status.Allowed
	}
	saGroups := []string{"system:serviceaccounts", "system:serviceaccounts:" + dep.Namespace, "system:authenticated"}
	const pkgGroup = "packages.operators.coreos.com"
	tests := []struct {
		user string
		attr authzv1.ResourceAttributes
		want bool
	}{
		{sa, authzv1.ResourceAttributes{Group: "authentication.k8s.io", Resource: "tokenreviews", Verb: "create"}, true},
		{sa, authzv1.ResourceAttributes{Group: "authorization.k8s.io", Resource: "subjectaccessreviews", Verb: "create"}, true},
		{sa, authzv1.ResourceAttributes{Namespace: "kube-system", Resource: "configmaps", Name: "extension-apiserver-authentication", Verb: "get"}, true},
		{sa, authzv1.ResourceAttributes{Namespace: "kube-system", Resource: "configmaps", Name: "extension-apiserver-authentication", Verb: "watch"}, true},
		{sa, authzv1.ResourceAttributes{Namespace: "kube-system", Resource: "configmaps", Name: "kubeadm-config", Verb: "get"}, false},
		{sa, authzv1.ResourceAttributes{Namespace: "kube-system", Resource: "configmaps", Name: "extension-apiserver-authentication", Verb: "update"}, false},
		{sa, authzv1.ResourceAttributes{Namespace: "kube-system", Resource: "secrets", Verb: "list"}, false},
		{"pkg-viewer", authzv1.ResourceAttributes{Namespace: "default", Group: pkgGroup, Resource: "packagemanifests", Verb: "list"}, true},
		{"pkg-viewer", authzv1.ResourceAttributes{Namespace: "default", Group: pkgGroup, Resource: "packagemanifests", Verb: "watch"}, true},
		{"pkg-viewer", authzv1.ResourceAttributes{Namespace: "default", Group: pkgGroup, Resource: "packagemanifests", Name: "etcd", Verb: "get"}, true},
		{"pkg-viewer", authzv1.ResourceAttributes{Namespace: "default", Group: pkgGroup, Resource: "packagemanifests", Subresource: "icon", Name: "etcd", Verb: "get"}, true},
		{"pkg-viewer", authzv1.ResourceAttributes{Namespace: "default", Group: pkgGroup, Resource: "packagemanifests", Verb: "create"}, false},
		{"pkg-viewer", authzv1.ResourceAttributes{Namespace: "kube-public", Group: pkgGroup, Resource: "packagemanifests", Verb: "list"}, false},
		{"pkg-viewer", authzv1.ResourceAttributes{Namespace: "default", Resource: "configmaps", Verb: "list"}, false},
	}
	for _, tt := range tests {
		groups := []string{"system:authenticated"}
		if tt.user == sa {
			groups = saGroups
		}
		if got := allowed(tt.user, groups, tt.attr); got != tt.want {
			t.Errorf("%s may %s %s/%s %q in %q: %v, want %v", tt.user, tt.attr.Verb, tt.attr.Resource, tt.attr.Subresource, tt.attr.Name, tt.attr.Namespace, got, tt.want)
		}
	}
}

// grants says whether the role named key in generated, or any cluster role
// in it (which applies in every namespace too), allows verb on
// group/resource; key "" asks about the cluster roles alone.
func grants(generated map[string][]rbacv1.PolicyRule, key, group, resource, verb string) bool {
	for k, rules := range generated {
		if k != key && !strings.HasPrefix(k, "ClusterRole/") {
			continue
		}
		for _, r := range rules {
			if slices.Contains(r.APIGroups, group) && slices.Contains(r.Resources, resource) && slices.Contains(r.Verbs, verb) {
				return true
			}
		}
	}
	return false
}

// readRoles reads controller-gen's RBAC output: kind/name to rules.
func readRoles(t *testing.T, path string) map[string][]rbacv1.PolicyRule {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	roles := map[string][]rbacv1.PolicyRule{}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
	for {
		var role struct {
			Kind     string              `json:"kind"`
			Metadata metav1.ObjectMeta   `json:"metadata"`
			Rules    []rbacv1.PolicyRule `json:"rules"`
		}
		err := dec.Decode(&role)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("reading %s: %v", path, err)
		}
		if role.Kind != "" {
			roles[role.Kind+"/"+role.Metadata.Name] = role.Rules
		}
	}
	if len(roles) == 0 {
		t.Fatalf("%s holds no roles", path)
	}
	return roles
}

func equalRules(a, b []rbacv1.PolicyRule) bool {
	key := func(rs []rbacv1.PolicyRule) []string {
		var out []string
		for _, r := range rs {
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					for _, v := range r.Verbs {
						out = append(out, g+"|"+res+"|"+v+"|"+strings.Join(r.ResourceNames, ","))
					}
				}
			}
		}
		slices.Sort(out)
		return out
	}
	return slices.Equal(key(a), key(b))
}

// imageBinaries are the binaries of the catalogd image (mk/image.mk,
// hack/image) by path, with the build flags each is built with.
// /catalogd is the image's entrypoint, what runs when a container names no
// command.
var imageBinaries = map[string][]string{
	"/catalogd":             {"-tags", "manager"},
	"/catalogd-package-api": {"-tags", "manager,packageapi"},
}

// builtBinaries builds each of imageBinaries once for the tests that run them.
var builtBinaries sync.Map

// binaryOf builds the image's binary that container runs, once per test
// binary, and returns its path.
func binaryOf(t *testing.T, c corev1.Container) string {
	t.Helper()
	path := "/catalogd"
	if len(c.Command) > 0 {
		path = c.Command[0]
	}
	flags, ok := imageBinaries[path]
	if !ok {
		t.Fatalf("container %s runs %q, which is not a binary of the catalogd image", c.Name, c.Command)
	}
	v, _ := builtBinaries.LoadOrStore(path, sync.OnceValues(func() (string, error) {
		dir, err := os.MkdirTemp("", "catalogd-deploy-test-")
		if err != nil {
			return "", err
		}
		bin := filepath.Join(dir, filepath.Base(path))
		build := exec.Command("go", append(append([]string{"build"}, flags...), "-o", bin, "github.com/catalogd/catalogd/cmd/catalogd")...)
		build.Dir = repoRoot()
		if out, err := build.CombinedOutput(); err != nil {
			return "", fmt.Errorf("go build %q: %v\n%s", flags, err, out)
		}
		return bin, nil
	}))
	bin, err := v.(func() (string, error))()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

func TestMain(m *testing.M) {
	code := m.Run()
	builtBinaries.Range(func(_, v any) bool {
		if bin, err := v.(func() (string, error))(); err == nil {
			os.RemoveAll(filepath.Dir(bin))
		}
		return true
	})
	os.Exit(code)
}

// TestManagerAcceptsTheArgs runs the real binary the Deployment's
// container runs with its arguments, of config/default and of the package
// API overlay: it must get past flag parsing and validation (exit code 2
// is a usage error) and fail only where a cluster is needed, loading the
// kubeconfig.
func TestManagerAcceptsTheArgs(t *testing.T) {
	for _, dir := range []string{"default", "overlays/package-api", "overlays/grpc"} {
		t.Run(dir, func(t *testing.T) { testManagerAcceptsTheArgs(t, dir) })
	}
}

// TestManagerBinaryLinks: the package API overlay runs the image's binary
// that has the package API (the other refuses --package-api), and
// config/default one without it, which does not pay for k8s.io/apiserver.
// Which binary has it is read from the build itself.
func TestManagerBinaryLinks(t *testing.T) {
	for _, tc := range []struct {
		dir  string
		want bool
	}{{"default", false}, {"overlays/package-api", true}, {"overlays/package-api-cert-manager", true}} {
		t.Run(tc.dir, func(t *testing.T) {
			mgr := only[appsv1.Deployment](t, render(t, tc.dir), "Deployment").Spec.Template.Spec.Containers[0]
			bin := binaryOf(t, mgr)
			info, err := buildinfo.ReadFile(bin)
			if err != nil {
				t.Fatal(err)
			}
			got := slices.ContainsFunc(info.Deps, func(m *debug.Module) bool { return m.Path == "k8s.io/apiserver" })
			if got != tc.want {
				t.Errorf("the manager runs %q (none: the entrypoint, /catalogd), a build that links k8s.io/apiserver (the package API): %v, want %v", mgr.Command, got, tc.want)
			}
		})
	}
}

func testManagerAcceptsTheArgs(t *testing.T, dir string) {
	dep := only[appsv1.Deployment](t, render(t, dir), "Deployment")
	mgr := dep.Spec.Template.Spec.Containers[0]
	bin := binaryOf(t, mgr)
	// The package API's certificate directory is checked at start-up: the
	// secret's files, as the kubelet would mount them.
	certDir := t.TempDir()
	certPEM, keyPEM := tlstest.SelfSigned(t, "catalogd-package-api.olmv1-system.svc")
	for name, data := range map[string][]byte{"tls.crt": certPEM, "tls.key": keyPEM} {
		if err := os.WriteFile(filepath.Join(certDir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	args := make([]string, len(mgr.Args))
	for i, a := range mgr.Args {
		// What the kubelet does with $(VAR) from the container's env.
		args[i] = strings.ReplaceAll(a, "$(POD_NAMESPACE)", dep.Namespace)
		if strings.HasPrefix(a, "--package-api-cert-dir=") {
			args[i] = "--package-api-cert-dir=" + certDir
		}
	}
	args = append(args, "--kubeconfig", filepath.Join(t.TempDir(), "missing-kubeconfig"))
	cmd := exec.Command(bin, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	if code := cmd.ProcessState.ExitCode(); code != 1 || !strings.Contains(stderr.String(), "kubeconfig") {
		t.Errorf("catalogd %q: exit code %d (%v), want 1 at loading the kubeconfig:\n%s", args, code, err, stderr.String())
	}
}
