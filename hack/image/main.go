// Command image builds catalogd's container image without a Docker engine or
// a base image: the build machine has neither, and a static Go binary needs
// nothing from a distribution besides CA certificates and a user to run as.
//
// Each platform's image has one layer holding
//
//	/catalogd                            the static binary with the ClusterCatalog
//	                                     controllers (-tags manager, the
//	                                     catalogd-manager of make build;
//	                                     root-owned, 0755)
//	/catalogd-package-api                the same built with the package API
//	                                     too (-tags manager,packageapi), the
//	                                     command of config/components/package-api
//	/etc/passwd, /etc/group              root and the nonroot user/group 65532
//	/etc/ssl/certs/ca-certificates.crt   the build machine's CA bundle
//
// plus the directories leading to them, all owned by root and none writable
// by the nonroot user: catalogd writes only to volumes (its data dir). The
// config runs /catalogd as 65532:65532 from /. Both binaries are in one
// image, so that turning the package API on is a change of command, not of
// image; the build checks each binary's build tags, so that the two cannot
// be swapped. Every timestamp is -created
// (SOURCE_DATE_EPOCH), so the same inputs give the same digests.
//
// `make image` runs it to write an OCI layout and a docker-loadable tarball;
// `make image-push IMG=...` pushes the multi-platform index to a registry.
package main

import (
	"archive/tar"
	"bytes"
	"context"
	"debug/buildinfo"
	"debug/elf"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The user and group the image runs as: distroless's "nonroot", which
// Kubernetes' restricted pod security profile accepts.
const (
	nonrootID   = 65532
	binaryPath  = "catalogd"
	pkgAPIPath  = "catalogd-package-api"
	managerTag  = "manager"
	pkgAPITag   = "packageapi"
	caPath      = "etc/ssl/certs/ca-certificates.crt"
	passwdFile  = "root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/:/sbin/nologin\n"
	groupFile   = "root:x:0:\nnonroot:x:65532:\n"
	refNameAnno = "org.opencontainers.image.ref.name"
)

// Spec is everything an image build depends on; equal Specs give equal
// digests.
type Spec struct {
	// Binaries maps a platform ("linux/amd64") to its static binaries.
	Binaries map[string]Binaries
	// CABundle is the PEM bundle placed at /etc/ssl/certs/ca-certificates.crt.
	CABundle []byte
	// Version, Revision and Source become the org.opencontainers.image.*
	// labels.
	Version, Revision, Source string
	// Created is every timestamp in the image: the config's, its history's
	// and each file's mtime.
	Created time.Time
}

// Binaries are the two builds of cmd/catalogd an image holds.
type Binaries struct {
	// Catalogd is /catalogd, the entrypoint: built with -tags manager,
	// without the package API.
	Catalogd []byte
	// PackageAPI is /catalogd-package-api: built with -tags
	// manager,packageapi.
	PackageAPI []byte
}

// Build returns the multi-platform index and its images by platform.
func Build(spec Spec) (v1.ImageIndex, map[string]v1.Image, error) {
	if len(spec.Binaries) == 0 {
		return nil, nil, errors.New("no binaries: give at least one -binary os/arch=path and its -package-api-binary")
	}
	platforms := make([]string, 0, len(spec.Binaries))
	for p := range spec.Binaries {
		platforms = append(platforms, p)
	}
	sort.Strings(platforms)

	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	images := map[string]v1.Image{}
	for _, p := range platforms {
		plat, err := v1.ParsePlatform(p)
		if err != nil {
			return nil, nil, fmt.Errorf("platform %q: %w", p, err)
		}
		img, err := buildImage(*plat, spec.Binaries[p], spec)
		if err != nil {
			return nil, nil, fmt.Errorf("image for %s: %w", p, err)
		}
		images[p] = img
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add:        img,
			Descriptor: v1.Descriptor{Platform: plat},
		})
	}
	return idx, images, nil
}

func buildImage(plat v1.Platform, bins Binaries, spec Spec) (v1.Image, error) {
	for _, b := range []struct {
		path       string
		binary     []byte
		packageAPI bool
	}{{binaryPath, bins.Catalogd, false}, {pkgAPIPath, bins.PackageAPI, true}} {
		if len(b.binary) == 0 {
			return nil, fmt.Errorf("/%s: no binary given", b.path)
		}
		if err := checkStatic(b.binary, plat.Architecture); err != nil {
			return nil, fmt.Errorf("/%s: %w", b.path, err)
		}
		if err := checkTags(b.binary, b.packageAPI); err != nil {
			return nil, fmt.Errorf("/%s: %w", b.path, err)
		}
	}
	rootfs, err := rootfsTar(bins, spec.CABundle, spec.Created)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(rootfs)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("making the layer: %w", err)
	}
	base := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	base = mutate.ConfigMediaType(base, types.OCIConfigJSON)
	created := v1.Time{Time: spec.Created}
	img, err := mutate.Append(base, mutate.Addendum{
		Layer: layer,
		History: v1.History{
			Created:   created,
			CreatedBy: "hack/image: static catalogd binaries, CA bundle, nonroot user",
		},
	})
	if err != nil {
		return nil, fmt.Errorf("adding the layer: %w", err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("reading the config: %w", err)
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture, cfg.Variant = plat.OS, plat.Architecture, plat.Variant
	cfg.Created = created
	cfg.Author = ""
	id := strconv.Itoa(nonrootID)
	cfg.Config = v1.Config{
		User:       id + ":" + id,
		Entrypoint: []string{"/" + binaryPath},
		WorkingDir: "/",
		// The nonroot user has no home directory; say so rather than let
		// anything (such as the docker config lookup) guess one.
		Env: []string{"HOME=/"},
		Labels: map[string]string{
			"org.opencontainers.image.version":  spec.Version,
			"org.opencontainers.image.revision": spec.Revision,
			"org.opencontainers.image.source":   spec.Source,
			"org.opencontainers.image.title":    "catalogd",
		},
	}
	img, err = mutate.ConfigFile(img, cfg)
	if err != nil {
		return nil, fmt.Errorf("setting the config: %w", err)
	}
	return img, nil
}

// checkStatic refuses a binary for the wrong architecture or one that needs
// a dynamic loader or shared libraries (a CGO build): the image has neither.
func checkStatic(binary []byte, arch string) error {
	f, err := elf.NewFile(bytes.NewReader(binary))
	if err != nil {
		return fmt.Errorf("reading the binary as ELF: %w", err)
	}
	defer f.Close()
	want := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[arch]
	if want == 0 {
		return fmt.Errorf("architecture %q is not supported", arch)
	}
	if f.Machine != want {
		return fmt.Errorf("the binary is for %s, not %s", f.Machine, arch)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return errors.New("the binary is dynamically linked (it has a program interpreter); build it with CGO_ENABLED=0")
		}
	}
	libs, err := f.ImportedLibraries()
	if err != nil {
		return fmt.Errorf("reading the binary's imported libraries: %w", err)
	}
	if len(libs) > 0 {
		return fmt.Errorf("the binary needs shared libraries %v; build it with CGO_ENABLED=0", libs)
	}
	return nil
}

// checkTags refuses a binary whose build tags do not match its place.
// Both binaries must be built with -tags manager, or the deployment would
// run a catalogd that refuses `catalogd manager`; /catalogd-package-api
// must be built with -tags packageapi too and /catalogd without it, or the
// package API overlay would run a binary that refuses --package-api, or
// every deployment would pay for it.
func checkTags(binary []byte, packageAPI bool) error {
	info, err := buildinfo.Read(bytes.NewReader(binary))
	if err != nil {
		return fmt.Errorf("reading the binary's build information: %w", err)
	}
	var tags []string
	for _, s := range info.Settings {
		if s.Key == "-tags" {
			tags = strings.Split(s.Value, ",")
		}
	}
	switch has := slices.Contains(tags, pkgAPITag); {
	case !slices.Contains(tags, managerTag):
		return fmt.Errorf("the binary is not built with -tags %s", managerTag)
	case packageAPI && !has:
		return fmt.Errorf("the binary is not built with -tags %s,%s", managerTag, pkgAPITag)
	case !packageAPI && has:
		return fmt.Errorf("the binary is built with -tags %s; only /%s may be", pkgAPITag, pkgAPIPath)
	}
	return nil
}

// rootfsTar is the image's only layer. Entries are in a fixed order with
// fixed owners, modes and times, so it is byte-for-byte reproducible.
func rootfsTar(bins Binaries, ca []byte, mtime time.Time) ([]byte, error) {
	type entry struct {
		name string
		mode int64
		body []byte
	}
	entries := []entry{
		{name: binaryPath, mode: 0o755, body: bins.Catalogd},
		{name: pkgAPIPath, mode: 0o755, body: bins.PackageAPI},
		{name: "etc/", mode: 0o755},
		{name: "etc/group", mode: 0o644, body: []byte(groupFile)},
		{name: "etc/passwd", mode: 0o644, body: []byte(passwdFile)},
		{name: "etc/ssl/", mode: 0o755},
		{name: "etc/ssl/certs/", mode: 0o755},
		{name: caPath, mode: 0o644, body: ca},
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		hdr := &tar.Header{
			Name:    e.name,
			Mode:    e.mode,
			ModTime: mtime,
			Uname:   "root",
			Gname:   "root",
			Format:  tar.FormatPAX,
		}
		if strings.HasSuffix(e.name, "/") {
			hdr.Typeflag = tar.TypeDir
		} else {
			hdr.Typeflag = tar.TypeReg
			hdr.Size = int64(len(e.body))
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, fmt.Errorf("writing the tar header of %s: %w", e.name, err)
		}
		if _, err := tw.Write(e.body); err != nil {
			return nil, fmt.Errorf("writing %s: %w", e.name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("closing the layer: %w", err)
	}
	return buf.Bytes(), nil
}

// WriteLayout writes idx as an OCI image layout in dir, replacing whatever
// was there, with tag as the index's ref name.
func WriteLayout(dir, tag string, idx v1.ImageIndex) error {
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("clearing %s: %w", dir, err)
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return fmt.Errorf("creating the OCI layout %s: %w", dir, err)
	}
	if err := p.AppendIndex(idx, layout.WithAnnotations(map[string]string{refNameAnno: tag})); err != nil {
		return fmt.Errorf("writing the index to %s: %w", dir, err)
	}
	return nil
}

// WriteTarball writes img in `docker save` format, which `docker load` and
// `kind load image-archive` read. That format holds one platform only.
func WriteTarball(path, tag string, img v1.Image) error {
	t, err := name.NewTag(tag)
	if err != nil {
		return fmt.Errorf("tag %q: %w", tag, err)
	}
	if err := tarball.WriteToFile(path, t, img); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// Push uploads idx to ref; insecure means plain HTTP (a local registry).
func Push(ctx context.Context, ref string, insecure bool, idx v1.ImageIndex) (name.Reference, error) {
	var opts []name.Option
	if insecure {
		opts = append(opts, name.Insecure)
	}
	r, err := name.ParseReference(ref, opts...)
	if err != nil {
		return nil, fmt.Errorf("image reference %q: %w", ref, err)
	}
	if err := remote.WriteIndex(r, idx, remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
		return nil, fmt.Errorf("pushing %s: %w", r, err)
	}
	return r, nil
}

// binaryFlags collects repeated -binary os/arch=path flags.
type binaryFlags map[string]string

func (b binaryFlags) String() string { return fmt.Sprint(map[string]string(b)) }

func (b binaryFlags) Set(v string) error {
	plat, path, ok := strings.Cut(v, "=")
	if !ok || plat == "" || path == "" {
		return fmt.Errorf("%q: want os/arch=path", v)
	}
	b[plat] = path
	return nil
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("image", flag.ContinueOnError)
	bins, pkgAPIBins := binaryFlags{}, binaryFlags{}
	fs.Var(bins, "binary", "os/arch=path of a static catalogd built with -tags manager, /catalogd (repeatable)")
	fs.Var(pkgAPIBins, "package-api-binary", "os/arch=path of a static catalogd built with -tags manager,packageapi, /catalogd-package-api (repeatable; one per -binary)")
	ca := fs.String("ca-bundle", "/etc/ssl/certs/ca-certificates.crt", "PEM CA bundle to include")
	version := fs.String("version", "", "org.opencontainers.image.version label (required)")
	revision := fs.String("revision", "", "org.opencontainers.image.revision label: the commit")
	source := fs.String("source", "", "org.opencontainers.image.source label: the repository URL")
	epoch := fs.String("created", os.Getenv("SOURCE_DATE_EPOCH"), "Unix time of every timestamp in the image (default $SOURCE_DATE_EPOCH)")
	tag := fs.String("tag", "", "name:tag recorded in the OCI layout and the tarball (required)")
	ociDir := fs.String("oci-layout", "", "directory to write the OCI image layout to")
	tarPath := fs.String("tarball", "", "file to write a docker-loadable tarball of -tarball-platform to")
	tarPlat := fs.String("tarball-platform", "linux/amd64", "the platform the tarball holds")
	push := fs.String("push", "", "registry reference to push the index to")
	insecure := fs.Bool("insecure", false, "talk to the -push registry over plain HTTP")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *version == "" || *tag == "" || *epoch == "" {
		return errors.New("-version, -tag and -created (or SOURCE_DATE_EPOCH) are required")
	}
	secs, err := strconv.ParseInt(*epoch, 10, 64)
	if err != nil {
		return fmt.Errorf("-created %q: want Unix seconds: %w", *epoch, err)
	}
	spec := Spec{
		Binaries: map[string]Binaries{},
		Version:  *version, Revision: *revision, Source: *source,
		Created: time.Unix(secs, 0).UTC(),
	}
	if spec.CABundle, err = os.ReadFile(*ca); err != nil {
		return fmt.Errorf("reading the CA bundle: %w", err)
	}
	for plat := range pkgAPIBins {
		if _, ok := bins[plat]; !ok {
			return fmt.Errorf("-package-api-binary %s: no -binary for it", plat)
		}
	}
	for plat, path := range bins {
		taggedPath, ok := pkgAPIBins[plat]
		if !ok {
			return fmt.Errorf("-binary %s: no -package-api-binary for it", plat)
		}
		var b Binaries
		if b.Catalogd, err = os.ReadFile(path); err != nil {
			return fmt.Errorf("reading the %s binary: %w", plat, err)
		}
		if b.PackageAPI, err = os.ReadFile(taggedPath); err != nil {
			return fmt.Errorf("reading the %s package API binary: %w", plat, err)
		}
		spec.Binaries[plat] = b
	}
	idx, images, err := Build(spec)
	if err != nil {
		return err
	}
	digest, err := idx.Digest()
	if err != nil {
		return fmt.Errorf("digesting the index: %w", err)
	}
	fmt.Fprintf(stdout, "built %s (%s) for %d platform(s)\n", *tag, digest, len(images))
	if *ociDir != "" {
		if err := WriteLayout(*ociDir, *tag, idx); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "wrote OCI layout %s\n", *ociDir)
	}
	if *tarPath != "" {
		img, ok := images[*tarPlat]
		if !ok {
			return fmt.Errorf("-tarball-platform %s: no -binary for it", *tarPlat)
		}
		if err := WriteTarball(*tarPath, *tag, img); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "wrote %s (%s)\n", *tarPath, *tarPlat)
	}
	if *push != "" {
		ref, err := Push(ctx, *push, *insecure, idx)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "pushed %s@%s\n", ref, digest)
	}
	return nil
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "image:", err)
		}
		os.Exit(2)
	}
}
