// Command mkimage wraps static binaries (and optionally a directory tree) into
// a one-layer container image and writes it as a docker-format tarball that
// `ctr images import` reads. The test cluster cannot pull images from any
// registry, so its pause image and any stand-in images are made this way.
//
//	mkimage -name localhost/pause:catalogd -out pause.tar -entrypoint /pause pause=/path/to/pause
//
// Each positional argument is DEST=SRC: SRC (a file or a directory, copied
// recursively) lands at /DEST in the image, owned by root and keeping its mode.
package main

import (
	"archive/tar"
	"bytes"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

func main() {
	ref := flag.String("name", "", "image reference to tag the image with, e.g. localhost/pause:catalogd")
	out := flag.String("out", "", "tarball to write")
	entrypoint := flag.String("entrypoint", "", "path of the entrypoint inside the image")
	user := flag.String("user", "", "user (uid:gid) the image runs as, if not root")
	flag.Parse()
	if *ref == "" || *out == "" || flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(*ref, *out, *entrypoint, *user, flag.Args()); err != nil {
		log.Fatal(err)
	}
}

func run(ref, out, entrypoint, user string, files []string) error {
	tag, err := name.NewTag(ref)
	if err != nil {
		return fmt.Errorf("parse image name %q: %w", ref, err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		dest, src, ok := strings.Cut(f, "=")
		if !ok {
			return fmt.Errorf("argument %q is not DEST=SRC", f)
		}
		if err := addTree(tw, strings.Trim(dest, "/"), src); err != nil {
			return fmt.Errorf("add %s to the image: %w", src, err)
		}
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("close layer: %w", err)
	}
	layerBytes := buf.Bytes()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerBytes)), nil
	})
	if err != nil {
		return fmt.Errorf("make layer: %w", err)
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return fmt.Errorf("append layer: %w", err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return fmt.Errorf("read image config: %w", err)
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", "amd64"
	// The usual PATH, so a pod's command may name a binary in /usr/local/bin.
	cfg.Config = v1.Config{User: user, Env: []string{"PATH=/usr/local/bin:/usr/bin:/bin"}}
	if entrypoint != "" {
		cfg.Config.Entrypoint = []string{entrypoint}
	}
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		return fmt.Errorf("set image config: %w", err)
	}
	if err := tarball.WriteToFile(out, tag, img); err != nil {
		return fmt.Errorf("write %s: %w", out, err)
	}
	return nil
}

// addTree writes src (a file or a directory) to tw under the name dest.
func addTree(tw *tar.Writer, dest, src string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		hdr := &tar.Header{Name: path.Join(dest, filepath.ToSlash(rel)), Mode: int64(info.Mode().Perm()), ModTime: info.ModTime()}
		switch {
		case d.IsDir():
			hdr.Typeflag, hdr.Name = tar.TypeDir, hdr.Name+"/"
			return tw.WriteHeader(hdr)
		case info.Mode().IsRegular():
			hdr.Typeflag, hdr.Size = tar.TypeReg, info.Size()
			if err := tw.WriteHeader(hdr); err != nil {
				return err
			}
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			defer f.Close()
			_, err = io.Copy(tw, f)
			return err
		default:
			return fmt.Errorf("%s: only regular files and directories are supported", p)
		}
	})
}
