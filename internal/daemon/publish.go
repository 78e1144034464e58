package daemon

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/spf13/pflag"

	"github.com/catalogd/catalogd/internal/datadir"
	"github.com/catalogd/catalogd/internal/index"
	"github.com/catalogd/catalogd/internal/prebuilt"
	"github.com/catalogd/catalogd/internal/source"
	"github.com/catalogd/catalogd/internal/version"
)

// PublishOptions are the flags of `catalogd index publish`.
type PublishOptions struct {
	RegistryOptions
}

// BindFlags declares the flags of `catalogd index publish` on fs.
func (o *PublishOptions) BindFlags(fs *pflag.FlagSet) { o.RegistryOptions.bindFlags(fs) }

// PublishConfig is the validated command line of `catalogd index publish`.
type PublishConfig struct {
	RegistryConfig
	// Image is the catalog image or artifact, by tag or digest.
	Image string
}

// Validate checks the flags; args are the positional arguments. Every
// error is a mistake in the command line.
func (o *PublishOptions) Validate(args []string) (PublishConfig, error) {
	if len(args) != 1 {
		return PublishConfig{}, fmt.Errorf("want one catalog image or artifact with its registry host (quay.io/org/catalog:tag), got %d arguments", len(args))
	}
	if _, err := name.ParseReference(args[0]); err != nil {
		return PublishConfig{}, fmt.Errorf("image %q: %w", args[0], err)
	}
	reg, err := o.RegistryOptions.Validate()
	if err != nil {
		return PublishConfig{}, err
	}
	// A person's (or a CI job's) own registry credentials, as docker,
	// podman and oras use them: publishing pushes.
	reg.Keychain = authn.DefaultKeychain
	return PublishConfig{RegistryConfig: reg, Image: args[0]}, nil
}

// publishBuiltAt is the build time a published index records: fixed, so
// that building the same catalog again makes the same files and the
// artifact is the same bytes (a replica records when it adopted it).
var publishBuiltAt = time.Unix(0, 0).UTC()

// Publish builds the index of the catalog image cfg.Image as a replica
// would (the same fetch, the same index.Build) and pushes it to the
// image's repository as its prebuilt index (package prebuilt), unless
// one of this binary's schema is there already: publishing is idempotent,
// and a second run neither pulls nor pushes. It prints the artifact's
// reference.
func Publish(ctx context.Context, cfg PublishConfig, out io.Writer, log logr.Logger) error {
	tmp, err := os.MkdirTemp("", "catalogd-publish-")
	if err != nil {
		return fmt.Errorf("create temporary directory: %w", err)
	}
	defer os.RemoveAll(tmp)

	// Looking for a prebuilt index to take makes no sense here: this is
	// where they come from.
	cfg.PrebuiltIndex = false
	sources, err := cfg.RegistryConfig.kinds(filepath.Join(tmp, datadir.UnpackDir), false, log)
	if err != nil {
		return err
	}
	client := prebuilt.New(sources.Images, prebuilt.Options{Version: version.String()})
	ctx, cancel := sources.Images.PullContext(ctx)
	defer cancel()
	ref, err := sources.Images.Resolve(ctx, cfg.Image)
	if err != nil {
		return err
	}
	if art, ok, err := client.Published(ctx, ref); err != nil {
		return fmt.Errorf("look for a published index of %s: %w", ref, err)
	} else if ok {
		_, err := fmt.Fprintf(out, "%s: already published for %s\n", art, ref)
		return err
	}

	fetcher, err := sources.Fetcher(source.Spec{Image: ref}, source.Credentials{})
	if err != nil {
		return err
	}
	fetched, err := fetcher.Fetch(ctx, func(string) bool { return false })
	if fetched.Cleanup != nil {
		defer fetched.Cleanup()
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", ref, err)
	}
	path := filepath.Join(tmp, "index.db")
	stats, err := index.Build(ctx, path, fetched.Content, publishBuiltAt)
	if err != nil {
		return fmt.Errorf("index %s: %w", ref, err)
	}
	log.Info("index built", "ref", ref, "packages", stats.Packages, "bundles", stats.Bundles, "problems", stats.Problems)
	published, err := client.Publish(ctx, ref, path)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(out, "%s: published for %s (%d bytes)\n", published.Ref, ref, published.Bytes)
	return err
}
