package graphqlapi_test

import (
	"context"
	"os"
	"testing"

	"github.com/go-logr/logr"

	"github.com/catalogd/catalogd/internal/graphqlapi"
	"github.com/catalogd/catalogd/internal/index"
	"github.com/catalogd/catalogd/internal/store"
)

// benchQueries are the queries BenchmarkGraphQL times; the harness that
// times catalogd's own code runs the same ones (see the README's GraphQL
// section for how to run both).
var benchQueries = []string{
	`{ olmbundles(limit: 100) { name package image } }`,
	`{ olmbundles(limit: 20, offset: 500) { name properties { type value } } }`,
	`{ olmchannels(limit: 100) { name package entries { name replaces skipRange } } }`,
	`{ olmpackages(limit: 100) { name defaultChannel } }`,
	`{ summary { totalSchemas schemas { name totalObjects totalFields } } }`,
}

// BenchmarkGraphQL times queries on the bench catalog (make
// tmp/bench-catalog/.done), the schema already discovered.
func BenchmarkGraphQL(b *testing.B) {
	dir := os.Getenv("CATALOGD_BENCH_CATALOG")
	if dir == "" {
		dir = "../../tmp/bench-catalog"
	}
	if _, err := os.Stat(dir); err != nil {
		b.Skipf("no bench catalog at %s (make tmp/bench-catalog/.done): %v", dir, err)
	}
	st, err := store.New(b.TempDir(), logr.Discard())
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	if _, _, _, err := st.Update(context.Background(), "bench", index.Content{FS: os.DirFS(dir), Ref: dir, Digest: "sha256:bench"}); err != nil {
		b.Fatal(err)
	}
	snap, err := st.Acquire("bench")
	if err != nil {
		b.Fatal(err)
	}
	defer snap.Release()
	svc := graphqlapi.New(logr.Discard(), graphqlapi.DefaultLimits)
	idx := graphqlapi.Index{Catalog: "bench", Path: snap.Info.Path, Reader: snap.Catalog}
	if r := svc.Execute(context.Background(), idx, graphqlapi.Request{Query: benchQueries[0]}); len(r.Errors) > 0 {
		b.Fatal(r.Errors)
	}
	for _, q := range benchQueries {
		b.Run(q[:20], func(b *testing.B) {
			for b.Loop() {
				if r := svc.Execute(context.Background(), idx, graphqlapi.Request{Query: q}); len(r.Errors) > 0 {
					b.Fatal(r.Errors)
				}
			}
		})
	}
}
