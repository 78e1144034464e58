package prebuilt_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/jmoiron/sqlx"

	"github.com/catalogd/catalogd/internal/catalogdir"
	"github.com/catalogd/catalogd/internal/index"
	"github.com/catalogd/catalogd/internal/prebuilt"
	"github.com/catalogd/catalogd/internal/unpack"
	"github.com/catalogd/catalogd/migrations"
	"github.com/catalogd/catalogd/test/registrytest"
)

const demoDir = "../../test/testdata/demo"

// builtAt is the fixed build time of every index the tests publish, as
// catalogd index publish fixes it.
var builtAt = time.Unix(0, 0).UTC()

// env is a loopback registry holding the demo catalog, and a client of it.
type env struct {
	reg      *registrytest.Registry
	unpacker *unpack.Unpacker
	client   *prebuilt.Client
	// ref is the catalog, repository@digest.
	ref string
}

func newEnv(t *testing.T, referrers bool, opts prebuilt.Options) *env {
	t.Helper()
	var regOpts []registrytest.Option
	if referrers {
		regOpts = append(regOpts, registrytest.WithReferrers())
	}
	reg := registrytest.New(t, regOpts...)
	u, err := unpack.New(unpack.Options{InsecureRegistries: []string{reg.Host}})
	if err != nil {
		t.Fatal(err)
	}
	ref := reg.PushCatalog(t, "catalogs/demo:v1", demoDir, registrytest.PushOptions{})
	return &env{reg: reg, unpacker: u, client: prebuilt.New(u, opts), ref: ref}
}

// digest is the catalog's digest.
func (e *env) digest() string { _, d, _ := strings.Cut(e.ref, "@"); return d }

// build indexes the demo catalog as the content of e.ref (or of digest,
// when given) into a new directory, and returns the database's path.
func (e *env) build(t *testing.T, digest string) string {
	t.Helper()
	src, err := catalogdir.Read(context.Background(), demoDir, nil)
	if err != nil {
		t.Fatal(err)
	}
	ref := e.ref
	if digest != "" {
		ref = strings.SplitN(e.ref, "@", 2)[0] + "@" + digest
	}
	src.Ref, src.Digest, src.ReadDigest = ref, digestOf(ref), nil
	path := filepath.Join(t.TempDir(), "index.db")
	if _, err := index.Build(context.Background(), path, src, builtAt); err != nil {
		t.Fatal(err)
	}
	return path
}

func digestOf(ref string) string { _, d, _ := strings.Cut(ref, "@"); return d }

// publish builds and publishes the demo catalog's index, edit changing
// its files first when given.
func (e *env) publish(t *testing.T, edit func(t *testing.T, path string)) prebuilt.Published {
	t.Helper()
	path := e.build(t, "")
	if edit != nil {
		edit(t, path)
	}
	p, err := e.client.Publish(context.Background(), e.ref, path)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// take downloads the catalog's prebuilt index and adopts it, as
// store.Adopt does.
func (e *env) take(t *testing.T) (index.Info, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "taken.db")
	sums, err := e.client.Download(context.Background(), e.ref, path)
	if err != nil {
		return index.Info{}, err
	}
	return index.Adopt(context.Background(), path, e.ref, time.Now(), sums)
}

// TestPublishAndTake: an index published to a registry with the
// referrers API, or to one without (the fallback tag), is found by the
// catalog's digest, downloaded file for file as built, and adopted as
// prebuilt; it names the catalog's repository as its source.
func TestPublishAndTake(t *testing.T) {
	for _, referrers := range []bool{true, false} {
		t.Run(map[bool]string{true: "referrers API", false: "fallback tag"}[referrers], func(t *testing.T) {
			e := newEnv(t, referrers, prebuilt.Options{Version: "v-test"})
			built := e.build(t, "")
			p, err := e.client.Publish(context.Background(), e.ref, built)
			if err != nil {
				t.Fatal(err)
			}
			checkStorage(t, built, manifestOf(t, p.Ref))
			e.reg.Reset()
			path := filepath.Join(t.TempDir(), "taken.db")
			sums, err := e.client.Download(context.Background(), e.ref, path)
			if err != nil {
				t.Fatal(err)
			}
			// The files are the ones built, byte for byte.
			wantFiles, err := index.ContentFiles(built)
			if err != nil {
				t.Fatal(err)
			}
			sameFile(t, built, path)
			for _, f := range wantFiles {
				sameFile(t, filepath.Join(index.ContentDir(built), f), filepath.Join(index.ContentDir(path), f))
			}
			// The way it was found is the registry's.
			fallback := strings.Replace(e.digest(), ":", "-", 1)
			var askedReferrers, askedTag bool
			for _, r := range e.reg.Requests() {
				askedReferrers = askedReferrers || strings.Contains(r.Path, "/referrers/")
				askedTag = askedTag || strings.HasSuffix(r.Path, "/manifests/"+fallback)
			}
			if !askedReferrers || askedTag != !referrers {
				t.Errorf("asked the referrers API: %v, the fallback tag: %v; want true, %v", askedReferrers, askedTag, !referrers)
			}
			info, err := index.Adopt(context.Background(), path, e.ref, time.Now(), sums)
			if err != nil {
				t.Fatal(err)
			}
			if info.Build.Mode != index.ModePrebuilt || info.Digest != e.digest() || info.SourceRef != e.ref {
				t.Errorf("adopted %+v; want mode prebuilt of %s from %s", info, e.digest(), e.ref)
			}
		})
	}
}

// checkStorage checks how m stores each file of the index at built: the
// database and the content segments, which zstd makes far smaller,
// compressed, with their files' sizes recorded; the gzip copy's
// segments, deflate data already, as they are; the segment list either
// way.
func checkStorage(t *testing.T, built string, m *v1.Manifest) {
	t.Helper()
	for _, l := range m.Layers {
		title := l.Annotations["org.opencontainers.image.title"]
		file := built
		if title != "index.db" {
			file = filepath.Join(index.ContentDir(built), strings.TrimPrefix(title, "content/"))
		}
		fi, err := os.Stat(file)
		if err != nil {
			t.Fatal(err)
		}
		compressed := strings.HasSuffix(string(l.MediaType), prebuilt.ZstdSuffix)
		wantCompressed := title == "index.db" || strings.HasSuffix(title, ".all")
		switch {
		case compressed != wantCompressed && title != "content/segments.json":
			t.Errorf("layer %s has media type %s; want it compressed: %v", title, l.MediaType, wantCompressed)
		case compressed && l.Annotations[prebuilt.AnnotationSize] != fmt.Sprint(fi.Size()):
			t.Errorf("layer %s records size %q; its file has %d bytes", title, l.Annotations[prebuilt.AnnotationSize], fi.Size())
		case compressed && l.Size > fi.Size()-fi.Size()/8:
			t.Errorf("layer %s is %d bytes, its file %d: not worth compressing", title, l.Size, fi.Size())
		case !compressed && l.Size != fi.Size():
			t.Errorf("layer %s is %d bytes, its file %d", title, l.Size, fi.Size())
		}
	}
}

// manifestOf fetches the manifest at ref.
func manifestOf(t *testing.T, ref string) *v1.Manifest {
	t.Helper()
	desc, err := remote.Get(mustDigest(t, ref))
	if err != nil {
		t.Fatal(err)
	}
	var m v1.Manifest
	if err := json.Unmarshal(desc.Manifest, &m); err != nil {
		t.Fatal(err)
	}
	return &m
}

func sameFile(t *testing.T, want, got string) {
	t.Helper()
	a, err := os.ReadFile(want)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(got)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Errorf("%s differs from %s as built", filepath.Base(got), filepath.Base(want))
	}
}

// TestPublishAgainPushesNothing: two builds of the same catalog make the
// same artifact, and publishing it again uploads no blob, so nothing in
// the registry changes.
func TestPublishAgainPushesNothing(t *testing.T) {
	for _, referrers := range []bool{true, false} {
		e := newEnv(t, referrers, prebuilt.Options{Version: "v-test"})
		first := e.publish(t, nil)
		e.reg.Reset()
		again := e.publish(t, nil)
		if again.Ref != first.Ref {
			t.Errorf("referrers %v: published %s, then %s: the artifact is not deterministic", referrers, first.Ref, again.Ref)
		}
		if c := e.reg.Counts(); c.Uploads != 0 {
			t.Errorf("referrers %v: publishing again made %d upload requests; want none", referrers, c.Uploads)
		}
		got, ok, err := e.client.Published(context.Background(), e.ref)
		if err != nil || !ok || got != first.Ref {
			t.Errorf("referrers %v: Published = %s, %v, %v; want %s", referrers, got, ok, err, first.Ref)
		}
	}
}

// TestRefused: an artifact whose files or manifest were changed after
// the index was built is refused, saying which check failed.
func TestRefused(t *testing.T) {
	otherDigest := "sha256:" + strings.Repeat("ab", 32)
	for _, tc := range []struct {
		name string
		// files changes the index's files before they are published;
		// manifest changes the published manifest.
		files    func(t *testing.T, path string)
		manifest func(m *v1.Manifest)
		// blob pushes a blob and changes the manifest to hold it.
		blob func(t *testing.T, e *env, m *v1.Manifest)
		// build, when set, indexes the catalog as if it were this digest.
		build      string
		wantReason string
		wantErr    string
	}{
		{name: "database bytes", files: func(t *testing.T, path string) { overwrite(t, path, 2*8192, bytes.Repeat([]byte{0xa5}, 16)) },
			wantReason: "refused", wantErr: "index refused"},
		{name: "content bytes", files: func(t *testing.T, path string) { overwrite(t, segment(t, path, ".all"), 10, []byte("XX")) },
			wantReason: "refused", wantErr: "CRC-32"},
		{name: "gzip segment cut short", files: func(t *testing.T, path string) {
			f := segment(t, path, ".gz")
			if err := os.Truncate(f, 5); err != nil {
				t.Fatal(err)
			}
		}, wantReason: "refused", wantErr: "its list says"},
		{name: "index of other content", build: otherDigest, wantReason: "refused", wantErr: "records content " + otherDigest},
		{name: "database of an older schema", files: func(t *testing.T, path string) {
			sqlExec(t, path, `UPDATE catalog_info SET schema_digest = 'sha256:older'`)
		}, wantReason: "other-schema", wantErr: "another schema"},
		{name: "missing index", files: func(t *testing.T, path string) {
			sqlExec(t, path, `DROP INDEX `+anIndex(t, path))
		}, wantReason: "refused", wantErr: "the database has no index"},
		{name: "schema annotation", manifest: func(m *v1.Manifest) { m.Annotations[prebuilt.AnnotationSchema] = "sha256:older" },
			wantReason: "other-schema", wantErr: "sha256:older"},
		{name: "catalog annotation", manifest: func(m *v1.Manifest) { m.Annotations[prebuilt.AnnotationCatalog] = otherDigest },
			wantReason: "refused", wantErr: "not the catalog"},
		{name: "layer outside the content directory", manifest: func(m *v1.Manifest) {
			m.Layers[len(m.Layers)-1].Annotations["org.opencontainers.image.title"] = "content/../../x"
		}, wantReason: "refused", wantErr: "content/../../x"},
		{name: "subject", manifest: func(m *v1.Manifest) { m.Subject.Digest = v1.Hash{Algorithm: "sha256", Hex: strings.Repeat("ab", 32)} },
			wantReason: "refused", wantErr: "its subject is not the catalog"},
		{name: "oversized layer", manifest: func(m *v1.Manifest) { m.Layers[0].Size = 1 << 40 },
			wantReason: "refused", wantErr: "download limit"},
		{name: "compressed layer larger than its recorded size", manifest: func(m *v1.Manifest) {
			l := compressedLayer(m, ".all")
			l.Annotations[prebuilt.AnnotationSize] = fmt.Sprint(recordedSize(l) - 1)
		}, wantReason: "refused", wantErr: "comes to more than"},
		{name: "compressed layer smaller than its recorded size", manifest: func(m *v1.Manifest) {
			l := compressedLayer(m, ".all")
			l.Annotations[prebuilt.AnnotationSize] = fmt.Sprint(recordedSize(l) + 1)
		}, wantReason: "refused", wantErr: "not the"},
		{name: "recorded sizes beyond --max-catalog-bytes", manifest: func(m *v1.Manifest) {
			compressedLayer(m, ".all").Annotations[prebuilt.AnnotationSize] = fmt.Sprint(int64(1 << 40))
		}, wantReason: "refused", wantErr: "twice --max-catalog-bytes"},
		{name: "compressed layer without its size", manifest: func(m *v1.Manifest) {
			delete(compressedLayer(m, "index.db").Annotations, prebuilt.AnnotationSize)
		}, wantReason: "refused", wantErr: "not the size of its file"},
		{name: "compressed layer not zstd", blob: func(t *testing.T, e *env, m *v1.Manifest) {
			// Its own bytes, stored as if compressed: the database, whose
			// digest the registry holds.
			l := compressedLayer(m, "index.db")
			plain := []byte("SQLite format 3\x00 not zstd data")
			replaceBlob(t, e, l, plain)
			l.Annotations[prebuilt.AnnotationSize] = fmt.Sprint(len(plain))
		}, wantReason: "refused", wantErr: "decompress"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Without the referrers API, so that the fallback tag can
			// list an artifact whose subject is another.
			e := newEnv(t, false, prebuilt.Options{})
			path := e.build(t, tc.build)
			if tc.files != nil {
				tc.files(t, path)
			}
			p, err := e.client.Publish(context.Background(), e.ref, path)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case tc.manifest != nil:
				replaceManifest(t, e, p.Ref, tc.manifest)
			case tc.blob != nil:
				replaceManifest(t, e, p.Ref, func(m *v1.Manifest) { tc.blob(t, e, m) })
			}
			_, err = e.take(t)
			if err == nil {
				t.Fatal("the changed index was taken")
			}
			t.Logf("refused: %v", err)
			if got := prebuilt.Reason(err); got != tc.wantReason || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error %q (reason %s); want reason %s and %q in it", err, got, tc.wantReason, tc.wantErr)
			}
		})
	}
}

// TestTamperedInTransit: a compressed layer whose bytes are not the
// ones its digest names, as the registry serves them, is not taken,
// whether its bytes still decompress or not.
func TestTamperedInTransit(t *testing.T) {
	for _, tc := range []struct {
		name   string
		tamper func(b []byte) []byte
	}{
		{"a byte flipped", func(b []byte) []byte { b[len(b)/2] ^= 0x40; return b }},
		{"cut short", func(b []byte) []byte { return b[:len(b)-1] }},
		{"a byte more", func(b []byte) []byte { return append(b, 0) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, true, prebuilt.Options{})
			p := e.publish(t, nil)
			l := compressedLayer(manifestOf(t, p.Ref), ".all")
			blob := fetchBlob(t, e, l.Digest)
			tampered := tc.tamper(bytes.Clone(blob))
			e.reg.Intercept(func(w http.ResponseWriter, req *http.Request) bool {
				if req.Method != http.MethodGet || !strings.HasSuffix(req.URL.Path, "/blobs/"+l.Digest.String()) {
					return false
				}
				w.Write(tampered)
				return true
			})
			_, err := e.take(t)
			if err == nil {
				t.Fatal("the tampered layer was taken")
			}
			t.Logf("refused: %v", err)
			if got := prebuilt.Reason(err); got != "refused" && got != "failed" {
				t.Errorf("reason %s; want refused or failed", got)
			}
		})
	}
}

// TestDownloadPingsOnce: taking an index reaches the registry's API base
// (GET /v2/, the ping that finds its scheme and authentication) once to
// list the referrers and once for the download, however many layers the
// artifact has, and fetches each layer once.
func TestDownloadPingsOnce(t *testing.T) {
	e := newEnv(t, true, prebuilt.Options{})
	p := e.publish(t, nil)
	layers := manifestOf(t, p.Ref).Layers
	if len(layers) < 3 {
		t.Fatalf("the artifact has %d layers; the test needs more than the pings it allows", len(layers))
	}
	e.reg.Reset()
	if _, err := e.take(t); err != nil {
		t.Fatal(err)
	}
	pings, fetched := 0, map[string]int{}
	for _, r := range e.reg.Requests() {
		switch {
		case r.Path == "/v2/":
			pings++
		case r.Method == http.MethodGet && strings.Contains(r.Path, "/blobs/"):
			fetched[registrytest.BlobDigest(r.Path)]++
		}
	}
	if pings != 2 {
		t.Errorf("%d pings for %d layers; want 2 (the referrers query, the download)", pings, len(layers))
	}
	for _, l := range layers {
		if n := fetched[l.Digest.String()]; n != 1 {
			t.Errorf("layer %s fetched %d times; want once", l.Annotations["org.opencontainers.image.title"], n)
		}
	}
}

// TestOtherFormatIgnored: an artifact of another format (artifact type)
// than this binary's is not downloaded, as if none were published: a
// reader never reads a format it does not know, and builds.
func TestOtherFormatIgnored(t *testing.T) {
	const v1Type = "application/vnd.catalogd.index.v1+json"
	e := newEnv(t, false, prebuilt.Options{})
	p := e.publish(t, nil)
	replaceManifest(t, e, p.Ref, func(m *v1.Manifest) {
		m.ArtifactType, m.Config.MediaType = v1Type, v1Type
	})
	e.reg.Reset()
	_, err := e.take(t)
	if got := prebuilt.Reason(err); got != "absent" {
		t.Errorf("with only a %s artifact: %v (reason %s); want absent", v1Type, err, got)
	}
	for _, r := range e.reg.Requests() {
		if strings.Contains(r.Path, "/blobs/") {
			t.Errorf("downloaded %s of the other format's artifact", r.Path)
		}
	}
}

// TestSchemasSideBySide: an index another schema published is ignored,
// does not stop this one from publishing, and both are found by their
// own readers.
func TestSchemasSideBySide(t *testing.T) {
	e := newEnv(t, false, prebuilt.Options{})
	older := e.publish(t, nil)
	replaceManifest(t, e, older.Ref, func(m *v1.Manifest) { m.Annotations[prebuilt.AnnotationSchema] = "sha256:older" })
	if _, err := e.take(t); !errors.Is(err, prebuilt.ErrOtherSchema) {
		t.Fatalf("with only another schema's index: %v; want ErrOtherSchema", err)
	}
	if _, ok, err := e.client.Published(context.Background(), e.ref); err != nil || ok {
		t.Fatalf("Published = %v, %v; want false: another schema's index is not this one's", ok, err)
	}
	e.publish(t, nil)
	if _, err := e.take(t); err != nil {
		t.Fatalf("beside another schema's index: %v", err)
	}
	idx, err := remote.Referrers(mustDigest(t, e.ref), remote.WithTransport(http.DefaultTransport))
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	schemas := map[string]bool{}
	for _, m := range im.Manifests {
		schemas[m.Annotations[prebuilt.AnnotationSchema]] = true
	}
	if !schemas["sha256:older"] || !schemas[migrations.Digest()] {
		t.Errorf("referrers hold schemas %v; want both", schemas)
	}
}

// TestNotPublished and TestQueryTimeout: a catalog without an index, and
// a registry that never answers the referrers query, leave the caller to
// build, saying why.
func TestNotPublished(t *testing.T) {
	for _, referrers := range []bool{true, false} {
		e := newEnv(t, referrers, prebuilt.Options{})
		_, err := e.take(t)
		if got := prebuilt.Reason(err); got != "absent" {
			t.Errorf("referrers %v: %v (reason %s); want absent", referrers, err, got)
		}
	}
}

func TestQueryTimeout(t *testing.T) {
	for _, referrers := range []bool{true, false} {
		e := newEnv(t, referrers, prebuilt.Options{QueryTimeout: 200 * time.Millisecond})
		e.publish(t, nil)
		fallback := strings.Replace(e.digest(), ":", "-", 1)
		e.reg.Intercept(func(_ http.ResponseWriter, req *http.Request) bool {
			if !strings.Contains(req.URL.Path, "/referrers/") && !strings.HasSuffix(req.URL.Path, "/manifests/"+fallback) {
				return false
			}
			<-req.Context().Done()
			return true
		})
		_, err := e.take(t)
		if got := prebuilt.Reason(err); got != "unreachable" || !strings.Contains(err.Error(), "no answer within 200ms") {
			t.Errorf("referrers %v: %v (reason %s); want unreachable, no answer within 200ms", referrers, err, got)
		}
	}
}

// replaceManifest pushes the artifact at ref with its manifest changed
// by edit, and deletes the original, so that the changed one is the
// catalog's referrer: on a registry with the referrers API, when its
// subject is still the catalog; on one without, in any case, as the
// fallback tag lists it.
func replaceManifest(t *testing.T, e *env, ref string, edit func(*v1.Manifest)) {
	t.Helper()
	d := mustDigest(t, ref)
	desc, err := remote.Get(d)
	if err != nil {
		t.Fatal(err)
	}
	var m v1.Manifest
	if err := json.Unmarshal(desc.Manifest, &m); err != nil {
		t.Fatal(err)
	}
	edit(&m)
	raw, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	h, size, err := v1.SHA256(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Put(d.Context().Digest(h.String()), rawManifest(raw)); err != nil {
		t.Fatal(err)
	}
	if err := remote.Delete(d); err != nil {
		t.Fatal(err)
	}
	tag := d.Context().Tag(strings.Replace(e.digest(), ":", "-", 1))
	if _, err := remote.Head(tag); err != nil {
		return // the registry has the referrers API: no fallback tag
	}
	im := v1.IndexManifest{SchemaVersion: 2, MediaType: types.OCIImageIndex, Manifests: []v1.Descriptor{{
		MediaType: types.OCIManifestSchema1, Digest: h, Size: size, ArtifactType: m.ArtifactType, Annotations: m.Annotations}}}
	if raw, err = json.Marshal(im); err != nil {
		t.Fatal(err)
	}
	if err := remote.Put(tag, rawIndex(raw)); err != nil {
		t.Fatal(err)
	}
}

type rawManifest []byte

func (r rawManifest) RawManifest() ([]byte, error)        { return r, nil }
func (r rawManifest) MediaType() (types.MediaType, error) { return types.OCIManifestSchema1, nil }

type rawIndex []byte

func (r rawIndex) RawManifest() ([]byte, error)        { return r, nil }
func (r rawIndex) MediaType() (types.MediaType, error) { return types.OCIImageIndex, nil }

func mustDigest(t *testing.T, ref string) name.Digest {
	t.Helper()
	d, err := name.NewDigest(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func overwrite(t *testing.T, path string, off int64, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

// segment is the first segment file of the index at path whose name ends
// in ext.
func segment(t *testing.T, path, ext string) string {
	t.Helper()
	names, err := index.ContentFiles(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if strings.HasSuffix(n, ext) {
			return filepath.Join(index.ContentDir(path), n)
		}
	}
	t.Fatalf("no %s segment", ext)
	return ""
}

func openDB(t *testing.T, path string) *sqlx.DB {
	t.Helper()
	db, err := sqlx.Open("sqlite", index.FileURI(path, nil))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func sqlExec(t *testing.T, path, stmt string) {
	t.Helper()
	db := openDB(t, path)
	if _, err := db.Exec(stmt); err != nil {
		t.Fatal(err)
	}
	db.Close()
}

// anIndex names one of the secondary indexes of the database at path.
func anIndex(t *testing.T, path string) string {
	t.Helper()
	var n string
	if err := openDB(t, path).Get(&n, `SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL ORDER BY name LIMIT 1`); err != nil {
		t.Fatal(err)
	}
	return n
}

// compressedLayer is the first compressed layer of m whose title ends in
// suffix.
func compressedLayer(m *v1.Manifest, suffix string) *v1.Descriptor {
	for i, l := range m.Layers {
		if strings.HasSuffix(string(l.MediaType), prebuilt.ZstdSuffix) && strings.HasSuffix(l.Annotations["org.opencontainers.image.title"], suffix) {
			return &m.Layers[i]
		}
	}
	panic("no compressed layer ends in " + suffix)
}

// recordedSize is the size l records for its file.
func recordedSize(l *v1.Descriptor) int64 {
	n, err := strconv.ParseInt(l.Annotations[prebuilt.AnnotationSize], 10, 64)
	if err != nil {
		panic(err)
	}
	return n
}

// replaceBlob pushes data to the catalog's repository and makes l name it.
func replaceBlob(t *testing.T, e *env, l *v1.Descriptor, data []byte) {
	t.Helper()
	layer := static.NewLayer(data, l.MediaType)
	if err := remote.WriteLayer(mustDigest(t, e.ref).Context(), layer); err != nil {
		t.Fatal(err)
	}
	h, err := layer.Digest()
	if err != nil {
		t.Fatal(err)
	}
	l.Digest, l.Size = h, int64(len(data))
}

// fetchBlob is the blob of the catalog's repository at d.
func fetchBlob(t *testing.T, e *env, d v1.Hash) []byte {
	t.Helper()
	l, err := remote.Layer(mustDigest(t, e.ref).Context().Digest(d.String()))
	if err != nil {
		t.Fatal(err)
	}
	return registrytest.LayerBytes(t, l)
}
