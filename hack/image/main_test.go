package main

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/catalogd/catalogd/test/registrytest"
)

// buildHello cross-compiles testdata/hello for linux/arch without cgo, as
// `make image` builds catalogd, with the given build tags.
func buildHello(t *testing.T, dir, arch, tags string) string {
	t.Helper()
	out := filepath.Join(dir, "hello-"+arch+"-"+tags)
	cmd := exec.Command("go", "build", "-trimpath", "-tags", tags, "-o", out, "./testdata/hello")
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH="+arch, "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building hello for %s: %v\n%s", arch, err, b)
	}
	return out
}

// fileEntry is what the test expects of, and reads from, one layer entry.
type fileEntry struct {
	Type     byte
	Mode     int64
	UID, GID int
	MTime    time.Time
	SHA256   string
}

func sum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// TestImage builds an image from small static binaries with the same flags
// `make image` passes, pushes it to a loopback registry, pulls it back and
// checks what a cluster runs: the config, the exact files of the only layer,
// and that nothing in it runs as or is writable only by root's grace.
// Each platform holds both binaries, as make image builds them: /catalogd
// (-tags manager) and /catalogd-package-api (-tags manager,packageapi).
func TestImage(t *testing.T) {
	dir := t.TempDir()
	type paths struct{ plain, tagged string }
	platforms := map[string]paths{
		"linux/amd64": {buildHello(t, dir, "amd64", "manager"), buildHello(t, dir, "amd64", "manager,packageapi")},
		"linux/arm64": {buildHello(t, dir, "arm64", "manager"), buildHello(t, dir, "arm64", "manager,packageapi")},
	}
	caPath := filepath.Join(dir, "ca.crt")
	ca := []byte("-----BEGIN CERTIFICATE-----\nnot really a certificate\n-----END CERTIFICATE-----\n")
	if err := os.WriteFile(caPath, ca, 0o600); err != nil {
		t.Fatal(err)
	}
	const (
		tag      = "catalogd:v1.2.3-4-gabcdef0"
		version  = "v1.2.3-4-gabcdef0"
		revision = "abcdef0123456789abcdef0123456789abcdef01"
		source   = "https://github.com/catalogd/catalogd"
		epoch    = 1700000000
	)
	reg := registrytest.New(t)
	pushRef := reg.Host + "/olm/catalogd:" + version
	ociDir := filepath.Join(dir, "oci")
	tarPath := filepath.Join(dir, "catalogd.tar")
	args := []string{
		"-ca-bundle", caPath, "-version", version, "-revision", revision, "-source", source,
		"-created", strconv.Itoa(epoch), "-tag", tag,
		"-oci-layout", ociDir, "-tarball", tarPath, "-push", pushRef, "-insecure",
	}
	for p, path := range platforms {
		args = append(args, "-binary", p+"="+path.plain, "-package-api-binary", p+"="+path.tagged)
	}
	var stdout bytes.Buffer
	if err := run(context.Background(), args, &stdout); err != nil {
		t.Fatalf("run %v: %v\n%s", args, err, stdout.String())
	}

	ref, err := name.ParseReference(pushRef, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := remote.Index(ref)
	if err != nil {
		t.Fatalf("pulling the index back: %v", err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != len(platforms) {
		t.Fatalf("index has %d manifests, want %d (one per platform)", len(im.Manifests), len(platforms))
	}
	created := time.Unix(epoch, 0).UTC()
	for _, desc := range im.Manifests {
		if desc.Platform == nil {
			t.Fatalf("manifest %s has no platform", desc.Digest)
		}
		plat := desc.Platform.OS + "/" + desc.Platform.Architecture
		binPaths, ok := platforms[plat]
		if !ok {
			t.Fatalf("index has an unexpected platform %s", plat)
		}
		binary, err := os.ReadFile(binPaths.plain)
		if err != nil {
			t.Fatal(err)
		}
		tagged, err := os.ReadFile(binPaths.tagged)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(plat, func(t *testing.T) {
			img, err := remote.Image(ref.Context().Digest(desc.Digest.String()))
			if err != nil {
				t.Fatalf("pulling %s: %v", desc.Digest, err)
			}
			cfg, err := img.ConfigFile()
			if err != nil {
				t.Fatal(err)
			}
			if cfg.OS != desc.Platform.OS || cfg.Architecture != desc.Platform.Architecture {
				t.Errorf("config platform %s/%s, index says %s", cfg.OS, cfg.Architecture, plat)
			}
			if !cfg.Created.Time.Equal(created) {
				t.Errorf("created %s, want %s (SOURCE_DATE_EPOCH)", cfg.Created.Time, created)
			}
			if got, want := cfg.Config.Entrypoint, []string{"/catalogd"}; !slices.Equal(got, want) {
				t.Errorf("entrypoint %q, want %q", got, want)
			}
			if cfg.Config.WorkingDir != "/" {
				t.Errorf("working dir %q, want /", cfg.Config.WorkingDir)
			}
			wantLabels := map[string]string{
				"org.opencontainers.image.version":  version,
				"org.opencontainers.image.revision": revision,
				"org.opencontainers.image.source":   source,
				"org.opencontainers.image.title":    "catalogd",
			}
			if !reflect.DeepEqual(cfg.Config.Labels, wantLabels) {
				t.Errorf("labels %v, want %v", cfg.Config.Labels, wantLabels)
			}

			layers, err := img.Layers()
			if err != nil {
				t.Fatal(err)
			}
			if len(layers) != 1 {
				t.Fatalf("%d layers, want 1", len(layers))
			}
			files, contents := readLayer(t, layers[0])
			root := func(typ byte, mode int64, body []byte) fileEntry {
				e := fileEntry{Type: typ, Mode: mode, MTime: created}
				if typ == tar.TypeReg {
					e.SHA256 = sum(body)
				}
				return e
			}
			want := map[string]fileEntry{
				"catalogd":                          root(tar.TypeReg, 0o755, binary),
				"catalogd-package-api":              root(tar.TypeReg, 0o755, tagged),
				"etc/":                              root(tar.TypeDir, 0o755, nil),
				"etc/ssl/":                          root(tar.TypeDir, 0o755, nil),
				"etc/ssl/certs/":                    root(tar.TypeDir, 0o755, nil),
				"etc/ssl/certs/ca-certificates.crt": root(tar.TypeReg, 0o644, ca),
				"etc/passwd":                        root(tar.TypeReg, 0o644, contents["etc/passwd"]),
				"etc/group":                         root(tar.TypeReg, 0o644, contents["etc/group"]),
			}
			if !reflect.DeepEqual(files, want) {
				t.Errorf("layer entries:\n got %v\nwant %v", files, want)
			}
			for n, f := range files {
				if f.Mode&0o022 != 0 || f.Mode&0o7000 != 0 {
					t.Errorf("%s has mode %o: writable by non-owners or set-id", n, f.Mode)
				}
			}
			checkNonroot(t, cfg.Config.User, contents["etc/passwd"], contents["etc/group"])
		})
	}

	// The OCI layout holds the same index under the tag.
	lp, err := layout.ImageIndexFromPath(ociDir)
	if err != nil {
		t.Fatalf("reading the OCI layout: %v", err)
	}
	lim, err := lp.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	idxDigest, err := idx.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if len(lim.Manifests) != 1 || lim.Manifests[0].Digest != idxDigest ||
		lim.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != tag {
		t.Errorf("OCI layout index.json %+v, want one entry %s named %s", lim.Manifests, idxDigest, tag)
	}

	// The tarball holds the amd64 image under the tag.
	tg, err := name.NewTag(tag)
	if err != nil {
		t.Fatal(err)
	}
	timg, err := tarball.ImageFromPath(tarPath, &tg)
	if err != nil {
		t.Fatalf("reading the tarball: %v", err)
	}
	tcfg, err := timg.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if tcfg.Architecture != "amd64" || tcfg.Config.User != "65532:65532" {
		t.Errorf("tarball image is %s as %q, want amd64 as 65532:65532", tcfg.Architecture, tcfg.Config.User)
	}
}

// readLayer returns the layer's entries and the contents of its regular files.
func readLayer(t *testing.T, l v1.Layer) (map[string]fileEntry, map[string][]byte) {
	t.Helper()
	rc, err := l.Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	files := map[string]fileEntry{}
	contents := map[string][]byte{}
	tr := tar.NewReader(rc)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("reading the layer: %v", err)
		}
		if _, dup := files[hdr.Name]; dup {
			t.Errorf("layer has %s twice", hdr.Name)
		}
		e := fileEntry{Type: hdr.Typeflag, Mode: hdr.Mode, UID: hdr.Uid, GID: hdr.Gid, MTime: hdr.ModTime.UTC()}
		if hdr.Typeflag == tar.TypeReg {
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			e.SHA256 = sum(b)
			contents[hdr.Name] = b
		}
		files[hdr.Name] = e
	}
	return files, contents
}

// checkNonroot checks that the config's user is a numeric uid:gid (so the
// kubelet can verify runAsNonRoot without reading /etc/passwd), that neither
// is 0, and that the image's passwd and group files name them.
func checkNonroot(t *testing.T, user string, passwd, group []byte) {
	t.Helper()
	uidS, gidS, ok := strings.Cut(user, ":")
	uid, err1 := strconv.Atoi(uidS)
	gid, err2 := strconv.Atoi(gidS)
	if !ok || err1 != nil || err2 != nil {
		t.Fatalf("config user %q is not numeric uid:gid", user)
	}
	if uid == 0 || gid == 0 {
		t.Fatalf("config user %q runs as root", user)
	}
	if !hasEntry(passwd, func(f []string) bool {
		return len(f) == 7 && f[2] == uidS && f[3] == gidS && f[0] != "root"
	}) {
		t.Errorf("/etc/passwd has no user with uid %d and gid %d:\n%s", uid, gid, passwd)
	}
	if !hasEntry(group, func(f []string) bool { return len(f) == 4 && f[2] == gidS }) {
		t.Errorf("/etc/group has no group %d:\n%s", gid, group)
	}
}

func hasEntry(file []byte, match func(fields []string) bool) bool {
	s := bufio.NewScanner(bytes.NewReader(file))
	for s.Scan() {
		if match(strings.Split(s.Text(), ":")) {
			return true
		}
	}
	return false
}

// TestBuildReproducible builds the same spec twice, with maps iterated in
// different orders, and wants the same index digest: a rebuild of a commit
// must not produce a "new" image.
func TestBuildReproducible(t *testing.T) {
	dir := t.TempDir()
	bins := map[string]Binaries{}
	for _, arch := range []string{"amd64", "arm64"} {
		bins["linux/"+arch] = Binaries{
			Catalogd:   readFile(t, buildHello(t, dir, arch, "manager")),
			PackageAPI: readFile(t, buildHello(t, dir, arch, "manager,packageapi")),
		}
	}
	spec := func(created int64) Spec {
		return Spec{
			Binaries: bins,
			CABundle: []byte("ca"), Version: "v1", Revision: "r", Source: "s",
			Created: time.Unix(created, 0),
		}
	}
	digest := func(s Spec) v1.Hash {
		idx, _, err := Build(s)
		if err != nil {
			t.Fatal(err)
		}
		d, err := idx.Digest()
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	first := digest(spec(1))
	for i := range 3 {
		if d := digest(spec(1)); d != first {
			t.Fatalf("build %d: digest %s, first build %s", i+2, d, first)
		}
	}
	if d := digest(spec(2)); d == first {
		t.Errorf("a different SOURCE_DATE_EPOCH gave the same digest %s: the timestamp is not in the image", d)
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestBuildRefuses covers the binaries an image must not be built from,
// in either place, and binaries in the wrong place.
func TestBuildRefuses(t *testing.T) {
	dir := t.TempDir()
	amd := readFile(t, buildHello(t, dir, "amd64", "manager"))
	amdTagged := readFile(t, buildHello(t, dir, "amd64", "manager,packageapi"))
	amdNoManager := readFile(t, buildHello(t, dir, "amd64", ""))
	amdPackageAPIOnly := readFile(t, buildHello(t, dir, "amd64", "packageapi"))
	notELF := func(*testing.T) []byte { return []byte("#!/bin/sh\n") }
	plain := func(*testing.T) []byte { return amd }
	tagged := func(*testing.T) []byte { return amdTagged }
	none := func(*testing.T) []byte { return nil }
	noManager := func(*testing.T) []byte { return amdNoManager }
	packageAPIOnly := func(*testing.T) []byte { return amdPackageAPIOnly }
	tests := []struct {
		name             string
		platform         string
		catalogd, pkgAPI func(t *testing.T) []byte
		want             string
	}{
		{"not ELF", "linux/amd64", notELF, tagged, "/catalogd: reading the binary as ELF"},
		{"package API binary not ELF", "linux/amd64", plain, notELF, "/catalogd-package-api: reading the binary as ELF"},
		{"wrong architecture", "linux/arm64", plain, tagged, "not arm64"},
		{"unsupported architecture", "linux/s390x", plain, tagged, "not supported"},
		{"dynamically linked", "linux/amd64", dynamicBinary, tagged, "dynamically linked"},
		{"no package API binary", "linux/amd64", plain, none, "/catalogd-package-api: no binary given"},
		{"package API binary without the tag", "linux/amd64", plain, plain, "/catalogd-package-api: the binary is not built with -tags manager,packageapi"},
		{"catalogd without the controllers", "linux/amd64", noManager, tagged, "/catalogd: the binary is not built with -tags manager"},
		{"package API binary without the controllers", "linux/amd64", plain, packageAPIOnly, "/catalogd-package-api: the binary is not built with -tags manager"},
		{"catalogd with the tag", "linux/amd64", tagged, tagged, "/catalogd: the binary is built with -tags packageapi"},
		{"binaries swapped", "linux/amd64", tagged, plain, "/catalogd: the binary is built with -tags packageapi"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := Build(Spec{
				Binaries: map[string]Binaries{tt.platform: {Catalogd: tt.catalogd(t), PackageAPI: tt.pkgAPI(t)}},
				Created:  time.Unix(1, 0),
			})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Build error %v, want one mentioning %q", err, tt.want)
			}
		})
	}
}

// TestRunPairsBinaries: every platform's -binary needs its
// -package-api-binary and the other way round, or an image would lack one.
func TestRunPairsBinaries(t *testing.T) {
	dir := t.TempDir()
	plain, tagged := buildHello(t, dir, "amd64", "manager"), buildHello(t, dir, "amd64", "manager,packageapi")
	for _, tt := range []struct {
		name string
		bins []string
		want string
	}{
		{"no package API binary", []string{"-binary", "linux/amd64=" + plain}, "-binary linux/amd64: no -package-api-binary for it"},
		{"package API binary alone", []string{"-binary", "linux/amd64=" + plain, "-package-api-binary", "linux/amd64=" + tagged,
			"-package-api-binary", "linux/arm64=" + tagged}, "-package-api-binary linux/arm64: no -binary for it"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"-version", "v1", "-tag", "catalogd:v1", "-created", "1", "-ca-bundle", plain}, tt.bins...)
			err := run(context.Background(), args, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("run %q: %v, want an error mentioning %q", args, err, tt.want)
			}
		})
	}
}

// dynamicBinary returns the build machine's /bin/true when it is a
// dynamically linked x86-64 ELF (as on Debian), the kind a CGO build makes.
func dynamicBinary(t *testing.T) []byte {
	b, err := os.ReadFile("/bin/true")
	if err != nil {
		t.Skipf("no /bin/true to use as a dynamically linked binary: %v", err)
	}
	f, err := elf.NewFile(bytes.NewReader(b))
	if err != nil || f.Machine != elf.EM_X86_64 {
		t.Skipf("/bin/true is not an x86-64 ELF binary (%v)", err)
	}
	return b
}
