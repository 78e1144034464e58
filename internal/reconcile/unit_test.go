package reconcile_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	ctrlreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	catalogdv1 "github.com/catalogd/catalogd/api/v1"
	"github.com/catalogd/catalogd/internal/catalogs"
	"github.com/catalogd/catalogd/internal/catalogsync"
	"github.com/catalogd/catalogd/internal/index"
	"github.com/catalogd/catalogd/internal/query"
	"github.com/catalogd/catalogd/internal/reconcile"
	"github.com/catalogd/catalogd/internal/source"
)

// syncer is a Syncer that answers each Sync with the next scripted outcome
// and records what it was asked.
type syncer struct {
	outcomes []outcome
	specs    []catalogsync.Spec
	synced   []string // Describe() of each source synced; "" for the spec's
	removed  []string
	table    *catalogs.Table
	serving  map[string]bool // catalogs a successful Sync indexed
}

type outcome struct {
	res catalogsync.Result
	err error
}

func (s *syncer) Set(spec catalogsync.Spec) {
	s.specs = append(s.specs, spec)
	if _, ok := s.table.Get(spec.Name); !ok {
		s.table.Put(catalogs.Catalog{Name: spec.Name})
	}
}

func (s *syncer) Sync(_ context.Context, catalog string, src catalogsync.Fetcher) (catalogsync.Result, error) {
	d := ""
	if src != nil {
		d = src.Describe()
	}
	s.synced = append(s.synced, d)
	if len(s.outcomes) == 0 {
		return catalogsync.Result{}, fmt.Errorf("unexpected sync of %s", catalog)
	}
	o := s.outcomes[0]
	s.outcomes = s.outcomes[1:]
	if o.err == nil {
		if s.serving == nil {
			s.serving = map[string]bool{}
		}
		s.serving[catalog] = true
		s.table.Update(catalog, func(c *catalogs.Catalog) { c.LastError = "" })
	} else {
		s.table.Update(catalog, func(c *catalogs.Catalog) { c.LastError = o.err.Error() })
	}
	return o.res, o.err
}

func (s *syncer) Serving(name string) bool { return s.serving[name] }

func (s *syncer) Remove(name string) error {
	s.removed = append(s.removed, name)
	s.table.Delete(name)
	return nil
}

// Backoff is one second whatever the failures, capped by poll as the
// service caps it, so the test can see the cap applied.
func (s *syncer) Backoff(_ string, poll time.Duration) time.Duration {
	if poll > 0 && poll < time.Second {
		return poll
	}
	return time.Second
}

// describedFetcher is a catalogsync.Fetcher the fake never fetches.
type describedFetcher struct{ spec source.Spec }

func (d describedFetcher) Fetch(context.Context, func(string) bool) (catalogsync.Fetched, error) {
	return catalogsync.Fetched{}, errors.New("not fetched in unit tests")
}
func (d describedFetcher) Describe() string  { return d.spec.String() }
func (d describedFetcher) Built(string) bool { return true }

// described is the composition root's chooser in these tests: every kind of
// source is a describedFetcher.
var described = reconcile.Sources{Fetcher: func(spec source.Spec, _ source.Credentials) (catalogsync.Fetcher, error) {
	return describedFetcher{spec}, nil
}}

const (
	tag       = "registry.example.com/catalogs/demo:v1"
	digestRef = "registry.example.com/catalogs/demo@sha256:1111111111111111111111111111111111111111111111111111111111111111"
)

func newCatalog(ref string, mutate ...func(*catalogdv1.ClusterCatalog)) *catalogdv1.ClusterCatalog {
	cat := &catalogdv1.ClusterCatalog{
		ObjectMeta: metav1.ObjectMeta{Name: "demo", Generation: 1},
		Spec: catalogdv1.ClusterCatalogSpec{Source: catalogdv1.CatalogSource{
			Type: catalogdv1.SourceTypeImage, Image: &catalogdv1.ImageSource{Ref: ref},
		}},
	}
	for _, m := range mutate {
		m(cat)
	}
	return cat
}

const (
	gitRepo   = "https://git.example.com/org/catalogs.git"
	commit1   = "1111111111111111111111111111111111111111"
	treeHash  = "git-tree:2222222222222222222222222222222222222222"
	archive   = "https://files.example.com/catalog.tar.gz"
	archiveID = "3333333333333333333333333333333333333333333333333333333333333333"
)

func gitCatalog(ref catalogdv1.GitRef, mutate ...func(*catalogdv1.ClusterCatalog)) *catalogdv1.ClusterCatalog {
	return newCatalog("", append([]func(*catalogdv1.ClusterCatalog){func(c *catalogdv1.ClusterCatalog) {
		c.Spec.Source = catalogdv1.CatalogSource{Type: catalogdv1.SourceTypeGit,
			Git: &catalogdv1.GitSource{URL: gitRepo, Ref: ref, Directory: "catalogs/prod/"}}
	}}, mutate...)...)
}

func httpCatalog(sha string, mutate ...func(*catalogdv1.ClusterCatalog)) *catalogdv1.ClusterCatalog {
	return newCatalog("", append([]func(*catalogdv1.ClusterCatalog){func(c *catalogdv1.ClusterCatalog) {
		c.Spec.Source = catalogdv1.CatalogSource{Type: catalogdv1.SourceTypeHTTP,
			HTTP: &catalogdv1.HTTPSource{URL: archive, SHA256: sha}}
	}}, mutate...)...)
}

// pinnedGit is what the git fetcher reports it served: the source pinned to
// its commit.
var pinnedGit = source.Git{URL: gitRepo, Ref: "refs/heads/main", Commit: commit1, Directory: "catalogs/prod"}.String()

// resolvedString writes status.resolvedSource on one line, to compare.
func resolvedString(rs *catalogdv1.ResolvedCatalogSource) string {
	switch {
	case rs == nil:
		return ""
	case rs.Image != nil:
		return strings.TrimSpace(rs.Image.Ref + " " + string(rs.Image.Form))
	case rs.Git != nil:
		return strings.Join([]string{rs.Git.URL, rs.Git.Directory, rs.Git.Commit, rs.Git.TreeDigest}, " ")
	case rs.HTTP != nil:
		return rs.HTTP.URL + " " + rs.HTTP.SHA256
	}
	return "?"
}

// TestReconcileUnit runs the leader's Reconcile against a fake client and a
// scripted sync service: what it writes into status, what it returns to
// controller-runtime, and what it asks of the service.
func TestReconcileUnit(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := catalogdv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	one := 1
	contentErr := fmt.Errorf("indexing %s: %w", digestRef, index.ErrInvalidCatalog)
	tests := []struct {
		name     string
		cat      *catalogdv1.ClusterCatalog
		outcomes []outcome
		// wantResult/wantTerminal: what controller-runtime is told.
		wantRequeue  time.Duration
		wantTerminal bool
		wantErr      bool
		// wantServing/wantProgressing: status and reason of the conditions.
		wantServing     metav1.ConditionStatus
		wantProgressing string
		// wantResolved is status.resolvedSource (resolvedString).
		wantResolved string
		// wantSynced, when set, is the source the leader synced;
		// wantReplica the one every replica then fetches, by default
		// wantResolved.
		wantSynced, wantReplica string
		wantRemoved             bool
		// wantMessage: what the Progressing message says, in order.
		wantMessage []string
		// wantFailed: the Serving condition says the catalog is Failed,
		// which the spec every replica is then set reads back.
		wantFailed bool
	}{
		{
			name:            "a tag is indexed and its digest published",
			cat:             newCatalog(tag),
			outcomes:        []outcome{{res: catalogsync.Result{Ref: digestRef, Rebuilt: true}}},
			wantServing:     metav1.ConditionTrue,
			wantProgressing: catalogdv1.ReasonSucceeded,
			wantResolved:    digestRef,
		},
		{
			name: "problems are counted and the first quoted with its position",
			cat:  newCatalog(tag),
			outcomes: []outcome{{res: catalogsync.Result{Ref: digestRef, Rebuilt: true, Problems: []query.Problem{
				{Package: "p", Position: "p/catalog.yaml:3:1", Message: `channel "c": entry "p.v9" has no olm.bundle blob`},
				{Package: "q", Position: "q/catalog.json:1:1", Message: "there is no olm.package blob"},
			}}}},
			wantServing:     metav1.ConditionTrue,
			wantProgressing: catalogdv1.ReasonSucceeded,
			wantResolved:    digestRef,
			wantMessage:     []string{"indexed " + digestRef, "2 problem(s)", `p/catalog.yaml:3:1: p: channel "c": entry "p.v9" has no olm.bundle blob`, "GET /catalogs/demo"},
		},
		{
			name: "a long problem is cut short in the message",
			cat:  newCatalog(tag),
			outcomes: []outcome{{res: catalogsync.Result{Ref: digestRef, Rebuilt: true, Problems: []query.Problem{
				{Package: "p", Position: "p/catalog.yaml:3:1", Message: strings.Repeat("x", 5000)},
			}}}},
			wantServing:     metav1.ConditionTrue,
			wantProgressing: catalogdv1.ReasonSucceeded,
			wantResolved:    digestRef,
			wantMessage:     []string{"1 problem(s)", "p/catalog.yaml:3:1: p: xxx", "(truncated)", "GET /catalogs/demo"},
		},
		{
			name:            "a polled tag asks to be called again after the interval",
			cat:             newCatalog(tag, func(c *catalogdv1.ClusterCatalog) { c.Spec.Source.Image.PollIntervalMinutes = &one }),
			outcomes:        []outcome{{res: catalogsync.Result{Ref: digestRef}}},
			wantRequeue:     time.Minute,
			wantServing:     metav1.ConditionTrue,
			wantProgressing: catalogdv1.ReasonSucceeded,
			wantResolved:    digestRef,
		},
		{
			name:            "a failure under a tag is retried, with backoff",
			cat:             newCatalog(tag),
			outcomes:        []outcome{{err: contentErr}},
			wantRequeue:     time.Second,
			wantServing:     metav1.ConditionFalse,
			wantProgressing: catalogdv1.ReasonRetrying,
			wantFailed:      true,
		},
		{
			name:            "a content failure at a digest is terminal",
			cat:             newCatalog(digestRef),
			outcomes:        []outcome{{err: contentErr}},
			wantTerminal:    true,
			wantServing:     metav1.ConditionFalse,
			wantProgressing: catalogdv1.ReasonBlocked,
			wantFailed:      true,
		},
		{
			name:            "an artifact says so in status",
			cat:             newCatalog(tag),
			outcomes:        []outcome{{res: catalogsync.Result{Ref: digestRef, Form: source.FormArtifact, Rebuilt: true}}},
			wantServing:     metav1.ConditionTrue,
			wantProgressing: catalogdv1.ReasonSucceeded,
			wantResolved:    digestRef + " Artifact",
			wantSynced:      tag,
			wantReplica:     digestRef,
		},
		{
			name:            "a branch is indexed and its commit and tree published",
			cat:             gitCatalog(catalogdv1.GitRef{Branch: "main"}, func(c *catalogdv1.ClusterCatalog) { c.Spec.Source.Git.PollIntervalMinutes = &one }),
			outcomes:        []outcome{{res: catalogsync.Result{Ref: pinnedGit, Digest: treeHash, Rebuilt: true}}},
			wantRequeue:     time.Minute,
			wantServing:     metav1.ConditionTrue,
			wantProgressing: catalogdv1.ReasonSucceeded,
			wantResolved:    gitRepo + " catalogs/prod " + commit1 + " " + treeHash,
			wantSynced:      source.Git{URL: gitRepo, Ref: "refs/heads/main", Directory: "catalogs/prod"}.String(),
			wantReplica:     pinnedGit,
		},
		{
			name:            "a content failure under a branch is retried",
			cat:             gitCatalog(catalogdv1.GitRef{Branch: "main"}),
			outcomes:        []outcome{{err: contentErr}},
			wantRequeue:     time.Second,
			wantServing:     metav1.ConditionFalse,
			wantProgressing: catalogdv1.ReasonRetrying,
			wantFailed:      true,
		},
		{
			name:            "a content failure at a commit is terminal",
			cat:             gitCatalog(catalogdv1.GitRef{Commit: commit1}),
			outcomes:        []outcome{{err: source.Terminal(errors.New("directory catalogs/prod is not in commit " + commit1))}},
			wantTerminal:    true,
			wantServing:     metav1.ConditionFalse,
			wantProgressing: catalogdv1.ReasonBlocked,
			wantMessage:     []string{"directory catalogs/prod is not in commit", "retrying cannot fix this"},
			wantFailed:      true,
		},
		{
			name:            "a git fetcher that does not pin a commit is retried, not published",
			cat:             gitCatalog(catalogdv1.GitRef{Tag: "v1"}),
			outcomes:        []outcome{{res: catalogsync.Result{Ref: source.Git{URL: gitRepo, Ref: "refs/tags/v1"}.String(), Digest: treeHash}}},
			wantRequeue:     time.Second,
			wantServing:     metav1.ConditionTrue,
			wantProgressing: catalogdv1.ReasonRetrying,
			wantMessage:     []string{"not a git source pinned to a commit"},
		},
		{
			name:            "a URL is indexed and its sha256 published",
			cat:             httpCatalog(""),
			outcomes:        []outcome{{res: catalogsync.Result{Ref: archive + "#sha256=" + archiveID, Digest: "sha256:" + archiveID, Rebuilt: true}}},
			wantServing:     metav1.ConditionTrue,
			wantProgressing: catalogdv1.ReasonSucceeded,
			wantResolved:    archive + " " + archiveID,
			wantSynced:      archive,
			wantReplica:     archive + "#sha256=" + archiveID,
		},
		{
			name:            "a content failure at a sha256 is terminal",
			cat:             httpCatalog(archiveID),
			outcomes:        []outcome{{err: source.Terminal(errors.New("sha256 mismatch"))}},
			wantTerminal:    true,
			wantServing:     metav1.ConditionFalse,
			wantProgressing: catalogdv1.ReasonBlocked,
			wantFailed:      true,
		},
		{
			name:            "a network failure at a digest is retried",
			cat:             newCatalog(digestRef),
			outcomes:        []outcome{{err: errors.New("connection refused")}},
			wantRequeue:     time.Second,
			wantServing:     metav1.ConditionFalse,
			wantProgressing: catalogdv1.ReasonRetrying,
		},
		{
			name: "unavailable is switched off",
			cat: newCatalog(tag, func(c *catalogdv1.ClusterCatalog) {
				c.Spec.AvailabilityMode = catalogdv1.AvailabilityModeUnavailable
			}),
			outcomes:        []outcome{{}},
			wantServing:     metav1.ConditionFalse,
			wantProgressing: catalogdv1.ReasonSucceeded,
		},
		{
			name: "a deleted catalog is removed and its finalizer dropped",
			cat: newCatalog(tag, func(c *catalogdv1.ClusterCatalog) {
				now := metav1.Now()
				c.DeletionTimestamp = &now
				c.Finalizers = []string{catalogdv1.DeleteServerCacheFinalizer}
			}),
			wantRemoved: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(tc.cat).
				WithStatusSubresource(&catalogdv1.ClusterCatalog{}).Build()
			s := &syncer{outcomes: tc.outcomes, table: catalogs.NewTable()}
			r := &reconcile.Reconciler{
				Client: c, Sync: s, Catalogs: s.table, BaseURL: "https://catalogd.example", Sources: described,
			}
			res, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Name: "demo"}})
			if got := errors.Is(err, ctrlreconcile.TerminalError(nil)); got != tc.wantTerminal {
				t.Errorf("terminal = %v (%v), want %v", got, err, tc.wantTerminal)
			}
			if (err != nil && !tc.wantTerminal) != tc.wantErr {
				t.Errorf("error %v, want error: %v", err, tc.wantErr)
			}
			if lo, hi := tc.wantRequeue, tc.wantRequeue+tc.wantRequeue/10; res.RequeueAfter < lo || res.RequeueAfter > hi {
				t.Errorf("RequeueAfter %s, want within [%s, %s]", res.RequeueAfter, lo, hi)
			}
			if len(s.outcomes) != 0 {
				t.Errorf("%d scripted syncs were not run", len(s.outcomes))
			}
			if got := len(s.removed) > 0; got != tc.wantRemoved {
				t.Errorf("removed %v, want removal: %v", s.removed, tc.wantRemoved)
			}

			var got catalogdv1.ClusterCatalog
			err = c.Get(context.Background(), types.NamespacedName{Name: "demo"}, &got)
			if tc.wantRemoved {
				// The fake client deletes an object once its last
				// finalizer is gone, as the API server does.
				if err == nil && len(got.Finalizers) != 0 {
					t.Errorf("finalizers left: %v", got.Finalizers)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			checkCondition(t, &got, catalogdv1.TypeServing, tc.wantServing, "")
			checkCondition(t, &got, catalogdv1.TypeProgressing, "", tc.wantProgressing)
			if c := meta.FindStatusCondition(got.Status.Conditions, catalogdv1.TypeProgressing); c != nil {
				rest := c.Message
				for _, want := range tc.wantMessage {
					i := strings.Index(rest, want)
					if i < 0 {
						t.Errorf("Progressing message %q does not say %q (after what came before)", c.Message, want)
						break
					}
					rest = rest[i+len(want):]
				}
				if len(c.Message) > 1024 {
					t.Errorf("Progressing message is %d bytes, want it bounded", len(c.Message))
				}
			}
			if resolved := resolvedString(got.Status.ResolvedSource); resolved != tc.wantResolved {
				t.Errorf("resolvedSource %q, want %q", resolved, tc.wantResolved)
			}
			if tc.wantSynced != "" && (len(s.synced) == 0 || s.synced[0] != tc.wantSynced) {
				t.Errorf("synced %q, want %q first", s.synced, tc.wantSynced)
			}
			if tc.wantResolved != "" && (got.Status.URLs == nil || got.Status.URLs.Base != "https://catalogd.example/catalogs/demo") {
				t.Errorf("urls %+v", got.Status.URLs)
			}
			if last := s.specs[len(s.specs)-1]; last.ReportedFailed != tc.wantFailed {
				t.Errorf("spec set after the reconcile says Failed: %v, want %v (Serving: %+v)", last.ReportedFailed, tc.wantFailed,
					meta.FindStatusCondition(got.Status.Conditions, catalogdv1.TypeServing))
			}
			// The spec the replicas serve follows the status just written.
			want := cmp.Or(tc.wantReplica, tc.wantResolved)
			if last := s.specs[len(s.specs)-1]; (last.Fetcher != nil) != (want != "") ||
				(last.Fetcher != nil && last.Fetcher.Describe() != want) {
				t.Errorf("last spec set: %+v, want the source %q", last, want)
			}
		})
	}
}

func checkCondition(t *testing.T, cat *catalogdv1.ClusterCatalog, typ string, status metav1.ConditionStatus, reason string) {
	t.Helper()
	c := meta.FindStatusCondition(cat.Status.Conditions, typ)
	if c == nil {
		t.Errorf("no %s condition", typ)
		return
	}
	if (status != "" && c.Status != status) || (reason != "" && c.Reason != reason) {
		t.Errorf("%s = %s/%s (%s), want %s/%s", typ, c.Status, c.Reason, c.Message, status, reason)
	}
}

// TestLocalSyncerUnit: every replica sets the spec the status names, and
// removes a catalog whose object is gone or being deleted.
func TestLocalSyncerUnit(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := catalogdv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	resolved := newCatalog(tag, func(c *catalogdv1.ClusterCatalog) {
		c.Spec.Priority = 7
		c.Status.ResolvedSource = &catalogdv1.ResolvedCatalogSource{Type: catalogdv1.SourceTypeImage,
			Image: &catalogdv1.ResolvedImageSource{Ref: digestRef}}
		meta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{Type: catalogdv1.TypeProgressing,
			Status: metav1.ConditionTrue, Reason: catalogdv1.ReasonRetrying, Message: "pull failed; retrying with backoff"})
	})
	for _, tc := range []struct {
		name        string
		objs        []client.Object
		wantSpec    bool
		wantRemoved bool
	}{
		{name: "resolved", objs: []client.Object{resolved}, wantSpec: true},
		{name: "gone", wantRemoved: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(tc.objs...).Build()
			s := &syncer{table: catalogs.NewTable()}
			l := &reconcile.LocalSyncer{Client: c, Sync: s, Sources: described}
			if _, err := l.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Name: "demo"}}); err != nil {
				t.Fatal(err)
			}
			if (len(s.removed) > 0) != tc.wantRemoved {
				t.Errorf("removed %v, want removal %v", s.removed, tc.wantRemoved)
			}
			if !tc.wantSpec {
				if len(s.specs) != 0 {
					t.Errorf("specs set: %+v", s.specs)
				}
				return
			}
			if len(s.specs) != 1 {
				t.Fatalf("specs set: %+v", s.specs)
			}
			spec := s.specs[0]
			if spec.Fetcher == nil || spec.Fetcher.Describe() != digestRef || spec.Priority != 7 || spec.Display != tag ||
				spec.ReportedError != "pull failed; retrying with backoff" {
				t.Errorf("spec %+v; want the digest, priority 7, the tag shown and the leader's error", spec)
			}
		})
	}
}
