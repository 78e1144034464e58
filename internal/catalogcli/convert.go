package catalogcli

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/catalogd/catalogd/client"
	"github.com/catalogd/catalogd/internal/termtext"
)

// This file is the one place that turns the API's wire types into what a
// person reads: table rows, names, and the descriptions of show and
// bundle. JSON and YAML print the wire types themselves.

// column is a table column; wide ones show only with -o wide.
type column struct {
	name string
	wide bool
}

// table is an answer as rows of cells, one cell per column.
type table struct {
	columns []column
	rows    [][]string
}

// tableOf converts one catalog's answer to rows.
func tableOf(obj any) table {
	switch v := obj.(type) {
	case *client.CatalogList:
		t := table{columns: cols("NAME", "STATE", "LAST BUILD", "PRIORITY", "PACKAGES", "BUNDLES", "INDEXED", "+SOURCE", "+DIGEST", "+LAST ERROR")}
		for _, c := range v.Items {
			t.rows = append(t.rows, []string{c.Name, string(c.State), lastBuild(c), itoa(int(c.Priority)), itoa(c.Counts.Packages), itoa(c.Counts.Bundles), age(c.IndexedAt), c.Source, c.ResolvedDigest, c.LastError})
		}
		return t
	case *client.CatalogDetail:
		t := tableOf(&client.CatalogList{Items: []client.CatalogSummary{{
			Name: v.Name, State: v.State, Priority: v.Priority, Counts: v.Counts, IndexedAt: v.IndexedAt,
			Source: v.Source, ResolvedDigest: v.ResolvedDigest, LastError: v.LastError,
		}}})
		t.columns = append(t.columns, column{name: "BUILD", wide: true})
		t.rows[0] = append(t.rows[0], buildText(v.Build))
		return t
	case *client.PackageList:
		t := table{columns: cols("NAME", "DEFAULT CHANNEL", "PROVIDER", "+DISPLAY NAME", "+CHANNELS", "+DEPRECATED")}
		for _, p := range v.Items {
			t.rows = append(t.rows, []string{p.Name, p.DefaultChannel, p.Provider, p.DisplayName, strings.Join(p.Channels, ","), deprecated(p.Deprecation)})
		}
		return t
	case *client.ChannelList:
		t := table{columns: cols("NAME", "DEFAULT", "HEAD", "ENTRIES", "+HEAD BUNDLE", "+DEPRECATED")}
		for _, c := range v.Items {
			head, bundle := c.Head.Version, c.Head.Name
			if c.HeadProblem != "" {
				head, bundle = "<none>", c.HeadProblem
			}
			t.rows = append(t.rows, []string{c.Name, strconv.FormatBool(c.IsDefault), head, itoa(c.EntryCount), bundle, deprecated(c.Deprecation)})
		}
		return t
	case *client.BundleList:
		t := table{columns: cols("VERSION", "NAME", "CHANNELS", "+RELEASE", "+IMAGE", "+DEPRECATED")}
		for _, b := range v.Items {
			t.rows = append(t.rows, []string{b.Version, b.Name, strings.Join(b.Channels, ","), b.Release, b.Image, deprecated(b.Deprecation)})
		}
		return t
	case *client.UpgradeList:
		t := table{columns: cols("VERSION", "NAME", "CHANNEL", "RULES", "+CHANNEL HEAD")}
		heads := map[string]string{}
		for _, h := range v.Heads {
			heads[h.Channel] = h.Version
		}
		for _, e := range v.Items {
			rules := make([]string, len(e.Rules))
			for i, r := range e.Rules {
				rules[i] = string(r)
			}
			t.rows = append(t.rows, []string{e.Version, e.Name, e.Channel, strings.Join(rules, ","), heads[e.Channel]})
		}
		return t
	case *client.ProviderList:
		t := table{columns: cols("CATALOG", "PACKAGE", "VERSION", "BUNDLE", "CHANNELS", "+HEAD OF")}
		for _, p := range v.Items {
			var chans, heads []string
			for _, c := range p.Channels {
				chans = append(chans, c.Name)
				if c.IsHead {
					heads = append(heads, c.Name)
				}
			}
			t.rows = append(t.rows, []string{p.Catalog, p.Package, p.Version, p.Bundle, strings.Join(chans, ","), strings.Join(heads, ",")})
		}
		return t
	case *client.Changes:
		return changesTable(v)
	case *client.Resolution:
		t := table{columns: cols("CATALOG", "VERSION", "NAME", "VERDICT", "+CHANNELS", "+SUCCESSOR", "+IMAGE", "+DEPRECATED")}
		for _, c := range v.Catalogs {
			if len(c.Candidates) == 0 {
				t.rows = append(t.rows, []string{c.Name, "<none>", "", "Catalog" + string(c.Outcome), "", "", "", ""})
			}
			for _, b := range c.Candidates {
				successor := make([]string, len(b.Successor))
				for i, s := range b.Successor {
					successor[i] = string(s)
				}
				t.rows = append(t.rows, []string{c.Name, b.Version, b.Name, resolveVerdict(c, b), strings.Join(b.Channels, ","),
					strings.Join(successor, ","), b.Image, deprecated(b.Deprecation)})
			}
		}
		return t
	}
	panic(fmt.Sprintf("no table for %T", obj))
}

// lastBuild says whether the last index build of a catalog succeeded. A
// catalog that serves while its last build failed answers from older
// content than its source holds; the default table shows that, as kubectl
// shows a pod's restarts, and -o wide's LAST ERROR says why.
func lastBuild(c client.CatalogSummary) string {
	switch {
	case c.LastError != "":
		return "Failed"
	case c.IndexedAt != nil:
		return "Succeeded"
	}
	return "" // not built yet
}

// namesOf is what -o name prints of an answer, one name a line.
func namesOf(obj any) []string {
	var names []string
	switch v := obj.(type) {
	case *client.CatalogList:
		for _, c := range v.Items {
			names = append(names, c.Name)
		}
	case *client.CatalogDetail:
		names = append(names, v.Name)
	case *client.PackageList:
		for _, p := range v.Items {
			names = append(names, p.Name)
		}
	case *client.Package:
		names = append(names, v.Name)
	case *client.ChannelList:
		for _, c := range v.Items {
			names = append(names, c.Name)
		}
	case *client.BundleList:
		for _, b := range v.Items {
			names = append(names, b.Name)
		}
	case *client.UpgradeList:
		for _, e := range v.Items {
			names = append(names, e.Name)
		}
	case *client.ProviderList:
		for _, p := range v.Items {
			names = append(names, p.Bundle)
		}
	case *client.Bundle:
		names = append(names, v.Name)
	case *client.Changes:
		for _, row := range changesTable(v).rows {
			names = append(names, row[0])
		}
	case *client.Resolution:
		if v.Bundle.Name != "" {
			names = append(names, v.Bundle.Name)
		}
	default:
		panic(fmt.Sprintf("no names for %T", obj))
	}
	return names
}

// describes reports whether obj is shown as a description, not a table.
func describes(obj any) bool {
	switch obj.(type) {
	case *client.Package, *client.Bundle:
		return true
	}
	return false
}

// describe writes a package or bundle as `kubectl describe` would.
func describe(w io.Writer, catalog string, obj any) {
	d := describer{w: w}
	d.field("Catalog", catalog)
	switch v := obj.(type) {
	case *client.Package:
		d.field("Name", v.Name)
		d.field("Display Name", v.DisplayName)
		d.field("Provider", v.Provider)
		d.field("Maturity", v.Maturity)
		d.field("Default Channel", v.DefaultChannel)
		d.field("Deprecated", v.Deprecation.Message)
		d.field("Short Description", v.ShortDescription)
		d.field("Keywords", strings.Join(v.Keywords, ", "))
		d.list("Channels", len(v.Channels), func(i int) string {
			c := v.Channels[i]
			line := fmt.Sprintf("%s: head %s (%s), %d entries", c.Name, c.Head.Version, c.Head.Name, c.EntryCount)
			if c.HeadProblem != "" {
				line = fmt.Sprintf("%s: no head: %s, %d entries", c.Name, c.HeadProblem, c.EntryCount)
			}
			if c.IsDefault {
				line += ", default"
			}
			if c.Deprecation.Message != "" {
				line += ", deprecated: " + c.Deprecation.Message
			}
			return line
		})
		d.list("Links", len(v.Links), func(i int) string { return v.Links[i].Name + ": " + v.Links[i].Url })
		d.list("Problems", len(v.Problems), func(i int) string { return v.Problems[i].Message })
		if v.Description != "" {
			fmt.Fprintln(w, "Description:")
			for _, line := range strings.Split(strings.TrimSpace(v.Description), "\n") {
				fmt.Fprintf(w, "  %s\n", termtext.Safe(strings.TrimSuffix(line, "\r")))
			}
		}
	case *client.Bundle:
		d.field("Name", v.Name)
		d.field("Package", v.Package)
		d.field("Version", v.Version)
		d.field("Release", v.Release)
		d.field("Image", v.Image)
		d.field("Deprecated", v.Deprecation.Message)
		d.list("Channels", len(v.Channels), func(i int) string {
			c := v.Channels[i]
			var parts []string
			if c.IsHead {
				parts = append(parts, "head")
			}
			if c.Replaces != "" {
				parts = append(parts, "replaces "+c.Replaces)
			}
			if len(c.Skips) > 0 {
				parts = append(parts, "skips "+strings.Join(c.Skips, ","))
			}
			if c.SkipRange != "" {
				parts = append(parts, "skipRange "+c.SkipRange)
			}
			if len(parts) == 0 {
				return c.Channel
			}
			return c.Channel + ": " + strings.Join(parts, ", ")
		})
		d.list("Provided APIs", len(v.ProvidedGVKs), func(i int) string { return gvk(v.ProvidedGVKs[i]) })
		d.list("Required APIs", len(v.RequiredGVKs), func(i int) string { return gvk(v.RequiredGVKs[i]) })
		d.list("Required Packages", len(v.RequiredPackages), func(i int) string {
			return v.RequiredPackages[i].PackageName + " " + v.RequiredPackages[i].VersionRange
		})
		d.list("Related Images", len(v.RelatedImages), func(i int) string {
			if v.RelatedImages[i].Name == "" {
				return v.RelatedImages[i].Image
			}
			return v.RelatedImages[i].Name + ": " + v.RelatedImages[i].Image
		})
	default:
		panic(fmt.Sprintf("no description for %T", obj))
	}
}

type describer struct{ w io.Writer }

// field writes "Name: value"; an empty value is left out, as the API
// leaves out what the catalog does not say. Values and list items are
// catalog text, printed termtext.Safe.
func (d describer) field(name, value string) {
	if value == "" {
		return
	}
	fmt.Fprintf(d.w, "%s:\t%s\n", name, termtext.Safe(value))
}

func (d describer) list(name string, n int, item func(int) string) {
	if n == 0 {
		return
	}
	fmt.Fprintf(d.w, "%s:\n", name)
	for i := range n {
		fmt.Fprintf(d.w, "  %s\n", termtext.Safe(item(i)))
	}
}

func gvk(g client.GVK) string {
	if g.Group == "" {
		return g.Kind + "/" + g.Version
	}
	return g.Kind + "." + g.Group + "/" + g.Version
}

// cols makes columns from names; a leading + marks a wide column.
func cols(names ...string) []column {
	out := make([]column, len(names))
	for i, n := range names {
		out[i] = column{name: strings.TrimPrefix(n, "+"), wide: strings.HasPrefix(n, "+")}
	}
	return out
}

func itoa(n int) string { return strconv.Itoa(n) }

// buildText says how a catalog's index was built, as "incremental, 2
// packages" or "full, 300 packages (62 of 300 packages changed)"; empty
// before the first index.
func buildText(b client.IndexBuild) string {
	if b.Mode == "" {
		return ""
	}
	unit := "packages"
	if b.PackagesRebuilt == 1 {
		unit = "package"
	}
	s := fmt.Sprintf("%s, %d %s", b.Mode, b.PackagesRebuilt, unit)
	if b.Reason != "" {
		s += " (" + b.Reason + ")"
	}
	return s
}

func deprecated(d client.Deprecation) string { return strconv.FormatBool(d.Message != "") }

// age is how long ago, as kubectl's AGE column says it.
func age(t *time.Time) string {
	if t == nil {
		return "<none>"
	}
	return duration.HumanDuration(time.Since(*t))
}

// changesTable is a row per package added, removed or changed, in name
// order: what changed in its channels, heads, bundles and deprecations.
func changesTable(v *client.Changes) table {
	t := table{columns: cols("PACKAGE", "CHANGE", "CHANNELS", "HEADS", "BUNDLES", "+BUNDLES ADDED", "+BUNDLES REMOVED", "+DEPRECATIONS")}
	var rows [][]string
	for _, p := range v.Added {
		rows = append(rows, []string{p, "added", "", "", "", "", "", ""})
	}
	for _, p := range v.Removed {
		rows = append(rows, []string{p, "removed", "", "", "", "", "", ""})
	}
	for _, c := range v.Changed {
		if !c.Detailed {
			rows = append(rows, []string{c.Package, "changed", "?", "?", "?", "?", "?", "?"})
			continue
		}
		var heads []string
		for _, h := range c.Heads {
			if h.Before != h.After {
				heads = append(heads, h.Channel+": "+orNone(h.Before)+" -> "+orNone(h.After))
			}
		}
		rows = append(rows, []string{c.Package, "changed",
			plusMinus(c.ChannelsAdded, c.ChannelsRemoved),
			strings.Join(heads, ", "),
			fmt.Sprintf("+%d -%d", len(c.BundlesAdded), len(c.BundlesRemoved)),
			strings.Join(c.BundlesAdded, ","), strings.Join(c.BundlesRemoved, ","),
			fmt.Sprintf("+%d -%d", len(c.DeprecationsAdded), len(c.DeprecationsRemoved))})
	}
	slices.SortStableFunc(rows, func(a, b []string) int { return strings.Compare(a[0], b[0]) })
	t.rows = rows
	return t
}

// plusMinus names what was added (+) and removed (-), "" when nothing was.
func plusMinus(added, removed []string) string {
	var parts []string
	for _, n := range added {
		parts = append(parts, "+"+n)
	}
	for _, n := range removed {
		parts = append(parts, "-"+n)
	}
	return strings.Join(parts, ",")
}
