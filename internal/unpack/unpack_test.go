package unpack_test

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/catalogd/catalogd/internal/catalogdir"
	"github.com/catalogd/catalogd/internal/unpack"
	"github.com/catalogd/catalogd/test/registrytest"
)

const demoDir = "../../test/testdata/demo"

// dirMark stands for a directory in a tree map; symbolic links appear as
// "-> target" and regular files as their content.
const dirMark = "<dir>"

// tree reads the directory at root into a map from slash-separated relative
// path to content, so two trees compare with maps.Equal.
func tree(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil || rel == "." {
			return err
		}
		rel = filepath.ToSlash(rel)
		switch {
		case d.IsDir():
			out[rel] = dirMark
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			out[rel] = "-> " + target
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out[rel] = string(b)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("reading tree %s: %v", root, err)
	}
	return out
}

func diffTrees(t *testing.T, got, want map[string]string) {
	t.Helper()
	for k, w := range want {
		g, ok := got[k]
		switch {
		case !ok:
			t.Errorf("missing %s", k)
		case g != w:
			t.Errorf("%s = %.60q, want %.60q", k, g, w)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("unexpected %s", k)
		}
	}
}

// tinyFBC is a small catalog written by the test, for cases that edit it
// layer by layer.
var tinyFBC = map[string]string{
	"pkg-a":              dirMark,
	"pkg-a/catalog.json": `{"schema":"olm.package","name":"pkg-a"}`,
	"pkg-b":              dirMark,
	"pkg-b/catalog.json": `{"schema":"olm.package","name":"pkg-b"}`,
	"pkg-b/extra.yaml":   "schema: olm.package\nname: pkg-b-extra\n",
}

func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for rel, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if content == dirMark {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// edit returns a copy of base with changes applied; an empty value deletes
// the key and everything below it.
func edit(base map[string]string, changes map[string]string) map[string]string {
	out := maps.Clone(base)
	for k, v := range changes {
		if v != "" {
			out[k] = v
			continue
		}
		for p := range out {
			if p == k || strings.HasPrefix(p, k+"/") {
				delete(out, p)
			}
		}
	}
	return out
}

func newUnpacker(t *testing.T, opts unpack.Options) *unpack.Unpacker {
	t.Helper()
	u, err := unpack.New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return u
}

func TestResolve(t *testing.T) {
	reg := registrytest.New(t)
	single := registrytest.PushCatalog(t, reg.Host, "catalogs/demo:v1", demoDir, registrytest.PushOptions{})
	index := registrytest.PushCatalog(t, reg.Host, "catalogs/multi:v1", demoDir, registrytest.PushOptions{
		Platforms: []v1.Platform{{OS: "linux", Architecture: "arm64"}, {OS: "linux", Architecture: "amd64"}},
	})
	u := newUnpacker(t, unpack.Options{InsecureRegistries: []string{reg.Host}})

	tests := []struct {
		name          string
		ref           string
		want          string
		manifestHeads int
	}{
		{name: "tag resolves to the pushed image digest", ref: reg.Host + "/catalogs/demo:v1", want: single, manifestHeads: 1},
		{name: "tag of an index resolves to the index digest", ref: reg.Host + "/catalogs/multi:v1", want: index, manifestHeads: 1},
		{name: "digest reference is returned without a request", ref: single, want: single},
		{name: "tag and digest keeps the digest", ref: strings.Replace(single, "@", ":ignored@", 1), want: single},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg.Reset()
			got, err := u.Resolve(t.Context(), tt.ref)
			if err != nil {
				t.Fatalf("Resolve(%s): %v", tt.ref, err)
			}
			if got != tt.want {
				t.Errorf("Resolve(%s) = %s, want %s", tt.ref, got, tt.want)
			}
			c := reg.Counts()
			if c.ManifestHeads != tt.manifestHeads || c.ManifestGets != 0 || c.BlobGets != 0 || c.BlobHeads != 0 {
				t.Errorf("requests = %+v, want %d manifest HEADs and nothing else but pings", c, tt.manifestHeads)
			}
		})
	}
}

// A registry that mishandles HEAD must still resolve, through GET.
func TestResolveFallsBackToGet(t *testing.T) {
	reg := registrytest.New(t)
	want := registrytest.PushCatalog(t, reg.Host, "catalogs/demo:v1", demoDir, registrytest.PushOptions{})
	reg.Intercept(func(w http.ResponseWriter, r *http.Request) bool {
		if r.Method == http.MethodHead && strings.Contains(r.URL.Path, "/manifests/") {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return true
		}
		return false
	})
	reg.Reset()
	u := newUnpacker(t, unpack.Options{InsecureRegistries: []string{reg.Host}})
	got, err := u.Resolve(t.Context(), reg.Host+"/catalogs/demo:v1")
	if err != nil {
		t.Fatalf("Resolve: %v", err)
	}
	if got != want {
		t.Errorf("Resolve = %s, want %s", got, want)
	}
	if c := reg.Counts(); c.ManifestGets != 1 || c.BlobGets != 0 {
		t.Errorf("requests = %+v, want one manifest GET and no blob", c)
	}
}

func TestResolveErrors(t *testing.T) {
	reg := registrytest.New(t)
	registrytest.PushCatalog(t, reg.Host, "catalogs/demo:v1", demoDir, registrytest.PushOptions{})
	u := newUnpacker(t, unpack.Options{InsecureRegistries: []string{reg.Host}})

	// A port nobody listens on: opened, then closed again.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()

	tests := []struct {
		name     string
		ref      string
		terminal bool
		// wantMsg is what the error must say first, after the reference.
		wantMsg string
	}{
		{name: "malformed reference", ref: "Not A Reference", terminal: true},
		{name: "unknown tag", ref: reg.Host + "/catalogs/demo:v2"},
		{name: "unknown repository", ref: reg.Host + "/catalogs/nope:v1"},
		{name: "connection refused", ref: closed + "/catalogs/demo:v1",
			wantMsg: "resolving " + closed + "/catalogs/demo:v1: registry " + closed + " refused the connection"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := u.Resolve(t.Context(), tt.ref)
			if err == nil {
				t.Fatalf("Resolve(%s) succeeded", tt.ref)
			}
			if got := unpack.IsTerminal(err); got != tt.terminal {
				t.Errorf("IsTerminal(%v) = %v, want %v", err, got, tt.terminal)
			}
			if !strings.HasPrefix(err.Error(), tt.wantMsg) {
				t.Errorf("error %q does not start with %q", err, tt.wantMsg)
			}
		})
	}
}

// unpackCase describes one image and what unpacking it must give.
type unpackCase struct {
	name string
	// fbc is the FBC directory pushed under the configs dir.
	fbc  string
	push registrytest.PushOptions
	opts unpack.Options
	// want is the expected destination tree when the unpack succeeds.
	want map[string]string
	// The rest describe an expected failure.
	wantIs     error
	wantUnsafe string
	wantLimit  string
}

func runUnpackCases(t *testing.T, tests []unpackCase) {
	t.Helper()
	reg := registrytest.New(t)
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ref := registrytest.PushCatalog(t, reg.Host, fmt.Sprintf("catalogs/case:c%d", i), tt.fbc, tt.push)
			opts := tt.opts
			opts.InsecureRegistries = []string{reg.Host}
			u := newUnpacker(t, opts)
			dst := filepath.Join(t.TempDir(), "nested", "dst")

			res, err := u.Unpack(t.Context(), ref, dst)

			if tt.want != nil {
				if err != nil {
					t.Fatalf("Unpack: %v", err)
				}
				got := tree(t, dst)
				diffTrees(t, got, tt.want)
				checkFileHashes(t, dst, res)
				var files, size int64
				for _, v := range tt.want {
					if v != dirMark && !strings.HasPrefix(v, "-> ") {
						files++
						size += int64(len(v))
					}
				}
				if res.Files != files || res.Bytes != size {
					t.Errorf("Result files=%d bytes=%d, want %d and %d", res.Files, res.Bytes, files, size)
				}
				if !strings.HasSuffix(ref, "@"+res.Digest) || res.Ref != ref {
					t.Errorf("Result ref=%s digest=%s, want %s", res.Ref, res.Digest, ref)
				}
				return
			}

			if err == nil {
				t.Fatalf("Unpack succeeded with tree %v", tree(t, dst))
			}
			t.Logf("Unpack error: %v", err)
			assertNoDst(t, dst)
			if !unpack.IsTerminal(err) {
				t.Errorf("IsTerminal(%v) = false, want true", err)
			}
			if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
				t.Errorf("error %v, want %v", err, tt.wantIs)
			}
			if tt.wantUnsafe != "" {
				var ue *unpack.UnsafeEntryError
				if !errors.As(err, &ue) {
					t.Fatalf("error %v, want an UnsafeEntryError", err)
				}
				if ue.Entry != tt.wantUnsafe {
					t.Errorf("unsafe entry %q, want %q (%v)", ue.Entry, tt.wantUnsafe, err)
				}
				if !strings.Contains(err.Error(), tt.wantUnsafe) {
					t.Errorf("error %q does not name %q", err, tt.wantUnsafe)
				}
			}
			if tt.wantLimit != "" {
				var le *unpack.LimitError
				if !errors.As(err, &le) || le.Limit != tt.wantLimit {
					t.Errorf("error %v, want a LimitError for %s", err, tt.wantLimit)
				}
			}
		})
	}
}

// checkFileHashes checks that res.FileHash gives, for every file the index
// sees in dst (catalogdir.FS, which shows a link to a file as that file),
// the SHA-256 of what reading it gives, and nothing for any other path.
func checkFileHashes(t *testing.T, dst string, res unpack.Result) {
	t.Helper()
	fsys := catalogdir.FS(dst)
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		got, ok := res.FileHash(p)
		if d.IsDir() {
			if ok {
				t.Errorf("FileHash(%q) = %x for a directory; want none", p, got)
			}
			return nil
		}
		data, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		if want := sha256.Sum256(data); !ok || got != want {
			t.Errorf("FileHash(%q) = %x, %v; want %x, the hash of its content", p, got, ok, want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// What FS does not show (dangling links, links to directories) has
	// no hash either.
	err = filepath.WalkDir(dst, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.Type()&fs.ModeSymlink == 0 {
			return err
		}
		rel, err := filepath.Rel(dst, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if _, err := fs.Stat(fsys, rel); err != nil {
			if sum, ok := res.FileHash(rel); ok {
				t.Errorf("FileHash(%q) = %x for a link the index does not read; want none", rel, sum)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestUnpack(t *testing.T) {
	demo := tree(t, demoDir)
	tiny := writeTree(t, tinyFBC)
	a, b := tinyFBC["pkg-a/catalog.json"], tinyFBC["pkg-b/catalog.json"]

	runUnpackCases(t, []unpackCase{
		{
			name: "demo catalog at /configs is reproduced exactly",
			fbc:  demoDir,
			want: demo,
		},
		{
			name: "nested configs dir, files outside it are not extracted",
			fbc:  demoDir,
			push: registrytest.PushOptions{
				ConfigsDir: "/var/lib/catalog/configs",
				Extra: []registrytest.Entry{
					registrytest.File("var/lib/catalog/other.json", "{}"),
					registrytest.File("var/lib/catalog/configs-sibling/catalog.json", "{}"),
					registrytest.File("etc/passwd", "root:x:0:0"),
					registrytest.File("configs/catalog.json", "{}"),
				},
			},
			want: demo,
		},
		{
			name: "label path in another form still finds the directory",
			fbc:  tiny,
			push: registrytest.PushOptions{ConfigsDir: "/srv/configs", Label: "srv/./configs/"},
			want: tinyFBC,
		},
		{
			name: "entries with a ./ prefix",
			push: registrytest.PushOptions{Extra: []registrytest.Entry{
				registrytest.Dir("./configs/pkg-a"),
				registrytest.File("./configs/pkg-a/catalog.json", a),
			}},
			want: map[string]string{"pkg-a": dirMark, "pkg-a/catalog.json": a},
		},
		{
			name: "whiteout in layer 2 removes a file from layer 1",
			fbc:  tiny,
			push: registrytest.PushOptions{Layers: [][]registrytest.Entry{
				{registrytest.Whiteout("configs/pkg-b/extra.yaml")},
			}},
			want: edit(tinyFBC, map[string]string{"pkg-b/extra.yaml": ""}),
		},
		{
			name: "whiteout of a directory removes it with its children",
			fbc:  tiny,
			push: registrytest.PushOptions{Layers: [][]registrytest.Entry{
				{registrytest.Whiteout("configs/pkg-b")},
			}},
			want: edit(tinyFBC, map[string]string{"pkg-b": ""}),
		},
		{
			// The directory last written into is kept open: a whiteout that
			// removes it, then a file written at its path, must land in
			// the new directory, not in the removed one.
			name: "directory removed and made again right after a file was written in it",
			fbc:  tiny,
			push: registrytest.PushOptions{Layers: [][]registrytest.Entry{
				{registrytest.File("configs/pkg-d/a.json", "a")},
				{registrytest.Whiteout("configs/pkg-d"), registrytest.File("configs/pkg-d/b.json", "b")},
			}},
			want: edit(tinyFBC, map[string]string{"pkg-d": dirMark, "pkg-d/b.json": "b"}),
		},
		{
			name: "whiteout in layer 3 of a file layer 2 added",
			fbc:  tiny,
			push: registrytest.PushOptions{Layers: [][]registrytest.Entry{
				{registrytest.File("configs/pkg-c/catalog.json", "c")},
				{registrytest.Whiteout("configs/pkg-c/catalog.json")},
			}},
			want: edit(tinyFBC, map[string]string{"pkg-c": dirMark}),
		},
		{
			name: "file written before its whiteout in the same layer survives",
			fbc:  tiny,
			push: registrytest.PushOptions{Layers: [][]registrytest.Entry{
				{registrytest.File("configs/pkg-a/catalog.json", "new a"), registrytest.Whiteout("configs/pkg-a/catalog.json")},
			}},
			want: edit(tinyFBC, map[string]string{"pkg-a/catalog.json": "new a"}),
		},
		{
			name: "opaque directory hides lower content and keeps its own",
			fbc:  tiny,
			push: registrytest.PushOptions{Layers: [][]registrytest.Entry{
				{registrytest.Dir("configs/pkg-b"), registrytest.Opaque("configs/pkg-b"), registrytest.File("configs/pkg-b/new.json", "n")},
			}},
			want: edit(tinyFBC, map[string]string{"pkg-b/catalog.json": "", "pkg-b/extra.yaml": "", "pkg-b/new.json": "n"}),
		},
		{
			name: "opaque marker after the layer's own files keeps them",
			fbc:  tiny,
			push: registrytest.PushOptions{Layers: [][]registrytest.Entry{
				{registrytest.File("configs/pkg-b/new.json", "n"), registrytest.Opaque("configs/pkg-b")},
			}},
			want: edit(tinyFBC, map[string]string{"pkg-b/catalog.json": "", "pkg-b/extra.yaml": "", "pkg-b/new.json": "n"}),
		},
		{
			name: "opaque configs dir replaces the whole catalog",
			fbc:  tiny,
			push: registrytest.PushOptions{Layers: [][]registrytest.Entry{
				{registrytest.Opaque("configs"), registrytest.File("configs/only/catalog.json", "o")},
			}},
			want: map[string]string{"only": dirMark, "only/catalog.json": "o"},
		},
		{
			name: "whiteout of the configs dir itself empties it",
			fbc:  tiny,
			push: registrytest.PushOptions{Layers: [][]registrytest.Entry{
				{registrytest.Whiteout("configs")},
			}},
			want: map[string]string{},
		},
		{
			name: "opaque marker in an ancestor of the configs dir",
			fbc:  tiny,
			push: registrytest.PushOptions{ConfigsDir: "/opt/configs", Layers: [][]registrytest.Entry{
				{registrytest.Opaque("opt"), registrytest.File("opt/configs/pkg-a/catalog.json", a)},
			}},
			want: map[string]string{"pkg-a": dirMark, "pkg-a/catalog.json": a},
		},
		{
			name: "upper layer replaces a file and turns a directory into a file",
			fbc:  tiny,
			push: registrytest.PushOptions{Layers: [][]registrytest.Entry{
				{registrytest.File("configs/pkg-a/catalog.json", "new a"), registrytest.File("configs/pkg-b", "now a file")},
			}},
			want: map[string]string{"pkg-a": dirMark, "pkg-a/catalog.json": "new a", "pkg-b": "now a file"},
		},
		{
			name: "writing over a hard link does not change its peer",
			fbc:  tiny,
			push: registrytest.PushOptions{
				Extra: []registrytest.Entry{registrytest.Hardlink("configs/pkg-a/copy.json", "configs/pkg-a/catalog.json")},
				Layers: [][]registrytest.Entry{
					{registrytest.File("configs/pkg-a/copy.json", "changed")},
				},
			},
			want: edit(tinyFBC, map[string]string{"pkg-a/copy.json": "changed"}),
		},
		{
			name: "links inside the configs dir are kept, absolute targets made relative",
			fbc:  tiny,
			push: registrytest.PushOptions{Extra: []registrytest.Entry{
				registrytest.Symlink("configs/pkg-c", "pkg-a"),
				registrytest.Symlink("configs/pkg-b/a.json", "../pkg-a/catalog.json"),
				registrytest.Symlink("configs/pkg-b/abs.json", "/configs/pkg-a/catalog.json"),
				registrytest.Symlink("configs/pkg-b/dangling.json", "missing.json"),
				registrytest.Symlink("configs/pkg-b/round", "../../configs/pkg-a"),
				registrytest.Hardlink("configs/pkg-b/hard.json", "configs/pkg-b/catalog.json"),
				registrytest.Hardlink("configs/pkg-b/hard-abs.json", "/configs/pkg-b/catalog.json"),
			}},
			want: edit(tinyFBC, map[string]string{
				"pkg-c":               "-> pkg-a",
				"pkg-b/a.json":        "-> ../pkg-a/catalog.json",
				"pkg-b/abs.json":      "-> ../pkg-a/catalog.json",
				"pkg-b/dangling.json": "-> missing.json",
				"pkg-b/round":         "-> ../pkg-a",
				"pkg-b/hard.json":     b,
				"pkg-b/hard-abs.json": b,
			}),
		},
		{
			name: "unsafe entries outside the configs dir are ignored",
			fbc:  tiny,
			push: registrytest.PushOptions{Extra: []registrytest.Entry{
				{Name: "dev/null", Typeflag: tar.TypeChar},
				{Name: "dev/fifo", Typeflag: tar.TypeFifo},
				registrytest.Symlink("etc/escape", "../../../../etc/shadow"),
				registrytest.Hardlink("etc/hard", "etc/passwd"),
			}},
			want: tinyFBC,
		},
		{
			name: "empty configs dir",
			want: map[string]string{},
		},
	})
}

func TestUnpackRefusesContent(t *testing.T) {
	tiny := writeTree(t, tinyFBC)
	unsafe := func(name string, e ...registrytest.Entry) unpackCase {
		return unpackCase{name: name, fbc: tiny, push: registrytest.PushOptions{Extra: e}, wantUnsafe: e[len(e)-1].Name}
	}
	big := strings.Repeat("x", 4096)

	runUnpackCases(t, []unpackCase{
		{name: "missing label", fbc: tiny, push: registrytest.PushOptions{NoLabel: true}, wantIs: unpack.ErrMissingConfigsLabel},
		{name: "label names a directory the image lacks", fbc: tiny, push: registrytest.PushOptions{Label: "/elsewhere"}, wantIs: unpack.ErrConfigsDirNotFound},
		{name: "label names the image root", fbc: tiny, push: registrytest.PushOptions{Label: "/"}, wantIs: unpack.ErrInvalidConfigsLabel},
		{name: "label of dot-dot names the image root", fbc: tiny, push: registrytest.PushOptions{Label: ".."}, wantIs: unpack.ErrInvalidConfigsLabel},
		{name: "label climbing above the root names the root", fbc: tiny, push: registrytest.PushOptions{Label: "/configs/../../.."}, wantIs: unpack.ErrInvalidConfigsLabel},
		{name: "label of dot-dot then a name stays in the image", fbc: tiny, push: registrytest.PushOptions{Label: "../../elsewhere"}, wantIs: unpack.ErrConfigsDirNotFound},
		{name: "empty label", fbc: tiny, push: registrytest.PushOptions{Label: " "}, wantIs: unpack.ErrInvalidConfigsLabel},
		unsafe("absolute path", registrytest.File("/configs/evil.json", "{}")),
		unsafe("absolute path outside the configs dir", registrytest.File("/etc/evil", "x")),
		unsafe("dot-dot component", registrytest.File("configs/../etc/evil", "x")),
		unsafe("dot-dot leaving the configs dir", registrytest.File("configs/pkg-a/../../evil", "x")),
		unsafe("symlink escaping with dot-dot", registrytest.Symlink("configs/escape", "../etc/passwd")),
		unsafe("symlink escaping the image root", registrytest.Symlink("configs/escape", "../../../../etc/passwd")),
		unsafe("absolute symlink outside the configs dir", registrytest.Symlink("configs/escape", "/etc/passwd")),
		unsafe("symlink to the image root", registrytest.Symlink("configs/root", "/")),
		unsafe("hard link outside the configs dir", registrytest.Hardlink("configs/hard", "etc/passwd")),
		unsafe("hard link with dot-dot", registrytest.Hardlink("configs/hard", "configs/../etc/passwd")),
		unsafe("hard link to a missing file", registrytest.Hardlink("configs/hard", "configs/missing.json")),
		unsafe("hard link to a directory", registrytest.Hardlink("configs/hard", "configs/pkg-a")),
		unsafe("character device", registrytest.Entry{Name: "configs/null", Typeflag: tar.TypeChar}),
		unsafe("block device", registrytest.Entry{Name: "configs/sda", Typeflag: tar.TypeBlock}),
		unsafe("fifo", registrytest.Entry{Name: "configs/pipe", Typeflag: tar.TypeFifo}),
		unsafe("configs dir replaced by a symlink", registrytest.Symlink("configs", "/etc")),
		unsafe("whiteout naming no file", registrytest.Entry{Name: "configs/.wh..", Typeflag: tar.TypeReg}),
		unsafe("file under a file", registrytest.File("configs/pkg-a/catalog.json/evil", "x")),
		// Each link is inside lexically, but d/e resolves to the configs dir,
		// so d/e/l would land at the top and its "../../x" leave. Nothing is
		// written through a link, so it is refused as it is written.
		unsafe("symlink chain that would escape on disk",
			registrytest.Dir("configs/d"),
			registrytest.Symlink("configs/d/e", ".."),
			registrytest.Symlink("configs/d/e/l", "../../x")),
		unsafe("file written through a link to a directory",
			registrytest.Symlink("configs/pkg-c", "pkg-a"),
			registrytest.File("configs/pkg-c/new.json", "{}")),
		unsafe("directory written through a link",
			registrytest.Symlink("configs/pkg-c", "pkg-a"),
			registrytest.Dir("configs/pkg-c/sub")),
		unsafe("hard link to a file reached through a link",
			registrytest.Symlink("configs/pkg-c", "pkg-a"),
			registrytest.Hardlink("configs/hard", "configs/pkg-c/catalog.json")),
		unsafe("entry more than 64 directories deep",
			registrytest.File("configs/"+strings.Repeat("d/", 65)+"catalog.json", "{}")),
		unsafe("link target more than 64 directories deep",
			registrytest.Symlink("configs/deep", strings.Repeat("d/", 65)+"catalog.json")),
		{
			name: "whiteout through a link",
			fbc:  tiny,
			push: registrytest.PushOptions{
				Extra:  []registrytest.Entry{registrytest.Symlink("configs/pkg-c", "pkg-a")},
				Layers: [][]registrytest.Entry{{registrytest.Whiteout("configs/pkg-c/catalog.json")}},
			},
			wantUnsafe: "configs/pkg-c/.wh.catalog.json",
		},
		{
			name:       "symbolic link to itself",
			fbc:        tiny,
			push:       registrytest.PushOptions{Extra: []registrytest.Entry{registrytest.Symlink("configs/self", "self")}},
			wantUnsafe: "self",
		},
		{
			name:      "total size limit",
			fbc:       tiny,
			push:      registrytest.PushOptions{Extra: []registrytest.Entry{registrytest.File("configs/big.json", big)}},
			opts:      unpack.Options{MaxTotalBytes: 4096},
			wantLimit: "MaxTotalBytes",
		},
		{
			name: "size limit counts content a later layer deletes",
			fbc:  tiny,
			push: registrytest.PushOptions{
				Extra:  []registrytest.Entry{registrytest.File("configs/big.json", big)},
				Layers: [][]registrytest.Entry{{registrytest.Whiteout("configs/big.json"), registrytest.File("configs/big2.json", big)}},
			},
			opts:      unpack.Options{MaxTotalBytes: 6000},
			wantLimit: "MaxTotalBytes",
		},
		{
			name:      "file count limit",
			fbc:       demoDir,
			opts:      unpack.Options{MaxFiles: 5},
			wantLimit: "MaxFiles",
		},
		{
			name:      "file count limit counts implicit parent directories",
			push:      registrytest.PushOptions{Extra: []registrytest.Entry{registrytest.File("configs/a/b/c/d/e/f/g/h/catalog.json", "{}")}},
			opts:      unpack.Options{MaxFiles: 5},
			wantLimit: "MaxFiles",
		},
	})
}

func TestUnpackIndex(t *testing.T) {
	reg := registrytest.New(t)
	tiny := writeTree(t, tinyFBC)
	u := newUnpacker(t, unpack.Options{InsecureRegistries: []string{reg.Host}})

	t.Run("picks the running platform, else linux/amd64", func(t *testing.T) {
		platforms := []v1.Platform{{OS: "linux", Architecture: "s390x"}, {OS: "linux", Architecture: "arm64"}, {OS: "linux", Architecture: "amd64"}}
		ref := registrytest.PushCatalog(t, reg.Host, "catalogs/multi:v1", tiny, registrytest.PushOptions{Platforms: platforms})
		want := childDigest(t, ref, runtime.GOARCH)
		if want == "" {
			want = childDigest(t, ref, "amd64")
		}
		res, err := u.Unpack(t.Context(), ref, filepath.Join(t.TempDir(), "dst"))
		if err != nil {
			t.Fatalf("Unpack: %v", err)
		}
		if res.ImageDigest != want {
			t.Errorf("ImageDigest = %s, want %s", res.ImageDigest, want)
		}
		if !strings.HasSuffix(ref, "@"+res.Digest) {
			t.Errorf("Digest = %s, want the index digest from %s", res.Digest, ref)
		}
	})

	t.Run("index without a usable platform is terminal", func(t *testing.T) {
		if runtime.GOARCH == "riscv64" {
			t.Skip("the test's foreign platform is this one")
		}
		ref := registrytest.PushCatalog(t, reg.Host, "catalogs/foreign:v1", tiny, registrytest.PushOptions{
			Platforms: []v1.Platform{{OS: "linux", Architecture: "riscv64"}, {OS: "windows", Architecture: "amd64"}},
		})
		dst := filepath.Join(t.TempDir(), "dst")
		_, err := u.Unpack(t.Context(), ref, dst)
		if !errors.Is(err, unpack.ErrNoMatchingPlatform) || !unpack.IsTerminal(err) {
			t.Errorf("Unpack error %v, want terminal ErrNoMatchingPlatform", err)
		}
		assertNoDst(t, dst)
	})
}

// childDigest returns the digest of the index entry for linux/arch, or "".
func childDigest(t *testing.T, ref, arch string) string {
	t.Helper()
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := remote.Index(r)
	if err != nil {
		t.Fatal(err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range m.Manifests {
		if d.Platform != nil && d.Platform.OS == "linux" && d.Platform.Architecture == arch {
			return d.Digest.String()
		}
	}
	return ""
}

func TestUnpackArguments(t *testing.T) {
	reg := registrytest.New(t)
	ref := registrytest.PushCatalog(t, reg.Host, "catalogs/demo:v1", demoDir, registrytest.PushOptions{})
	u := newUnpacker(t, unpack.Options{InsecureRegistries: []string{reg.Host}})

	t.Run("tag instead of digest", func(t *testing.T) {
		_, err := u.Unpack(t.Context(), reg.Host+"/catalogs/demo:v1", filepath.Join(t.TempDir(), "dst"))
		if !errors.Is(err, unpack.ErrInvalidReference) || !unpack.IsTerminal(err) {
			t.Errorf("error %v, want terminal ErrInvalidReference", err)
		}
	})
	t.Run("digest the registry lacks is retryable", func(t *testing.T) {
		missing := ref[:strings.LastIndex(ref, ":")+1] + strings.Repeat("0", 64)
		dst := filepath.Join(t.TempDir(), "dst")
		_, err := u.Unpack(t.Context(), missing, dst)
		if err == nil || unpack.IsTerminal(err) {
			t.Errorf("error %v, want a retryable error", err)
		}
		assertNoDst(t, dst)
	})
	t.Run("existing destination is refused and left alone", func(t *testing.T) {
		dst := t.TempDir()
		keep := filepath.Join(dst, "keep")
		if err := os.WriteFile(keep, []byte("mine"), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := u.Unpack(t.Context(), ref, dst)
		if err == nil {
			t.Fatal("Unpack into an existing directory succeeded")
		}
		if !errors.Is(err, fs.ErrExist) || strings.Contains(err.Error(), dst) {
			t.Errorf("error %q, want fs.ErrExist without the server path %s", err, dst)
		}
		if b, err := os.ReadFile(keep); err != nil || string(b) != "mine" {
			t.Errorf("existing content changed: %q, %v", b, err)
		}
	})
	t.Run("manifest that is not an image is terminal", func(t *testing.T) {
		body := []byte(`{"schemaVersion":1,"name":"catalogs/odd","tag":"v1","fsLayers":[]}`)
		req, err := http.NewRequest(http.MethodPut, reg.URL+"/v2/catalogs/odd/manifests/v1", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/vnd.docker.distribution.manifest.v1+json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("pushing manifest: status %d", resp.StatusCode)
		}
		odd := fmt.Sprintf("%s/catalogs/odd@sha256:%x", reg.Host, sha256.Sum256(body))
		_, err = u.Unpack(t.Context(), odd, filepath.Join(t.TempDir(), "dst"))
		if !errors.Is(err, unpack.ErrUnsupportedMediaType) || !unpack.IsTerminal(err) {
			t.Errorf("error %v, want terminal ErrUnsupportedMediaType", err)
		}
	})
	t.Run("layers are fetched once and the result reports the label", func(t *testing.T) {
		reg.Reset()
		res, err := u.Unpack(t.Context(), ref, filepath.Join(t.TempDir(), "dst"))
		if err != nil {
			t.Fatalf("Unpack: %v", err)
		}
		if res.ConfigsDir != "/configs" {
			t.Errorf("ConfigsDir = %q, want /configs", res.ConfigsDir)
		}
		// One config blob and one layer blob.
		if c := reg.Counts(); c.BlobGets != 2 || c.ManifestGets != 1 {
			t.Errorf("requests = %+v, want 1 manifest GET and 2 blob GETs", c)
		}
	})
}

// The in-process registry speaks plain HTTP on 127.0.0.1, which
// go-containerregistry would use by itself; unless listed it must not be.
func TestInsecureRegistriesAreExplicit(t *testing.T) {
	reg := registrytest.New(t)
	ref := registrytest.PushCatalog(t, reg.Host, "catalogs/demo:v1", demoDir, registrytest.PushOptions{})
	reg.Reset()

	for _, listed := range [][]string{nil, {"127.0.0.1:1"}, {"example.com"}} {
		u := newUnpacker(t, unpack.Options{InsecureRegistries: listed})
		_, err := u.Resolve(t.Context(), reg.Host+"/catalogs/demo:v1")
		if err == nil || unpack.IsTerminal(err) {
			t.Errorf("Resolve with insecure %v: error %v, want a retryable error", listed, err)
		} else if hint := "--insecure-registry " + reg.Host; !strings.Contains(err.Error(), hint) {
			t.Errorf("Resolve with insecure %v: error %q does not name %q", listed, err, hint)
		}
		dst := filepath.Join(t.TempDir(), "dst")
		if _, err := u.Unpack(t.Context(), ref, dst); err == nil || unpack.IsTerminal(err) {
			t.Errorf("Unpack with insecure %v: error %v, want a retryable error", listed, err)
		}
		assertNoDst(t, dst)
	}
	if c := reg.Counts(); c.Total != 0 {
		t.Errorf("unlisted registry received %d plain-HTTP requests: %v", c.Total, reg.Requests())
	}

	u := newUnpacker(t, unpack.Options{InsecureRegistries: []string{strings.ToUpper(reg.Host)}})
	if _, err := u.Resolve(t.Context(), reg.Host+"/catalogs/demo:v1"); err != nil {
		t.Errorf("Resolve with the registry listed: %v", err)
	}
}

func TestCABundle(t *testing.T) {
	reg := registrytest.New(t, registrytest.WithTLS())
	ref := reg.PushCatalog(t, "catalogs/demo:v1", demoDir, registrytest.PushOptions{})
	tag := reg.Host + "/catalogs/demo:v1"

	t.Run("unknown CA fails and is retryable", func(t *testing.T) {
		u := newUnpacker(t, unpack.Options{})
		if _, err := u.Resolve(t.Context(), tag); err == nil || unpack.IsTerminal(err) {
			t.Errorf("Resolve: error %v, want a retryable error", err)
		}
	})
	t.Run("CA bundle makes it trusted", func(t *testing.T) {
		u := newUnpacker(t, unpack.Options{CABundle: reg.CAPEM()})
		got, err := u.Resolve(t.Context(), tag)
		if err != nil {
			t.Fatalf("Resolve: %v", err)
		}
		if got != ref {
			t.Errorf("Resolve = %s, want %s", got, ref)
		}
		if _, err := u.Unpack(t.Context(), got, filepath.Join(t.TempDir(), "dst")); err != nil {
			t.Errorf("Unpack: %v", err)
		}
	})
	t.Run("bundle without certificates is refused", func(t *testing.T) {
		if _, err := unpack.New(unpack.Options{CABundle: []byte("not pem")}); err == nil {
			t.Error("New accepted a CA bundle with no certificate")
		}
	})
}

func TestUnpackCancelled(t *testing.T) {
	reg := registrytest.New(t)
	ref := registrytest.PushCatalog(t, reg.Host, "catalogs/demo:v1", demoDir, registrytest.PushOptions{})
	u := newUnpacker(t, unpack.Options{InsecureRegistries: []string{reg.Host}})

	t.Run("before it starts", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		dst := filepath.Join(t.TempDir(), "dst")
		_, err := u.Unpack(ctx, ref, dst)
		if !errors.Is(err, context.Canceled) || unpack.IsTerminal(err) {
			t.Errorf("error %v, want a retryable context.Canceled", err)
		}
		assertNoDst(t, dst)
	})

	t.Run("while a layer downloads", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		var blobs atomic.Int32
		// The config blob comes first; cancel as the layer is requested.
		reg.Intercept(func(w http.ResponseWriter, r *http.Request) bool {
			if r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/blobs/") && blobs.Add(1) == 2 {
				cancel()
			}
			return false
		})
		defer reg.Intercept(nil)
		dst := filepath.Join(t.TempDir(), "dst")
		_, err := u.Unpack(ctx, ref, dst)
		if !errors.Is(err, context.Canceled) || unpack.IsTerminal(err) {
			t.Errorf("error %v, want a retryable context.Canceled", err)
		}
		if blobs.Load() < 2 {
			t.Errorf("only %d blob GETs, the layer was never requested", blobs.Load())
		}
		assertNoDst(t, dst)
	})
}

// Failures of the registry or the download say nothing lasting about the
// image, so they must be retryable, and leave no destination behind.
func TestUnpackRegistryFailuresAreRetryable(t *testing.T) {
	reg := registrytest.New(t)
	ref := registrytest.PushCatalog(t, reg.Host, "catalogs/demo:v1", demoDir, registrytest.PushOptions{})
	u := newUnpacker(t, unpack.Options{InsecureRegistries: []string{reg.Host}})
	isBlob := func(r *http.Request) bool {
		return r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/blobs/")
	}

	tests := []struct {
		name      string
		intercept func(w http.ResponseWriter, r *http.Request, blobGets int32) bool
	}{
		{
			name: "manifest forbidden",
			intercept: func(w http.ResponseWriter, r *http.Request, _ int32) bool {
				if strings.Contains(r.URL.Path, "/manifests/") {
					http.Error(w, `{"errors":[{"code":"DENIED","message":"no"}]}`, http.StatusForbidden)
					return true
				}
				return false
			},
		},
		{
			name: "layer blob unknown",
			intercept: func(w http.ResponseWriter, r *http.Request, blobGets int32) bool {
				if isBlob(r) && blobGets == 2 {
					http.Error(w, `{"errors":[{"code":"BLOB_UNKNOWN","message":"gone"}]}`, http.StatusNotFound)
					return true
				}
				return false
			},
		},
		{
			name: "layer blob corrupted in transit",
			intercept: func(w http.ResponseWriter, r *http.Request, blobGets int32) bool {
				if isBlob(r) && blobGets == 2 {
					w.Write([]byte(strings.Repeat("garbage!", 1024)))
					return true
				}
				return false
			},
		},
		{
			name: "registry gone",
			intercept: func(w http.ResponseWriter, r *http.Request, _ int32) bool {
				panic(http.ErrAbortHandler)
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var blobGets atomic.Int32
			reg.Intercept(func(w http.ResponseWriter, r *http.Request) bool {
				n := int32(0)
				if isBlob(r) {
					n = blobGets.Add(1)
				}
				return tt.intercept(w, r, n)
			})
			defer reg.Intercept(nil)
			dst := filepath.Join(t.TempDir(), "dst")
			_, err := u.Unpack(t.Context(), ref, dst)
			if err == nil || unpack.IsTerminal(err) {
				t.Fatalf("Unpack: error %v, want a retryable error", err)
			}
			t.Logf("Unpack error: %v", err)
			assertNoDst(t, dst)
		})
	}
}

// A registry that answers a layer request with another valid layer must be
// caught by the digest check, even though the tar itself reads fine.
func TestUnpackDetectsSubstitutedLayer(t *testing.T) {
	reg := registrytest.New(t)
	tiny := writeTree(t, tinyFBC)
	ref := registrytest.PushCatalog(t, reg.Host, "catalogs/demo:v1", tiny, registrytest.PushOptions{})
	other := registrytest.PushCatalog(t, reg.Host, "catalogs/other:v1", tiny, registrytest.PushOptions{
		Extra: []registrytest.Entry{registrytest.File("configs/pkg-a/catalog.json", "substituted")},
	})
	otherRef, err := name.ParseReference(other, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	img, err := remote.Image(otherRef)
	if err != nil {
		t.Fatal(err)
	}
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	otherLayer, err := layers[0].Compressed()
	if err != nil {
		t.Fatal(err)
	}
	substitute, err := io.ReadAll(otherLayer)
	otherLayer.Close()
	if err != nil {
		t.Fatal(err)
	}

	var blobGets atomic.Int32
	reg.Intercept(func(w http.ResponseWriter, r *http.Request) bool {
		if r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/blobs/") && blobGets.Add(1) == 2 {
			w.Write(substitute)
			return true
		}
		return false
	})
	u := newUnpacker(t, unpack.Options{InsecureRegistries: []string{reg.Host}})
	dst := filepath.Join(t.TempDir(), "dst")
	_, err = u.Unpack(t.Context(), ref, dst)
	if err == nil || unpack.IsTerminal(err) {
		t.Fatalf("Unpack: error %v, want a retryable error", err)
	}
	t.Logf("Unpack error: %v", err)
	assertNoDst(t, dst)
}

func TestIsTerminal(t *testing.T) {
	tests := []struct {
		err  error
		want bool
	}{
		{nil, false},
		{errors.New("connection refused"), false},
		{context.Canceled, false},
		{unpack.ErrPlainHTTPNotAllowed, false},
		{unpack.ErrMissingConfigsLabel, true},
		{&unpack.UnsafeEntryError{Entry: "x", Reason: "y"}, true},
		{&unpack.LimitError{Limit: "MaxFiles", Max: 1, Entry: "x"}, true},
		{&unpack.LimitError{Limit: "MaxConfigBytes", Max: 1, Entry: "the image config"}, true},
		{&unpack.CorruptLayerError{Layer: 1, Err: errors.New("invalid tar header")}, true},
		{fmt.Errorf("layer 0: %w", unpack.ErrForeignLayer), true},
		{&unpack.TimeoutError{Op: "pulling", After: time.Second}, false},
	}
	for _, tt := range tests {
		for _, err := range []error{tt.err, wrap(tt.err)} {
			if got := unpack.IsTerminal(err); got != tt.want && err != nil {
				t.Errorf("IsTerminal(%v) = %v, want %v", err, got, tt.want)
			}
		}
	}
}

func wrap(err error) error {
	if err == nil {
		return nil
	}
	return &wrapped{err}
}

type wrapped struct{ err error }

func (w *wrapped) Error() string { return "outer: " + w.err.Error() }
func (w *wrapped) Unwrap() error { return w.err }

// assertNoDst checks that a failed unpack left nothing at dst.
func assertNoDst(t *testing.T, dst string) {
	t.Helper()
	if _, err := os.Lstat(dst); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("destination exists after a failed unpack: %v", err)
	}
}
