// Package reconcile owns the ClusterCatalog controllers. Two run in every
// `catalogd manager` replica:
//
//   - Reconciler, leader-elected, is the one writer of ClusterCatalog status.
//     It resolves the spec's source to a pinned revision (an image tag to a
//     digest, a git branch or tag to a commit, an HTTP URL to the sha256 of
//     its bytes), has the local catalog-sync service index it, and publishes
//     the pin in status.resolvedSource only once that index is live, so that
//     status always names content known to index.
//   - LocalSyncer, on every replica, tells the local catalog-sync service
//     what each ClusterCatalog should serve: exactly what
//     status.resolvedSource pins (the digest, the commit, the sha256). Every
//     replica thus serves the same bytes, and a replica that is not the
//     leader still answers.
//
// Which kind of source a spec names, and which fetcher fetches it, is not
// decided here: Sources.Fetcher is the composition root's chooser. The
// Secrets a source names (secretRef, caSecretRef) are read from catalogd's
// own namespace at each fetch, by name, through an uncached reader.
//
// A tag, a branch or a URL is resolved on every leader reconcile (one
// manifest HEAD, one ls-remote, one conditional GET); the content is fetched
// only when its digest is neither live nor known to be bad, so polling an
// unchanged source, or changing only a catalog's priority or labels, costs
// no download and no rebuild. A failed update never takes the previous
// index down.
//
// # Who calls Set and Sync
//
// The catalog-sync service (internal/catalogsync) alone fetches, indexes and
// writes the catalog table; in `catalogd manager` it is told what to do only
// from here and from the composition root's start-up list:
//
//   - Set, what a catalog should serve: LocalSyncer on every replica for
//     every event of a ClusterCatalog; the leader's Reconciler before it
//     syncs and again after it has published status; and, once at start-up,
//     the initial list of the composition root (internal/daemon). All compute
//     the spec with SpecFor from the same object, so they never disagree.
//   - Sync with the spec's source (a tag, a branch, a URL): the leader's
//     Reconciler only, to learn the pin and have it indexed before
//     publishing it in status.resolvedSource.
//   - Sync of the spec's fetcher (the published pin): the service's own
//     loop for each catalog, on every replica, whenever Set changes it.
//
// # Who retries
//
// On the leader, controller-runtime's queue: Reconcile asks to be called
// again after the service's Backoff (capped at the poll interval), or
// returns a TerminalError for bad content at a pinned revision (a digest, a
// commit, a sha256 in the spec), which no retry can fix. A missing or
// unusable Secret is retried: someone may create or fix it. On every
// replica, the service's loop retries its own failed syncs of the published
// pin with the same backoff. Neither fetches again content whose digest
// failed: the service remembers it until the digest changes.
//
// # How an error reaches the followers
//
// The leader's failed Sync leaves the error, cleaned for clients, in its
// table's LastError; fail copies it into the Progressing condition (reason
// Retrying or Blocked). Every replica's LocalSyncer sees that status change,
// SpecFor turns the condition's message into Spec.ReportedError, and the
// service shows it as LastError while the replica has no error of its own:
// every replica tells clients the same reason, though only the leader pulled
// the tag that failed. Whether a catalog serves is never copied: each
// replica derives it from its own store (catalogs.Catalog.State).
//
// Whether a catalog that serves nothing is Failed (its content cannot
// index, so only new content helps) or still Pending is copied, through
// the Serving condition: fail writes it False with reason Unavailable and
// failedMessage when the error is the content's (or no retry can help),
// and SpecFor turns exactly that into Spec.ReportedFailed. The message,
// not a reason, carries it because the condition reasons are OLM v1's
// (operator-controller and other clients know that set), and a message
// written and read only here is a contract of this package alone. The
// Progressing condition keeps its meaning: Blocked when nothing is tried
// again (a pinned revision), Retrying when the source is resolved again
// (a tag, a branch or a URL may move to content that indexes).
package reconcile

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlcontroller "sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	ctrlreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	catalogdv1 "github.com/catalogd/catalogd/api/v1"
	"github.com/catalogd/catalogd/internal/catalogs"
	"github.com/catalogd/catalogd/internal/catalogsync"
	"github.com/catalogd/catalogd/internal/query"
)

// Syncer is the part of the catalog-sync service the controllers use;
// *catalogsync.Service provides it.
type Syncer interface {
	Set(spec catalogsync.Spec)
	Sync(ctx context.Context, name string, src catalogsync.Fetcher) (catalogsync.Result, error)
	Remove(name string) error
	Backoff(name string, poll time.Duration) time.Duration
	Serving(name string) bool
}

// Catalogs reads the catalog table; *catalogs.Table provides it.
type Catalogs interface {
	Get(name string) (catalogs.Catalog, bool)
}

// SpecFor is what a ClusterCatalog asks this replica to serve: exactly the
// source the leader published (an image digest, a git commit, an archive's
// sha256), with the catalog's priority and availability. The leader and
// every replica compute it the same way from the same object, so they never
// disagree about a catalog's spec.
func SpecFor(cat *catalogdv1.ClusterCatalog, sources Sources) catalogsync.Spec {
	spec := catalogsync.Spec{
		Name:        cat.Name,
		Priority:    cat.Spec.Priority,
		Labels:      maps.Clone(cat.Labels),
		Unavailable: cat.Spec.AvailabilityMode == catalogdv1.AvailabilityModeUnavailable,
		Display:     display(cat),
	}
	if c := meta.FindStatusCondition(cat.Status.Conditions, catalogdv1.TypeProgressing); c != nil &&
		(c.Reason == catalogdv1.ReasonRetrying || c.Reason == catalogdv1.ReasonBlocked) {
		spec.ReportedError = c.Message
		s := meta.FindStatusCondition(cat.Status.Conditions, catalogdv1.TypeServing)
		spec.ReportedFailed = s != nil && s.Status == metav1.ConditionFalse &&
			s.Reason == catalogdv1.ReasonUnavailable && s.Message == failedMessage
	}
	if pinned, ok := published(cat); ok && !spec.Unavailable {
		spec.Fetcher = sources.fetcher(pinned, secretsOf(cat))
	}
	return spec
}

// Reconciler is the leader's ClusterCatalog controller: the status writer.
type Reconciler struct {
	Client   client.Client
	Sync     Syncer
	Catalogs Catalogs
	// Sources makes the fetchers of the sources the leader resolves and
	// fetches.
	Sources Sources
	// BaseURL is the external URL of the query API, without a trailing
	// slash; a catalog's status.urls.base is BaseURL + "/catalogs/" + name.
	BaseURL string
	// MaxConcurrentReconciles lets catalogs reconcile side by side, so one
	// slow registry delays no other catalog. Zero means 4.
	MaxConcurrentReconciles int
	// PollInterval turns a source's pollIntervalMinutes into a duration;
	// nil means minutes. Tests shorten it.
	PollInterval func(minutes int) time.Duration
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
	// Recorder, when set, gets an Event on the ClusterCatalog for each swap
	// that changed its packages (see changesMessage).
	Recorder events.EventRecorder
}

// SetupWithManager registers the reconciler with mgr. Status-only updates do
// not trigger a reconcile; spec, label, annotation, finalizer and deletion
// changes do.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&catalogdv1.ClusterCatalog{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{},
			predicate.LabelChangedPredicate{},
			predicate.AnnotationChangedPredicate{},
			finalizersChanged(),
		))).
		Named("clustercatalog").
		WithOptions(ctrlcontroller.Options{MaxConcurrentReconciles: concurrency(r.MaxConcurrentReconciles)}).
		Complete(r)
}

func concurrency(n int) int {
	if n <= 0 {
		return 4
	}
	return n
}

// finalizersChanged lets through updates that add or remove finalizers or
// set the deletion timestamp: someone removing our finalizer gets it back,
// and a deletion is finalized.
func finalizersChanged() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		if e.ObjectOld == nil || e.ObjectNew == nil {
			return true
		}
		return !equality.Semantic.DeepEqual(e.ObjectOld.GetFinalizers(), e.ObjectNew.GetFinalizers()) ||
			!equality.Semantic.DeepEqual(e.ObjectOld.GetDeletionTimestamp(), e.ObjectNew.GetDeletionTimestamp())
	}}
}

// +kubebuilder:rbac:groups=olm.operatorframework.io,resources=clustercatalogs,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=olm.operatorframework.io,resources=clustercatalogs/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=olm.operatorframework.io,resources=clustercatalogs/finalizers,verbs=update

// The Events of content changes: a ClusterCatalog is cluster-scoped, so its
// Events go to the default namespace, which the install namespace's Role
// does not reach.
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile brings one ClusterCatalog's index and status in line with its
// spec.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	cat := &catalogdv1.ClusterCatalog{}
	if err := r.Client.Get(ctx, req.NamespacedName, cat); err != nil {
		if apierrors.IsNotFound(err) {
			// Gone without our finalizer (or after it was removed): make
			// sure nothing is left behind.
			return ctrl.Result{}, r.Sync.Remove(req.Name)
		}
		return ctrl.Result{}, fmt.Errorf("get ClusterCatalog %q: %w", req.Name, err)
	}
	if !cat.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, r.finalize(ctx, cat)
	}
	if err := r.ensureMetadata(ctx, cat); err != nil {
		return ctrl.Result{}, err
	}

	orig := cat.DeepCopy()
	res, recErr := r.reconcileContent(ctx, cat)
	if !equality.Semantic.DeepEqual(orig.Status, cat.Status) {
		if err := r.Client.Status().Patch(ctx, cat, client.MergeFrom(orig)); err != nil {
			// The digest is live here already; the retry publishes it.
			return ctrl.Result{}, fmt.Errorf("update status of ClusterCatalog %q: %w", cat.Name, err)
		}
	}
	// What the status now says is what every replica serves; this one need
	// not wait for its own watch to hear it.
	r.Sync.Set(SpecFor(cat, r.Sources))
	return res, recErr
}

// finalize cleans up a deleted catalog, then lets the deletion go through.
// Other replicas remove their own copies when their LocalSyncer sees the
// deletion.
func (r *Reconciler) finalize(ctx context.Context, cat *catalogdv1.ClusterCatalog) error {
	if !controllerutil.ContainsFinalizer(cat, catalogdv1.DeleteServerCacheFinalizer) {
		return nil
	}
	if err := r.Sync.Remove(cat.Name); err != nil {
		return err
	}
	orig := cat.DeepCopy()
	controllerutil.RemoveFinalizer(cat, catalogdv1.DeleteServerCacheFinalizer)
	if err := r.Client.Patch(ctx, cat, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("remove finalizer from ClusterCatalog %q: %w", cat.Name, err)
	}
	ctrl.LoggerFrom(ctx).Info("catalog deleted; index removed")
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
		return fmt.Errorf("add label and finalizer to ClusterCatalog %q: %w", cat.Name, err)
	}
	return nil
}

// reconcileContent syncs the catalog and fills cat.Status. A failure under a
// tag, a branch or a URL is retried after the sync service's backoff,
// capped at the poll interval; a content failure at a pinned revision is
// terminal, since content there never changes.
func (r *Reconciler) reconcileContent(ctx context.Context, cat *catalogdv1.ClusterCatalog) (ctrl.Result, error) {
	catName := cat.Name
	r.Sync.Set(SpecFor(cat, r.Sources))

	if cat.Spec.AvailabilityMode == catalogdv1.AvailabilityModeUnavailable {
		if _, err := r.Sync.Sync(ctx, catName, nil); err != nil {
			return ctrl.Result{}, err
		}
		r.setCondition(cat, catalogdv1.TypeServing, metav1.ConditionFalse, catalogdv1.ReasonUserSpecifiedUnavailable,
			"spec.availabilityMode is Unavailable: the catalog's content is not served")
		r.setCondition(cat, catalogdv1.TypeProgressing, metav1.ConditionTrue, catalogdv1.ReasonSucceeded,
			"the catalog is unavailable as requested")
		cat.Status.ResolvedSource = nil
		cat.Status.URLs = nil
		cat.Status.LastUnpacked = nil
		return ctrl.Result{}, nil
	}

	want, pinned, err := wanted(cat)
	if err != nil {
		r.fail(cat, err, true)
		return ctrl.Result{}, ctrlreconcile.TerminalError(err)
	}

	res, err := r.Sync.Sync(ctx, catName, r.Sources.fetcher(want, secretsOf(cat)))
	var rs *catalogdv1.ResolvedCatalogSource
	if err == nil {
		rs, err = resolved(cat.Spec.Source.Type, res, cat.Status.ResolvedSource)
	}
	if err != nil {
		if ctx.Err() != nil {
			return ctrl.Result{}, err
		}
		// Content at a pinned revision never changes: no retry helps.
		terminal := pinned && catalogsync.IsContentError(err)
		r.fail(cat, err, terminal)
		if terminal {
			return ctrl.Result{}, ctrlreconcile.TerminalError(err)
		}
		ctrl.LoggerFrom(ctx).Error(err, "sync failed; retrying")
		return ctrl.Result{RequeueAfter: r.Sync.Backoff(catName, r.pollInterval(cat))}, nil
	}

	r.setCondition(cat, catalogdv1.TypeServing, metav1.ConditionTrue, catalogdv1.ReasonAvailable,
		fmt.Sprintf("serving %s", res.Ref))
	r.setCondition(cat, catalogdv1.TypeProgressing, metav1.ConditionTrue, catalogdv1.ReasonSucceeded,
		indexedMessage(res, cat.Name))
	cat.Status.ResolvedSource = rs
	cat.Status.URLs = &catalogdv1.ClusterCatalogURLs{Base: strings.TrimSuffix(r.BaseURL, "/") + "/catalogs/" + catName}
	if res.Changes != nil && r.Recorder != nil {
		if msg, ok := changesMessage(*res.Changes); ok {
			r.Recorder.Eventf(cat, nil, "Normal", ReasonContentChanged, "Index", "%s", msg)
		}
	}
	if res.Rebuilt || cat.Status.LastUnpacked == nil {
		now := metav1.NewTime(r.now().Truncate(time.Second))
		cat.Status.LastUnpacked = &now
	}
	return r.pollResult(cat), nil
}

// maxProblemMessage bounds the problem quoted in a condition message.
const maxProblemMessage = 512

// indexedMessage says what was indexed and, when the catalog has problems
// (it serves, but some packages are broken), how many, the first of them
// with its position, and where the rest are listed.
func indexedMessage(res catalogsync.Result, catalog string) string {
	msg := fmt.Sprintf("indexed %s", res.Ref)
	if len(res.Problems) == 0 {
		return msg
	}
	first := res.Problems[0]
	quoted := catalogsync.Truncate(fmt.Sprintf("%s: %s: %s", first.Position, first.Package, first.Message), maxProblemMessage)
	return fmt.Sprintf("%s with %d problem(s) an author should fix, the first %s (GET /catalogs/%s lists them all)",
		msg, len(res.Problems), quoted, catalog)
}

// Messages of a Serving condition that is False with reason Unavailable:
// failedMessage when the catalog is Failed (see the package doc: SpecFor
// reads it back), pendingMessage while a retry may still index it.
const (
	failedMessage  = "the catalog's content failed to index and nothing is served until the source holds other content (see Progressing)"
	pendingMessage = "no content has been indexed yet (see Progressing)"
)

// fail records a failed update in the conditions. The previous index, if
// any, keeps serving.
func (r *Reconciler) fail(cat *catalogdv1.ClusterCatalog, err error, terminal bool) {
	switch {
	case r.Sync.Serving(cat.Name):
		prev := resolvedRef(cat.Status.ResolvedSource)
		if prev == "" {
			prev = "the previous content"
		}
		r.setCondition(cat, catalogdv1.TypeServing, metav1.ConditionTrue, catalogdv1.ReasonAvailable,
			fmt.Sprintf("serving %s; the latest update failed (see Progressing)", prev))
	case terminal || catalogsync.IsContentError(err):
		// The catalog's state is Failed, here and, through this message,
		// on every replica.
		r.setCondition(cat, catalogdv1.TypeServing, metav1.ConditionFalse, catalogdv1.ReasonUnavailable, failedMessage)
	default:
		r.setCondition(cat, catalogdv1.TypeServing, metav1.ConditionFalse, catalogdv1.ReasonUnavailable, pendingMessage)
	}
	// The table's copy of the error is the one cleaned for clients.
	c, _ := r.Catalogs.Get(cat.Name)
	msg := c.LastError
	if msg == "" {
		msg = err.Error()
	}
	if terminal {
		r.setCondition(cat, catalogdv1.TypeProgressing, metav1.ConditionFalse, catalogdv1.ReasonBlocked,
			msg+"; retrying cannot fix this: change spec.source or push fixed content")
	} else {
		r.setCondition(cat, catalogdv1.TypeProgressing, metav1.ConditionTrue, catalogdv1.ReasonRetrying,
			msg+"; retrying with backoff")
	}
}

func (r *Reconciler) setCondition(cat *catalogdv1.ClusterCatalog, typ string, status metav1.ConditionStatus, reason, msg string) {
	meta.SetStatusCondition(&cat.Status.Conditions, metav1.Condition{
		Type:               typ,
		Status:             status,
		Reason:             reason,
		Message:            msg,
		ObservedGeneration: cat.Generation,
		LastTransitionTime: metav1.NewTime(r.now()),
	})
}

// pollInterval is the catalog's poll interval; 0 when it does not poll.
func (r *Reconciler) pollInterval(cat *catalogdv1.ClusterCatalog) time.Duration {
	return pollInterval(pollMinutes(cat), r.PollInterval)
}

// pollResult asks to be called again after the poll interval, plus up to 10%
// jitter so that catalogs created together do not poll together.
func (r *Reconciler) pollResult(cat *catalogdv1.ClusterCatalog) ctrl.Result {
	interval := r.pollInterval(cat)
	if interval <= 0 {
		return ctrl.Result{}
	}
	return ctrl.Result{RequeueAfter: wait.Jitter(interval, 0.1)}
}

func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// LocalSyncer runs on every replica, leader or not: it keeps the local
// catalog-sync service's spec of each ClusterCatalog in line with the
// object, and removes the local index of a deleted one.
type LocalSyncer struct {
	Client  client.Client
	Sync    Syncer
	Sources Sources
	// MaxConcurrentReconciles: see Reconciler's.
	MaxConcurrentReconciles int
}

// SetupWithManager registers the syncer with mgr as a controller that does
// not need leader election. It watches status too: status.resolvedSource is
// what it serves.
func (l *LocalSyncer) SetupWithManager(mgr ctrl.Manager) error {
	needLeader := false
	return ctrl.NewControllerManagedBy(mgr).
		For(&catalogdv1.ClusterCatalog{}).
		Named("clustercatalog-local").
		WithOptions(ctrlcontroller.Options{
			NeedLeaderElection:      &needLeader,
			MaxConcurrentReconciles: concurrency(l.MaxConcurrentReconciles),
		}).
		Complete(l)
}

// Reconcile sets the catalog's spec in the sync service, which pulls the
// published digest in the background, or removes the catalog when the
// object is gone or being deleted.
func (l *LocalSyncer) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	cat := &catalogdv1.ClusterCatalog{}
	if err := l.Client.Get(ctx, req.NamespacedName, cat); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, l.Sync.Remove(req.Name)
		}
		return ctrl.Result{}, fmt.Errorf("get ClusterCatalog %q: %w", req.Name, err)
	}
	if !cat.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, l.Sync.Remove(cat.Name)
	}
	l.Sync.Set(SpecFor(cat, l.Sources))
	return ctrl.Result{}, nil
}

// ReasonContentChanged is the reason of the Event a swap that changed a
// catalog's packages records on its ClusterCatalog.
const ReasonContentChanged = "ContentChanged"

// Bounds of a content-change Event's note: the API server refuses notes
// past 1 KiB, and a list of hundreds of names helps nobody in
// `kubectl describe`; GET /catalogs/{c}/changes has them all.
const (
	maxChangedNames   = 10
	maxChangesMessage = 1000
)

// changesMessage says which packages changed, "3 packages changed (1
// added, 1 removed, 1 changed): a, b, c", naming the first few in name
// order; false when none did.
func changesMessage(c query.Changes) (string, bool) {
	names := append(append([]string{}, c.Added...), c.Removed...)
	for _, p := range c.Changed {
		names = append(names, p.Package)
	}
	if len(names) == 0 {
		return "", false
	}
	slices.Sort(names)
	noun := "packages"
	if len(names) == 1 {
		noun = "package"
	}
	listed := names[:min(len(names), maxChangedNames)]
	msg := fmt.Sprintf("%d %s changed (%d added, %d removed, %d changed): %s", len(names), noun,
		len(c.Added), len(c.Removed), len(c.Changed), strings.Join(listed, ", "))
	if more := len(names) - len(listed); more > 0 {
		msg += fmt.Sprintf(" and %d more", more)
	}
	return catalogsync.Truncate(msg, maxChangesMessage), true
}
