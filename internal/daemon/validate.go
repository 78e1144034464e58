package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/go-logr/logr"
	"github.com/spf13/pflag"

	"github.com/catalogd/catalogd/internal/catalogsync"
	"github.com/catalogd/catalogd/internal/datadir"
	"github.com/catalogd/catalogd/internal/fbc"
	"github.com/catalogd/catalogd/internal/index"
	"github.com/catalogd/catalogd/internal/source"
	"github.com/catalogd/catalogd/internal/termtext"
)

// ValidateOptions are the flags of `catalogd validate`.
type ValidateOptions struct {
	RegistryOptions
	Output string
}

// BindFlags declares the flags of `catalogd validate` on fs.
func (o *ValidateOptions) BindFlags(fs *pflag.FlagSet) {
	fs.StringVarP(&o.Output, "output", "o", "text", "output format `text|json`: text as file:line:col: package: message, or json")
	o.RegistryOptions.bindFlags(fs)
}

// ValidateConfig is the validated command line of `catalogd validate`.
type ValidateConfig struct {
	RegistryConfig
	// Catalog is the source to validate; its Name is unused.
	Catalog Catalog
	JSON    bool
}

// Validate checks the flags of `catalogd validate`; args are the positional
// arguments. Every error is a mistake in the command line, but a
// MissingCatalogError.
func (o *ValidateOptions) Validate(args []string) (ValidateConfig, error) {
	if len(args) != 1 {
		return ValidateConfig{}, fmt.Errorf("want one catalog source (%s), got %d arguments", source.Forms, len(args))
	}
	if o.Output != "text" && o.Output != "json" {
		return ValidateConfig{}, fmt.Errorf("--output %q: want text or json", o.Output)
	}
	reg, err := o.RegistryOptions.Validate()
	if err != nil {
		return ValidateConfig{}, err
	}
	spec, err := source.Parse(args[0])
	switch {
	case errors.Is(err, source.ErrNoDirectory):
		return ValidateConfig{}, MissingCatalogError{err}
	case err != nil:
		return ValidateConfig{}, err
	}
	return ValidateConfig{RegistryConfig: reg, Catalog: Catalog{Value: args[0], Source: spec}, JSON: o.Output == "json"}, nil
}

// Problem is one thing wrong with a catalog, as `catalogd validate` prints
// it. For content that is not a catalog at all (a file that does not
// parse), which stops the build at its first such fault, Package is the
// package the file or its directory named before the fault, if any.
type Problem struct {
	Position string `json:"position"`
	Package  string `json:"package,omitempty"`
	Message  string `json:"message"`
}

// Report is what `catalogd validate` found.
type Report struct {
	Catalog  string    `json:"catalog"`
	Digest   string    `json:"digest,omitempty"`
	Packages int       `json:"packages"`
	Bundles  int       `json:"bundles"`
	Problems []Problem `json:"problems"`
}

// Validate checks the catalog as the server would index it and writes
// every problem the server would report to out: text lines
// file:line:col: package: message, or one JSON Report. The verdicts are
// the server's because the code is: the same fetch, parser and
// per-package validation (index.Check), without the files only serving
// reads. It returns the number of problems; an error is a failure to read
// the catalog at all (a pull that failed, a directory that is not there),
// not a problem of its content.
func Validate(ctx context.Context, cfg ValidateConfig, out io.Writer, log logr.Logger) (int, error) {
	tmp, err := os.MkdirTemp("", "catalogd-validate-")
	if err != nil {
		return 0, fmt.Errorf("create temporary directory: %w", err)
	}
	defer os.RemoveAll(tmp)

	sources, err := cfg.RegistryConfig.kinds(filepath.Join(tmp, datadir.UnpackDir), true, log)
	if err != nil {
		return 0, err
	}
	fetcher, err := sources.Fetcher(cfg.Catalog.Source, source.Credentials{})
	if err != nil {
		return 0, err
	}
	fetched, err := fetcher.Fetch(ctx, func(string) bool { return false })
	if fetched.Cleanup != nil {
		defer fetched.Cleanup()
	}
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", cfg.Catalog.Value, err)
	}

	report := Report{Catalog: cfg.Catalog.Value, Digest: fetched.Digest, Problems: []Problem{}}
	stats, problems, err := index.Check(ctx, tmp, fetched.Content)
	var parseErr *fbc.Error
	switch {
	case errors.As(err, &parseErr):
		report.Problems = append(report.Problems, Problem{Position: parseErr.Pos.String(), Package: parseErr.Package, Message: parseErr.Err.Error()})
	case errors.Is(err, index.ErrInvalidCatalog):
		report.Problems = append(report.Problems, Problem{Message: err.Error()})
	case err != nil:
		return 0, fmt.Errorf("index %s: %w", cfg.Catalog.Value, err)
	default:
		report.Packages, report.Bundles = stats.Packages, stats.Bundles
		for _, p := range problems {
			report.Problems = append(report.Problems, Problem{Position: p.Position, Package: p.Package, Message: p.Message})
		}
		// The server serves such a catalog with a warning; validating it
		// is asking whether it is fit to publish, and it is not.
		if stats.Packages == 0 {
			report.Problems = append(report.Problems, Problem{Message: catalogsync.NoPackageHint})
		}
	}
	if err := writeReport(out, report, cfg.JSON); err != nil {
		return 0, err
	}
	return len(report.Problems), nil
}

// writeReport writes r as text lines, fit for a terminal, or as one JSON
// document.
func writeReport(out io.Writer, r Report, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	for _, p := range r.Problems {
		line := p.Message
		if p.Package != "" {
			line = p.Package + ": " + line
		}
		if p.Position != "" {
			line = p.Position + ": " + line
		}
		// A problem line names the catalog's files, packages and bundles,
		// which a third-party image can fill with terminal control
		// sequences; -o json keeps them exact for tools.
		if _, err := fmt.Fprintln(out, termtext.Safe(line)); err != nil {
			return err
		}
	}
	return nil
}
