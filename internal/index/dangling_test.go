package index

import (
	"fmt"
	"strings"
	"testing"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
)

// TestDanglingReplacesNamed misspells, in one channel of each package of
// the verdict corpus (the shared community catalog where present), the
// replaces of an entry that replaces another entry of the channel, as an
// author might (x.0.0.2 for x.v0.0.2), and checks that wherever
// operator-registry then rejects the package, a problem names the entry,
// the misspelt name, and the entry one edit away from it, which the test
// finds with its own edit distance.
func TestDanglingReplacesNamed(t *testing.T) {
	type typo struct{ entry, wrote, meant string }
	var mutated []*corpusPackage
	typos := map[string]typo{}
	for _, p := range verdictCorpus(t) {
		p = p.clone()
		if tp, ok := misspellReplaces(p); ok {
			mutated = append(mutated, p)
			typos[p.name] = tp
		}
	}
	if len(mutated) == 0 {
		t.Fatal("no package of the corpus has an entry replacing another entry of its channel")
	}
	j := prepare(mutated)
	ours, theirs := j.ourVerdicts(t), j.theirVerdicts()
	checked := 0
	for _, p := range mutated {
		tp := typos[p.name]
		if theirs[p.name] == nil {
			continue // another entry still links what was misspelt
		}
		checked++
		want := fmt.Sprintf("entry %q replaces %q, which is not an entry of the channel", tp.entry, tp.wrote)
		if tp.meant != "" {
			want += fmt.Sprintf(" (did you mean %q?)", tp.meant)
		}
		found := false
		for _, m := range ours[p.name] {
			found = found || strings.Contains(m, want)
		}
		if !found {
			t.Errorf("package %q: no problem says %s; problems:\n%s", p.name, want, strings.Join(ours[p.name], "\n"))
		}
	}
	t.Logf("%d packages misspelt, %d rejected by operator-registry and checked", len(mutated), checked)
	if checked < len(mutated)/2 {
		t.Errorf("operator-registry rejected only %d of %d misspelt packages: the test checks too little", checked, len(mutated))
	}
}

// misspellReplaces changes, in the first channel of p that has one, the
// replaces of the first entry replacing another entry of the channel: ".v"
// becomes ".", or, for a name without ".v", "x" is appended. It returns
// the entry, what it now replaces, and the one entry of the channel (other
// than itself) one edit from that, if there is exactly one; ok is false if
// p has no such entry.
func misspellReplaces(p *corpusPackage) (tp struct{ entry, wrote, meant string }, ok bool) {
	for _, ch := range p.all(declcfg.SchemaChannel) {
		entries := objects(ch["entries"])
		names := map[string]bool{}
		for _, e := range entries {
			name, _ := e["name"].(string)
			names[name] = true
		}
		for _, e := range entries {
			name, _ := e["name"].(string)
			r, _ := e["replaces"].(string)
			if r == "" || r == name || !names[r] {
				continue
			}
			wrote := r + "x"
			if strings.Contains(r, ".v") {
				wrote = strings.Replace(r, ".v", ".", 1)
			}
			if names[wrote] {
				continue
			}
			e["replaces"] = wrote
			tp.entry, tp.wrote = name, wrote
			var near []string
			for n := range names {
				if n != name && editDistance(wrote, n) == 1 {
					near = append(near, n)
				}
			}
			if len(near) == 1 {
				tp.meant = near[0]
			}
			return tp, true
		}
	}
	return tp, false
}

// editDistance is the Levenshtein distance of a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
