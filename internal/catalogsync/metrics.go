package catalogsync

import (
	"cmp"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/catalogd/catalogd/internal/catalogs"
	"github.com/catalogd/catalogd/internal/index"
	"github.com/catalogd/catalogd/internal/query"
)

// metrics are the sync's Prometheus metrics. The counters and histograms are
// updated as syncs run; catalog states, index sizes and ages are read from
// the table and the store when scraped, so they can never drift from them.
type metrics struct {
	// buildSeconds is by mode: full, incremental or prebuilt (index.BuildMode).
	buildSeconds  *prometheus.HistogramVec
	buildFailures prometheus.Counter
	pullSeconds   prometheus.Histogram
	pullBytes     prometheus.Counter
	// packageChanges counts the packages each swap added, removed or
	// changed, by kind.
	packageChanges *prometheus.CounterVec
	// prebuilt counts the syncs that looked for a prebuilt index, by
	// result: used, or why not (prebuilt.Reason).
	prebuilt *prometheus.CounterVec
	state    *stateCollector
}

func newMetrics(s *Service) *metrics {
	return &metrics{
		buildSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "catalogd_index_build_duration_seconds",
			Help: "Time taken by index builds, successful or not, by mode: full (every package read and validated), " +
				"incremental (only the changed ones, the rest taken from the live index) or prebuilt (published beside the catalog, downloaded and checked).",
			Buckets: prometheus.ExponentialBuckets(0.05, 2, 14), // 50 ms to ~7 min
		}, []string{"mode"}),
		buildFailures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "catalogd_index_build_failures_total",
			Help: "Index builds that failed (bad content, full disk, cancellation).",
		}),
		pullSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "catalogd_pull_duration_seconds",
			Help:    "Time taken to resolve, pull and unpack a catalog image.",
			Buckets: prometheus.ExponentialBuckets(0.05, 2, 14),
		}),
		pullBytes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "catalogd_pull_bytes_total",
			Help: "Bytes of catalog content unpacked from images.",
		}),
		packageChanges: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "catalogd_package_changes_total",
			Help: "Packages that index swaps added, removed or changed (a different package digest), by kind.",
		}, []string{"kind"}),
		prebuilt: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "catalogd_prebuilt_index_total",
			Help: "Syncs that looked for a prebuilt index published beside the catalog, by result: used, or why it was built instead " +
				"(absent, other-schema, unreachable, refused: a check failed, failed: a download or write).",
		}, []string{"result"}),
		state: &stateCollector{s: s},
	}
}

func (m *metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.buildSeconds, m.buildFailures, m.pullSeconds, m.pullBytes, m.packageChanges, m.prebuilt, m.state}
}

// built records a build of the given mode (index.BuildMode.Mode; a build
// that failed before it started counts as full).
func (m *metrics) built(d time.Duration, mode string, err error) {
	m.buildSeconds.WithLabelValues(cmp.Or(mode, index.ModeFull)).Observe(d.Seconds())
	if err != nil {
		m.buildFailures.Inc()
	}
}

func (m *metrics) prebuiltUsed() { m.prebuilt.WithLabelValues("used").Inc() }

func (m *metrics) prebuiltMissed(reason string) { m.prebuilt.WithLabelValues(reason).Inc() }

func (m *metrics) changed(c query.Changes) {
	m.packageChanges.WithLabelValues("added").Add(float64(len(c.Added)))
	m.packageChanges.WithLabelValues("removed").Add(float64(len(c.Removed)))
	m.packageChanges.WithLabelValues("changed").Add(float64(len(c.Changed)))
}

func (m *metrics) pulled(d time.Duration, bytes int64) {
	m.pullSeconds.Observe(d.Seconds())
	m.pullBytes.Add(float64(bytes))
}

var (
	catalogsDesc = prometheus.NewDesc("catalogd_catalogs",
		"Catalogs known to this replica, by state.", []string{"state"}, nil)
	indexBytesDesc = prometheus.NewDesc("catalogd_index_size_bytes",
		"Size of each catalog's live index: its files (database, content, gzip copy) together.", []string{"catalog"}, nil)
	indexAgeDesc = prometheus.NewDesc("catalogd_index_age_seconds",
		"Time since each catalog's live index was built.", []string{"catalog"}, nil)
)

// stateCollector reports the table's states and the live indexes.
type stateCollector struct{ s *Service }

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- catalogsDesc
	ch <- indexBytesDesc
	ch <- indexAgeDesc
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	// Every state is reported, zero included, so that an alert on
	// catalogd_catalogs{state="Failed"} > 0 has a series to read.
	byState := map[catalogs.State]int{catalogs.Pending: 0, catalogs.Failed: 0, catalogs.Serving: 0, catalogs.Unavailable: 0}
	for _, cat := range c.s.opts.Table.List() {
		_, indexed := c.s.opts.Store.Info(cat.Name)
		byState[cat.State(indexed)]++
	}
	for state, n := range byState {
		ch <- prometheus.MustNewConstMetric(catalogsDesc, prometheus.GaugeValue, float64(n), string(state))
	}
	now := time.Now()
	for _, name := range c.s.opts.Store.Catalogs() {
		info, ok := c.s.opts.Store.Info(name)
		if !ok {
			continue
		}
		ch <- prometheus.MustNewConstMetric(indexAgeDesc, prometheus.GaugeValue, now.Sub(info.BuiltAt).Seconds(), name)
		if size, ok := indexSize(info.Path); ok {
			ch <- prometheus.MustNewConstMetric(indexBytesDesc, prometheus.GaugeValue, float64(size), name)
		}
	}
}

// indexSize adds up the sizes of the files of the index at path, those in
// its content directory included (a segment shared with another version
// by a hard link counts in each); ok is false when one of them is gone
// (the index was retired meanwhile).
func indexSize(path string) (size int64, ok bool) {
	fi, err := os.Stat(path)
	if err != nil {
		return 0, false
	}
	size = fi.Size()
	entries, err := os.ReadDir(index.ContentDir(path))
	if err != nil {
		return 0, false
	}
	for _, e := range entries {
		fi, err := e.Info()
		if err != nil {
			return 0, false
		}
		size += fi.Size()
	}
	return size, true
}
