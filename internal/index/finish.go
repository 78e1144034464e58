package index

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sort"
	"strings"

	"github.com/blang/semver/v4"
	"github.com/operator-framework/operator-registry/alpha/property"

	"github.com/catalogd/catalogd/internal/declcfg"
)

// finish does what needs a whole package: validation, version ranks,
// display metadata and the search entry. Packages are read
// back from the work tables a few at a time, analyzed on every core, and
// written in name order (the writes are serial), so memory holds a few
// packages, not the catalog.
func (l *loader) finish(ctx context.Context) error {
	if err := l.flushAll(ctx); err != nil {
		return err
	}
	names := make([]string, 0, len(l.pkgs))
	for name := range l.pkgs {
		names = append(names, name)
	}
	// An incremental build carries the packages it did not load over from
	// the previous index, in their place in name order, a run at a time.
	carried := map[string]bool{}
	var runs map[string]string
	if l.plan != nil {
		for _, name := range l.plan.carried {
			carried[name] = true
			names = append(names, name)
		}
		runs = l.plan.carriedRuns()
	}
	sort.Strings(names)

	// An analysis is started window packages ahead of the writes; on an
	// early return, those under way finish into their buffered channels.
	window := 2 * runtime.GOMAXPROCS(0)
	results := make([]chan analysis, len(names))
	start := func(i int) error {
		if carried[names[i]] {
			return nil
		}
		pkg, err := l.readPackage(ctx, names[i])
		if err != nil {
			return fmt.Errorf("read package %q back: %w", names[i], err)
		}
		results[i] = make(chan analysis, 1)
		go func() { results[i] <- analyze(pkg) }()
		return nil
	}
	for i := range min(window, len(names)) {
		if err := start(i); err != nil {
			return err
		}
	}
	for i, name := range names {
		if next := i + window; next < len(names) {
			if err := start(next); err != nil {
				return err
			}
		}
		if carried[name] {
			if last, ok := runs[name]; ok {
				if err := l.carry(ctx, name, last); err != nil {
					return err
				}
			}
			continue
		}
		var a analysis
		select {
		case a = <-results[i]:
		case <-ctx.Done():
			return ctx.Err()
		}
		results[i] = nil
		if l.checkOnly {
			l.keep(a)
		} else {
			if err := l.write(ctx, a); err != nil {
				return err
			}
			if err := l.describe(ctx, a); err != nil {
				return fmt.Errorf("index metadata of package %q: %w", name, err)
			}
		}
	}
	if l.checkOnly {
		return nil
	}
	if err := l.flushAll(ctx); err != nil {
		return err
	}
	// Their pages go to the free list, which the secondary indexes, created
	// next, take up again.
	if _, err := l.tx.ExecContext(ctx, `DROP TABLE work_blobs; DROP TABLE work_bundles; DROP TABLE work_digests`); err != nil {
		return fmt.Errorf("drop work tables: %w", err)
	}
	return nil
}

// pkgData is a package as finish reads it back: its olm.package,
// olm.channel and olm.deprecations blobs, and its bundles in walk order.
// The reading is serial; decode, which runs with the analysis, is not.
type pkgData struct {
	name    string
	blobs   []rawBlob
	cfg     declcfg.DeclarativeConfig
	bundles []bundleRow
	// at holds where each blob of cfg starts (see fbc.Position), by
	// schema, in the order of cfg's lists.
	at blobPositions
	// first is where the package's first blob starts.
	first string
}

// blobPositions are where a package's olm.package, olm.channel and
// olm.deprecations blobs start, in the order of their lists in
// declcfg.DeclarativeConfig.
type blobPositions struct{ packages, channels, deprecations []string }

type rawBlob struct {
	id     int64
	schema string
	pos    string
	data   []byte
}

// bundleRow is a bundle as the walk noted it: its row, and what
// checkBundle found wrong with it.
type bundleRow struct {
	id, blobID                    int64
	name, version, release, image string
	// repeat says an earlier bundle of the package has the same name; only
	// the first is indexed.
	repeat bool
	// problems are checkBundle's, stored until decoded.
	problems       []string
	storedProblems []byte
	// pos is where the bundle's blob starts.
	pos string
}

// The statements that read a package back.
const (
	readBlobsQuery = `SELECT w.blob_id, b.schema, w.pos, b.offset, b.length FROM work_blobs w
		JOIN blobs b ON b.id = w.blob_id WHERE w.package = ? ORDER BY w.blob_id`
	readBundlesQuery = `SELECT id, blob_id, name, version, release, image, problems, pos
		FROM work_bundles WHERE package = ? ORDER BY id`
)

// readPackage reads a package back from the work tables.
func (l *loader) readPackage(ctx context.Context, name string) (*pkgData, error) {
	pkg := &pkgData{name: name}
	err := l.each(ctx, readBlobsQuery, name, func(rows *sql.Rows) error {
		var b rawBlob
		var offset, length int64
		if err := rows.Scan(&b.id, &b.schema, &b.pos, &offset, &length); err != nil {
			return err
		}
		var err error
		if b.data, err = l.readContent(offset, length); err != nil {
			return err
		}
		pkg.blobs = append(pkg.blobs, b)
		return nil
	})
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	err = l.each(ctx, readBundlesQuery, name, func(rows *sql.Rows) error {
		var b bundleRow
		if err := rows.Scan(&b.id, &b.blobID, &b.name, &b.version, &b.release, &b.image, &b.storedProblems, &b.pos); err != nil {
			return err
		}
		b.repeat = seen[b.name]
		seen[b.name] = true
		pkg.bundles = append(pkg.bundles, b)
		return nil
	})
	// Blobs and bundles are each in walk order: the first of the package
	// is the first of one of them.
	switch {
	case len(pkg.blobs) > 0 && (len(pkg.bundles) == 0 || pkg.blobs[0].id < pkg.bundles[0].blobID):
		pkg.first = pkg.blobs[0].pos
	case len(pkg.bundles) > 0:
		pkg.first = pkg.bundles[0].pos
	}
	return pkg, err
}

// readContent reads length bytes at offset of the content file, which the
// walk wrote and flushed.
func (l *loader) readContent(offset, length int64) ([]byte, error) {
	data := make([]byte, length)
	if _, err := l.file.ReadAt(data, offset); err != nil {
		return nil, fmt.Errorf("read content file at %d: %w", offset, fileError(err))
	}
	return data, nil
}

// each runs a prepared query with one argument and calls fn for each row.
func (l *loader) each(ctx context.Context, query string, arg any, fn func(*sql.Rows) error) error {
	stmt, ok := l.stmts[query]
	if !ok {
		var err error
		if stmt, err = l.tx.PrepareContext(ctx, query); err != nil {
			return err
		}
		l.stmts[query] = stmt
	}
	rows, err := stmt.QueryContext(ctx, arg)
	if err != nil {
		return err
	}
	return eachRow(rows, fn)
}

// decode decodes what readPackage read. Each blob decoded when it was
// loaded, and each property list when it was stored.
func (pkg *pkgData) decode() {
	for _, b := range pkg.blobs {
		switch b.schema {
		case declcfg.SchemaPackage:
			var p declcfg.Package
			_ = json.Unmarshal(b.data, &p)
			pkg.cfg.Packages = append(pkg.cfg.Packages, p)
			pkg.at.packages = append(pkg.at.packages, b.pos)
		case declcfg.SchemaChannel:
			var c declcfg.Channel
			_ = json.Unmarshal(b.data, &c)
			pkg.cfg.Channels = append(pkg.cfg.Channels, c)
			pkg.at.channels = append(pkg.at.channels, b.pos)
		case declcfg.SchemaDeprecation:
			var d declcfg.Deprecation
			_ = json.Unmarshal(b.data, &d)
			pkg.cfg.Deprecations = append(pkg.cfg.Deprecations, d)
			pkg.at.deprecations = append(pkg.at.deprecations, b.pos)
		}
	}
	pkg.blobs = nil
	for i := range pkg.bundles {
		b := &pkg.bundles[i]
		_ = json.Unmarshal(b.storedProblems, &b.problems)
		b.storedProblems = nil
	}
}

// bundleCounts counts the package's bundles by name, repeats included.
func (pkg *pkgData) bundleCounts() map[string]int {
	counts := make(map[string]int, len(pkg.bundles))
	for _, b := range pkg.bundles {
		counts[b.name]++
	}
	return counts
}

// versionless names the package's indexed bundles that have no version,
// which checkBundle reports and which can be no channel's head.
func (pkg *pkgData) versionless() map[string]bool {
	out := map[string]bool{}
	for _, b := range pkg.bundles {
		if !b.repeat && b.version == "" {
			out[b.name] = true
		}
	}
	return out
}

// analysis is what finish computes for one package.
type analysis struct {
	*pkgData
	// problems are the package's problems (see validatePackage), none if
	// operator-registry accepts it.
	problems []problem
	// heads are the heads of the package's indexed channels, the first
	// of each name, in catalog order.
	heads []channelHead
	// versions and ranks are, for each of the package's bundles, its
	// parsed version (nil when it does not parse) and its place in version
	// order.
	versions []*semver.Version
	ranks    []int
}

func analyze(pkg *pkgData) analysis {
	pkg.decode()
	versions := make([]*semver.Version, len(pkg.bundles))
	for i, b := range pkg.bundles {
		if v, err := semver.Parse(b.version); err == nil {
			versions[i] = &v
		}
	}
	bundles, versionless := pkg.bundleCounts(), pkg.versionless()
	var heads []channelHead
	indexed := map[string]bool{}
	for i := range pkg.cfg.Channels {
		c := &pkg.cfg.Channels[i]
		if !indexed[c.Name] {
			indexed[c.Name] = true
			heads = append(heads, newChannelHead(newIndexedChannel(c, pkg.at.channels[i]), bundles, versionless))
		}
	}
	return analysis{
		pkgData:  pkg,
		problems: validatePackage(pkg, heads),
		heads:    heads,
		versions: versions,
		ranks:    rankOrder(pkg.bundles, versions),
	}
}

// bundleParts are the tables that hold a bundle's parts by bundle id.
var bundleParts = []string{"properties", "property_spans", "related_images", "provided_gvks", "required_gvks", "required_packages"}

// write stores a package's problems and bundles, and
// removes the parts the walk stored for bundles that repeat a name.
func (l *loader) write(ctx context.Context, a analysis) error {
	for _, p := range a.problems {
		if err := l.insert(ctx, "problems", a.name, p.pos, p.message); err != nil {
			return fmt.Errorf("record problems of package %q: %w", a.name, err)
		}
		l.stats.Problems++
	}
	for _, h := range a.heads {
		if err := l.writeChannel(ctx, a.name, h); err != nil {
			return fmt.Errorf("index channel %q of package %q: %w", h.channel.Name, a.name, err)
		}
	}
	listedIn := a.channelsByBundle()
	for i, b := range a.bundles {
		if b.repeat {
			for _, table := range bundleParts {
				if _, err := l.tx.ExecContext(ctx, `DELETE FROM `+table+` WHERE bundle_id = ?`, b.id); err != nil {
					return fmt.Errorf("remove repeated bundle %q of package %q: %w", b.name, a.name, err)
				}
			}
			continue
		}
		var major, minor, patch any
		var pre string
		if v := a.versions[i]; v != nil {
			major, minor, patch = int64(v.Major), int64(v.Minor), int64(v.Patch)
			pre = preRelease(*v)
		}
		channels, ok := listedIn[b.name]
		if !ok {
			channels = "[]"
		}
		if err := l.insert(ctx, "bundles", b.id, a.name, b.name, b.version, b.release, b.image, b.blobID,
			major, minor, patch, pre, a.ranks[i], channels); err != nil {
			return fmt.Errorf("index bundle %q of package %q: %w", b.name, a.name, err)
		}
		l.stats.Bundles++
	}
	return nil
}

// keep is write for Check: it keeps a package's problems and counts its
// bundles as write does.
func (l *loader) keep(a analysis) {
	for _, p := range a.problems {
		l.problems = append(l.problems, Problem{Package: a.name, Position: p.pos, Message: p.message})
	}
	l.stats.Problems += len(a.problems)
	for _, b := range a.bundles {
		if !b.repeat {
			l.stats.Bundles++
		}
	}
}

// channelsByBundle returns, for each bundle some channel of the package
// lists, the names of those channels as a sorted JSON array.
func (pkg *pkgData) channelsByBundle() map[string]string {
	names := map[string][]string{}
	for _, c := range pkg.cfg.Channels {
		for _, e := range c.Entries {
			if !slices.Contains(names[e.Name], c.Name) {
				names[e.Name] = append(names[e.Name], c.Name)
			}
		}
	}
	out := make(map[string]string, len(names))
	for bundle, list := range names {
		slices.Sort(list)
		data, _ := json.Marshal(list) // a []string always marshals
		out[bundle] = string(data)
	}
	return out
}

// writeChannel writes a channel's row: its head, or why it has none.
func (l *loader) writeChannel(ctx context.Context, pkg string, h channelHead) error {
	props := []byte("[]")
	if len(h.channel.Properties) > 0 {
		var err error
		if props, err = json.Marshal(h.channel.Properties); err != nil {
			return err
		}
	}
	var head, problem any
	if h.head != "" {
		head = h.head
	} else {
		problem = h.problem
	}
	return l.insert(ctx, "channels", pkg, h.channel.Name, string(props), head, problem)
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
		if !b.repeat {
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
func (l *loader) describe(ctx context.Context, a analysis) error {
	if len(a.cfg.Packages) == 0 {
		return nil // bundles or channels of a package that was never declared
	}
	pkg := a.cfg.Packages[0]
	var meta property.CSVMetadata
	var display any
	if head, ok := a.defaultHead(pkg.DefaultChannel); ok {
		value, err := l.csvMetadata(ctx, head)
		switch {
		case err == nil:
			_ = json.Unmarshal(value, &meta) // only display data: a bad value shows nothing
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
	digest, err := l.packageDigest(ctx, a.name)
	if err != nil {
		return err
	}
	if err := l.insert(ctx, "packages", a.name, pkg.DefaultChannel, pkg.Description, iconData, iconType, display, digest); err != nil {
		return err
	}
	description := pkg.Description
	if description == "" {
		description = meta.Description
	}
	if short := meta.Annotations["description"]; short != "" {
		description = short + "\n" + description
	}
	return l.insert(ctx, "package_search", a.name, meta.DisplayName, strings.Join(meta.Keywords, " "), meta.Provider.Name, description)
}

// defaultHead returns the head of the named channel, if it has one.
func (a analysis) defaultHead(channel string) (bundleRow, bool) {
	for _, h := range a.heads {
		if h.channel.Name != channel || h.head == "" {
			continue
		}
		for _, b := range a.bundles {
			if b.name == h.head && !b.repeat {
				return b, true
			}
		}
	}
	return bundleRow{}, false
}

// metadataQuery finds the first olm.csv.metadata property of a bundle,
// given its id and its blob's: the value, or where it stands in the content
// file.
const metadataQuery = `SELECT p.value, b.offset + p.value_start, p.value_length
	FROM properties p, blobs b WHERE p.bundle_id = ? AND p.type = 'olm.csv.metadata' AND b.id = ?
	ORDER BY p.position LIMIT 1`

// csvMetadata returns the value of the bundle's first olm.csv.metadata
// property, or sql.ErrNoRows.
func (l *loader) csvMetadata(ctx context.Context, b bundleRow) ([]byte, error) {
	var value sql.NullString
	var offset, length sql.NullInt64
	if err := l.tx.QueryRowContext(ctx, metadataQuery, b.id, b.blobID).Scan(&value, &offset, &length); err != nil {
		return nil, err
	}
	if value.Valid {
		return []byte(value.String), nil
	}
	return l.readContent(offset.Int64, length.Int64)
}
