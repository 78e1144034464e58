package grpcapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/alpha/property"
	"github.com/operator-framework/operator-registry/pkg/api"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/catalogd/catalogd/internal/grpcapi"
	"github.com/catalogd/catalogd/test/fbcgen"
)

// TestMatchesOPM serves catalogs with `opm serve` and with catalogd and
// asks both every method of the Registry service, for every package,
// channel, bundle, replaced or skipped bundle and provided GVK the catalog
// declares (read with operator-registry's own declcfg, not with catalogd),
// and for unknown names: every answer must be the same, message by
// message, errors included. Where opm's order comes from Go map iteration
// (ListPackages, the channel entry streams), the answers are compared as
// multisets; ListBundles in order.
func TestMatchesOPM(t *testing.T) {
	opm := findOPM(t)
	catalogs := map[string]func(t *testing.T) string{
		"demo": func(*testing.T) string { return demoDir },
		"generated": func(t *testing.T) string {
			dir := t.TempDir()
			if _, err := fbcgen.Write(context.Background(), dir, fbcgen.Options{Packages: 12, Bundles: 90, ChannelsPerPackage: 3,
				BundleObjectBytes: 3000, Icons: true, WideGVKBundles: 8, Seed: 38}); err != nil {
				t.Fatal(err)
			}
			return dir
		},
		"generated-without-objects": func(t *testing.T) string {
			dir := t.TempDir()
			if _, err := fbcgen.Write(context.Background(), dir, fbcgen.Options{Packages: 10, Bundles: 60, Icons: true, Seed: 7}); err != nil {
				t.Fatal(err)
			}
			return dir
		},
		"community-v4.20": func(t *testing.T) string {
			if testing.Short() {
				t.Skip("-short: community-v4.20 takes minutes")
			}
			if _, err := os.Stat(communityDir); err != nil {
				t.Skipf("community-v4.20 is not at %s: %v", communityDir, err)
			}
			return communityDir
		},
	}
	for name, dirOf := range catalogs {
		t.Run(name, func(t *testing.T) {
			dir := dirOf(t)
			theirs := registry(startOPM(t, opm, dir))
			ours := registry(dial(t, serve(t, newStore(t, map[string]string{"cat": dir}), grpcapi.Options{}), "cat"))
			compareAll(t, dir, theirs, ours)
		})
	}
}

// facts are what a catalog declares, read with operator-registry's declcfg.
type facts struct {
	packages []string
	channels map[string][]declcfg.Channel // by package
	replaced []string                     // every name an entry replaces or skips
	gvks     []property.GVK               // every provided GVK
}

func readFacts(t *testing.T, dir string) facts {
	t.Helper()
	cfg, err := declcfg.LoadFS(context.Background(), os.DirFS(dir))
	if err != nil {
		t.Fatal(err)
	}
	f := facts{channels: map[string][]declcfg.Channel{}}
	for _, p := range cfg.Packages {
		f.packages = append(f.packages, p.Name)
	}
	replaced := map[string]bool{}
	for _, ch := range cfg.Channels {
		f.channels[ch.Package] = append(f.channels[ch.Package], ch)
		for _, e := range ch.Entries {
			if e.Replaces != "" {
				replaced[e.Replaces] = true
			}
			for _, s := range e.Skips {
				replaced[s] = true
			}
		}
	}
	for name := range replaced {
		f.replaced = append(f.replaced, name)
	}
	slices.Sort(f.replaced)
	gvks := map[property.GVK]bool{}
	for _, b := range cfg.Bundles {
		for _, p := range b.Properties {
			if p.Type != property.TypeGVK {
				continue
			}
			var g property.GVK
			if err := json.Unmarshal(p.Value, &g); err != nil {
				t.Fatal(err)
			}
			gvks[g] = true
		}
	}
	for g := range gvks {
		f.gvks = append(f.gvks, g)
	}
	slices.SortFunc(f.gvks, func(a, b property.GVK) int {
		return strings.Compare(a.Group+"/"+a.Version+"/"+a.Kind, b.Group+"/"+b.Version+"/"+b.Kind)
	})
	if len(f.packages) == 0 || len(f.gvks) == 0 {
		t.Fatalf("%s declares %d packages and %d GVKs: nothing to compare", dir, len(f.packages), len(f.gvks))
	}
	return f
}

// answer is what a call answered: its messages, or its error's code and
// message.
type answer struct {
	msgs []proto.Message
	err  string
}

func unary[T proto.Message](m T, err error) answer {
	if err != nil {
		return answer{err: errText(err)}
	}
	return answer{msgs: []proto.Message{m}}
}

// stream reads a server stream to its end.
func stream[T proto.Message](recv interface{ Recv() (T, error) }, err error) answer {
	if err != nil {
		return answer{err: errText(err)}
	}
	var a answer
	for {
		m, err := recv.Recv()
		if errors.Is(err, io.EOF) {
			return a
		}
		if err != nil {
			a.err = errText(err)
			return a
		}
		a.msgs = append(a.msgs, m)
	}
}

func errText(err error) string {
	st, _ := status.FromError(err)
	return st.Code().String() + ": " + st.Message()
}

// sorted is a with its messages in a canonical order.
func (a answer) sorted() answer {
	out := answer{msgs: slices.Clone(a.msgs), err: a.err}
	slices.SortFunc(out.msgs, func(x, y proto.Message) int { return strings.Compare(text(x), text(y)) })
	return out
}

func text(m proto.Message) string {
	return prototext.MarshalOptions{Multiline: false}.Format(m)
}

// diff says how a and b differ, "" when they do not: the error, the
// count, or the first message that differs, field by field.
func diff(theirs, ours answer) string {
	if theirs.err != ours.err {
		return fmt.Sprintf("error: opm %q, catalogd %q", theirs.err, ours.err)
	}
	if len(theirs.msgs) != len(ours.msgs) {
		return fmt.Sprintf("%d messages from opm, %d from catalogd", len(theirs.msgs), len(ours.msgs))
	}
	for i := range theirs.msgs {
		if !proto.Equal(theirs.msgs[i], ours.msgs[i]) {
			return fmt.Sprintf("message %d: %s", i, fieldDiff(theirs.msgs[i], ours.msgs[i]))
		}
	}
	return ""
}

// fieldDiff names the fields of two messages of one type that differ,
// with their values cut short.
func fieldDiff(a, b proto.Message) string {
	var out []string
	ra, rb := a.ProtoReflect(), b.ProtoReflect()
	fields := ra.Descriptor().Fields()
	for i := range fields.Len() {
		f := fields.Get(i)
		va, vb := ra.Get(f), rb.Get(f)
		if full(f, va) != full(f, vb) {
			out = append(out, fmt.Sprintf("%s: opm %s, catalogd %s", f.Name(), short(f, va), short(f, vb)))
		}
	}
	return strings.Join(out, "; ")
}

func full(f protoreflect.FieldDescriptor, v protoreflect.Value) string {
	switch {
	case f.IsList():
		var parts []string
		l := v.List()
		for i := range l.Len() {
			if f.Kind() == protoreflect.MessageKind {
				parts = append(parts, text(l.Get(i).Message().Interface()))
			} else {
				parts = append(parts, fmt.Sprint(l.Get(i).Interface()))
			}
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case f.Kind() == protoreflect.MessageKind:
		if !v.Message().IsValid() {
			return "<nil>"
		}
		return text(v.Message().Interface())
	default:
		return fmt.Sprint(v.Interface())
	}
}

func short(f protoreflect.FieldDescriptor, v protoreflect.Value) string {
	s := full(f, v)
	if len(s) > 400 {
		return s[:400] + fmt.Sprintf("...(%d bytes)", len(s))
	}
	return s
}

// comparer runs calls against both servers and records their differences.
type comparer struct {
	t             *testing.T
	theirs, ours  api.RegistryClient
	mu            sync.Mutex
	calls, errors int
}

// check compares what ask answers from both; unordered compares the
// messages as multisets.
func (c *comparer) check(what string, unordered bool, ask func(api.RegistryClient) answer) (theirs, ours answer) {
	theirs, ours = ask(c.theirs), ask(c.ours)
	a, b := theirs, ours
	if unordered {
		a, b = a.sorted(), b.sorted()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls++
	if theirs.err != "" {
		c.errors++
	}
	if d := diff(a, b); d != "" {
		c.t.Errorf("%s: %s", what, d)
	}
	return theirs, ours
}

// compareAll asks every method for everything the catalog in dir declares.
func compareAll(t *testing.T, dir string, theirs, ours api.RegistryClient) {
	ctx := context.Background()
	f := readFacts(t, dir)
	c := &comparer{t: t, theirs: theirs, ours: ours}

	c.check("ListPackages", true, func(r api.RegistryClient) answer {
		return stream(r.ListPackages(ctx, &api.ListPackageRequest{}))
	})
	c.check("ListBundles", false, func(r api.RegistryClient) answer {
		return stream(r.ListBundles(ctx, &api.ListBundlesRequest{}))
	})
	unknown := "no-such-name"
	for _, pkg := range append(slices.Clone(f.packages), unknown) {
		c.check("GetPackage "+pkg, false, func(r api.RegistryClient) answer {
			return unary(r.GetPackage(ctx, &api.GetPackageRequest{Name: pkg}))
		})
		channels := append(slices.Clone(f.channels[pkg]), declcfg.Channel{Name: unknown, Entries: []declcfg.ChannelEntry{{Name: "a.v1"}}})
		for _, ch := range channels {
			c.check("GetBundleForChannel "+pkg+" "+ch.Name, false, func(r api.RegistryClient) answer {
				//lint:ignore SA1019 deprecated, but OLM v0's clients still call it
				return unary(r.GetBundleForChannel(ctx, &api.GetBundleInChannelRequest{PkgName: pkg, ChannelName: ch.Name}))
			})
			for _, e := range append(slices.Clone(ch.Entries), declcfg.ChannelEntry{Name: unknown}) {
				c.check("GetBundle "+pkg+" "+ch.Name+" "+e.Name, false, func(r api.RegistryClient) answer {
					return unary(r.GetBundle(ctx, &api.GetBundleRequest{PkgName: pkg, ChannelName: ch.Name, CsvName: e.Name}))
				})
			}
			for _, name := range replacedIn(ch, unknown) {
				compareReplacement(ctx, c, pkg, ch, name)
			}
		}
	}
	parallel(f.replaced, func(name string) {
		c.check("GetChannelEntriesThatReplace "+name, true, func(r api.RegistryClient) answer {
			return stream(r.GetChannelEntriesThatReplace(ctx, &api.GetAllReplacementsRequest{CsvName: name}))
		})
	})
	c.check("GetChannelEntriesThatReplace "+unknown, true, func(r api.RegistryClient) answer {
		return stream(r.GetChannelEntriesThatReplace(ctx, &api.GetAllReplacementsRequest{CsvName: unknown}))
	})
	gvks := append(slices.Clone(f.gvks), property.GVK{Group: "no.such.group", Version: "v1", Kind: "Nothing"})
	parallel(gvks, func(g property.GVK) {
		name := g.Group + "/" + g.Version + " " + g.Kind
		c.check("GetChannelEntriesThatProvide "+name, true, func(r api.RegistryClient) answer {
			return stream(r.GetChannelEntriesThatProvide(ctx, &api.GetAllProvidersRequest{Group: g.Group, Version: g.Version, Kind: g.Kind}))
		})
		c.check("GetLatestChannelEntriesThatProvide "+name, true, func(r api.RegistryClient) answer {
			return stream(r.GetLatestChannelEntriesThatProvide(ctx, &api.GetLatestProvidersRequest{Group: g.Group, Version: g.Version, Kind: g.Kind}))
		})
		c.check("GetDefaultBundleThatProvides "+name, false, func(r api.RegistryClient) answer {
			return unary(r.GetDefaultBundleThatProvides(ctx, &api.GetDefaultProviderRequest{Group: g.Group, Version: g.Version, Kind: g.Kind}))
		})
	})
	t.Logf("%d calls compared (%d answered errors): %d packages, %d replaced names, %d GVKs", c.calls, c.errors, len(f.packages), len(f.replaced), len(f.gvks))
}

// replacedIn is every name the channel's entries replace or skip, and one
// that none does.
func replacedIn(ch declcfg.Channel, unknown string) []string {
	var out []string
	for _, e := range ch.Entries {
		if e.Replaces != "" {
			out = append(out, e.Replaces)
		}
		out = append(out, e.Skips...)
	}
	slices.Sort(out)
	return append(slices.Compact(out), unknown)
}

// compareReplacement compares GetBundleThatReplaces. When several entries
// of the channel replace or skip the name, opm answers any one of them
// (its map's order): catalogd's answer must then be one of those
// bundles, as opm's GetBundle answers it.
func compareReplacement(ctx context.Context, c *comparer, pkg string, ch declcfg.Channel, name string) {
	var candidates []string
	for _, e := range ch.Entries {
		if e.Replaces == name || slices.Contains(e.Skips, name) {
			candidates = append(candidates, e.Name)
		}
	}
	what := "GetBundleThatReplaces " + pkg + " " + ch.Name + " " + name
	ask := func(r api.RegistryClient) answer {
		return unary(r.GetBundleThatReplaces(ctx, &api.GetReplacementRequest{PkgName: pkg, ChannelName: ch.Name, CsvName: name}))
	}
	if len(candidates) < 2 {
		c.check(what, false, ask)
		return
	}
	ours := ask(c.ours)
	if ours.err != "" || len(ours.msgs) != 1 {
		c.t.Errorf("%s: catalogd answered %q, want one of %v", what, ours.err, candidates)
		return
	}
	chosen := ours.msgs[0].(*api.Bundle).GetCsvName()
	if !slices.Contains(candidates, chosen) {
		c.t.Errorf("%s: catalogd answered %s, want one of %v", what, chosen, candidates)
		return
	}
	theirs := unary(c.theirs.GetBundle(ctx, &api.GetBundleRequest{PkgName: pkg, ChannelName: ch.Name, CsvName: chosen}))
	if d := diff(theirs, ours); d != "" {
		c.t.Errorf("%s: catalogd's %s differs from opm's GetBundle of it: %s", what, chosen, d)
	}
}

// parallel runs fn for each item, four at a time.
func parallel[T any](items []T, fn func(T)) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	for _, it := range items {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			fn(it)
		})
	}
	wg.Wait()
}
