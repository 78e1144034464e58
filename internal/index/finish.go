package index

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/blang/semver/v4"
	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/alpha/property"
)

// finish does what needs a whole package: validation, version ranks,
// skipRange edges, display metadata and the search entry. The computation
// runs for all packages on every core; only the writes are serial. The
// display metadata is read back from the index, so it is written after
// everything else has been inserted.
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
		st := l.pkgs[name]
		if err := l.write(ctx, name, st, results[i]); err != nil {
			return err
		}
		// Done with them: let them go. describe needs only the package.
		results[i], st.bundles, st.channels, st.cfg.Deprecations = analysis{}, nil, nil, nil
	}
	if err := l.flushAll(ctx); err != nil {
		return err
	}
	for _, name := range names {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := l.describe(ctx, name, l.pkgs[name]); err != nil {
			return fmt.Errorf("index metadata of package %q: %w", name, err)
		}
		l.pkgs[name].cfg = declcfg.DeclarativeConfig{} // done with it: let it go
	}
	return l.flushAll(ctx)
}

// analysis is what finish computes for one package.
type analysis struct {
	// problem is operator-registry's verdict on the package, "" if valid.
	problem string
	// versions and ranks are, for each of the package's bundles, its
	// parsed version (nil when it does not parse) and its place in version
	// order.
	versions []*semver.Version
	ranks    []int
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
				results[i] = analyze(names[i], pkgs[names[i]])
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

func analyze(name string, st *pkgState) analysis {
	versions := make([]*semver.Version, len(st.bundles))
	for i, b := range st.bundles {
		if v, err := semver.Parse(b.version); err == nil {
			versions[i] = &v
		}
	}
	cfg := st.validationConfig(name)
	return analysis{
		problem:  validate(cfg),
		versions: versions,
		ranks:    rankOrder(st.bundles, versions),
		edges:    skipRangeEdges(cfg.Channels, st.bundles, versions),
	}
}

// validationConfig is the package as operator-registry's validation reads
// it: the package's own blobs, and its bundles (repeats included) with the
// properties validation reads and a stand-in for their objects, whose
// content it does not read.
func (st *pkgState) validationConfig(name string) declcfg.DeclarativeConfig {
	cfg := st.cfg
	cfg.Channels = make([]declcfg.Channel, len(st.channels))
	for i, blob := range st.channels {
		_ = json.Unmarshal(blob, &cfg.Channels[i]) // it decoded when it was loaded
	}
	cfg.Bundles = make([]declcfg.Bundle, len(st.bundles))
	for i, b := range st.bundles {
		cfg.Bundles[i] = declcfg.Bundle{Schema: declcfg.SchemaBundle, Name: b.name, Package: name, Image: b.image, Properties: b.props}
		if b.objects {
			cfg.Bundles[i].Objects = []string{""}
		}
	}
	return cfg
}

// write stores a package's problems, bundles and skipRange edges.
func (l *loader) write(ctx context.Context, name string, st *pkgState, a analysis) error {
	if a.problem != "" {
		if err := l.insert(ctx, "problems", name, a.problem); err != nil {
			return fmt.Errorf("record problems of package %q: %w", name, err)
		}
		l.stats.Problems++
	}
	for i, b := range st.bundles {
		if b.id == 0 {
			continue
		}
		var major, minor, patch any
		var pre string
		if v := a.versions[i]; v != nil {
			major, minor, patch = int64(v.Major), int64(v.Minor), int64(v.Patch)
			pre = preRelease(*v)
		}
		if err := l.insert(ctx, "bundles", b.id, name, b.name, b.version, b.release, b.image, b.blobID,
			major, minor, patch, pre, a.ranks[i]); err != nil {
			return fmt.Errorf("index bundle %q of package %q: %w", b.name, name, err)
		}
	}
	for _, e := range a.edges {
		if err := l.insert(ctx, "skip_range_edges", name, e[0], e[1], e[2]); err != nil {
			return fmt.Errorf("index skipRange edges of package %q: %w", name, err)
		}
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

// preRelease returns the pre-release part of v as written ("" for a release).
func preRelease(v semver.Version) string {
	parts := make([]string, len(v.Pre))
	for i, p := range v.Pre {
		parts[i] = p.String()
	}
	return strings.Join(parts, ".")
}

// rankOrder places the package's indexed bundles in semver order, so
// "newest first" is an indexed ORDER BY on the rank (0 = lowest), and
// returns each bundle's rank. Versions that do not parse sort below all
// others; ties go by bundle name.
func rankOrder(bundles []bundleRow, versions []*semver.Version) []int {
	var order []int
	for i, b := range bundles {
		if b.id != 0 {
			order = append(order, i)
		}
	}
	slices.SortStableFunc(order, func(i, j int) int {
		a, b := versions[i], versions[j]
		switch {
		case a == nil && b != nil:
			return -1
		case a != nil && b == nil:
			return 1
		case a != nil && b != nil:
			if c := a.Compare(*b); c != 0 {
				return c
			}
		}
		return strings.Compare(bundles[i].name, bundles[j].name)
	})
	ranks := make([]int, len(bundles))
	for rank, i := range order {
		ranks[i] = rank
	}
	return ranks
}

// skipRangeEdges finds, for every entry with a skipRange, the bundles of
// the package whose version it contains, so an upgrades query is one
// indexed lookup rather than an evaluation of every range in the package.
// Ranges are parsed with blang/semver's ParseRange, as operator-registry
// does; one that does not parse matches nothing (validation reports it).
func skipRangeEdges(channels []declcfg.Channel, bundles []bundleRow, versions []*semver.Version) [][3]string {
	var edges [][3]string
	seen := map[string]bool{}
	for _, ch := range channels {
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
			for i, b := range bundles {
				if v := versions[i]; b.id != 0 && v != nil && b.name != e.Name && inRange(*v) {
					edges = append(edges, [3]string{b.name, ch.Name, e.Name})
				}
			}
		}
	}
	// Sorted, so that an entry a channel lists twice gives its edges once
	// (they are the table's key).
	slices.SortFunc(edges, func(a, b [3]string) int {
		return cmp.Or(strings.Compare(a[0], b[0]), strings.Compare(a[1], b[1]), strings.Compare(a[2], b[2]))
	})
	return slices.Compact(edges)
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

// describe writes the package's row, with the display metadata a console
// shows for it (see Display), and its full-text search entry.
func (l *loader) describe(ctx context.Context, name string, st *pkgState) error {
	if len(st.cfg.Packages) == 0 {
		return nil // bundles or channels of a package that was never declared
	}
	pkg := st.cfg.Packages[0]
	var meta property.CSVMetadata
	var display any
	if id, ok := st.bundleIDs[st.heads[pkg.DefaultChannel]]; ok {
		var value string
		err := l.tx.QueryRowContext(ctx, metadataQuery, id).Scan(&value)
		switch {
		case err == nil:
			_ = json.Unmarshal([]byte(value), &meta) // only display data: a bad value shows nothing
			encoded, err := json.Marshal(displayOf(meta))
			if err != nil {
				return err
			}
			display = string(encoded)
		case !errors.Is(err, sql.ErrNoRows):
			return err
		}
	}
	var iconData []byte
	var iconType string
	if pkg.Icon != nil {
		iconData, iconType = pkg.Icon.Data, pkg.Icon.MediaType
	}
	if err := l.insert(ctx, "packages", name, pkg.DefaultChannel, pkg.Description, iconData, iconType, display); err != nil {
		return err
	}
	description := pkg.Description
	if description == "" {
		description = meta.Description
	}
	if short := meta.Annotations["description"]; short != "" {
		description = short + "\n" + description
	}
	return l.insert(ctx, "package_search", name, meta.DisplayName, strings.Join(meta.Keywords, " "), meta.Provider.Name, description)
}

// metadataQuery reads the olm.csv.metadata of a bundle.
const metadataQuery = `SELECT value FROM property_values WHERE bundle_id = ? AND type = 'olm.csv.metadata' ORDER BY position LIMIT 1`
