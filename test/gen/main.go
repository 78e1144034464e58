// Command gen writes a synthetic file-based catalog with package fbcgen.
//
//	go run ./test/gen -out /tmp/cat -packages 300 -bundles 8000 -object-bytes 12000
//
// It prints what it wrote. The output directory must be empty or missing,
// unless -force is given, which deletes it first.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"text/tabwriter"
	"time"

	"github.com/catalogd/catalogd/test/fbcgen"
)

func main() {
	var (
		opts  fbcgen.Options
		out   string
		force bool
	)
	flag.StringVar(&out, "out", "", "directory to write the catalog to (required)")
	flag.BoolVar(&force, "force", false, "delete -out first if it exists")
	flag.IntVar(&opts.Packages, "packages", 20, "number of packages")
	flag.IntVar(&opts.Bundles, "bundles", 0, "total bundles, spread unevenly over the packages (default 10 per package)")
	flag.IntVar(&opts.BundlesPerPackage, "bundles-per-package", 0, "give every package this many bundles instead of -bundles")
	flag.IntVar(&opts.ChannelsPerPackage, "channels", 4, "most channels per package")
	flag.IntVar(&opts.PropertiesPerBundle, "properties", 20, "properties per bundle, topped up with filler properties")
	flag.IntVar(&opts.BundleObjectBytes, "object-bytes", 12000, "base64 bytes of each bundle's olm.bundle.object (0: none)")
	flag.IntVar(&opts.CRDObjectBytes, "crd-bytes", 0, "base64 bytes of the CRD each bundle carries as an olm.bundle.object per kind it owns (0: none)")
	flag.BoolVar(&opts.Icons, "icons", true, "give each package an SVG icon")
	flag.IntVar(&opts.WideGVKBundles, "wide-gvk-bundles", 0, "bundles that also provide "+fbcgen.WideGVK.Group+"/"+fbcgen.WideGVK.Version+" "+fbcgen.WideGVK.Kind)
	flag.IntVar(&opts.LongPackageBundles, "long-package-bundles", 0, "give the largest package at least this many bundles")
	flag.Int64Var(&opts.Seed, "seed", 1, "random seed; equal flags give identical catalogs")
	flag.Parse()
	if out == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: gen -out DIR [flags]")
		flag.PrintDefaults()
		os.Exit(2)
	}
	if force {
		if err := os.RemoveAll(out); err != nil {
			fail(err)
		}
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	start := time.Now()
	st, err := fbcgen.Write(ctx, out, opts)
	if err != nil {
		fail(err)
	}
	elapsed := time.Since(start)

	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	row := func(name string, v any) { fmt.Fprintf(tw, "%v\t  %s\n", v, name) }
	row("packages", st.Packages)
	row("channels", st.Channels)
	row("channel entries", st.ChannelEntries)
	row("bundles", st.Bundles)
	row("pre-release bundles", st.PrereleaseBundles)
	row("properties", st.Properties)
	row("olm.gvk", st.GVKs)
	row("olm.gvk.required", st.RequiredGVKs)
	row("olm.package.required", st.RequiredPackages)
	row("olm.csv.metadata", st.CSVMetadata)
	row("olm.bundle.object", st.BundleObjects)
	row("bundle object bytes", st.BundleObjectBytes)
	row("CRD objects", st.CRDObjects)
	row("CRD object bytes", st.CRDObjectBytes)
	row("filler properties", st.FillerProperties)
	row("related images", st.RelatedImages)
	row("icons", st.Icons)
	row("olm.deprecations", st.Deprecations)
	row("deprecation entries", st.DeprecationEntries)
	row("files", st.Files)
	row("bytes", st.Bytes)
	row("MB", fmt.Sprintf("%.1f", float64(st.Bytes)/1e6))
	row("time", elapsed.Round(time.Millisecond))
	tw.Flush()
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "gen:", err)
	os.Exit(1)
}
