package httpapi

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/google/go-containerregistry/pkg/name"

	"github.com/catalogd/catalogd/internal/catalogs"
	"github.com/catalogd/catalogd/internal/catalogsync"
	"github.com/catalogd/catalogd/internal/index"
	"github.com/catalogd/catalogd/internal/prebuilt"
	"github.com/catalogd/catalogd/internal/store"
	"github.com/catalogd/catalogd/internal/unpack"
	"github.com/catalogd/catalogd/test/fbcchange"
	"github.com/catalogd/catalogd/test/fbcfacts"
	"github.com/catalogd/catalogd/test/fbcgen"
	"github.com/catalogd/catalogd/test/registrytest"
)

// TestPrebuiltAnswersEqualLocal: a catalog image served from the index
// published beside it (pushed to a registry, downloaded, checked, swapped
// in) answers every route byte for byte as one served from the index a
// replica builds from the image itself, but for when and how each was
// built.
func TestPrebuiltAnswersEqualLocal(t *testing.T) {
	sources := []struct {
		name string
		dir  func(t *testing.T) string
	}{
		{name: "demo", dir: func(*testing.T) string { return demoDir }},
		{name: "generated", dir: func(t *testing.T) string {
			dir := t.TempDir()
			if _, err := fbcgen.Write(context.Background(), dir, fbcgen.Options{Packages: 10, Bundles: 50, Seed: 7}); err != nil {
				t.Fatal(err)
			}
			return dir
		}},
		{name: "community", dir: func(t *testing.T) string { return fbcfacts.SharedCommunity(t) }},
	}
	if testing.Short() {
		sources = sources[:1]
	}
	for _, src := range sources {
		t.Run(src.name, func(t *testing.T) {
			ctx := context.Background()
			dir := src.dir(t)
			reg := registrytest.New(t, registrytest.WithReferrers())
			u, err := unpack.New(unpack.Options{InsecureRegistries: []string{reg.Host}})
			if err != nil {
				t.Fatal(err)
			}
			ref := reg.PushCatalog(t, "catalogs/c:v1", dir, registrytest.PushOptions{})
			client := prebuilt.New(u, prebuilt.Options{})

			// A replica's own build, from the image as it pulls it.
			r, err := name.ParseReference(ref)
			if err != nil {
				t.Fatal(err)
			}
			fetched, err := catalogsync.ImageFetcher{Ref: r, Unpacker: u, TempDir: t.TempDir()}.Fetch(ctx, func(string) bool { return false })
			if err != nil {
				t.Fatal(err)
			}
			defer fetched.Release()
			local := newSide(t, "local")
			if _, _, _, err := local.store.Update(ctx, "c", fetched.Content); err != nil {
				t.Fatal(err)
			}

			// The publisher's build of the same image, pushed, and taken.
			built := filepath.Join(t.TempDir(), "index.db")
			if _, err := index.Build(ctx, built, fetched.Content, time.Unix(0, 0)); err != nil {
				t.Fatal(err)
			}
			if _, err := client.Publish(ctx, ref, built); err != nil {
				t.Fatal(err)
			}
			taken := newSide(t, "prebuilt")
			info, adopted, err := taken.store.Adopt(ctx, "c", ref, func(ctx context.Context, path string) (index.ContentSums, error) {
				return client.Download(ctx, ref, path)
			})
			if err != nil || !adopted || info.Build.Mode != index.ModePrebuilt {
				t.Fatalf("adopt: %+v, %v, %v", info, adopted, err)
			}

			tw := &twin{sides: [2]*side{local, taken}}
			now := fbcchange.ReadModel(t, dir).Facts(t)
			rng := rand.New(rand.NewPCG(5, 5))
			reqs := routes(now, nil, []string{fetched.Digest}, rng)
			tw.compare(t, fmt.Sprintf("%d requests", len(reqs)), reqs)
		})
	}
}

// newSide is a store of its own behind an API server of its own.
func newSide(t *testing.T, label string) *side {
	t.Helper()
	s, err := store.New(t.TempDir(), testr.NewWithOptions(t, testr.Options{Verbosity: 0}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	table := catalogs.NewTable()
	table.MarkLoaded()
	table.Put(catalogs.Catalog{Name: "c", Source: "image"})
	srv := httptest.NewServer(New(table, s, Options{Log: testr.NewWithOptions(t, testr.Options{Verbosity: 0})}))
	t.Cleanup(srv.Close)
	return &side{name: label, store: s, srv: srv}
}
