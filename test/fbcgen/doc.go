// Package fbcgen writes synthetic file-based catalogs (FBC) of any size for
// tests and benchmarks.
//
// The catalogs imitate the shape of published operator catalogs rather than
// just their volume, because the shape is what a catalog server's indexes and
// queries are sensitive to:
//
//   - Bundle counts per package are heavy-tailed: a few packages carry hundreds
//     of bundles, most carry a handful. A uniform spread would hide costs that
//     grow with the size of one package (graph computations, per-package
//     queries) and overstate the number of package-level rows.
//   - Each package has one to several channels (stable, candidate, fast and
//     per-minor channels such as stable-1.4), many bundles sit in more than one
//     channel, and upgrade edges use replaces, skips and skipRange the way
//     operator authors do. Every channel has exactly one head, so the output
//     passes operator-registry's validation.
//   - Versions are semver with occasional pre-releases (x.y.0-rc.1), which
//     only ever appear in candidate channels.
//   - Bundles have tens of properties: several olm.gvk (some GVKs are shared
//     by unrelated packages, as monitoring or certificate APIs are in real
//     catalogs), olm.gvk.required and olm.package.required pointing at other
//     generated packages, an olm.csv.metadata with ordinary English text,
//     optional filler properties of custom types, and an optional
//     olm.bundle.object holding a base64 CSV-like YAML document. Bundle
//     objects are most of a real catalog's bytes, so their size is an option.
//
// Output is streamed: one directory per package holding a catalog.json with
// the package, its channels, its bundles and an occasional olm.deprecations
// blob, one JSON object per line. Only the upgrade graph of the package being
// written is held in memory, so catalogs of hundreds of megabytes are written
// with little memory. The same Options (including Seed) always produce the
// same bytes.
//
// test/gen is a command-line front end: go run ./test/gen -out DIR.
package fbcgen
