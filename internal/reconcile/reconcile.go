// Package reconcile owns the ClusterCatalog controller: it turns each
// ClusterCatalog into a live index in the Store and an entry in the catalog
// Registry, and reports what happened in the object's status.
//
// A tag is resolved to a digest on every reconcile (one manifest HEAD); the
// image is pulled and indexed only when that digest differs from the one the
// live index was built from, so polling an unchanged tag, or changing only a
// catalog's priority or labels, costs no blob download and no rebuild. A
// failed update never takes the previous index down: the catalog keeps
// serving it while the controller retries or waits for the user.
package reconcile

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-containerregistry/pkg/name"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	catalogdv1 "github.com/catalogd/catalogd/api/v1"
	"github.com/catalogd/catalogd/internal/catalogs"
	"github.com/catalogd/catalogd/internal/index"
	"github.com/catalogd/catalogd/internal/store"
	"github.com/catalogd/catalogd/internal/unpack"
)

// Unpacker resolves image references and extracts catalog images;
// *unpack.Unpacker provides it.
type Unpacker interface {
	Resolve(ctx context.Context, ref string) (string, error)
	Unpack(ctx context.Context, digestRef, dst string) (unpack.Result, error)
}

// Reconciler reconciles ClusterCatalogs.
type Reconciler struct {
	Client   client.Client
	Store    *store.Store
	Registry *catalogs.Registry
	Unpacker Unpacker
	// TempDir is where images are unpacked before indexing; each unpack uses
	// its own directory below it, removed afterwards. Empty means os.TempDir.
	TempDir string
	// BaseURL is the external URL of the query API, without a trailing
	// slash; a catalog's status.urls.base is BaseURL + "/catalogs/" + name.
	BaseURL string
	Log     logr.Logger
	// PollInterval turns spec.source.image.pollIntervalMinutes into a
	// duration; nil means minutes. Tests shorten it.
	PollInterval func(minutes int) time.Duration
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
}

// SetupWithManager registers the reconciler with mgr. Status-only updates do
// not trigger a reconcile; spec, label, annotation, finalizer and deletion
// changes do.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&catalogdv1.ClusterCatalog{}, builderPredicates()).
		Named("clustercatalog").
		Complete(r)
}

// +kubebuilder:rbac:groups=olm.operatorframework.io,resources=clustercatalogs,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=olm.operatorframework.io,resources=clustercatalogs/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=olm.operatorframework.io,resources=clustercatalogs/finalizers,verbs=update

// Reconcile brings one ClusterCatalog's index, registry entry and status in
// line with its spec.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	name := req.Name
	log := r.Log.WithValues("catalog", name)

	cat := &catalogdv1.ClusterCatalog{}
	if err := r.Client.Get(ctx, req.NamespacedName, cat); err != nil {
		if apierrors.IsNotFound(err) {
			// Gone without our finalizer (or after it was removed): make
			// sure nothing is left behind.
			return ctrl.Result{}, r.forget(name)
		}
		return ctrl.Result{}, fmt.Errorf("getting ClusterCatalog %q: %w", name, err)
	}

	if !cat.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, r.finalize(ctx, cat)
	}

	if err := r.ensureMetadata(ctx, cat); err != nil {
		return ctrl.Result{}, err
	}

	orig := cat.DeepCopy()
	res, recErr := r.reconcileContent(ctx, log, cat)
	if !equality.Semantic.DeepEqual(orig.Status, cat.Status) {
		if err := r.Client.Status().Patch(ctx, cat, client.MergeFrom(orig)); err != nil {
			return ctrl.Result{}, errors.Join(recErr, fmt.Errorf("updating status of ClusterCatalog %q: %w", name, err))
		}
	}
	if recErr != nil {
		log.Error(recErr, "reconciling catalog failed; will retry")
	}
	return res, recErr
}

// forget drops the index and registry entry of a catalog.
func (r *Reconciler) forget(name string) error {
	r.Registry.Delete(name)
	if err := r.Store.Remove(name); err != nil {
		return fmt.Errorf("removing index of ClusterCatalog %q: %w", name, err)
	}
	return nil
}

// finalize cleans up a deleted catalog, then lets the deletion go through.
func (r *Reconciler) finalize(ctx context.Context, cat *catalogdv1.ClusterCatalog) error {
	if !controllerutil.ContainsFinalizer(cat, catalogdv1.DeleteServerCacheFinalizer) {
		return nil
	}
	if err := r.forget(cat.Name); err != nil {
		return err
	}
	orig := cat.DeepCopy()
	controllerutil.RemoveFinalizer(cat, catalogdv1.DeleteServerCacheFinalizer)
	if err := r.Client.Patch(ctx, cat, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("removing finalizer from ClusterCatalog %q: %w", cat.Name, err)
	}
	r.Log.Info("catalog deleted; index removed", "catalog", cat.Name)
	return nil
}

// ensureMetadata adds the name label and the finalizer when missing.
func (r *Reconciler) ensureMetadata(ctx context.Context, cat *catalogdv1.ClusterCatalog) error {
	orig := cat.DeepCopy()
	changed := controllerutil.AddFinalizer(cat, catalogdv1.DeleteServerCacheFinalizer)
	if cat.Labels[catalogdv1.MetadataNameLabel] != cat.Name {
		if cat.Labels == nil {
			cat.Labels = map[string]string{}
		}
		cat.Labels[catalogdv1.MetadataNameLabel] = cat.Name
		changed = true
	}
	if !changed {
		return nil
	}
	if err := r.Client.Patch(ctx, cat, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("adding label and finalizer to ClusterCatalog %q: %w", cat.Name, err)
	}
	return nil
}

// reconcileContent updates the index and registry and fills cat.Status. It
// returns the error to retry with exponential backoff; terminal failures
// return nil and wait for a spec change or the next poll.
func (r *Reconciler) reconcileContent(ctx context.Context, log logr.Logger, cat *catalogdv1.ClusterCatalog) (ctrl.Result, error) {
	name := cat.Name
	ref := ""
	if cat.Spec.Source.Image != nil {
		ref = cat.Spec.Source.Image.Ref
	}
	r.register(name, ref, cat.Spec.Priority)

	if cat.Spec.AvailabilityMode == catalogdv1.AvailabilityModeUnavailable {
		if err := r.Store.Remove(name); err != nil {
			return ctrl.Result{}, fmt.Errorf("removing index of unavailable ClusterCatalog %q: %w", name, err)
		}
		r.Registry.Update(name, func(c *catalogs.Catalog) {
			c.State = catalogs.Unavailable
			c.LastError = ""
		})
		r.setCondition(cat, catalogdv1.TypeServing, metav1.ConditionFalse, catalogdv1.ReasonUserSpecifiedUnavailable,
			"spec.availabilityMode is Unavailable: the catalog's content is not served")
		r.setCondition(cat, catalogdv1.TypeProgressing, metav1.ConditionTrue, catalogdv1.ReasonSucceeded,
			"the catalog is unavailable as requested")
		cat.Status.ResolvedSource = nil
		cat.Status.URLs = nil
		cat.Status.LastUnpacked = nil
		return ctrl.Result{}, nil
	}

	if cat.Spec.Source.Type != catalogdv1.SourceTypeImage || cat.Spec.Source.Image == nil {
		err := fmt.Errorf("source type %q is not supported; use type Image with spec.source.image.ref", cat.Spec.Source.Type)
		r.fail(cat, err, true)
		return ctrl.Result{}, nil
	}

	digestRef, unpacked, err := r.update(ctx, log, name, ref)
	if err != nil {
		// Content at a digest never changes, so a content error there needs
		// the user; under a tag, a new push can fix it, so it is retried.
		terminal := (unpack.IsTerminal(err) || errors.Is(err, index.ErrInvalidCatalog)) && isDigestRef(ref)
		r.fail(cat, err, terminal)
		if terminal {
			// A new push to a tag can clear a terminal error, so keep polling.
			return r.pollResult(cat), nil
		}
		return ctrl.Result{}, err
	}

	r.Registry.Update(name, func(c *catalogs.Catalog) {
		c.State = catalogs.Serving
		c.LastError = ""
	})
	r.setCondition(cat, catalogdv1.TypeServing, metav1.ConditionTrue, catalogdv1.ReasonAvailable,
		fmt.Sprintf("serving %s", digestRef))
	r.setCondition(cat, catalogdv1.TypeProgressing, metav1.ConditionTrue, catalogdv1.ReasonSucceeded,
		fmt.Sprintf("indexed %s", digestRef))
	cat.Status.ResolvedSource = &catalogdv1.ResolvedCatalogSource{
		Type:  catalogdv1.SourceTypeImage,
		Image: &catalogdv1.ResolvedImageSource{Ref: digestRef},
	}
	cat.Status.URLs = &catalogdv1.ClusterCatalogURLs{Base: strings.TrimSuffix(r.BaseURL, "/") + "/catalogs/" + name}
	if unpacked || cat.Status.LastUnpacked == nil {
		now := metav1.NewTime(r.now().Truncate(time.Second))
		cat.Status.LastUnpacked = &now
	}
	return r.pollResult(cat), nil
}

// register makes sure the registry knows the catalog with its current source
// and priority, without touching its state or last error.
func (r *Reconciler) register(name, ref string, priority int32) {
	if r.Registry.Update(name, func(c *catalogs.Catalog) {
		c.Source = ref
		c.Priority = priority
	}) {
		return
	}
	state := catalogs.Pending
	if _, ok := r.Store.Info(name); ok {
		// An index kept on disk from before a restart answers already.
		state = catalogs.Serving
	}
	r.Registry.Put(catalogs.Catalog{Name: name, Source: ref, Priority: priority, State: state})
}

// update resolves ref and, when its digest is not the live one, pulls and
// indexes it. It returns the digest reference now live and whether it was
// unpacked by this call.
func (r *Reconciler) update(ctx context.Context, log logr.Logger, name, ref string) (string, bool, error) {
	digestRef, err := r.Unpacker.Resolve(ctx, ref)
	if err != nil {
		return "", false, err // unpack says what it was resolving
	}
	digest := digestOf(digestRef)
	if info, ok := r.Store.Info(name); ok && info.Digest == digest {
		log.V(1).Info("digest unchanged; nothing to pull", "digestRef", digestRef)
		return digestRef, false, nil
	}

	base := r.TempDir
	if base != "" {
		if err := os.MkdirAll(base, 0o755); err != nil {
			return "", false, fmt.Errorf("creating unpack directory: %w", err)
		}
	}
	tmp, err := os.MkdirTemp(base, "unpack-"+name+"-")
	if err != nil {
		return "", false, fmt.Errorf("creating unpack directory: %w", err)
	}
	defer func() {
		if err := os.RemoveAll(tmp); err != nil {
			log.Error(err, "removing unpack directory", "path", tmp)
		}
	}()
	dst := filepath.Join(tmp, "fbc")
	start := r.now()
	res, err := r.Unpacker.Unpack(ctx, digestRef, dst)
	if err != nil {
		return "", false, fmt.Errorf("pulling %s: %w", digestRef, err)
	}
	_, stats, _, err := r.Store.Update(ctx, name, index.Source{FS: os.DirFS(dst), Ref: digestRef, Digest: digest})
	if err != nil {
		return "", false, fmt.Errorf("indexing the content of %s: %w", digestRef, err)
	}
	log.Info("catalog indexed", "digestRef", digestRef, "files", res.Files, "bytes", res.Bytes,
		"packages", stats.Packages, "bundles", stats.Bundles, "duration", r.now().Sub(start).String())
	return digestRef, true, nil
}

// fail records a failed update: the registry's last error and the
// conditions. The previous index, if any, keeps serving.
func (r *Reconciler) fail(cat *catalogdv1.ClusterCatalog, err error, terminal bool) {
	name := cat.Name
	_, serving := r.Store.Info(name)
	r.Registry.Update(name, func(c *catalogs.Catalog) {
		c.LastError = err.Error()
		if serving {
			c.State = catalogs.Serving
		} else {
			c.State = catalogs.Pending
		}
	})
	if serving {
		prev := "the previous content"
		if cat.Status.ResolvedSource != nil && cat.Status.ResolvedSource.Image != nil {
			prev = cat.Status.ResolvedSource.Image.Ref
		}
		r.setCondition(cat, catalogdv1.TypeServing, metav1.ConditionTrue, catalogdv1.ReasonAvailable,
			fmt.Sprintf("serving %s; the latest update failed (see Progressing)", prev))
	} else {
		r.setCondition(cat, catalogdv1.TypeServing, metav1.ConditionFalse, catalogdv1.ReasonUnavailable,
			"no content has been indexed yet (see Progressing)")
	}
	if terminal {
		r.setCondition(cat, catalogdv1.TypeProgressing, metav1.ConditionFalse, catalogdv1.ReasonBlocked,
			fmt.Sprintf("%v; retrying cannot fix this: change spec.source or push fixed content", err))
	} else {
		r.setCondition(cat, catalogdv1.TypeProgressing, metav1.ConditionTrue, catalogdv1.ReasonRetrying,
			fmt.Sprintf("%v; retrying with backoff", err))
	}
}

func (r *Reconciler) setCondition(cat *catalogdv1.ClusterCatalog, typ string, status metav1.ConditionStatus, reason, msg string) {
	meta.SetStatusCondition(&cat.Status.Conditions, metav1.Condition{
		Type:               typ,
		Status:             status,
		Reason:             reason,
		Message:            truncate(msg, 32768),
		ObservedGeneration: cat.Generation,
		LastTransitionTime: metav1.NewTime(r.now()),
	})
}

// pollResult asks to be called again after the poll interval, plus up to 10%
// jitter so that catalogs created together do not poll together.
func (r *Reconciler) pollResult(cat *catalogdv1.ClusterCatalog) ctrl.Result {
	img := cat.Spec.Source.Image
	if img == nil || img.PollIntervalMinutes == nil || *img.PollIntervalMinutes <= 0 {
		return ctrl.Result{}
	}
	interval := time.Duration(*img.PollIntervalMinutes) * time.Minute
	if r.PollInterval != nil {
		interval = r.PollInterval(*img.PollIntervalMinutes)
	}
	if interval <= 0 {
		return ctrl.Result{}
	}
	jitter := time.Duration(rand.Int64N(int64(interval)/10 + 1))
	return ctrl.Result{RequeueAfter: interval + jitter}
}

func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// isDigestRef reports whether ref names its content by digest.
func isDigestRef(ref string) bool {
	_, err := name.NewDigest(ref)
	return err == nil
}

// digestOf returns the algorithm:hex part of a digest reference.
func digestOf(digestRef string) string {
	if i := strings.LastIndex(digestRef, "@"); i >= 0 {
		return digestRef[i+1:]
	}
	return digestRef
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}

// builderPredicates lets through every event except updates that change
// only the status (including the controller's own status writes).
func builderPredicates() builder.ForOption {
	return builder.WithPredicates(predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			if e.ObjectOld == nil || e.ObjectNew == nil {
				return true
			}
			o, n := e.ObjectOld, e.ObjectNew
			return o.GetGeneration() != n.GetGeneration() ||
				!equality.Semantic.DeepEqual(o.GetLabels(), n.GetLabels()) ||
				!equality.Semantic.DeepEqual(o.GetAnnotations(), n.GetAnnotations()) ||
				!equality.Semantic.DeepEqual(o.GetFinalizers(), n.GetFinalizers()) ||
				!equality.Semantic.DeepEqual(o.GetDeletionTimestamp(), n.GetDeletionTimestamp())
		},
	})
}
