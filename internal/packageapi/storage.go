package packageapi

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apimachinery/pkg/watch"
	genericrequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"

	pkgv1 "github.com/catalogd/catalogd/api/packages/v1"
	"github.com/catalogd/catalogd/internal/query"
)

var groupResource = pkgv1.Resource("packagemanifests")

// manifests is the REST storage of packagemanifests: get, list and watch
// answered from the cache, and the table kubectl prints.
type manifests struct {
	c *cache
	// home is the namespace an answer across all namespaces shows every
	// package in: the manager's, where OLM v0 keeps its global catalogs.
	home string
}

var (
	_ rest.Storage              = (*manifests)(nil)
	_ rest.Scoper               = (*manifests)(nil)
	_ rest.KindProvider         = (*manifests)(nil)
	_ rest.SingularNameProvider = (*manifests)(nil)
	_ rest.Getter               = (*manifests)(nil)
	_ rest.Lister               = (*manifests)(nil)
	_ rest.Watcher              = (*manifests)(nil)
	_ rest.TableConvertor       = (*manifests)(nil)
)

func (s *manifests) New() runtime.Object     { return &pkgv1.PackageManifest{} }
func (s *manifests) NewList() runtime.Object { return &pkgv1.PackageManifestList{} }
func (s *manifests) Destroy()                {}

// NamespaceScoped is true, as packageserver's: packages of cluster
// catalogs appear in every namespace.
func (s *manifests) NamespaceScoped() bool   { return true }
func (s *manifests) Kind() string            { return "PackageManifest" }
func (s *manifests) GetSingularName() string { return "packagemanifest" }

// namespace is the namespace an answer shows its packages in.
func (s *manifests) namespace(ctx context.Context) string {
	if ns := genericrequest.NamespaceValue(ctx); ns != "" {
		return ns
	}
	return s.home
}

// Get answers the named package; when several catalogs serve it, the one
// of highest priority (then first by name) answers.
func (s *manifests) Get(ctx context.Context, name string, _ *metav1.GetOptions) (runtime.Object, error) {
	found := s.c.find(name)
	if len(found) == 0 {
		return nil, apierrors.NewNotFound(groupResource, name)
	}
	return inNamespace(found[0].obj, s.namespace(ctx)), nil
}

// List answers every package of every catalog that matches the selectors,
// one item per catalog serving it. Field selectors are on metadata.name
// and metadata.namespace only, as packageserver's: the API server refuses
// others before they reach here (the scheme registers no other field
// label).
func (s *manifests) List(ctx context.Context, opts *metainternalversion.ListOptions) (runtime.Object, error) {
	match := matcher(ctx, opts)
	entries, rv := s.c.snapshot()
	ns := s.namespace(ctx)
	out := &pkgv1.PackageManifestList{Items: make([]pkgv1.PackageManifest, 0, len(entries))}
	out.ResourceVersion = strconv.FormatUint(rv, 10)
	for _, e := range entries {
		if match(e.obj) {
			item := *e.obj
			item.Namespace = ns
			out.Items = append(out.Items, item)
		}
	}
	return out, nil
}

// Watch sends the changes after opts.ResourceVersion; from "" or "0" it
// first sends every matching package as ADDED. A resourceVersion older
// than the changes kept gets 410 Gone.
func (s *manifests) Watch(ctx context.Context, opts *metainternalversion.ListOptions) (watch.Interface, error) {
	match := matcher(ctx, opts)
	var (
		from    uint64
		err     error
		initial bool
	)
	if opts != nil {
		if opts.ResourceVersion != "" {
			if from, err = strconv.ParseUint(opts.ResourceVersion, 10, 64); err != nil {
				return nil, apierrors.NewBadRequest(fmt.Sprintf("resourceVersion %q: not a resourceVersion this server gave", opts.ResourceVersion))
			}
		}
		initial = opts.SendInitialEvents != nil && *opts.SendInitialEvents
	}
	w := newWatcher(s.c, s.namespace(ctx), match, opts != nil && opts.AllowWatchBookmarks)
	if err := s.c.watch(w, from, initial); err != nil {
		w.close()
		return nil, err
	}
	return w, nil
}

// matcher returns whether a package matches the request's namespace-free
// selectors.
func matcher(ctx context.Context, opts *metainternalversion.ListOptions) func(*pkgv1.PackageManifest) bool {
	lsel, fsel := labels.Everything(), fields.Everything()
	if opts != nil && opts.LabelSelector != nil {
		lsel = opts.LabelSelector
	}
	if opts != nil && opts.FieldSelector != nil {
		fsel = opts.FieldSelector
	}
	ns := genericrequest.NamespaceValue(ctx)
	return func(m *pkgv1.PackageManifest) bool {
		f := fields.Set{"metadata.name": m.Name}
		if ns != "" {
			f["metadata.namespace"] = ns
		}
		return lsel.Matches(labels.Set(m.Labels)) && fsel.Matches(f)
	}
}

// columns are packageserver's: kubectl get packagemanifests prints these.
var columns = []metav1.TableColumnDefinition{
	{Name: "Name", Type: "string", Format: "name", Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]},
	{Name: "Catalog", Type: "string", Description: "The source catalog for this package"},
	{Name: "Age", Type: "string", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]},
}

// ConvertToTable prints a manifest or a list of them as packageserver does.
func (s *manifests) ConvertToTable(_ context.Context, obj runtime.Object, _ runtime.Object) (*metav1.Table, error) {
	t := &metav1.Table{ColumnDefinitions: columns}
	row := func(m *pkgv1.PackageManifest) {
		t.Rows = append(t.Rows, metav1.TableRow{
			Cells:  []any{m.Name, m.Status.CatalogSourceDisplayName, age(m.CreationTimestamp)},
			Object: runtime.RawExtension{Object: m},
		})
	}
	switch o := obj.(type) {
	case *pkgv1.PackageManifest:
		row(o)
	case *pkgv1.PackageManifestList:
		t.ResourceVersion = o.ResourceVersion
		for i := range o.Items {
			row(&o.Items[i])
		}
	default:
		return nil, fmt.Errorf("print %T as a table: not a PackageManifest", obj)
	}
	return t, nil
}

func age(t metav1.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(time.Since(t.Time))
}

// defaultIcon is what the icon subresource serves for a package without
// an icon, as packageserver serves an SVG of its own then: clients such
// as the console show every package's icon from the same URL and expect
// an image, not an error.
//
//go:embed defaulticon.svg
var defaultIcon []byte

const defaultIconType = "image/svg+xml"

// icons is the packagemanifests/icon subresource: the package's icon, as
// the catalog gave it, with its media type, or defaultIcon.
type icons struct {
	c *cache
}

var (
	_ rest.Connecter       = (*icons)(nil)
	_ rest.StorageMetadata = (*icons)(nil)
)

func (s *icons) New() runtime.Object { return &pkgv1.PackageManifest{} }
func (s *icons) Destroy()            {}

// ConnectMethods: the icon is read-only.
func (s *icons) ConnectMethods() []string { return []string{http.MethodGet} }

// NewConnectOptions: the subresource takes no options.
func (s *icons) NewConnectOptions() (runtime.Object, bool, string) { return nil, false, "" }

// ProducesMIMETypes lists the media types icons come in.
func (s *icons) ProducesMIMETypes(string) []string {
	return []string{"image/png", "image/jpeg", "image/svg+xml", "image/gif"}
}

// ProducesObject: the answer is bytes, not an object.
func (s *icons) ProducesObject(string) any { return "" }

// Connect serves the icon of the package a get of the same name answers.
func (s *icons) Connect(ctx context.Context, name string, _ runtime.Object, r rest.Responder) (http.Handler, error) {
	found := s.c.find(name)
	if len(found) == 0 {
		return nil, apierrors.NewNotFound(groupResource, name)
	}
	e := found[0]
	snap, err := s.c.idx.Acquire(e.catalog)
	if err != nil {
		return nil, apierrors.NewNotFound(groupResource, name)
	}
	defer snap.Release()
	data, mediaType, err := snap.Catalog.Icon(ctx, name)
	switch {
	case errors.Is(err, query.ErrNotFound):
		return nil, apierrors.NewNotFound(groupResource, name)
	case err != nil:
		return nil, apierrors.NewInternalError(fmt.Errorf("read icon of package %q of catalog %q: %w", name, e.catalog, err))
	case len(data) == 0:
		data, mediaType = defaultIcon, defaultIconType
	}
	if mediaType == "" {
		mediaType = http.DetectContentType(data)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", mediaType)
		w.Header().Set("Content-Length", strconv.Itoa(len(data)))
		w.Header().Set("X-Content-Type-Options", "nosniff")
		// An SVG is a document that can hold scripts: opened as a page,
		// it may run none.
		w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; sandbox")
		_, _ = w.Write(data)
	}), nil
}
