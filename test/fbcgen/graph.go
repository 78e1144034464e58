package fbcgen

import (
	"fmt"
	"math/rand/v2"
	"strconv"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
)

// version is a semver version; pre is empty or a pre-release such as "rc.1".
type version struct {
	major, minor, patch int
	pre                 string
}

func (v version) String() string {
	s := strconv.Itoa(v.major) + "." + strconv.Itoa(v.minor) + "." + strconv.Itoa(v.patch)
	if v.pre != "" {
		s += "-" + v.pre
	}
	return s
}

func (v version) series() string { return strconv.Itoa(v.major) + "." + strconv.Itoa(v.minor) }

// makeVersions returns n strictly increasing versions. Most releases are
// patch releases, about a quarter start a new minor and a few a new major.
// With prereleases set, some new minors and majors are preceded by one or
// two release candidates (or alphas/betas), which sort below the release.
// The first version is always a release, so a stable channel is never empty.
func makeVersions(r *rand.Rand, n, startMajor int, prereleases bool) []version {
	cur := version{major: startMajor, minor: r.IntN(5)}
	if startMajor == 0 {
		cur.minor = 1 + r.IntN(4)
	}
	out := make([]version, 0, n)
	out = append(out, cur)
	for len(out) < n {
		next := cur
		switch x := r.Float64(); {
		case x < 0.04:
			next = version{major: cur.major + 1}
		case x < 0.30:
			next = version{major: cur.major, minor: cur.minor + 1}
		default:
			next.patch++
		}
		if prereleases && next.patch == 0 && r.Float64() < 0.25 {
			label := pick(r, []string{"rc", "rc", "beta", "alpha"})
			k := 1 + r.IntN(2)
			for j := 1; j <= k && len(out) < n-1; j++ {
				pre := next
				pre.pre = label + "." + strconv.Itoa(j)
				out = append(out, pre)
			}
		}
		out = append(out, next)
		cur = next
	}
	return out
}

// channelPlan lists a channel's entries as indexes into the package's
// versions, in increasing version order.
type channelPlan struct {
	name    string
	members []int
}

// planChannels decides which channels a package has and what they hold:
//
//   - stable: every release;
//   - candidate: the newest third of the versions, pre-releases included,
//     starting no later than just before the first pre-release so that every
//     pre-release is in some channel;
//   - fast: the newer half of the releases;
//   - per-minor channels (stable-X.Y, release-X.Y or vX.Y, one naming style
//     per package) for the newest minor series.
//
// So most bundles are in two or more channels, as in published catalogs.
func planChannels(r *rand.Rand, versions []version, want int) []channelPlan {
	var releases, all []int
	firstPre := -1
	for i, v := range versions {
		all = append(all, i)
		if v.pre == "" {
			releases = append(releases, i)
		} else if firstPre < 0 {
			firstPre = i
		}
	}
	chans := []channelPlan{{name: "stable", members: releases}}
	if want >= 2 {
		start := len(versions) - max(2, len(versions)/3)
		if firstPre > 0 && firstPre-1 < start {
			start = firstPre - 1
		}
		chans = append(chans, channelPlan{name: "candidate", members: all[max(0, start):]})
	}
	if want >= 3 {
		chans = append(chans, channelPlan{name: "fast", members: releases[len(releases)/2:]})
	}
	if want >= 4 {
		style := pick(r, []string{"stable-%s", "release-%s", "v%s"})
		var series []string
		bySeries := map[string][]int{}
		for _, i := range releases {
			s := versions[i].series()
			if _, ok := bySeries[s]; !ok {
				series = append(series, s)
			}
			bySeries[s] = append(bySeries[s], i)
		}
		for k := len(series) - 1; k >= 0 && len(chans) < want; k-- {
			chans = append(chans, channelPlan{name: fmt.Sprintf(style, series[k]), members: bySeries[series[k]]})
		}
	}
	return chans
}

// channelEntries turns a channel's members into entries with upgrade edges.
// Entry i normally replaces entry i-1. Sometimes it instead replaces an
// older entry and skips the ones in between (a withdrawn release), and
// sometimes it carries a skipRange over the versions before it. The first
// entry either replaces the package's previous version (which lives in
// another channel, as when a per-minor channel starts), has only a
// skipRange (so older bundles reach it by skipRange alone), or has no edge.
//
// Every edge points to an older entry, so the newest entry is the one head.
// An entry is only replaced if nothing skips it, so the replaces chain from
// the head reaches every entry that isn't skipped: the graph passes
// operator-registry's validation.
func channelEntries(r *rand.Rand, pkg string, versions []version, members []int) []declcfg.ChannelEntry {
	name := func(i int) string { return pkg + ".v" + versions[i].String() }
	entries := make([]declcfg.ChannelEntry, len(members))
	skipped := make([]bool, len(members))
	for i, m := range members {
		e := declcfg.ChannelEntry{Name: name(m)}
		if i == 0 {
			switch x := r.Float64(); {
			case m > 0 && x < 0.4:
				e.Replaces = name(m - 1)
			case m > 0 && x < 0.7:
				e.SkipRange = ">=" + versions[0].String() + " <" + versions[m].String()
			}
			entries[i] = e
			continue
		}
		target := i - 1
		if w := 1 + r.IntN(2); i-1-w >= 0 && r.Float64() < 0.12 && !skipped[i-1-w] {
			target = i - 1 - w
			for s := i - w; s < i; s++ {
				e.Skips = append(e.Skips, name(members[s]))
				skipped[s] = true
			}
		}
		e.Replaces = name(members[target])
		if r.Float64() < 0.25 {
			from := max(0, i-1-r.IntN(4))
			e.SkipRange = ">=" + versions[members[from]].String() + " <" + versions[m].String()
		}
		entries[i] = e
	}
	return entries
}
