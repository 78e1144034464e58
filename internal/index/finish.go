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

// finish does what needs a whole package: validation, version ranks,
// skipRange edges, display metadata and the search entry. The computation
// runs for all packages on every core; only the writes are serial.
func (l *loader) finish(ctx context.Context) error {
	names := make([]string, 0, len(l.pkgs))
	for name := range l.pkgs {
		names = append(names, name)
	}
	sort.Strings(names)
	results := analyzeAll(ctx, names, l.pkgs)
	for i, name := range names {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := l.write(ctx, name, l.pkgs[name], results[i]); err != nil {
			return err
		}
		l.pkgs[name].cfg = declcfg.DeclarativeConfig{} // done with it: let it go
	}
	return nil
}

// analysis is what finish computes for one package.
type analysis struct {
	// problem is operator-registry's verdict on the package, "" if valid.
	problem string
	// ranked holds the package's bundle ids from the lowest version up.
	ranked []int64
	// edges are the skipRange upgrade edges: from, channel, to.
	edges [][3]string
}

// analyzeAll analyzes every package on every core and returns the results
// in the order of names.
func analyzeAll(ctx context.Context, names []string, pkgs map[string]*pkgState) []analysis {
	results := make([]analysis, len(names))
	next := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < runtime.GOMAXPROCS(0); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				results[i] = analyze(pkgs[names[i]])
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
	return results
}

func analyze(st *pkgState) analysis {
	ranked, versions := rankOrder(st)
	return analysis{problem: validate(st.cfg), ranked: ranked, edges: skipRangeEdges(st, versions)}
}

// write stores a package's analysis and display metadata.
func (l *loader) write(ctx context.Context, name string, st *pkgState, a analysis) error {
	if a.problem != "" {
		if _, err := l.exec(ctx, "problem", name, a.problem); err != nil {
			return fmt.Errorf("record problems of package %q: %w", name, err)
		}
		l.stats.Problems++
	}
	for rank, id := range a.ranked {
		if _, err := l.exec(ctx, "rank", rank, id); err != nil {
			return fmt.Errorf("rank versions of package %q: %w", name, err)
		}
	}
	for _, e := range a.edges {
		if _, err := l.exec(ctx, "edge", name, e[0], e[1], e[2]); err != nil {
			return fmt.Errorf("index skipRange edges of package %q: %w", name, err)
		}
	}
	if err := l.describe(ctx, name, st); err != nil {
		return fmt.Errorf("index metadata of package %q: %w", name, err)
	}
	return nil
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

// rankOrder sorts the package's bundles in semver order, so "newest first"
// is an indexed ORDER BY on the rank. Versions that do not parse sort below
// all others; ties go by bundle name. It also returns the parsed versions.
func rankOrder(st *pkgState) ([]int64, map[string]semver.Version) {
	type ranked struct {
		id      int64
		name    string
		version *semver.Version
	}
	var bundles []ranked
	seen := map[string]bool{}
	for _, b := range st.cfg.Bundles {
		id, ok := st.bundleIDs[b.Name]
		if !ok || seen[b.Name] {
			continue // not indexed, or a duplicate name: ranked once
		}
		seen[b.Name] = true
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
	ids := make([]int64, len(bundles))
	versions := map[string]semver.Version{}
	for i, b := range bundles {
		ids[i] = b.id
		if b.version != nil {
			versions[b.name] = *b.version
		}
	}
	return ids, versions
}

// skipRangeEdges finds, for every entry with a skipRange, the bundles of
// the package whose version it contains, so an upgrades query is one
// indexed lookup rather than an evaluation of every range in the package.
// Ranges are parsed with blang/semver's ParseRange, as operator-registry
// does; one that does not parse matches nothing (validation reports it).
func skipRangeEdges(st *pkgState, versions map[string]semver.Version) [][3]string {
	var edges [][3]string
	seen := map[string]bool{}
	for _, ch := range st.cfg.Channels {
		if seen[ch.Name] {
			continue // a duplicate channel: the first one is the indexed one
		}
		seen[ch.Name] = true
		for _, e := range ch.Entries {
			if e.SkipRange == "" {
				continue
			}
			inRange, err := semver.ParseRange(e.SkipRange)
			if err != nil {
				continue
			}
			for from, v := range versions {
				if from != e.Name && inRange(v) {
					edges = append(edges, [3]string{from, ch.Name, e.Name})
				}
			}
		}
	}
	// Map order is random; sorted edges keep a build's output deterministic.
	sort.Slice(edges, func(i, j int) bool {
		a, b := edges[i], edges[j]
		if a[0] != b[0] {
			return a[0] < b[0]
		}
		if a[1] != b[1] {
			return a[1] < b[1]
		}
		return a[2] < b[2]
	})
	return edges
}

// Display is what a console lists for a package, taken from the
// olm.csv.metadata of its default channel's head when the index is built,
// so that listing packages does not decode whole CSV metadata documents
// (long descriptions, CRD descriptions) on every request.
type Display struct {
	DisplayName      string              `json:"displayName,omitempty"`
	Provider         string              `json:"provider,omitempty"`
	Keywords         []string            `json:"keywords,omitempty"`
	Maturity         string              `json:"maturity,omitempty"`
	ShortDescription string              `json:"shortDescription,omitempty"`
	Links            []DisplayLink       `json:"links,omitempty"`
	Maintainers      []DisplayMaintainer `json:"maintainers,omitempty"`
}

// DisplayLink is a link of a package's metadata.
type DisplayLink struct {
	Name string `json:"name"`
	URL  string `json:"url"`
}

// DisplayMaintainer is a maintainer of a package.
type DisplayMaintainer struct {
	Name  string `json:"name"`
	Email string `json:"email,omitempty"`
}

// displayOf picks the listed fields; the short description is the
// "description" annotation, which OLM shows in lists.
func displayOf(m property.CSVMetadata) Display {
	d := Display{DisplayName: m.DisplayName, Provider: m.Provider.Name, Keywords: m.Keywords,
		Maturity: m.Maturity, ShortDescription: m.Annotations["description"]}
	for _, l := range m.Links {
		d.Links = append(d.Links, DisplayLink{Name: l.Name, URL: l.URL})
	}
	for _, mt := range m.Maintainers {
		d.Maintainers = append(d.Maintainers, DisplayMaintainer{Name: mt.Name, Email: mt.Email})
	}
	return d
}

// describe stores the display metadata a console shows for a package (see
// Display) and the package's full-text search entry.
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
			_ = json.Unmarshal([]byte(value), &meta) // only display data: a bad value shows nothing
			display, err := json.Marshal(displayOf(meta))
			if err != nil {
				return err
			}
			if _, err := l.exec(ctx, "metadata", string(display), name); err != nil {
				return err
			}
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
