package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/go-logr/logr"
	"github.com/jmoiron/sqlx"
	"github.com/spf13/pflag"

	"github.com/catalogd/catalogd/internal/catalogsync"
	"github.com/catalogd/catalogd/internal/datadir"
	"github.com/catalogd/catalogd/internal/fbc"
	"github.com/catalogd/catalogd/internal/index"
	"github.com/catalogd/catalogd/internal/query"
)

// ValidateOptions are the flags of `catalogd validate`.
type ValidateOptions struct {
	RegistryOptions
	Output string
}

// BindFlags declares the flags of `catalogd validate` on fs.
func (o *ValidateOptions) BindFlags(fs *pflag.FlagSet) {
	fs.StringVarP(&o.Output, "output", "o", "text", "output format: text (file:line:col: package: message) or json")
	o.RegistryOptions.bindFlags(fs)
}

// ValidateConfig is the validated command line of `catalogd validate`.
type ValidateConfig struct {
	RegistryConfig
	// Catalog is the directory or image to validate; its Name is unused.
	Catalog Catalog
	JSON    bool
}

// Validate checks the flags of `catalogd validate`; args are the positional
// arguments. Every error is a mistake in the command line.
func (o *ValidateOptions) Validate(args []string) (ValidateConfig, error) {
	if len(args) != 1 {
		return ValidateConfig{}, fmt.Errorf("want one catalog directory or image, got %d arguments", len(args))
	}
	if o.Output != "text" && o.Output != "json" {
		return ValidateConfig{}, fmt.Errorf("--output %q: want text or json", o.Output)
	}
	reg, err := o.RegistryOptions.Validate()
	if err != nil {
		return ValidateConfig{}, err
	}
	c, err := parseLocation(args[0])
	if err != nil {
		return ValidateConfig{}, err
	}
	return ValidateConfig{RegistryConfig: reg, Catalog: c, JSON: o.Output == "json"}, nil
}

// Problem is one thing wrong with a catalog, as `catalogd validate` prints
// it. Package is empty for content that is not a catalog at all (a file
// that does not parse), which stops the build at its first such fault.
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

// Validate indexes the catalog into a temporary directory, as the server
// would, and writes every problem the server would report to out: text
// lines file:line:col: package: message, or one JSON Report. The verdicts
// are the server's because the code is: the same fetch, parser and index.
// It returns the number of problems; an error is a failure to read the
// catalog at all (a pull that failed, a directory that is not there), not
// a problem of its content.
func Validate(ctx context.Context, cfg ValidateConfig, out io.Writer, log logr.Logger) (int, error) {
	tmp, err := os.MkdirTemp("", "catalogd-validate-")
	if err != nil {
		return 0, fmt.Errorf("create temporary directory: %w", err)
	}
	defer os.RemoveAll(tmp)

	var fetcher catalogsync.Fetcher = catalogsync.DirFetcher{Path: cfg.Catalog.Dir}
	if cfg.Catalog.Image != nil {
		unpacker, err := cfg.RegistryConfig.unpacker(log)
		if err != nil {
			return 0, err
		}
		fetcher = catalogsync.ImageFetcher{Ref: cfg.Catalog.Image, Unpacker: unpacker, TempDir: filepath.Join(tmp, datadir.UnpackDir)}
	}
	fetched, err := fetcher.Fetch(ctx, func(string) bool { return false })
	if fetched.Cleanup != nil {
		defer fetched.Cleanup()
	}
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", cfg.Catalog.Value, err)
	}

	report := Report{Catalog: cfg.Catalog.Value, Digest: fetched.Digest, Problems: []Problem{}}
	path := filepath.Join(tmp, "index.db")
	stats, err := index.Build(ctx, path, fetched.Content, time.Now())
	var parseErr *fbc.Error
	switch {
	case errors.As(err, &parseErr):
		report.Problems = append(report.Problems, Problem{Position: parseErr.Pos.String(), Message: parseErr.Err.Error()})
	case errors.Is(err, index.ErrInvalidCatalog):
		report.Problems = append(report.Problems, Problem{Message: err.Error()})
	case err != nil:
		return 0, fmt.Errorf("index %s: %w", cfg.Catalog.Value, err)
	default:
		report.Packages, report.Bundles = stats.Packages, stats.Bundles
		if report.Problems, err = readProblems(ctx, path); err != nil {
			return 0, err
		}
	}
	if err := writeReport(out, report, cfg.JSON); err != nil {
		return 0, err
	}
	return len(report.Problems), nil
}

// readProblems reads every problem recorded in the index file at path.
// It opens the file itself rather than through a store: a store's swap
// syncs every file to disk, which a temporary index does not need and which
// cost validate a fifth of its time on the bench catalog.
func readProblems(ctx context.Context, path string) ([]Problem, error) {
	db, err := sqlx.Open("sqlite", index.FileURI(path, url.Values{"mode": {"ro"}}))
	if err != nil {
		return nil, fmt.Errorf("open index: %w", err)
	}
	defer db.Close()
	content, err := os.Open(index.ContentPath(path))
	if err != nil {
		return nil, fmt.Errorf("open index content: %w", err)
	}
	defer content.Close()
	cat := query.New(db, content)
	defer cat.Close()
	found, err := cat.Problems(ctx, "")
	if err != nil {
		return nil, fmt.Errorf("read problems: %w", err)
	}
	out := make([]Problem, 0, len(found))
	for _, p := range found {
		out = append(out, Problem{Position: p.Position, Package: p.Package, Message: p.Message})
	}
	return out, nil
}

// writeReport writes r as text lines, or as one JSON document.
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
		if _, err := fmt.Fprintln(out, line); err != nil {
			return err
		}
	}
	return nil
}
