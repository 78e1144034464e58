// Command deploy installs catalogd into the cluster of the current kubeconfig
// or removes it: `make deploy IMG=...` and `make undeploy`. It does what
// `kustomize build config/default | kubectl apply --server-side -f -` would,
// with kustomize's Go API and controller-runtime's client, because kubectl
// cannot be downloaded here and building it from source takes far longer than
// this small program.
//
//	deploy [-image IMG] [-dry-run] [-kubeconfig FILE] DIR     render DIR and apply it
//	deploy -delete [-kubeconfig FILE] DIR                     delete what DIR renders
//	deploy -print [-image IMG] DIR                           print what DIR renders (kustomize build)
//
// Apply order: Namespaces and CustomResourceDefinitions first, waiting until
// each CRD is established, then everything else. Deletion skips Namespaces:
// olmv1-system is shared with the rest of OLM v1. An APIService that
// another server already holds (OLM v0's packageserver holds the one of
// config/overlays/package-api) stops deploy before anything is applied, and
// undeploy leaves it alone.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/config"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// fieldManager owns the fields this tool applies, as kubectl's would be
// owned by "kubectl".
const fieldManager = "catalogd-deploy"

// imageName is the image name config/manager uses; -image replaces it.
const imageName = "catalogd"

// Render builds the kustomization in dir, with the catalogd image replaced by
// image unless image is empty, and returns its objects in kustomize's order.
func Render(dir, image string) ([]*unstructured.Unstructured, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("kustomization %s: %w", dir, err)
	}
	fs := filesys.MakeFsOnDisk()
	root := abs
	opts := krusty.MakeDefaultOptions()
	if image != "" {
		// An overlay with only an images: entry, in a temporary directory;
		// kustomize must be allowed to load dir from outside it.
		img, err := imageOverride(image)
		if err != nil {
			return nil, err
		}
		overlay, err := os.MkdirTemp("", "catalogd-deploy-")
		if err != nil {
			return nil, fmt.Errorf("creating the image overlay: %w", err)
		}
		defer os.RemoveAll(overlay)
		// Kustomize refuses absolute resource paths.
		rel, err := filepath.Rel(overlay, abs)
		if err != nil {
			return nil, fmt.Errorf("kustomization %s: %w", dir, err)
		}
		k := types.Kustomization{
			TypeMeta:  types.TypeMeta{APIVersion: types.KustomizationVersion, Kind: types.KustomizationKind},
			Resources: []string{rel},
			Images:    []types.Image{img},
		}
		b, err := yaml.Marshal(k)
		if err != nil {
			return nil, fmt.Errorf("writing the image overlay: %w", err)
		}
		if err := os.WriteFile(filepath.Join(overlay, "kustomization.yaml"), b, 0o600); err != nil {
			return nil, fmt.Errorf("writing the image overlay: %w", err)
		}
		root = overlay
		opts.LoadRestrictions = types.LoadRestrictionsNone
	}
	resMap, err := krusty.MakeKustomizer(opts).Run(fs, root)
	if err != nil {
		return nil, fmt.Errorf("kustomize build %s: %w", dir, err)
	}
	var objs []*unstructured.Unstructured
	for _, r := range resMap.Resources() {
		// Through JSON, because r.Map() holds Go ints, which unstructured
		// objects (int64 only) cannot deep-copy.
		b, err := r.MarshalJSON()
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", r.CurId(), err)
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(b); err != nil {
			return nil, fmt.Errorf("reading %s: %w", r.CurId(), err)
		}
		objs = append(objs, u)
	}
	return objs, nil
}

// imageOverride turns "host/repo:tag" or "host/repo@sha256:..." into the
// kustomize images: entry for catalogd; "host/repo" means host/repo:latest,
// as for docker pull, not the kustomization's tag.
func imageOverride(image string) (types.Image, error) {
	if _, err := name.ParseReference(image); err != nil {
		return types.Image{}, fmt.Errorf("image %q: %w", image, err)
	}
	img := types.Image{Name: imageName, NewName: image, NewTag: "latest"}
	if repo, digest, ok := strings.Cut(image, "@"); ok {
		img.NewName, img.NewTag, img.Digest = repo, "", digest
	} else if i := strings.LastIndex(image, ":"); i > strings.LastIndex(image, "/") {
		img.NewName, img.NewTag = image[:i], image[i+1:]
	}
	return img, nil
}

// first says whether obj must exist before others can be applied: the
// namespace they live in, or the CRD that defines them.
func first(obj *unstructured.Unstructured) bool {
	gk := obj.GroupVersionKind().GroupKind()
	return gk.Kind == "Namespace" && gk.Group == "" ||
		gk.Kind == "CustomResourceDefinition" && gk.Group == "apiextensions.k8s.io"
}

// Apply server-side applies objs, Namespaces and CRDs first. With dryRun
// the API server validates and admits every object but stores none, so
// objects needing a Namespace or CRD that does not yet exist fail.
func Apply(ctx context.Context, c client.Client, objs []*unstructured.Unstructured, dryRun bool, out io.Writer) error {
	opts := []client.ApplyOption{client.FieldOwner(fieldManager), client.ForceOwnership}
	if dryRun {
		opts = append(opts, client.DryRunAll)
	}
	ordered := slices.Clone(objs)
	slices.SortStableFunc(ordered, func(a, b *unstructured.Unstructured) int {
		switch fa, fb := first(a), first(b); {
		case fa && !fb:
			return -1
		case fb && !fa:
			return 1
		}
		return 0
	})
	for _, obj := range ordered {
		obj = obj.DeepCopy()
		if obj.GetKind() == "CustomResourceDefinition" && !dryRun {
			if err := waitDeleted(ctx, c, obj.GetName(), out); err != nil {
				return err
			}
		}
		if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), opts...); err != nil {
			return fmt.Errorf("applying %s: %w", describe(obj), err)
		}
		fmt.Fprintf(out, "%s applied%s\n", describe(obj), map[bool]string{true: " (dry run)"}[dryRun])
		if obj.GetKind() == "CustomResourceDefinition" && !dryRun {
			if err := waitEstablished(ctx, c, obj.GetName()); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkOwners refuses to take over another installation's catalogd: OLM
// v1's ships its Deployment and Service under the same names in the same
// namespace, and two controllers reconciling one ClusterCatalog API fight
// over its status while the Service sends queries to either. An object is
// ours when this tool's field manager holds some of its fields. The CRD
// is not checked: it is the API both serve, and one left behind by an
// uninstalled OLM (or installed by a test's API server) is simply updated.
func checkOwners(ctx context.Context, c client.Client, objs []*unstructured.Unstructured) error {
	for _, obj := range objs {
		gvk := obj.GroupVersionKind()
		if !(gvk.Kind == "Service" && gvk.Group == "") && !(gvk.Kind == "Deployment" && gvk.Group == "apps") {
			continue
		}
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(obj.GroupVersionKind())
		err := c.Get(ctx, client.ObjectKeyFromObject(obj), got)
		if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("checking who owns %s: %w", describe(obj), err)
		}
		var managers []string
		for _, mf := range got.GetManagedFields() {
			if mf.Manager == fieldManager {
				managers = nil
				break
			}
			if !slices.Contains(managers, mf.Manager) {
				managers = append(managers, mf.Manager)
			}
		}
		if len(managers) > 0 {
			return fmt.Errorf("%s exists and was not installed by make deploy (its fields are managed by %s): another catalogd, "+
				"probably OLM v1's, owns it. Remove that installation first (README: \"Replacing OLM v1's catalogd\"), "+
				"or take its objects over with make deploy ADOPT=1 (bin/deploy -adopt)", describe(obj), strings.Join(managers, ", "))
		}
	}
	return nil
}

// foreignAPIServices returns, by name, the rendered APIServices that exist in
// the cluster pointing at a Service other than the rendered one, with a
// description of what serves them there. OLM v0's packageserver registers
// v1.packages.operators.coreos.com for its own Service: replacing it would
// take the group away from OLM v0 (which would then fight to take it back),
// so make deploy stops, whatever ADOPT says, and make undeploy leaves it.
func foreignAPIServices(ctx context.Context, c client.Client, objs []*unstructured.Unstructured) (map[string]string, error) {
	foreign := map[string]string{}
	for _, obj := range objs {
		gvk := obj.GroupVersionKind()
		if gvk.Kind != "APIService" || gvk.Group != "apiregistration.k8s.io" {
			continue
		}
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(gvk)
		err := c.Get(ctx, client.ObjectKeyFromObject(obj), got)
		if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("checking who serves %s: %w", describe(obj), err)
		}
		if want, have := apiServiceBackend(obj), apiServiceBackend(got); have != want {
			foreign[obj.GetName()] = have
		}
	}
	return foreign, nil
}

// apiServiceBackend says what an APIService sends its group to: "service
// NAMESPACE/NAME", or "the kube-apiserver itself" for a local one.
func apiServiceBackend(obj *unstructured.Unstructured) string {
	ns, _, _ := unstructured.NestedString(obj.Object, "spec", "service", "namespace")
	name, _, _ := unstructured.NestedString(obj.Object, "spec", "service", "name")
	if name == "" {
		return "the kube-apiserver itself"
	}
	return "service " + ns + "/" + name
}

// waitDeleted waits until a CRD being deleted (an undeploy just before, its
// custom resources still being removed) is gone. Applied while it
// terminates, the CRD would be merged into the dying object, reported
// established, and then vanish with it: deploy would say it succeeded and
// leave no CRD behind.
func waitDeleted(ctx context.Context, c client.Client, crd string, out io.Writer) error {
	said := false
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("apiextensions.k8s.io/v1")
		u.SetKind("CustomResourceDefinition")
		err := c.Get(ctx, client.ObjectKey{Name: crd}, u)
		switch {
		case apierrors.IsNotFound(err):
			return true, nil
		case err != nil:
			return false, err
		case u.GetDeletionTimestamp() == nil:
			return true, nil
		}
		if !said {
			fmt.Fprintf(out, "customresourcedefinition/%s is being deleted; waiting until it is gone\n", crd)
			said = true
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the deleted CRD %s to be gone: %w", crd, err)
	}
	return nil
}

// waitEstablished waits until the API server serves the CRD's resource.
func waitEstablished(ctx context.Context, c client.Client, crd string) error {
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("apiextensions.k8s.io/v1")
		u.SetKind("CustomResourceDefinition")
		if err := c.Get(ctx, client.ObjectKey{Name: crd}, u); err != nil {
			return false, err
		}
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		for _, cond := range conds {
			m, _ := cond.(map[string]any)
			if m["type"] == "Established" && m["status"] == "True" {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for CRD %s to be established: %w", crd, err)
	}
	return nil
}

// Delete deletes objs in reverse order, except Namespaces. Objects already
// gone, or whose CRD is gone, are not an error, so undeploy can be rerun.
func Delete(ctx context.Context, c client.Client, objs []*unstructured.Unstructured, out io.Writer) error {
	for _, obj := range slices.Backward(objs) {
		if obj.GetKind() == "Namespace" && obj.GroupVersionKind().Group == "" {
			fmt.Fprintf(out, "%s kept (shared)\n", describe(obj))
			continue
		}
		err := c.Delete(ctx, obj.DeepCopy(), client.PropagationPolicy("Background"))
		switch {
		case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
			fmt.Fprintf(out, "%s not found\n", describe(obj))
		case err != nil:
			return fmt.Errorf("deleting %s: %w", describe(obj), err)
		default:
			fmt.Fprintf(out, "%s deleted\n", describe(obj))
		}
	}
	return nil
}

func describe(obj *unstructured.Unstructured) string {
	s := strings.ToLower(obj.GetKind()) + "/" + obj.GetName()
	if ns := obj.GetNamespace(); ns != "" {
		s += " -n " + ns
	}
	return s
}

func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("deploy", flag.ContinueOnError)
	image := fs.String("image", "", "catalogd image to deploy (default: the kustomization's)")
	del := fs.Bool("delete", false, "delete what DIR renders instead of applying it")
	dryRun := fs.Bool("dry-run", false, "have the API server validate every object without storing it")
	print := fs.Bool("print", false, "print the rendered objects as YAML instead of talking to a cluster")
	adopt := fs.Bool("adopt", false, "deploy over (or delete) the Deployment and Service even when another installation applied them")
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, in-cluster config, ~/.kube/config)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return errors.New("want one kustomization directory, for example config/default")
	}
	objs, err := Render(fs.Arg(0), *image)
	if err != nil {
		return err
	}
	if *print {
		for _, obj := range objs {
			b, err := yaml.Marshal(obj.Object)
			if err != nil {
				return fmt.Errorf("printing %s: %w", describe(obj), err)
			}
			fmt.Fprintf(out, "---\n%s", b)
		}
		return nil
	}
	var cfg *rest.Config
	if *kubeconfig != "" {
		cfg, err = clientcmd.BuildConfigFromFlags("", *kubeconfig)
	} else {
		cfg, err = config.GetConfig()
	}
	if err != nil {
		return fmt.Errorf("loading the kubeconfig: %w", err)
	}
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return fmt.Errorf("creating the API client: %w", err)
	}
	// Neither deploy nor undeploy touches another installation's catalogd.
	if !*adopt {
		if err := checkOwners(ctx, c, objs); err != nil {
			return err
		}
	}
	foreign, err := foreignAPIServices(ctx, c, objs)
	if err != nil {
		return err
	}
	if *del {
		objs = slices.DeleteFunc(objs, func(obj *unstructured.Unstructured) bool {
			have, ok := foreign[obj.GetName()]
			if ok && obj.GetKind() == "APIService" {
				fmt.Fprintf(out, "%s kept (served by %s, not catalogd)\n", describe(obj), have)
			}
			return ok && obj.GetKind() == "APIService"
		})
		return Delete(ctx, c, objs, out)
	}
	for _, obj := range objs {
		if have, ok := foreign[obj.GetName()]; ok && obj.GetKind() == "APIService" {
			return fmt.Errorf("%s is served by %s, not by catalogd's %s: another server owns %s "+
				"(OLM v0's packageserver, most likely); nothing was applied. Remove it first, or deploy without the package API (config/default)",
				describe(obj), have, strings.TrimPrefix(apiServiceBackend(obj), "service "), obj.GetName())
		}
	}
	return Apply(ctx, c, objs, *dryRun, out)
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "deploy:", err)
		}
		os.Exit(2)
	}
}
