package query

import "slices"

// SetResolveBudget sets the bytes c keeps of parsed packages for resolution.
func SetResolveBudget(c *Catalog, bytes int) {
	c.resolved.mu.Lock()
	defer c.resolved.mu.Unlock()
	c.resolved.budget = bytes
}

// ResolveKept says how many parsed packages c keeps, and their estimated bytes.
func ResolveKept(c *Catalog) (packages, bytes int) {
	c.resolved.mu.Lock()
	defer c.resolved.mu.Unlock()
	return len(c.resolved.byPkg), c.resolved.used
}

// ResolveKeptPackages lists the packages c keeps parsed, sorted.
func ResolveKeptPackages(c *Catalog) []string {
	c.resolved.mu.Lock()
	defer c.resolved.mu.Unlock()
	var out []string
	for pkg := range c.resolved.byPkg {
		out = append(out, pkg)
	}
	slices.Sort(out)
	return out
}

// ListPageQuery is the statement that reads a page of ListBundles's
// entries, which must not sort.
const ListPageQuery = listPageQuery
