package index

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"sort"
	"strings"
	"sync"

	"github.com/blang/semver/v4"
	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/alpha/property"
)

// finish does, package by package, what needs the whole package: validation,
// version ranks, display metadata and the search entry.
func (l *loader) finish(ctx context.Context) error {
	names := make([]string, 0, len(l.pkgs))
	for name := range l.pkgs {
		names = append(names, name)
	}
	sort.Strings(names)
	problems := validateAll(ctx, names, l.pkgs)
	for i, name := range names {
		if err := ctx.Err(); err != nil {
			return err
		}
		st := l.pkgs[name]
		if problems[i] != "" {
			if _, err := l.exec(ctx, "problem", name, problems[i]); err != nil {
				return fmt.Errorf("record problems of package %q: %w", name, err)
			}
			l.stats.Problems++
		}
		if err := l.rank(ctx, st); err != nil {
			return fmt.Errorf("rank versions of package %q: %w", name, err)
		}
		if err := l.describe(ctx, name, st); err != nil {
			return fmt.Errorf("index metadata of package %q: %w", name, err)
		}
		st.cfg = declcfg.DeclarativeConfig{} // done with it: let it go
	}
	return nil
}

// validateAll validates the packages on every core (validation is pure
// computation, most of a build's CPU after parsing) and returns each
// package's problem, "" for none, in the order of names.
func validateAll(ctx context.Context, names []string, pkgs map[string]*pkgState) []string {
	problems := make([]string, len(names))
	next := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < runtime.GOMAXPROCS(0); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				problems[i] = validate(pkgs[names[i]].cfg)
			}
		}()
	}
	for i := range names {
		if ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	return problems
}

// validate runs operator-registry's own conversion and validation, so a
// package is judged as opm would judge it. A package that fails is kept;
// its problems are recorded and served.
func validate(cfg declcfg.DeclarativeConfig) string {
	m, err := declcfg.ConvertToModel(cfg)
	if err != nil {
		return err.Error()
	}
	if err := m.Validate(); err != nil {
		return err.Error()
	}
	return ""
}

// rank stores each bundle's place in semver order within its package, so
// "newest first" is an indexed ORDER BY. Versions that do not parse sort
// below all others; ties go by bundle name.
func (l *loader) rank(ctx context.Context, st *pkgState) error {
	type ranked struct {
		id      int64
		name    string
		version *semver.Version
	}
	var bundles []ranked
	seen := map[string]bool{}
	for _, b := range st.cfg.Bundles {
		id, ok := st.bundleIDs[b.Name]
		if !ok {
			continue
		}
		r := ranked{id: id, name: b.Name}
		for _, p := range b.Properties {
			var pp packageProperty
			if p.Type == property.TypePackage && json.Unmarshal(p.Value, &pp) == nil {
				if v, err := semver.Parse(pp.Version); err == nil {
					r.version = &v
				}
				break
			}
		}
		if seen[b.Name] {
			continue // a duplicate bundle name ranks once
		}
		seen[b.Name] = true
		bundles = append(bundles, r)
	}
	sort.SliceStable(bundles, func(i, j int) bool {
		a, b := bundles[i], bundles[j]
		switch {
		case a.version == nil && b.version != nil:
			return true
		case a.version != nil && b.version == nil:
			return false
		case a.version != nil && b.version != nil:
			if c := a.version.Compare(*b.version); c != 0 {
				return c < 0
			}
		}
		return a.name < b.name
	})
	for i, b := range bundles {
		if _, err := l.exec(ctx, "rank", i, b.id); err != nil {
			return err
		}
	}
	return nil
}

// describe stores the display metadata a console shows for a package: the
// olm.csv.metadata of its default channel's head, and the full-text entry.
func (l *loader) describe(ctx context.Context, name string, st *pkgState) error {
	if len(st.cfg.Packages) == 0 {
		return nil // bundles or channels of a package that was never declared
	}
	pkg := st.cfg.Packages[0]
	var meta property.CSVMetadata
	if id, ok := st.bundleIDs[st.heads[pkg.DefaultChannel]]; ok {
		var value string
		err := l.stmts["metadataOf"].QueryRowContext(ctx, id).Scan(&value)
		switch {
		case err == nil:
			if _, err := l.exec(ctx, "metadata", value, name); err != nil {
				return err
			}
			_ = json.Unmarshal([]byte(value), &meta) // only display data: a bad value shows nothing
		case !errors.Is(err, sql.ErrNoRows):
			return err
		}
	}
	description := pkg.Description
	if description == "" {
		description = meta.Description
	}
	if short := meta.Annotations["description"]; short != "" {
		description = short + "\n" + description
	}
	_, err := l.exec(ctx, "search", name, meta.DisplayName, strings.Join(meta.Keywords, " "), meta.Provider.Name, description)
	return err
}
