package fbcgen

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
)

// Options describe the catalog to generate. Zero values select the documented
// defaults, except for BundleObjectBytes and Icons, whose zero values leave
// bundle objects and icons out.
type Options struct {
	// Packages is the number of packages. Default 20.
	Packages int

	// Bundles is the total number of bundles, spread unevenly over the
	// packages (heavy-tailed: a few large packages, many small ones; every
	// package gets at least one). It must be at least Packages. When it is 0,
	// BundlesPerPackage applies instead.
	Bundles int

	// BundlesPerPackage gives every package exactly this many bundles. Only
	// used when Bundles is 0. When both are 0, Bundles defaults to
	// 10*Packages, spread unevenly.
	BundlesPerPackage int

	// ChannelsPerPackage is the most channels a package may have. Small
	// packages get fewer, since a channel needs bundles. Default 4.
	ChannelsPerPackage int

	// PropertiesPerBundle is the number of properties each bundle should
	// have. Filler properties of custom types make up the difference between
	// this and the properties a bundle needs anyway (olm.package, its
	// olm.gvk and requirements, olm.csv.metadata, olm.bundle.object); it is
	// never fewer than those. Default 20.
	PropertiesPerBundle int

	// BundleObjectBytes is the approximate length of the base64 data of the
	// one olm.bundle.object each bundle carries (a CSV-like YAML document).
	// Catalogs that carry bundle objects have tens of KB of them per bundle.
	// Sizes below about 2.4 KB come out at that, the document's fixed part.
	// 0 leaves bundle objects out.
	BundleObjectBytes int

	// CRDObjectBytes, when not 0, gives each bundle one more
	// olm.bundle.object per group, version and kind it owns: a
	// CustomResourceDefinition (JSON,
	// as opm renders bundle manifests) whose base64 data is about this
	// long. Catalogs rendered from bundle images carry every CRD this way,
	// and the CRDs of large operators are MBs each: this is the shape whose
	// single blobs are largest.
	CRDObjectBytes int

	// Icons gives every package an SVG icon of a few KB.
	Icons bool

	// WideGVKBundles, when positive, has this many bundles (the newest few
	// of each of several packages) also provide one more GVK, WideGVK, so
	// that asking for its providers answers about this many items, as the
	// widely shipped APIs of published catalogs do (45 to 90 and more).
	// Shared GVKs give answers of thousands; this gives a realistic one.
	WideGVKBundles int

	// LongPackageBundles, when positive, gives the largest package at least
	// this many bundles (the total then exceeds Bundles by the difference),
	// so that a catalog is sure to hold a package with a long version
	// history: lists and upgrade answers of a hundred items and more.
	LongPackageBundles int

	// Seed selects the catalog; equal Options give byte-identical output.
	Seed int64
}

// Stats counts what Write wrote, so tests can compare it with what a loader
// reads back.
type Stats struct {
	Packages           int   // olm.package blobs
	Channels           int   // olm.channel blobs
	ChannelEntries     int   // entries over all channels; a bundle in three channels counts three times
	Bundles            int   // olm.bundle blobs
	PrereleaseBundles  int   // bundles whose version has a pre-release part
	Properties         int   // bundle properties of every type
	GVKs               int   // olm.gvk properties
	RequiredGVKs       int   // olm.gvk.required properties
	RequiredPackages   int   // olm.package.required properties
	CSVMetadata        int   // olm.csv.metadata properties
	BundleObjects      int   // olm.bundle.object properties holding a CSV
	BundleObjectBytes  int64 // total length of their base64 data
	CRDObjects         int   // olm.bundle.object properties holding a CRD
	CRDObjectBytes     int64 // total length of their base64 data
	FillerProperties   int   // properties of custom (non-olm) types
	RelatedImages      int   // relatedImages entries
	Icons              int   // packages with an icon
	Deprecations       int   // olm.deprecations blobs
	DeprecationEntries int   // entries in them
	Files              int   // files written
	Bytes              int64 // bytes written, the catalog's size
}

const (
	defaultPackages            = 20
	defaultBundlesPerPkg       = 10
	defaultChannelsPerPackage  = 4
	defaultPropertiesPerBundle = 20
)

func (o *Options) normalize() error {
	if o.Packages < 0 || o.Bundles < 0 || o.BundlesPerPackage < 0 || o.ChannelsPerPackage < 0 ||
		o.PropertiesPerBundle < 0 || o.BundleObjectBytes < 0 || o.WideGVKBundles < 0 || o.LongPackageBundles < 0 ||
		o.CRDObjectBytes < 0 {
		return errors.New("fbcgen: options must not be negative")
	}
	if o.Packages == 0 {
		o.Packages = defaultPackages
	}
	if o.Bundles > 0 && o.BundlesPerPackage > 0 {
		return errors.New("fbcgen: set Bundles or BundlesPerPackage, not both")
	}
	if o.Bundles == 0 && o.BundlesPerPackage == 0 {
		o.Bundles = defaultBundlesPerPkg * o.Packages
	}
	if o.Bundles > 0 && o.Bundles < o.Packages {
		return fmt.Errorf("fbcgen: %d bundles cannot fill %d packages", o.Bundles, o.Packages)
	}
	if o.ChannelsPerPackage == 0 {
		o.ChannelsPerPackage = defaultChannelsPerPackage
	}
	if o.PropertiesPerBundle == 0 {
		o.PropertiesPerBundle = defaultPropertiesPerBundle
	}
	return nil
}

// Write generates a catalog into dir, which must be empty or not exist yet
// (files left from another run would mix two catalogs). It returns what it
// wrote; on error, dir holds a partial catalog.
func Write(ctx context.Context, dir string, opts Options) (Stats, error) {
	var st Stats
	if err := opts.normalize(); err != nil {
		return st, err
	}
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return st, fmt.Errorf("fbcgen: %s is not empty", dir)
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		return st, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return st, err
	}

	plans := planPackages(opts)
	g := &generator{opts: opts, plans: plans, stats: &st}
	for i := range plans {
		if err := ctx.Err(); err != nil {
			return st, err
		}
		if err := g.writePackage(ctx, dir, i); err != nil {
			return st, fmt.Errorf("fbcgen: package %s: %w", plans[i].name, err)
		}
	}
	return st, nil
}

// pkgPlan is what the whole catalog knows about a package before any of it
// is written: enough for other packages to name it in their requirements.
// It is small, so a plan for every package fits in memory at any size.
type pkgPlan struct {
	name       string
	bundles    int
	group      string   // API group of the package's own kinds
	kinds      []string // its own kinds, in the order they are introduced
	startMajor int      // major version of its first bundle
	// wide is how many of its newest bundles provide WideGVK.
	wide int
}

// WideGVK is the GVK that Options.WideGVKBundles bundles provide.
var WideGVK = struct{ Group, Version, Kind string }{"wide.example.io", "v1", "Widget"}

type gvk struct{ group, version, kind string }

// rngFor returns the random source for one purpose of one package. Each
// package draws from its own stream, so its output doesn't depend on how
// much randomness other packages used.
func rngFor(seed int64, stream, index int) *rand.Rand {
	return rand.New(rand.NewPCG(uint64(seed), uint64(stream)<<32|uint64(index)))
}

func planPackages(opts Options) []pkgPlan {
	r := rngFor(opts.Seed, streamPlan, 0)
	counts := bundleCounts(r, opts)
	plans := make([]pkgPlan, opts.Packages)
	used := map[string]bool{}
	usedGroups := map[string]bool{}
	for i := range plans {
		adj, noun := pick(r, nameAdjectives), pick(r, nameNouns)
		name := adj + "-" + noun
		if s := pick(r, nameSuffixes); s != "" {
			name += "-" + s
		}
		for n := 2; used[name]; n++ {
			name = adj + "-" + noun + "-" + strconv.Itoa(n)
		}
		used[name] = true
		group := noun + "." + adj + ".example.io"
		for n := 2; usedGroups[group]; n++ {
			group = noun + strconv.Itoa(n) + "." + adj + ".example.io"
		}
		usedGroups[group] = true
		kinds := make([]string, 2+r.IntN(6))
		perm := r.Perm(len(kindWords))
		for k := range kinds {
			kinds[k] = title(noun) + kindWords[perm[k]]
		}
		plans[i] = pkgPlan{name: name, bundles: counts[i], group: group, kinds: kinds, startMajor: r.IntN(3)}
	}
	spreadWideGVK(rngFor(opts.Seed, streamWide, 0), opts.WideGVKBundles, plans)
	return plans
}

// spreadWideGVK has the newest 1 to 12 bundles of packages taken in random
// order provide WideGVK, until n bundles do (or every bundle does). It
// draws from its own stream, so catalogs without it are unchanged.
func spreadWideGVK(r *rand.Rand, n int, plans []pkgPlan) {
	for _, i := range r.Perm(len(plans)) {
		if n <= 0 {
			return
		}
		take := min(n, plans[i].bundles, 1+r.IntN(12))
		plans[i].wide = take
		n -= take
	}
}

// bundleCounts spreads the bundles over the packages. With BundlesPerPackage
// every package gets the same count. Otherwise each package gets one bundle
// and the rest is shared out in proportion to log-normal weights (sigma 1.3,
// taken at evenly spaced quantiles, then shuffled over the packages). That
// matches published catalogs, where the median package has well under half
// the mean number of bundles and the largest has tens of times the median:
// for 300 packages and 8000 bundles, the median package gets about 12 and
// the largest about 500.
func bundleCounts(r *rand.Rand, opts Options) []int {
	counts := make([]int, opts.Packages)
	if opts.Bundles == 0 {
		for i := range counts {
			counts[i] = opts.BundlesPerPackage
		}
		lengthenLargest(counts, opts.LongPackageBundles)
		return counts
	}
	const sigma = 1.3
	weights := make([]float64, opts.Packages)
	var sum float64
	for rank := range weights {
		q := (float64(rank) + 0.5) / float64(opts.Packages)
		z := math.Sqrt2 * math.Erfinv(2*q-1)
		weights[rank] = math.Exp(sigma * z)
		sum += weights[rank]
	}
	extra := opts.Bundles - opts.Packages
	type share struct {
		pkg  int
		frac float64
	}
	shares := make([]share, opts.Packages)
	given := 0
	for rank, pkg := range r.Perm(opts.Packages) {
		exact := float64(extra) * weights[rank] / sum
		whole := int(exact)
		counts[pkg] = 1 + whole
		given += whole
		shares[rank] = share{pkg, exact - float64(whole)}
	}
	// Hand out what rounding down left over, largest remainders first.
	slices.SortStableFunc(shares, func(a, b share) int {
		switch {
		case a.frac > b.frac:
			return -1
		case a.frac < b.frac:
			return 1
		}
		return 0
	})
	for i := 0; given < extra; i++ {
		counts[shares[i%len(shares)].pkg]++
		given++
	}
	lengthenLargest(counts, opts.LongPackageBundles)
	return counts
}

// lengthenLargest gives the largest package at least n bundles.
func lengthenLargest(counts []int, n int) {
	largest := 0
	for i, c := range counts {
		if c > counts[largest] {
			largest = i
		}
	}
	counts[largest] = max(counts[largest], n)
}

// countingWriter counts the bytes that reach the file.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

type generator struct {
	opts  Options
	plans []pkgPlan
	stats *Stats
}

func (g *generator) writePackage(ctx context.Context, dir string, i int) (err error) {
	plan := &g.plans[i]
	pdir := filepath.Join(dir, plan.name)
	if err := os.MkdirAll(pdir, 0o755); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(pdir, "catalog.json"))
	if err != nil {
		return err
	}
	cw := &countingWriter{w: f}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		g.stats.Files++
		g.stats.Bytes += cw.n
	}()
	bw := bufio.NewWriterSize(cw, 256<<10)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)

	p := newPackageGen(g, i)
	if err := p.write(ctx, enc); err != nil {
		return err
	}
	return bw.Flush()
}
