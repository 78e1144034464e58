package index

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

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
	for _, name := range names {
		if err := ctx.Err(); err != nil {
			return err
		}
		st := l.pkgs[name]
		if err := l.validate(ctx, name, st); err != nil {
			return err
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

// validate runs operator-registry's own conversion and validation, so a
// package is judged exactly as opm would judge it. A package that fails is
// kept; its problems are recorded and served.
func (l *loader) validate(ctx context.Context, name string, st *pkgState) error {
	var problem string
	m, err := declcfg.ConvertToModel(st.cfg)
	if err != nil {
		problem = err.Error()
	} else if err := m.Validate(); err != nil {
		problem = err.Error()
	}
	if problem == "" {
		return nil
	}
	if _, err := l.exec(ctx, "problem", name, problem); err != nil {
		return fmt.Errorf("record problems of package %q: %w", name, err)
	}
	l.stats.Problems++
	return nil
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
		bundles = append(bundles, r)
		delete(st.bundleIDs, b.Name) // a duplicate bundle name ranks once
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
	head := st.heads[pkg.DefaultChannel]
	var metaValue json.RawMessage
	var meta property.CSVMetadata
	for _, b := range st.cfg.Bundles {
		if b.Name != head || head == "" {
			continue
		}
		for _, p := range b.Properties {
			if p.Type == property.TypeCSVMetadata {
				metaValue = p.Value
				_ = json.Unmarshal(p.Value, &meta) // a bad value is a validation problem
				break
			}
		}
		break
	}
	if metaValue != nil {
		if _, err := l.exec(ctx, "metadata", string(metaValue), name); err != nil {
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
